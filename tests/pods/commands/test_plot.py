"""pods plot (pods/commands/plot.py, scripts/plot.py): generic curves and step-time bars on synthetic runs; every paper figure (smoke)."""

import json
from pathlib import Path

import numpy as np
import pytest

from pods.analysis.paper import FIGURES
from pods.analysis.paper_data import GET_IT, locate_results
from pods.commands import plot

from helpers import exits

REPO = Path(__file__).resolve().parents[3]
PAPER = locate_results() or Path("paper-data/results")  # scripts/paper_data.py (pods.analysis.paper_data)

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
@pytest.mark.skipif(not PAPER.is_dir(), reason=f"the paper's results are absent: {GET_IT}")
def test_every_paper_figure(tmp_path):
    out = tmp_path / "figures"
    with pytest.warns(UserWarning, match="irregular checkpoint count"):  # 64-2 Run9/10, Llama 64-16 Run4
        assert plot.main(["paper", "--results", str(PAPER), "--out", str(out)]) == 0
    for name in FIGURES:
        assert_figures(out, name)


def write_seed(d: Path, checkpoints: dict):
    """checkpoints: {step: (elapsed_seconds, [gsm8k ans_acc repeats])}; step 0 is the `base` entry."""
    d.mkdir(parents=True)
    data = {"format": "pods-eval-results/1", "settings": "{}"}
    for step, (t, accs) in checkpoints.items():
        data["base" if step == 0 else f"checkpoint-{step}"] = {"step": step, "elapsed_seconds": t,
                                                               "gsm8k": {"ans_acc": accs}}
    (d / "eval_results.json").write_text(json.dumps(data))


def three_seeds(root: Path):
    """GRPO, 3 seeds checkpointed every 5 steps, at their own wall-clock times; seed 2 stopped after step 15."""
    write_seed(root / "grpo" / "s0", {0: (0, [0.0]), 5: (50, [0.02]), 10: (98, [0.04]), 15: (151, [0.05]),
                                      20: (205, [0.06])})
    write_seed(root / "grpo" / "s1", {0: (0, [0.0]), 5: (44, [0.0]), 10: (90, [0.01]), 15: (140, [0.03]),
                                      20: (176, [0.05])})
    write_seed(root / "grpo" / "s2", {0: (0, [0.0]), 5: (61, [0.0]), 10: (120, [0.0, 0.02]), 15: (170, [0.04])})


def test_steps_axis_aligns_runs_by_their_own_steps(tmp_path):
    """The issue's case: on a step axis every point is a real checkpoint step with the real mean of the
    seeds that have it (no fractional steps carried along a time grid); the step-20 point has 2 runs."""
    from scipy import stats

    three_seeds(tmp_path)
    args = plot.parse_args(["curves", "--results", str(tmp_path), "--setting", "grpo", "--x", "both"])
    curves = plot.build_curves(args)
    c = curves["steps"][0]
    assert c.x.tolist() == [0, 5, 10, 15, 20] and c.exact
    assert c.mean == pytest.approx([0.0, 0.02 / 3, (0.04 + 0.01 + 0.01) / 3, 0.04, 0.055])
    assert c.n.tolist() == [3, 3, 3, 3, 2] and c.partial.tolist() == [False] * 4 + [True]
    # the band: 95% t-interval, clipped to [0, 1]; at step 5 it would reach below 0 (0.0067 - 0.0287)
    hw = stats.t.ppf(0.975, 2) * np.std([0.02, 0.0, 0.0], ddof=1) / np.sqrt(3)
    assert c.mean[1] - hw < 0 and c.lo[1] == 0.0 and c.hi[1] == pytest.approx(c.mean[1] + hw)
    assert np.all(c.lo[np.isfinite(c.lo)] >= 0) and np.all(c.hi[np.isfinite(c.hi)] <= 1)
    t = curves["hours"][0]  # time axis: 5 points from the median first (0 s) to the median last (176 s) time
    assert not t.exact and t.hours * 3600 == pytest.approx([0, 44, 88, 132, 176])
    assert t.n.tolist() == [3, 3, 3, 3, 2]  # seed 2 ended at 170 s: it drops out of the last point, marked
    assert t.mean[-1] == pytest.approx((0.05 + 0.01 * 25 / 54 + 0.05) / 2)  # s0 between 151 s and 205 s; s1


