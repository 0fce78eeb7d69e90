"""pods.studies.demo_compare (`pods demo-compare`): the report (seed-mean curves, steps-to-target ratios, figure) on
synthetic results files, and the commands it runs (same prompt stream per seed, shared warm start)."""

import argparse
import json
from pathlib import Path

import pytest

from pods.commands.demo_compare import main
from pods.studies import demo_compare as dc

from helpers import exits


def write_run(out: Path, name: str, accs: list[float], seconds_per_step: float, file: str):
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    data = {"format": "pods-eval-results/1", "settings": "{}", "examples": {}}
    for i, a in enumerate(accs):
        key = "base" if i == 0 else f"checkpoint-{25 * i}"
        data[key] = {"step": 25 * i, "elapsed_seconds": 25 * i * seconds_per_step,
                     "arithmetic": {"ans_acc": [a, a], "for_acc": [1, 1], "both_acc": [a, a], "lengths": [5, 5]}}
    (d / file).write_text(json.dumps(data))
    rows = [{"step": s, "time/generation": seconds_per_step / 2, "time/update": 0.05, "time/step": seconds_per_step,
             "frac_groups_with_spread": 0.5, "frac_groups_with_spread_kept": 0.5} for s in range(1, 4)]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 4, "ti')  # torn line


def test_report_ratios_and_figure(tmp_path, capsys, monkeypatch):
    from pods.analysis import figures

    drawn = []  # the figure is drawn by pods.analysis as scripts/plot.py draws it (same band, markers)
    real = figures.draw_curves
    monkeypatch.setattr(figures, "draw_curves", lambda ax, curves, **kw: (drawn.append(curves), real(ax, curves, **kw)))
    curves = {"grpo": [0.1, 0.15, 0.2, 0.25, 0.3], "pods": [0.1, 0.2, 0.3, 0.35, 0.4],
              "random": [0.1, 0.15, 0.2, 0.25, 0.3]}
    secs = {"grpo": 0.1, "pods": 0.3, "random": 0.3}
    for meth, accs in curves.items():
        for s in (0, 1):
            for file in ("eval_results.json", "eval_greedy.json"):
                shift = 0.02 * (s - 0.5)  # seeds differ; their mean is `accs`
                write_run(tmp_path, f"{meth}-seed{s}", [a + shift for a in accs], secs[meth], file)
    args = argparse.Namespace(out=tmp_path, seeds=[0, 1], methods=["grpo", "pods", "random"], steps=100, eval_size=2000,
                                 draws=2, bootstrap=200)
    summary = dc.report(args)
    s = summary["metrics"]["sampled"]
    assert s["grpo"]["final"] == pytest.approx(0.3) and s["pods"]["final"] == pytest.approx(0.4)
    assert s["grpo"]["steps_to_grpo_final"] == pytest.approx(100)
    assert s["pods"]["steps_to_grpo_final"] == pytest.approx(50)  # reaches 0.3 at step 50
    assert s["pods"]["step_ratio_vs_grpo"] == pytest.approx(2.0)
    assert s["pods"]["time_ratio_vs_grpo"] == pytest.approx(100 * 0.1 / (50 * 0.3))
    assert s["random"]["step_ratio_vs_grpo"] == pytest.approx(1.0)
    assert s["pods"]["seconds_per_step"] == pytest.approx(0.3)
    assert s["grpo"]["final_per_seed"] == pytest.approx([0.29, 0.31])
    assert s["pods"]["median_generation_s"] == pytest.approx(0.15) and s["grpo"]["groups_with_spread_kept"] == 0.5
    assert s["grpo"]["wasted_update_fraction"] == 0.5 and s["pods"]["seconds_to_grpo_final"] == pytest.approx(15)
    assert (tmp_path / "demo_compare.png").stat().st_size > 10_000
    assert json.loads((tmp_path / "summary.json").read_text())["metrics"]["greedy"]["pods"]["final"] == pytest.approx(0.4)
    lo, hi = s["pods"]["step_ratio_ci95"]  # resampled seeds: shifts of -0.01 / +0.01 around the mean
    assert lo <= 2.0 <= hi and 1.0 < lo and s["pods"]["step_ratio_never_reached"] == 0.0
    assert s["random"]["step_ratio_ci95"][0] <= 1.0 <= s["random"]["step_ratio_ci95"][1]
    assert s["pods"]["time_ratio_ci95"][0] <= s["pods"]["time_ratio_vs_grpo"] <= s["pods"]["time_ratio_ci95"][1]
    written = json.loads((tmp_path / "summary.json").read_text())["metrics"]["sampled"]["pods"]
    assert written["step_ratio_ci95"] == [lo, hi]
    assert f"2.00 [{lo:.2f}, {hi:.2f}]" in capsys.readouterr().out
    assert [c[0].axis for c in drawn] == ["steps", "hours"] * 2 and all(len(c) == 3 for c in drawn)
    pods_steps = drawn[0][1]
    assert pods_steps.x.tolist() == [0, 25, 50, 75, 100] and pods_steps.mean == pytest.approx(curves["pods"])
    assert pods_steps.mean[0] - pods_steps.half_width[0] < 0 and pods_steps.lo[0] == 0.0  # clipped to [0, 1]
    assert min(float(c.lo.min()) for cs in drawn for c in cs) >= 0.0
    assert (tmp_path / "demo_compare.pdf").is_file()
    diffs = json.loads((tmp_path / "summary.json").read_text())["final_differences"]["sampled"]
    assert list(diffs) == ["pods - grpo", "random - grpo", "pods - random"]  # PAIRS whose arms ran
    assert diffs["pods - grpo"]["diff"] == pytest.approx(0.1) and diffs["random - grpo"]["diff"] == pytest.approx(0)
    assert 0 < diffs["pods - grpo"]["ci95"][0] <= 0.1 <= diffs["pods - grpo"]["ci95"][1]


