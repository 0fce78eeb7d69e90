"""The loop with dynamic sampling and samples.jsonl (tiny model, CPU): refill, the accuracy filter on the kept
rollouts, short batches, a signal between rounds, exact resume, what samples.jsonl holds and print_samples shows."""

import json
from pathlib import Path

import pytest
import torch

from pods.run import sampler, trainer
from pods.run.metrics import read_metrics

from helpers import fake_score, patch_task, skip_reward_check, tiny_cfg

HERE = Path(__file__).resolve().parent
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
    monkeypatch.setattr(sampler, "score", score)
    run_dir = trainer.train(tiny_cfg(tmp_path, *extra), **kw)
    return run_dir, read_metrics(run_dir)


DS = ("rl.dynamic_sampling=true", "rl.max_generation_rounds=4", "rl.max_steps=4", "rl.dynamic_sampling_metric=total")


def test_dynamic_sampling_trains_only_groups_with_spread(tmp_path, monkeypatch):
    _, plain = run(tmp_path / "plain", monkeypatch, "rl.max_steps=4")
    _, ds = run(tmp_path / "ds", monkeypatch, *DS)
    assert [r["generation_rounds"] for r in plain] == [1] * 4 and [r["prompts_drawn"] for r in plain] == [2] * 4
    assert min(r["frac_groups_with_spread"] for r in plain) < 1  # odd answers give flat groups
    for r in ds:
        assert r["prompts_drawn"] == 2 * r["generation_rounds"]
        if r["generation_rounds"] < 4:  # the batch was filled: every trained group has spread, also the kept m
            assert r["frac_groups_with_spread"] == 1.0 and r["frac_groups_with_spread_kept"] == 1.0
            assert (r["groups_trained"], r["groups_informative"], r["short_batch"]) == (2, 2, False)
    assert max(r["generation_rounds"] for r in ds) > 1
    positions = [r["data_position"] for r in ds]
    assert positions == [sum(r["prompts_drawn"] for r in ds[:i + 1]) for i in range(4)]  # drawn prompts advance it


def test_every_group_flat_spends_every_round_and_still_steps(tmp_path, monkeypatch, capsys):
    _, rows = run(tmp_path, monkeypatch, *DS, "rl.max_generation_rounds=3", score=zero_score)
    assert [r["generation_rounds"] for r in rows] == [3] * 4 and [r["prompts_drawn"] for r in rows] == [6] * 4
    assert all(r["frac_groups_with_spread"] == 0.0 and r["frac_drawn_informative"] == 0.0 for r in rows)
    assert all(r["short_batch"] and r["groups_informative"] == 0 and r["groups_trained"] == 2 for r in rows)
    assert all(not r["skipped"] and r["grad_norm"] == 0.0 for r in rows)  # zero advantages: no gradient
    assert capsys.readouterr().err.count("warning: dynamic sampling found 0 of 2 groups") == 1  # said once


def right_answer_score(texts, answers, cols, reward_cfg):
    """total: digit fraction + right; right: a coin flip per completion (the parity of its characters)."""
    r, _ = fake_score(texts, answers, cols, reward_cfg)
    right = torch.tensor([float(sum(map(ord, t)) % 2 == 0) for t in texts])
    return r + right, {"digits": r, "right": right}


def test_the_default_filter_is_accuracy_of_the_kept_rollouts(tmp_path, monkeypatch):
    """Dynamic sampling's default (DAPO): each trained group's KEPT rollouts hold a right and a wrong answer,
    also with rule=random, where the kept m can be all right although the n are not."""
    batches, real = [], trainer.collect
    monkeypatch.setattr(trainer, "collect", lambda *a, **kw: batches.append(real(*a, **kw)) or batches[-1])
    extra = ("rl.dynamic_sampling=true", "rl.max_generation_rounds=8", "rl.max_steps=3", "rl.rule=random",
             "dataset.accuracy_reward=right")
    _, rows = run(tmp_path, monkeypatch, *extra, score=right_answer_score)
    assert len(batches) == 3
    for row, b in zip(rows, batches):
        kept_right = b.correct.gather(1, b.idx)  # [G, m]
        assert row["groups_trained"] == b.idx.shape[0] and row["short_batch"] == b.short
        if not b.short:
            assert kept_right.any(1).all() and (~kept_right).any(1).all() and row["groups_informative"] == 2


def test_short_batch_partial_trains_fewer_groups_and_error_stops_keeping_the_last_step(tmp_path, monkeypatch):
    _, rows = run(tmp_path / "partial", monkeypatch, *DS, "rl.max_generation_rounds=2", score=half_flat_score)
    short = [r for r in rows if r["short_batch"]]
    assert all(r["groups_trained"] == r["groups_informative"] < 2 or r["groups_informative"] == 0 for r in short)
    from pods.core.collect import ShortBatchError

    flat_from_step_2 = lambda texts, *a: zero_score(texts, *a) if calls.append(1) or len(calls) > 1 \
        else fake_score(texts, *a)  # noqa: E731
    calls = []
    with pytest.raises(ShortBatchError) as err:
        run(tmp_path / "error", monkeypatch, *DS, "rl.max_generation_rounds=2", "rl.short_batch=error",
            "rl.save_steps=100", score=flat_from_step_2)
    run_dir = tmp_path / "error" / "t"
    assert "dynamic sampling found 0 of 2 groups whose kept rollouts differ in total after 2 generation rounds" \
        in str(err.value) and f"resumes from {run_dir / 'checkpoint-1'})" in str(err.value)
    assert [r["step"] for r in read_metrics(run_dir)] == [1] and (run_dir / "checkpoint-1" / "state.json").is_file()


def test_a_signal_between_generation_rounds_ends_a_step_that_a_flat_reward_would_hold(tmp_path, monkeypatch):
    """Always flat from step 2 on, 32 rounds allowed: SIGTERM during step 2's third round stops it there."""
    import os
    import signal

    from pods.run.guard import Interrupted

    calls = []

    def flat_then_signal(texts, answers, cols, reward_cfg):
        calls.append(1)
        if len(calls) == 1:
            return fake_score(texts, answers, cols, reward_cfg)
        if len(calls) == 4:  # step 2, generation round 3
            os.kill(os.getpid(), signal.SIGTERM)
        return zero_score(texts, answers, cols, reward_cfg)

    with pytest.raises(Interrupted) as err:
        run(tmp_path, monkeypatch, *DS, "rl.max_generation_rounds=32", "rl.max_steps=3", score=flat_then_signal)
    run_dir = tmp_path / "t"
    assert len(calls) == 4 and err.value.exit_code == 143  # no round after the signal's
    assert "after step 1 (during step 2's generation rounds: that step is dropped and runs again on resume)" \
        in str(err.value) and err.value.checkpoint == run_dir / "checkpoint-1"
    assert [r["step"] for r in read_metrics(run_dir)] == [1]


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