def test_figure_marks_partial_points_and_counts_runs_honestly(tmp_path):
    from pods.analysis.figures import draw_curves, new_figure

    three_seeds(tmp_path)
    curves = plot.build_curves(plot.parse_args(["curves", "--results", str(tmp_path), "--setting", "grpo",
                                                "--label", "GRPO", "--x", "steps"]))
    fig, (ax,) = new_figure(1)
    draw_curves(ax, curves["steps"])
    line, hollow = ax.get_lines()
    assert line.get_xdata().tolist() == [0, 5, 10, 15, 20]  # whole steps only
    assert hollow.get_xdata().tolist() == [20] and hollow.get_markerfacecolor() == "white"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["GRPO (3 runs; hollow points: 2 runs)"]
    assert ax.get_xlabel() == "training step"
    with pytest.raises(ValueError, match="separate axes"):
        draw_curves(ax, curves["steps"] + plot.build_curves(plot.parse_args(
            ["curves", "--results", str(tmp_path), "--setting", "grpo", "--x", "hours"]))["hours"])
    assert plot.main(["curves", "--results", str(tmp_path), "--setting", "grpo", "--out", str(tmp_path / "f"),
                      "--max-hours", str(100 / 3600), "--x", "steps"]) == 0  # steps up to 100 s: 0, 5, 10 (s0, s1)
    args = plot.parse_args(["curves", "--results", str(tmp_path), "--setting", "grpo", "--x", "steps",
                            "--max-hours", str(100 / 3600)])
    assert plot.build_curves(args)["steps"][0].n.tolist() == [3, 3, 2]


def test_figures_speak_plainly_time_units_fit_the_data_and_labels_have_one_pair_of_parentheses(tmp_path):
    """An 8-minute run is drawn in minutes, the title names the metric in words, interpolated time axes
    say so inside the unit's parentheses, and a legend gives a range of run counts, not a list."""
    import matplotlib.pyplot as plt

    from pods.analysis.curves import Curve
    from pods.analysis.figures import axis_label, curve_label, draw_curves, metric_label, new_figure, time_unit_for

    three_seeds(tmp_path)  # checkpoints at up to 205 s
    args = plot.parse_args(["curves", "--results", str(tmp_path), "--setting", "grpo", "--dataset", "gsm8k"])
    assert args.time_axis == "auto"
    fig, axes = new_figure(2)
    curves = plot.build_curves(args)
    for ax, x in zip(axes, curves):
        draw_curves(ax, curves[x], metric=args.metric, title=f"{args.dataset}: {metric_label(args.metric)}",
                    time_unit=args.time_axis)
    assert axes[0].get_xlabel() == "training time (minutes; runs interpolated)"
    assert axes[0].get_xticks().max() < 10  # minutes, not 0.05 hours
    assert axes[0].get_title() == "gsm8k: answer accuracy" and axes[0].get_ylabel() == "answer accuracy"
    plt.close(fig)

    assert [time_unit_for(h) for h in (0.01, 8 / 60, 1.9, 6.0)] == ["seconds", "minutes", "minutes", "hours"]
    assert metric_label("paper_ans_acc") == "answer accuracy, paper grader" and metric_label("xyz") == "xyz"
    assert axis_label("training step", None) == "training step"
    assert axis_label("training time", "hours", "training seconds (1 thread per run)", interpolated=True) == \
        "training seconds (1 thread per run; runs interpolated)"
    ten = Curve("PODS", np.array([0.0, 1.0, 2.0, 3.0]), np.full((10, 4), 0.5), [f"r{i}" for i in range(10)])
    ten.values[:6, 1] = np.nan  # 4 runs at x = 1
    ten.values[:1, 2] = np.nan  # 9 runs at x = 2
    assert curve_label(ten) == "PODS (10 runs; hollow points: 4-9 runs)"
    ten.values[:, 1:3] = 0.5
    ten.values[1:, 3] = np.nan  # 1 run at the last point
    assert curve_label(ten) == "PODS (10 runs; hollow points: 1 run)"


def test_out_that_is_a_file_is_refused_before_anything_is_drawn(tmp_path, capsys):
    three_seeds(tmp_path)
    target = tmp_path / "figs"
    target.write_text("mine")
    assert plot.main(["curves", "--results", str(tmp_path), "--setting", "grpo", "--out", str(target)]) == 2
    assert f"--out {target} is a file, not a folder" in capsys.readouterr().err
    assert target.read_text() == "mine"


def test_settings_by_glob_and_by_run_name(tmp_path, monkeypatch):
    """Derived run names are long: a glob names the seeds, and a run_name is found in checkpoints/."""
    from pods.analysis.settings import find_run_dirs, load_setting
    from pods.errors import ResultsError

    for seed in (0, 1):
        write_seed(tmp_path / "checkpoints" / f"arithmetic-tiny-pods-max_variance-n64-m16-seed{seed}",
                   {0: (0, [0.1]), 5: (30, [0.2])})
    write_seed(tmp_path / "checkpoints" / "arithmetic-tiny-grpo-n16-m16-seed0", {0: (0, [0.1]), 5: (20, [0.3])})
    write_seed(tmp_path / "checkpoints" / "mine", {0: (0, [0.1]), 5: (20, [0.3])})
    monkeypatch.chdir(tmp_path)
    assert [p.name for p in find_run_dirs("*pods*n64*", "checkpoints")] == [
        "arithmetic-tiny-pods-max_variance-n64-m16-seed0", "arithmetic-tiny-pods-max_variance-n64-m16-seed1"]
    assert len(load_setting("checkpoints/*-seed0")) == 2  # a path with a glob
    assert [r.name for r in load_setting("mine")] == ["mine"]  # --results left at ".": checkpoints/mine
    with pytest.raises(ResultsError, match=r"the pattern matches no run directory .*run directories there: "
                                           r"\['arithmetic-tiny-grpo-n16-m16-seed0'"):
        load_setting("*n128*", "checkpoints")
    assert plot.main(["curves", "--results", "checkpoints", "--setting", "*pods*", "--setting", "*grpo*",
                      "--out", "figs"]) == 0


