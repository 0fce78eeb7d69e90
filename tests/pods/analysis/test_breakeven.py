"""pods.analysis.breakeven: the fixed part of a step at which an arm's budget ratio to GRPO's final reaches 1;
pods.analysis.traces on a modelled-seconds axis."""

import json

import numpy as np
import pytest

from pods.analysis.breakeven import break_even, crossing_one, describe, draw_break_even, markdown
from pods.analysis.traces import Trace, read_trace
from pods.core.timing import CONSTANTS, Meter


def trace(var_per_step, slope, steps, every, noise=0.0):
    """A run whose accuracy rises by `slope` per step and whose steps each cost `var_per_step` variable seconds."""
    s = np.arange(0, steps + 1, every, dtype=float)
    acc = 0.1 + slope * s + noise * (s > 0)
    return Trace(cost=var_per_step * s, steps=s, seconds=s, acc={"sampled": acc, "greedy": acc + 0.01})


def test_the_break_even_is_where_the_larger_steps_stop_costing_more_than_they_gain():
    # GRPO: 1 s of variable cost per step; the arm: 2 s per step (4x the rollouts) but 1.5x the progress per step.
    # Compared up to the budget both reached, the arm is behind below f = 1 s (it never reaches GRPO's final: ratio
    # 0) and its ratio is 1.5 (1 + f) / (2 + f) from there on: 1 at f = 1 s, 1.25 at 4 s
    grpo = [trace(1.0, 0.001, 200, 20, noise=e) for e in (-0.002, 0.0, 0.002, 0.001)]
    arm = [trace(2.0, 0.0015, 100, 10, noise=e) for e in (0.001, -0.001, 0.0, 0.002)]
    fixed = np.linspace(0, 4, 17)  # holds 1.0
    be = break_even(arm, grpo, fixed=fixed, points=10, grpo_step=1.0, resamples=300)
    s = be["sampled"]
    assert s["ratio"][0] == 0.0 and s["ratio"][-1] == pytest.approx(1.25, abs=0.03)
    assert s["fixed"] == pytest.approx(1.0, abs=0.1) and s["direction"] == "gains above"
    assert s["ci95"][0] <= s["fixed"] <= s["ci95"][1] and s["share"] == pytest.approx(s["fixed"] / (s["fixed"] + 1))
    assert "1.0" in describe(s, 4.0) and "gains above" in describe(s, 4.0)


def test_no_break_even_where_the_ratio_stays_on_one_side():
    grpo = [trace(1.0, 0.001, 200, 20, noise=e) for e in (-0.001, 0.0, 0.001)]
    faster = [trace(1.0, 0.002, 200, 20, noise=e) for e in (0.0, 0.001, -0.001)]  # same cost, twice the progress
    be = break_even(faster, grpo, fixed=np.linspace(0, 5, 6), points=10, grpo_step=1.0, resamples=200)
    assert be["sampled"]["fixed"] is None and be["sampled"]["ahead_everywhere"]
    assert describe(be["sampled"], 5.0) == "none: ratio > 1 for every fixed part up to 5 s"
    assert "| b |" in markdown({"b": ("b", be)})


def test_crossing_one_interpolates_and_is_nan_without_a_crossing():
    f = np.array([0.0, 1.0, 2.0])
    assert crossing_one(f, np.array([0.5, 1.5, 2.0])) == pytest.approx(0.5)
    assert np.isnan(crossing_one(f, np.array([1.2, 1.5, 2.0])))
    assert crossing_one(f, np.array([[0.8, 1.2, 1.0], [2.0, 0.0, 0.0]])) == pytest.approx([0.5, 0.5])


def test_the_figure_names_its_axes_in_words(tmp_path):
    grpo = [trace(1.0, 0.001, 200, 20, noise=e) for e in (-0.002, 0.0, 0.002)]
    arm = [trace(2.0, 0.0015, 100, 10, noise=e) for e in (0.001, -0.001, 0.0)]
    be = break_even(arm, grpo, fixed=np.linspace(0, 4, 9), points=10, grpo_step=1.0, resamples=100)
    paths = draw_break_even({"pods": ("PODS", be)}, tmp_path, "l40s-unsloth")
    assert {p.suffix for p in paths} >= {".png"} and all(p.stat().st_size > 0 for p in paths)


def test_a_trace_on_the_modelled_seconds_axis_prices_steps_and_the_ledgers_totals(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    rows = [{"step": s, "cost/tokens_generated": 100, "cost/tokens_trained": 50, "cost/rounds": 1,
             "cost/rollouts_generated": 10, "cost/generation_batches": 1, "cost/decode_steps": 12,
             **{f"cost/{k}_total": v * s for k, v in (("tokens_generated", 100), ("tokens_trained", 50),
                                                       ("decode_steps", 12), ("generation_batches", 1))}}
            for s in range(1, 11)]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("eval_results.json", "eval_greedy.json"):
        (d / name).write_text(json.dumps({k: {"step": s, "arithmetic": {"ans_acc": [0.1 * s]}} for k, s in
                                          (("base", 0), ("checkpoint-5", 5), ("checkpoint-10", 10))}))
    c = {**{k: 0.0 for k in CONSTANTS}, "fixed": 2.0, "decode_step": 0.5, "token": 0.01}
    tr = read_trace(d, Meter(constants=c), {"sampled": "eval_results.json", "greedy": "eval_greedy.json"})
    assert tr.cost.tolist() == pytest.approx([0, 5 * (2 + 6 + 1), 10 * (2 + 6 + 1)])
    assert read_trace(d, Meter(constants=c).with_fixed(0.0), {"sampled": "eval_results.json"}).cost[-1] == 70
    assert read_trace(d, 2.0, {"sampled": "eval_results.json"}).cost[-1] == 2000  # tokens: 100 + 2 x 50 a step
