"""benchmarks/bench_rewards.py: the real-completions input (present and absent). Timings are not asserted."""

import gzip
import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load_script(name):
    spec = importlib.util.spec_from_file_location(f"script_{name}", REPO / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bench = load_script("bench_rewards")


def test_absent_examples_are_skipped_with_a_message(tmp_path, capsys):
    assert bench.bench_examples(tmp_path / "missing.jsonl.gz", 0.01) == {}
    assert "absent" in capsys.readouterr().out


def test_examples_are_scored_by_their_datasets_verifier(tmp_path):
    rows = [{"dataset": "gsm8k", "answer": "18", "completion": "<answer>$18</answer>"},
            {"dataset": "math500", "answer": r"\frac{1}{2}", "completion": r"\boxed{0.5}"},
            {"dataset": "amc23", "answer": "27", "completion": "They meet 27 miles from A."}]
    path = tmp_path / "examples.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(json.dumps(r) for r in rows))
    assert bench.load_examples(path) == {"gsm8k": (["<answer>$18</answer>"], ["18"]),
                                         "math": ([r"\boxed{0.5}", "They meet 27 miles from A."], [r"\frac{1}{2}", "27"])}
    results = bench.bench_examples(path, 0.01)
    assert set(results) == {"gsm8k", "math"} and results["math"]["completions"] == 2
    assert all(r["cold_per_s"] > 0 and r["cached_per_s"] > 0 for r in results.values())