def test_our_runs_beside_the_papers_files_are_drawn_on_the_papers_grader_or_refused(tmp_path, capsys):
    res = tmp_path / "checkpoints"
    make_runs(res)  # our runs: ans_acc by the suite's verifier only
    paper = {f"checkpoint-{s}": {"gsm8k": {"ans_acc": [y]}} for s, y in ((10, 0.3), (20, 0.4))}
    (res / "G-16-16-Run1.json").write_text(json.dumps(paper))
    argv = ["curves", "--results", str(res), "--out", str(tmp_path / "figs"), "--setting", "G-16-16",
            "--setting", "demo-grpo", "--name", "mix"]
    assert plot.main(argv) == 2  # no paper grader in our runs: refused, saying how to get it
    assert "demo-grpo: no paper_ans_acc (evaluated without the paper's grader)" in capsys.readouterr().err
    assert plot.main(argv + ["--metric", "ans_acc"]) == 2  # the strict verifier beside their grader: refused
    assert "--metric paper_ans_acc (the default for such a mix)" in capsys.readouterr().err
    for d in res.glob("demo-grpo-s*"):
        data = json.loads((d / "eval_results.json").read_text())
        for entry in data.values():
            if isinstance(entry, dict) and "gsm8k" in entry:
                entry["gsm8k"]["paper_ans_acc"] = entry["gsm8k"]["ans_acc"]
        (d / "eval_results.json").write_text(json.dumps(data))
    args = plot.parse_args(argv)
    curves = plot.build_curves(args)
    assert args.metric == "paper_ans_acc" and [c.label for c in curves["hours"]] == ["G-16-16", "demo-grpo"]
    assert plot.main(argv) == 0
    assert_figures(tmp_path / "figs", "mix")
    # our runs alone: the strict verifier, as before
    args = plot.parse_args(["curves", "--results", str(res), "--setting", "demo-pods"])
    plot.build_curves(args)
    assert args.metric == "ans_acc"


@pytest.mark.parametrize("raw, said", [
    (b'{"step": 1, "time/step": 0.1}\n{"step": 2, "time/st\n{"step": 3, "time/step": 0.1}\n',
     ["m/metrics.jsonl: line 2 is not JSON", "fix or delete that line"]),
    (b'{"step": 1, "time/step": 0.1}\n\xff\xfe\n', ["m/metrics.jsonl: not UTF-8 text"]),
    (b"[1, 2]\n", ["m/metrics.jsonl: line 1 is a JSON list, not an object"]),
], ids=["torn", "binary", "rows-not-objects"])
def test_a_bad_metrics_file_is_one_message_and_exit_2(tmp_path, capsys, raw, said):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "metrics.jsonl").write_bytes(raw)
    code, _, err = exits(plot.main, ["step-time", "--results", str(tmp_path), "--setting", "m", "--out",
                                     str(tmp_path / "figs")], capsys)
    assert code == 2 and all(text in err for text in said), err
    assert not (tmp_path / "figs").exists() or not any((tmp_path / "figs").iterdir())


def test_corrupt_results_and_an_out_that_is_a_file_are_one_message_each(tmp_path, capsys):
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / "eval_results.json").write_text('{"checkpoint-2": {"step": 2, "elapsed_')
    (tmp_path / "base-ok").mkdir()
    (tmp_path / "base-ok" / "eval_results.json").write_text(json.dumps(
        {"checkpoint-2": {"step": 2, "elapsed_seconds": 20.0, "arithmetic": {"ans_acc": [0.5]}}}))
    (tmp_path / "a-file").write_text("not a directory")
    common = ["curves", "--results", str(tmp_path), "--dataset", "arithmetic"]
    code, _, err = exits(plot.main, [*common, "--setting", "corrupt", "--out", str(tmp_path / "figs")], capsys)
    assert code == 2 and f"plot.py: error: {tmp_path}/corrupt/eval_results.json: not valid JSON" in err
    code, _, err = exits(plot.main, [*common, "--setting", "base-ok", "--out", str(tmp_path / "a-file")], capsys)
    assert code == 2 and f"plot.py: error: --out {tmp_path}/a-file is a file, not a folder" in err
    assert "the file was left untouched" in err and (tmp_path / "a-file").read_text() == "not a directory"