def test_commands_share_prompt_stream_and_warm_start(tmp_path):
    args = argparse.Namespace(out=tmp_path, steps=100, eval_every=25, eval_size=300, draws=3)
    cmds = {m: dc.train_command(args, m, 7, Path("/w")) for m in dc.METHODS}
    for m, cmd in cmds.items():
        assert "seed=7" in cmd and "model.name='/w'" in cmd and "warmstart=null" in cmd
        assert "rl.max_steps=100" in cmd and "rl.save_steps=25" in cmd and f"run_name={m}-seed7" in cmd
    assert "rl.n=16" in cmds["grpo"] and "rl.rule=none" in cmds["grpo"]
    assert "rl.rule=random" in cmds["random"] and "rl.n=64" in cmds["random"]
    assert "rl.dynamic_sampling=true" in cmds["grpo-ds"] and "rl.n=16" in cmds["grpo-ds"]
    assert "rl.dynamic_sampling=true" in cmds["pods-ds"] and "rl.n=64" in cmds["pods-ds"]
    assert "rl.dynamic_sampling=false" in cmds["pods"]
    sampled, greedy = dc.eval_overrides(args, tmp_path, False), dc.eval_overrides(args, tmp_path, True)
    assert "--evaluate-run" in dc.eval_command(args, tmp_path) and "demo-compare" in dc.eval_command(args, tmp_path)
    assert cmds["grpo"][cmds["grpo"].index("train") - 1].endswith("sys.exit(main())")  # `pods train`, no checkout needed
    assert "repeats=3" in sampled and "temperature=1.0" in sampled and "seed=1234" in sampled
    assert "temperature=0" in greedy and any(a.endswith("eval_greedy.json") for a in greedy)
    assert any("limit:300" in a for a in sampled)


def test_steps_must_divide(tmp_path):
    with pytest.raises(SystemExit):
        main(["--steps", "30", "--eval-every", "25", "--out", str(tmp_path), "--report-only"])


def test_nothing_to_report_and_eval_every_0_are_one_message_each(tmp_path, capsys):
    code, _, err = exits(main, ["--report-only", "--out", str(tmp_path), "--seeds", "0", "--methods", "grpo"], capsys)
    assert code == 2 and "eval_results.json: missing; train and evaluate this run first" in err
    code, _, err = exits(main, ["--eval-every", "0", "--out", str(tmp_path)], capsys)
    assert code == 2 and "--eval-every must be at least 1, got 0" in err
    assert not any(tmp_path.iterdir())
