"""Offline replay of recorded ledgers: a run's own rule agrees 100 %, damaged ledgers are named, speed (bench)."""

import json
import shutil
import time

import pytest
import torch

from pods.analysis.ledger import read_ledger
from pods.analysis.replay import KEYS, replay, replay_rollout
from pods.analysis.replay_table import COLUMNS, legend, notes, report
from pods.core import ledger as fmt
from pods.core.algorithms import keep
from pods.core.downsample import RULES
from pods.core.ledger_writer import Ledger, switch_off
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
    with pytest.raises(ResultsError, match="step 4 is missing"):
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


# ---- the ledger read back against its run (issue 42 part 1)
def test_a_stray_copy_under_another_name_is_not_counted_and_replay_says_so(tmp_path):
    run = fake_run(tmp_path, steps=4, rounds=1)
    before = replay([run], ["max_variance"])[0]
    d = run / "ledger"
    shutil.copy(d / "steps-00000001-00000004.parquet", d / "steps-1-4.parquet")  # a name the file pattern accepts
    row = replay([run], ["max_variance"])[0]
    assert row["tokens_trained_per_step"] == before["tokens_trained_per_step"] and row["groups"] == before["groups"]
    assert row["not_counted"] == [f"{d / 'steps-1-4.parquet'} is not in {d / fmt.META} (holds steps 1-4): not counted"]
    assert " ".join(("note: " + row["not_counted"][0]).split()) in " ".join(report([row]).split())  # wrapped lines


def test_steps_trained_with_the_ledger_off_are_reported_as_a_gap_not_refused(tmp_path):
    run = fake_run(tmp_path, steps=3, rounds=1)
    switch_off(run, 3, log=lambda line: None)  # resumed from checkpoint-3 with logging.ledger=false ...
    led = Ledger(run, {"n": 8, "m": 3, "rule": "max_variance", "algorithm": "pods", "seed": 0}, resume_step=6)
    for s in (7, 8):  # ... and from checkpoint-6 with it on again
        r = torch.rand(4, 8).round()
        led.record(s, fmt.concat_rows([fmt.group_rows(step=s, round_=0, prompts=[0, 1, 2, 3], status=["trained"] * 4,
                                                      total=r, per_fn={"exact": r}, accuracy=r,
                                                      lengths=torch.ones(4, 8), kept=torch.arange(3).expand(4, 3),
                                                      group=[0, 1, 2, 3])]))
    led.close()
    rec = read_ledger(run)
    assert rec.gaps == [(4, 6, "logging.ledger=false")] and rec.num_steps == 5 and len(rec.steps) == 5 * 4
    row = replay([run], ["max_variance"])[0]
    assert row["steps"] == 5 and row["gaps"] == [[4, 6, "logging.ledger=false"]]
    said = " ".join(report([row]).split())
    assert "note: steps 4-6 not recorded (logging.ledger=false): the figures cover the 5 steps recorded" in said


def test_a_ledger_copied_from_another_run_is_refused(tmp_path):
    run = fake_run(tmp_path, steps=2)  # n = 8
    (run / "config.yaml").write_text("seed: 0\nrl: {n: 16, m: 4, rule: max_variance}\n")  # the run it sits in
    with pytest.raises(ResultsError, match=r"is another run's ledger: it records n = 8 \(this run: 16\); m = 3 "
                                           r"\(this run: 4\)"):
        read_ledger(run)


def test_a_file_of_another_ledger_is_refused_naming_it(tmp_path):
    run, other = fake_run(tmp_path / "a", steps=2, rounds=1), fake_run(tmp_path / "b", steps=2, rounds=1)
    name = "steps-00000001-00000002.parquet"
    shutil.copy(other / "ledger" / name, run / "ledger" / name)
    with pytest.raises(ResultsError, match=f"{name} was written by another ledger"):
        read_ledger(run)


# ---- replay explains its columns and remarks on ties (issue 44 part 4)
def test_the_table_has_a_legend_of_its_columns_and_remarks_rows_that_tie(tmp_path):
    run = fake_run(tmp_path, steps=2, rounds=1, n=4, m=4, rule="none")
    text = report(replay([run], ["none", "max_variance", "random"]))
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["rollout", "rule", "m", "kept"] and len(lines[1].split()) == 11
    legend_text = " ".join(lines[4:11])
    for _, head, meaning in COLUMNS["rollout"]:  # every column, named and explained
        assert f"{head} = {meaning}" in legend_text
    assert lines[4].startswith("rollout columns: m = rollouts kept of each group's n")
    assert "note: none, max_variance, random tie (identical rows)" in text
    assert "note: m = n = 4: every rollout rule keeps every rollout, so there is nothing to choose between" in text


def test_a_prompt_rule_with_nothing_to_act_on_is_remarked():
    row = {"run": "r", "kind": "prompt", "steps": 3, "candidates": 12, "frac_skipped": 0.0, "frac_filtered": 0.0,
           "frac_with_history": 0.0, "frac_unknown": 0.0, "kept_reward_var": 0.1, "frac_all_correct": 0.2,
           "frac_all_wrong": 0.1, "tokens_generated_per_step": 40.0, "agreement": 1.0}
    acts = {**row, "rule": "band", "frac_skipped": 0.25, "frac_with_history": 0.5}
    said = notes([{**row, "rule": "greso"}, acts, {**row, "rule": "snr_top_k", "frac_with_history": float("nan")}])
    assert [" ".join(line.split()) for line in said] == [
        "note: greso had nothing to act on: it skipped no prompt and filtered no group (no offered prompt had a "
        "history yet)", "note: snr_top_k had nothing to act on: it skipped no prompt and filtered no group"]
    assert legend("prompt").startswith("prompt columns: offered = prompts offered to the rule;")
