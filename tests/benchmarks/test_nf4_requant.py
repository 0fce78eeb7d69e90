"""benchmarks/nf4_requant.py: the table of docs/evaluation.md (re-quantising a merged update), on a small matrix."""

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("script_nf4_requant", REPO / "benchmarks" / "nf4_requant.py")
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)


def test_prints_one_row_per_update_size(capsys):
    assert script.main(["--rows", "256", "--cols", "256", "--rank", "16"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "%" in line]
    assert [r.split("|")[1].strip() for r in rows] == ["0.1%", "0.3%", "1.0%", "3.0%", "10.0%", "30.0%"]
    cosines = [float(r.split("|")[3]) for r in rows]
    assert cosines == sorted(cosines) and cosines[0] < 0.2 < cosines[-1]  # the larger the update, the better kept
