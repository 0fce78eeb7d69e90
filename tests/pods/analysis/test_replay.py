"""Offline replay of recorded ledgers: a run's own rule agrees 100 %, damaged ledgers are named, speed (bench)."""

import json
import time

import pytest
import torch

from pods.analysis.ledger import read_ledger
from pods.analysis.replay import KEYS, replay, replay_rollout
from pods.core import ledger as fmt
from pods.core.algorithms import keep
from pods.core.downsample import RULES
from pods.core.ledger_writer import Ledger
from pods.errors import ConfigError, ResultsError


def fake_run(run_dir, *, steps=6, B=4, n=8, m=3, rule="max_variance", seed=0, rounds=2, levels=2):
    """A ledger as the trainer writes it: per step `rounds` rounds of B groups, each selected by `rule` with the
    run's generator; the first round's groups trained, the later ones dropped (as dynamic sampling drops)."""
    gen, data = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed + 1)
    led = Ledger(run_dir, {"n": n, "m": m, "rule": rule, "algorithm": "pods", "seed": seed,
                           "scale_rewards": "group", "advantage_std": "sample"})
    for s in range(1, steps + 1):
        parts = []
        for r in range(rounds):
            total = torch.randint(0, levels, (B, n), generator=data).float() / (levels - 1)  # [B, n]
            idx = keep(total, "pods", m, rule, generator=gen)
            trained = r == 0
            parts.append(fmt.group_rows(step=s, round_=r, prompts=list(range(r * B, r * B + B)),
                                        status=["trained" if trained else "dropped"] * B, total=total,
                                        per_fn={"exact": total}, accuracy=total,
                                        lengths=torch.randint(1, 9, (B, n), generator=data), kept=idx,
                                        group=list(range(B)) if trained else None))
        led.record(s, fmt.concat_rows(parts))
    led.close()
    return run_dir


@pytest.mark.parametrize("rule", ["max_variance", "random", "max_reward", "percentile"])
def test_replaying_a_runs_own_rule_agrees_fully(tmp_path, rule):
    rec = read_ledger(fake_run(tmp_path, rule=rule))
    row = replay_rollout(rec, rule)
    assert row["agreement"] == 1.0 and row["agreement_rollouts"] == 1.0
    assert row["groups"] == 6 * 2 * 4 and set(KEYS) <= set(row)


def test_the_reported_quantities_are_computed_from_the_kept_rewards(tmp_path):
    rec = read_ledger(fake_run(tmp_path, rule="max_variance", steps=2, rounds=1, B=2, n=4, m=2))
    rec.rewards[:] = [[1, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [0, 1, 1, 0]]
    rec.accuracy[:] = rec.rewards
    rec.lengths[:] = [[1, 2, 3, 4]] * 4
    row = replay_rollout(rec, "max_variance", m=2)  # keeps {1, 0}, flat, flat, {1, 0}
    assert row["kept_reward_var"] == pytest.approx((0.25 + 0 + 0 + 0.25) / 4)
    assert row["frac_all_correct"] == 0.25 and row["frac_all_wrong"] == 0.25
    assert row["frac_zero_adv"] == 0.5  # the two flat groups
    max_reward = replay_rollout(rec, "max_reward", m=2)
    assert max_reward["frac_all_correct"] == 0.5 and max_reward["kept_reward_var"] == pytest.approx(0.25 / 4)
    assert row["tokens_trained"] > 0 and row["tokens_trained_per_step"] == row["tokens_trained"] / 2


def test_another_rule_or_m_disagrees_and_every_run_gets_a_row(tmp_path):
    a, b = fake_run(tmp_path / "a", rule="max_variance"), fake_run(tmp_path / "b", rule="max_variance", seed=3)
    rows = replay([a, b], ["max_variance", "max_reward"], m=2)
    assert [(r["run"], r["rule"]) for r in rows] == [(str(a), "max_variance"), (str(a), "max_reward"),
                                                      (str(b), "max_variance"), (str(b), "max_reward")]
    assert all(r["m"] == 2 for r in rows) and rows[1]["agreement"] != 1.0


def test_bad_rules_and_budgets_are_config_errors(tmp_path):
    run = fake_run(tmp_path)
    with pytest.raises(ConfigError, match="did you mean max_variance"):
        replay([run], ["max_varience"])
    with pytest.raises(ConfigError, match="m must lie in 1..8"):
        replay([run], ["max_variance"], m=9)


def test_missing_damaged_truncated_and_foreign_ledgers_are_named(tmp_path):
    with pytest.raises(ResultsError, match="has no rollout ledger"):
        read_ledger(tmp_path)
    run = fake_run(tmp_path / "r", steps=3)
    files = sorted((run / "ledger").glob("steps-*.parquet"))
    data = files[0].read_bytes()
    files[0].write_bytes(data[: len(data) // 2])  # cut short
    with pytest.raises(ResultsError, match="cut short or damaged"):
        read_ledger(run)
    files[0].unlink()
    run2 = fake_run(tmp_path / "r2", steps=3)
    led = Ledger(run2, {}, resume_step=3)
    led.record(5, fmt.concat_rows([fmt.skipped_rows(step=5, round_=0, prompts=[1], reward_names=["exact"])]))
    led.close()
    with pytest.raises(ResultsError, match="steps 4 are missing"):
        read_ledger(run2)
    (run / "ledger" / fmt.META).write_text(json.dumps({"format": fmt.FORMAT, "version": 0}))
    with pytest.raises(ResultsError, match="version 0"):
        read_ledger(run)


@pytest.mark.bench
def test_bench_replay_of_every_rule_over_100k_groups_of_64(tmp_path):
    """Issue 30: all rollout rules over 100,000 recorded groups of n = 64 in under 60 s on 2 cores."""
    fake_run(tmp_path, steps=1000, B=50, n=64, m=16, rounds=2)  # 100,000 groups
    start = time.perf_counter()
    rec = read_ledger(tmp_path)
    read = time.perf_counter() - start
    rules = [r for r in RULES if r != "none"]
    rows = [replay_rollout(rec, r) for r in rules]
    took = time.perf_counter() - start
    print(f"\nreplay: read {len(rec.steps)} groups in {read:.1f} s; {len(rules)} rules in {took:.1f} s "
          f"({len(rules) * len(rec.steps) / took:,.0f} group-replays/s)")
    assert len(rows) == len(rules)
