"""scripts/plot.py: generic curves and step-time bars on synthetic runs; every paper figure (smoke)."""

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO.parent / "shared" / "paper-results"

_spec = importlib.util.spec_from_file_location("script_plot", REPO / "scripts" / "plot.py")
plot = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plot)


def assert_figures(out: Path, name: str):
    for ext in ("png", "pdf"):
        f = out / f"{name}.{ext}"
        assert f.is_file() and f.stat().st_size > 1000, f"{f} missing or empty"
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "temporary files left behind"


def make_runs(root: Path):
    """Two settings x two seeds of our run directories, with metrics.jsonl phase timers."""
    for name, ys, gen in (("demo-grpo", [0.1, 0.3, 0.5], 0.02), ("demo-pods", [0.2, 0.5, 0.6], 0.05)):
        for seed in (1, 2):
            d = root / f"{name}-s{seed}"
            d.mkdir(parents=True)
            data = {"format": "pods-eval-results/1", "settings": "{}",
                    "base": {"step": 0, "elapsed_seconds": 0.0, "gsm8k": {"ans_acc": [0.05], "lengths": [20.0]}}}
            for s, y in zip((25, 50, 75), ys):
                data[f"checkpoint-{s}"] = {"step": s, "elapsed_seconds": 4.0 * s + seed,
                                           "gsm8k": {"ans_acc": [y, y + 0.02], "lengths": [30.0, 31.0]}}
            (d / "eval_results.json").write_text(json.dumps(data))
            recs = [{"step": s, "elapsed_seconds": 0.1 * s, "time/generate": gen, "time/update": 0.08}
                    for s in range(1, 76)]
            (d / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")


def test_curves_and_step_time_on_our_runs(tmp_path, capsys):
    make_runs(tmp_path / "checkpoints")
    out = tmp_path / "figs"
    common = ["--results", str(tmp_path / "checkpoints"), "--out", str(out)]
    assert plot.main(["curves", *common, "--setting", "demo-grpo", "--setting", "demo-pods",
                      "--label", "GRPO", "--label", "PODS", "--name", "demo"]) == 0
    assert_figures(out, "demo")
    assert plot.main(["curves", *common, "--setting", "demo-grpo", "--metric", "lengths", "--x", "steps",
                      "--name", "demo-len"]) == 0
    assert_figures(out, "demo-len")
    assert plot.main(["curves", *common, "--setting", "demo-pods", "--x", "hours", "--time-axis", "seconds",
                      "--name", "demo-sec"]) == 0
    assert_figures(out, "demo-sec")
    assert plot.main(["step-time", *common, "--setting", "demo-grpo", "--setting", "demo-pods"]) == 0
    assert_figures(out, "step-time")
    assert plot.main(["curves", *common, "--setting", "demo-grpo", "--label", "a", "--label", "b"]) == 2
    assert "one per setting" in capsys.readouterr().err


def test_list_names_every_figure(capsys):
    assert plot.main(["list"]) == 0
    names = capsys.readouterr().out.split()
    assert {"gsm8k", "n-scaling", "m-scaling", "rules", "math", "llama", "lengths", "step-time",
            "multi-gpu"} <= set(names)


@pytest.mark.slow
@pytest.mark.skipif(not PAPER.is_dir(), reason=f"paper results not found at {PAPER} (shared folder absent)")
def test_every_paper_figure(tmp_path):
    out = tmp_path / "figures"
    with pytest.warns(UserWarning, match="irregular checkpoint count"):  # 64-2 Run9/10, Llama 64-16 Run4
        assert plot.main(["paper", "--results", str(PAPER), "--out", str(out)]) == 0
    for name in plot.FIGURES:
        assert_figures(out, name)
