"""The loop with dynamic sampling and samples.jsonl (tiny model, CPU): refill, flat edge cases, exact
resume, what samples.jsonl holds and what print_samples shows."""

import json
from pathlib import Path

import pytest
import torch

from pods.run import trainer
from pods.run.metrics import read_metrics

HERE = Path(__file__).resolve().parent
from helpers import fake_score, patch_task, skip_reward_check, tiny_cfg

torch.set_num_threads(1)


def half_flat_score(texts, answers, cols, reward_cfg):
    """Digit-fraction reward, but 0 for every completion of a prompt with an odd answer: those groups are flat."""
    r, _ = fake_score(texts, answers, cols, reward_cfg)
    r = r * torch.tensor([float(int(a) % 2 == 0) for a in answers])
    return r, {"digits": r}


def zero_score(texts, answers, cols, reward_cfg):
    r = torch.zeros(len(texts))
    return r, {"digits": r}


class Crash(Exception):
    pass


def run(tmp_path, monkeypatch, *extra, score=half_flat_score, **kw):
    patch_task(monkeypatch)
    skip_reward_check(monkeypatch)
    monkeypatch.setattr(trainer, "score", score)
    run_dir = trainer.train(tiny_cfg(tmp_path, *extra), **kw)
    return run_dir, read_metrics(run_dir)


DS = ("rl.dynamic_sampling=true", "rl.max_generation_rounds=4", "rl.max_steps=4")


def test_dynamic_sampling_trains_only_groups_with_spread(tmp_path, monkeypatch):
    _, plain = run(tmp_path / "plain", monkeypatch, "rl.max_steps=4")
    _, ds = run(tmp_path / "ds", monkeypatch, *DS)
    assert [r["generation_rounds"] for r in plain] == [1] * 4 and [r["prompts_drawn"] for r in plain] == [2] * 4
    assert min(r["frac_groups_with_spread"] for r in plain) < 1  # odd answers give flat groups
    for r in ds:
        assert r["prompts_drawn"] == 2 * r["generation_rounds"]
        if r["generation_rounds"] < 4:  # the batch was filled: every trained group has spread, also the kept m
            assert r["frac_groups_with_spread"] == 1.0 and r["frac_groups_with_spread_kept"] == 1.0
    assert max(r["generation_rounds"] for r in ds) > 1
    positions = [r["data_position"] for r in ds]
    assert positions == [sum(r["prompts_drawn"] for r in ds[:i + 1]) for i in range(4)]  # drawn prompts advance it


def test_every_group_flat_spends_every_round_and_still_steps(tmp_path, monkeypatch):
    _, rows = run(tmp_path, monkeypatch, *DS, "rl.max_generation_rounds=3", score=zero_score)
    assert [r["generation_rounds"] for r in rows] == [3] * 4 and [r["prompts_drawn"] for r in rows] == [6] * 4
    assert all(r["frac_groups_with_spread"] == 0.0 and r["frac_drawn_with_spread"] == 0.0 for r in rows)
    assert all(not r["skipped"] and r["grad_norm"] == 0.0 for r in rows)  # zero advantages: no gradient


def test_dynamic_sampling_resumes_exactly(tmp_path, monkeypatch):
    extra = (*DS, "rl.save_steps=2")
    _, straight = run(tmp_path / "straight", monkeypatch, *extra)

    def crash(row, policy, generator):
        if row["step"] == 3:
            raise Crash()

    with pytest.raises(Crash):
        run(tmp_path / "crashed", monkeypatch, *extra, on_step=crash)
    _, resumed = run(tmp_path / "crashed", monkeypatch, *extra)
    assert [r["step"] for r in resumed] == [1, 2, 3, 4]
    for a, b in zip(resumed, straight):
        for key in ("data_position", "prompts_drawn", "generation_rounds", "reward/total", "loss", "grad_norm"):
            assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-7), (a["step"], key)


def test_samples_jsonl_holds_all_n_completions_with_rewards_and_kept_flags(tmp_path, monkeypatch, capsys):
    extra = ("logging.samples_every=2", "logging.samples_prompts=2", "logging.print_samples=true", "rl.max_steps=4")
    run_dir, _ = run(tmp_path, monkeypatch, *extra, score=fake_score)
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 2, 4, 4]
    for r in rows:
        assert len(r["completions"]) == 8 and sum(c["kept"] for c in r["completions"]) == 4  # n = 8, m = 4
        assert r["prompt"].endswith("=") and r["answer"].isdigit()
        for c in r["completions"]:
            assert set(c["rewards"]) == {"digits"} and c["total"] == pytest.approx(c["rewards"]["digits"])
    out = capsys.readouterr().out
    assert "step 2 kept-best" in out and "step 4 kept-worst" in out


def test_samples_rows_after_the_resumed_checkpoint_are_dropped(tmp_path, monkeypatch):
    extra = ("logging.samples_every=1", "logging.samples_prompts=1", "rl.max_steps=4", "rl.save_steps=2")

    def crash(row, policy, generator):
        if row["step"] == 3:
            raise Crash()

    with pytest.raises(Crash):
        run(tmp_path, monkeypatch, *extra, score=fake_score, on_step=crash)
    run_dir, _ = run(tmp_path, monkeypatch, *extra, score=fake_score)
    steps = [json.loads(line)["step"] for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]  # step 3 (after checkpoint-2) was trained again and logged once


def test_samples_every_zero_writes_nothing(tmp_path, monkeypatch):
    run_dir, _ = run(tmp_path, monkeypatch, "logging.samples_every=0", "rl.max_steps=2", score=fake_score)
    assert not (run_dir / "samples.jsonl").exists()
