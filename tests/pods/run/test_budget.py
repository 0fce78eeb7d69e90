"""The token budget (pods.run.budget): the cost from the cost ledger, the stop, the budget-point checkpoints,
and a resumed run that ends where an uninterrupted one does."""

import json

import pytest
import torch
from omegaconf import OmegaConf

from pods.core.cost import COST_TOTAL, GENERATED, TRAINED, spent
from pods.run import budget, trainer
from pods.run.metrics import read_metrics

from helpers import patch_task, skip_reward_check, tiny_cfg

torch.set_num_threads(1)


def rl(**kw):
    return OmegaConf.create({"token_budget": None, "token_budget_weight": 1.0, "save_tokens": None, **kw})


def row(gen, trained):
    return {"cost/tokens_generated_total": gen, "cost/tokens_trained_total": trained}


def test_spent_weighs_trained_tokens_and_starts_at_zero():
    assert (GENERATED, TRAINED) == (COST_TOTAL["tokens_generated"], COST_TOTAL["tokens_trained"])  # the ledger's keys
    assert spent(None, 2.0) == 0.0 and spent({}, 2.0) == 0.0
    assert spent(row(100, 30), 2.5) == pytest.approx(175.0)


def test_exhausted_only_with_a_budget_and_at_or_past_it():
    assert not budget.exhausted(row(10**9, 0), rl())
    assert not budget.exhausted(row(99, 0), rl(token_budget=100))
    assert budget.exhausted(row(90, 5), rl(token_budget=100, token_budget_weight=2.0))


def test_crossed_a_budget_point_once_per_multiple():
    r = rl(save_tokens=100)
    assert budget.crossed(None, row(100, 0), r) and not budget.crossed(None, row(99, 0), r)
    assert budget.crossed(row(90, 0), row(120, 0), r) and not budget.crossed(row(101, 0), row(199, 0), r)
    assert not budget.crossed(row(0, 0), row(10**6, 0), rl())  # no budget points asked for


def train(tmp_path, monkeypatch, *extra):
    patch_task(monkeypatch)
    skip_reward_check(monkeypatch)
    run_dir = trainer.train(tiny_cfg(tmp_path, "rl.max_steps=null", "rl.max_time=null", "rl.save_strategy=no",
                                     *extra))
    return run_dir, read_metrics(run_dir)


def test_run_stops_at_the_budget_and_checkpoints_at_its_points_then_resumes_to_the_same_end(tmp_path, monkeypatch):
    w = 2.0
    _, probe = train(tmp_path / "probe", monkeypatch, "rl.token_budget=1e12", "rl.max_steps=2", "logging.ledger=false")
    per_step = spent(probe[0], w)  # the tiny task's cost of one step
    total, every = 5.5 * per_step, 1.2 * per_step
    extra = [f"rl.token_budget={total}", f"rl.token_budget_weight={w}", f"rl.save_tokens={every}"]
    run_dir, rows = train(tmp_path / "a", monkeypatch, *extra)
    costs = [0.0] + [spent(r, w) for r in rows]
    assert costs[-2] < total <= costs[-1]  # stopped by the first step that reached the budget
    points = {i for i in range(1, len(costs)) if costs[i] // every > costs[i - 1] // every}
    saved = sorted(json.loads((p / "state.json").read_text())["step"] for p in run_dir.glob("checkpoint-*"))
    assert saved == sorted(points | {len(rows)}) and len(points) >= 3
    # a rerun is already at the budget: nothing more is trained
    _, again = train(tmp_path / "a", monkeypatch, *extra)
    assert len(again) == len(rows)
    # a run stopped early by steps, then rerun with the budget alone, ends at the same step and cost
    _, part = train(tmp_path / "b", monkeypatch, *extra, "rl.max_steps=2")
    assert len(part) == 2
    _, rest = train(tmp_path / "b", monkeypatch, *extra)
    assert [r["step"] for r in rest] == [r["step"] for r in rows]
    assert spent(rest[-1], w) == pytest.approx(costs[-1])


def profile_file(tmp_path, **constants):
    from dataclasses import asdict

    from pods.core import profiles

    data = asdict(profiles.load("cpu"))
    data["constants"] = {**{k: 0.0 for k in data["constants"]}, **constants}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_a_seconds_budget_prices_each_step_on_the_profile(tmp_path):
    prof = profile_file(tmp_path, fixed=1.0, decode_step=0.5, update_token=0.01, reference_token=100.0)
    r = rl(token_budget=10.0, budget_cost="seconds", budget_profile=prof, beta=0.0, reference_pass="auto",
           save_tokens=4.0)
    totals = {"step": 2, "cost/decode_steps_total": 6, "cost/tokens_updated_total": 50, **row(999, 999)}
    assert budget.cost(totals, r) == pytest.approx(2 * 1.0 + 6 * 0.5 + 50 * 0.01)  # no reference pass: not priced
    assert budget.cost(totals, OmegaConf.merge(r, {"reference_pass": "always"})) == pytest.approx(5.5 + 5000)
    assert not budget.exhausted(totals, r) and budget.exhausted({**totals, "step": 7}, r)
    assert budget.crossed(None, totals, r) and not budget.crossed(totals, {**totals, "cost/decode_steps_total": 7}, r)


def test_a_run_stops_at_its_modelled_seconds(tmp_path, monkeypatch):
    prof = profile_file(tmp_path, fixed=2.0, padded_token=0.01)
    _, rows = train(tmp_path / "run", monkeypatch, "rl.token_budget=10", "rl.budget_cost=seconds",
                    f"rl.budget_profile={prof}", "logging.ledger=false")
    spent = [2.0 * r["step"] + 0.01 * r["cost/tokens_padded_total"] for r in rows]
    assert spent[-2] < 10 <= spent[-1]
