"""scripts/speedup.py: JSON keys and values on synthetic paper-layout files and run directories, errors."""

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO.parent / "shared" / "paper-results"


def load_script(name):
    spec = importlib.util.spec_from_file_location(f"script_{name}", REPO / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


speedup = load_script("speedup")
KEYS = ["baseline", "method", "baseline_peak", "baseline_peak_hours", "method_peak", "method_peak_hours",
        "method_hours_to_baseline_peak", "speedup_exact", "speedup_exact_interp", "speedup_99",
        "speedup_99_interp", "ci95_exact", "ci95_99"]


def write_setting(d, prefix, curves):
    """curves: one list of gsm8k ans_acc per run, the i-th value at checkpoint step 10 * (i + 1)."""
    for k, ys in enumerate(curves, 1):
        data = {f"checkpoint-{10 * (i + 1)}": {"gsm8k": {"ans_acc": [y, y]}} for i, y in enumerate(ys)}
        (d / f"{prefix}-Run{k}.json").write_text(json.dumps(data))


def run_json(capsys, argv):
    assert speedup.main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_keys_values_and_not_reached(tmp_path, capsys):
    write_setting(tmp_path, "G-16-16", [[0.2, 0.5, 0.6, 0.55], [0.2, 0.5, 0.6, 0.55]])
    write_setting(tmp_path, "P-64-16", [[0.4, 0.62, 0.7, 0.7], [0.4, 0.62, 0.7, 0.7]])
    write_setting(tmp_path, "slow", [[0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4]])
    rows = run_json(capsys, ["--results", str(tmp_path), "--baseline", "G-16-16", "--method", "P-64-16",
                             "--method", "slow", "--dataset", "gsm8k", "--metric", "ans_acc",
                             "--hours-per-checkpoint", "0.5", "--bootstrap", "50"])
    assert [list(r) for r in rows] == [KEYS, KEYS]
    fast, slow = rows
    assert (fast["baseline"], fast["method"]) == ("G-16-16", "P-64-16")
    assert fast["baseline_peak_hours"] == 1.5 and fast["method_hours_to_baseline_peak"] == 1.0
    assert fast["speedup_exact"] == pytest.approx(1.5) and fast["speedup_99"] == pytest.approx(1.5)
    assert fast["ci95_exact"] == pytest.approx([1.5, 1.5])  # identical runs
    assert slow["method_hours_to_baseline_peak"] is None and slow["speedup_exact"] is None and slow["ci95_99"] is None
    # --max-hours 1.0: baseline peak 0.5 at 1 h; the method reaches it at 1 h (0.4 at 0.5 h), interpolated
    # at 0.5 + 0.5 * 0.1 / 0.22 h
    rows = run_json(capsys, ["--results", str(tmp_path), "--baseline", "G-16-16", "--method", "P-64-16",
                             "--max-hours", "1.0", "--bootstrap", "0"])
    assert rows[0]["speedup_exact"] == pytest.approx(1.0) and rows[0]["ci95_exact"] is None
    assert rows[0]["speedup_exact_interp"] == pytest.approx(1.0 / (0.5 + 0.5 * 0.1 / 0.22))
    argv = ["--results", str(tmp_path), "--baseline", "G-16-16", "--method", "slow", "--bootstrap", "0"]
    assert speedup.main(argv) == 0
    assert "not reached" in capsys.readouterr().out


def test_run_directories_as_settings(tmp_path, capsys):
    for name, ys in (("grpo", [0.1, 0.3, 0.5]), ("pods", [0.2, 0.5, 0.6])):
        for seed in (1, 2):
            d = tmp_path / name / f"seed{seed}"
            d.mkdir(parents=True)
            data = {f"checkpoint-{s}": {"step": s, "elapsed_seconds": 60.0 * s, "gsm8k": {"ans_acc": [y]}}
                    for s, y in zip((10, 20, 30), ys)}
            (d / "eval_results.json").write_text(json.dumps(data))
            greedy = {k: {**v, "gsm8k": {"ans_acc": [min(1.0, 2 * v["gsm8k"]["ans_acc"][0])]}} for k, v in data.items()}
            (d / "eval_greedy.json").write_text(json.dumps(greedy))
    rows = run_json(capsys, ["--results", str(tmp_path), "--baseline", "grpo", "--method", "pods", "--bootstrap", "20"])
    # baseline peak 0.5 at step 30 = 1800 s = 0.5 h; pods reaches 0.5 at step 20 = 1200 s
    assert rows[0]["baseline_peak_hours"] == pytest.approx(0.5)
    assert rows[0]["speedup_exact"] == pytest.approx(1.5)
    rows = run_json(capsys, ["--results", str(tmp_path), "--baseline", "grpo", "--method", "pods", "--bootstrap", "0",
                             "--results-file", "eval_greedy.json"])
    assert rows[0]["baseline_peak"] == pytest.approx(1.0)
    assert rows[0]["method_hours_to_baseline_peak"] == pytest.approx(1 / 3)


def test_errors_are_clear(tmp_path, capsys):
    assert speedup.main(["--results", str(tmp_path), "--baseline", "nope", "--method", "x"]) == 2
    assert "no nope-Run<k>.json" in capsys.readouterr().err


@pytest.mark.skipif(not PAPER.is_dir(), reason=f"paper results not found at {PAPER} (shared folder absent)")
def test_paper_gsm8k_speedup(capsys):
    rows = run_json(capsys, ["--results", str(PAPER), "--baseline", "Instruct-GSM8K-512-16-16",
                             "--method", "Instruct-GSM8K-512-64-16", "--bootstrap", "100"])
    r = rows[0]
    assert r["baseline_peak_hours"] == 4.0 and r["method_hours_to_baseline_peak"] == 2.5
    assert r["speedup_exact"] == pytest.approx(1.6) and r["speedup_99"] == pytest.approx(2.0)
