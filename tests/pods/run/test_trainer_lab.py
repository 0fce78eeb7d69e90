"""The selection lab in the loop (tiny model, CPU): the rollout ledger and the cost ledger of every step, a prompt
rule's choices, a token mask, the m schedule, allocation rules' rows of unequal n; kill -9 + resume keeps the ledger
and the prompt rule's choices."""

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds
import pytest
import torch

from pods.analysis.ledger import read_ledger
from pods.analysis.replay import replay
from pods.errors import CheckpointError
from pods.run import prepare, trainer
from pods.run.metrics import read_metrics

from helpers import patch_task, skip_reward_check, tiny_cfg, train_killed_at

ROOT = Path(__file__).resolve().parents[3]
torch.set_num_threads(1)


def run(tmp_path, monkeypatch, *extra, **kw):
    patch_task(monkeypatch)
    skip_reward_check(monkeypatch)
    run_dir = trainer.train(tiny_cfg(tmp_path, *extra), **kw)
    return run_dir, read_metrics(run_dir)


def ledger(run_dir):
    return ds.dataset(run_dir / "ledger").to_table().to_pandas().sort_values(["step", "round", "slot"])


def test_every_step_is_in_the_ledger_and_its_cost_in_metrics(tmp_path, monkeypatch):
    run_dir, rows = run(tmp_path, monkeypatch)  # B = 2, n = 8, m = 4, 3 steps
    df = ledger(run_dir)
    assert df.step.tolist() == [1, 1, 2, 2, 3, 3] and set(df.status) == {"trained"}
    assert df.n.tolist() == [8] * 6 and all(len(k) == 4 for k in df.kept)
    for _, r in df.iterrows():  # entropy measured exactly on the trained rollouts
        measured = {j for j, e in enumerate(r.entropy) if e == e}
        assert measured == set(r.kept.tolist()) and all(e >= 0 for e in r.entropy[list(measured)])
    meta = json.loads((run_dir / "ledger" / "_ledger.json").read_text())
    assert (meta["n"], meta["m"], meta["rule"], meta["accuracy_reward"]) == (8, 4, "max_variance", "digits")
    for row, (_, step) in zip(rows, df.groupby("step")):
        assert row["cost/tokens_generated"] == sum(sum(x) for x in step.length)
        assert row["cost/tokens_trained"] == sum(sum(r.length[r.kept]) for _, r in step.iterrows())
        assert row["cost/rollouts_generated"] == 16 and row["cost/rollouts_trained"] == 8
        assert row["cost/prompts_skipped"] == 0 and row["cost/rounds"] == 1 and "time/ledger" in row
        longest = max(max(x) for x in step.length)  # one generation call, decoded as one batch of 16
        assert row["cost/generation_batches"] == 1 and row["cost/decode_steps"] == longest
        assert row["cost/tokens_padded"] == 16 * longest and row["cost/prompt_tokens"] > 0
        assert row["cost/context_tokens"] > row["cost/tokens_generated"]  # every token attends to its prompt
        assert row["cost/tokens_updated"] == row["cost/tokens_trained"] + row["cost/prompt_tokens"] / 2  # 8 of 16
    assert rows[-1]["cost/tokens_generated_total"] == sum(r["cost/tokens_generated"] for r in rows)
    assert replay([run_dir], ["max_variance"])[0]["agreement"] == 1.0


def test_the_ledger_can_be_turned_off(tmp_path, monkeypatch):
    run_dir, rows = run(tmp_path, monkeypatch, "logging.ledger=false", "rl.max_steps=1")
    assert not (run_dir / "ledger").exists() and "cost/tokens_generated" in rows[0]


def test_dynamic_sampling_records_the_dropped_groups(tmp_path, monkeypatch):
    run_dir, rows = run(tmp_path, monkeypatch, "rl.dynamic_sampling=true", "rl.dynamic_sampling_metric=total",
                        "rl.max_generation_rounds=3", "rl.max_steps=2")
    df = ledger(run_dir)
    for row, (_, step) in zip(rows, df.groupby("step")):
        assert (step.status == "trained").sum() == row["groups_trained"]
        assert len(step) == row["prompts_drawn"] and step["round"].max() + 1 == row["cost/rounds"]


def test_a_prompt_rule_skips_prompts_before_generation(tmp_path, monkeypatch):
    # band keeps prompts whose last pass rate is in [0.05, 0.95] (never-seen prompts pass): the second epoch of the
    # 40 prompts (10 steps of 4) skips the all-right and all-wrong ones
    run_dir, rows = run(tmp_path, monkeypatch, "rl.prompt_rule=band", "rl.prompt_rule_options={low: 0.05, high: 0.95}",
                        "rl.prompts_per_step=4", "rl.max_steps=13")
    df = ledger(run_dir)
    skipped = df[df.status == "skipped"]
    assert len(skipped) == rows[-1]["cost/prompts_skipped_total"] > 0
    assert all(len(r) == 0 for r in skipped.reward)
    assert rows[-1]["data_position"] == len(df)  # every prompt offered is recorded: generated or skipped
    replayed = {r["rule"]: r for r in replay([run_dir], ["band", "snr_top_k"])}
    assert replayed["band"]["agreement"] == 1.0 and replayed["band"]["frac_skipped"] > 0  # its own rule, replayed
    assert replayed["snr_top_k"]["frac_filtered"] >= 0.5  # a group filter: keeps 1 of each step's 2 to 4 groups


def test_a_token_mask_trains_fewer_tokens_and_the_m_schedule_moves_m(tmp_path, monkeypatch):
    run_dir, rows = run(tmp_path, monkeypatch, "rl.token_mask=entropy_top", "rl.token_mask_quantile=0.5",
                        "rl.m_schedule=linear", "rl.m=2", "rl.m_end=8", "rl.m_horizon=3", "rl.max_steps=4")
    assert all(r["cost/tokens_trained"] < sum_kept for r, sum_kept in
               zip(rows, [sum(sum(x.length[x.kept]) for _, x in s.iterrows())
                          for _, s in ledger(run_dir).groupby("step")]))
    kept = [len(k) for k in ledger(run_dir).groupby("step").kept.first()]
    assert kept[0] == 2 and kept[-1] == 8 and kept == sorted(kept)


ALLOCATIONS = {  # B = 4; speed: screen 2 of n = 8; ada: rounds of 4 up to n = 16, 40 rollouts a step at most
    "speed": ["rl.allocation=speed", "rl.allocation_options={screen: 2}", "rl.prompts_per_step=4", "rl.max_steps=4"],
    "ada": ["rl.allocation=ada", "rl.allocation_options={round_n: 4}", "rl.n=16", "rl.rule=balanced",
            "rl.prompts_per_step=4", "rl.allocation_budget=40", "rl.max_steps=3"],
}


def check_allocation_steps(rows, df, m=4):
    """Each step's ledger rows hold each prompt's own n; the cost ledger counts exactly those rollouts."""
    for row, (_, step) in zip(rows, df.groupby("step")):
        trained = step[step.status == "trained"]
        assert [len(r) for r in step.reward] == step.n.tolist() == [len(x) for x in step.length]
        assert row["cost/rollouts_generated"] == step.n.sum()
        assert row["cost/tokens_generated"] == sum(sum(x) for x in step.length)
        assert row["groups_trained"] == len(trained) and row["cost/rollouts_trained"] == m * len(trained)
        assert all(len(k) == m and max(k) < n for k, n in zip(trained.kept, trained.n))  # m of its own rollouts


@pytest.mark.parametrize("name", ALLOCATIONS)
def test_an_allocation_rule_gives_each_prompt_its_own_n_in_the_ledger_and_the_cost(tmp_path, monkeypatch, name):
    run_dir, rows = run(tmp_path, monkeypatch, *ALLOCATIONS[name])
    df = ledger(run_dir)
    check_allocation_steps(rows, df)
    if name == "speed":  # screened out: dropped groups of 2 with no selection; finished: all 8, trained
        assert set(df[df.status == "trained"].n) == {8} and set(df[df.status == "dropped"].n) == {2}
        assert all(len(k) == 0 for k in df[df.status == "dropped"].kept) and (df.status == "trained").any()
        assert [r["cost/rounds"] for r in rows] == [1 + (s.status == "trained").any() for _, s in df.groupby("step")]
    else:  # every prompt trained, each after its own number of rounds of 4, within the budget
        assert (df.status == "trained").all() and set(df.n) <= {4, 8, 12, 16} and len(set(df.n)) > 1
        assert all(r["cost/rollouts_generated"] <= 40 for r in rows)
        assert [r["cost/rounds"] for r in rows] == [s.n.max() // 4 for _, s in df.groupby("step")]
    own = replay([run_dir], [{"speed": "max_variance", "ada": "balanced"}[name]])[0]
    assert own["agreement"] == 1.0 and own["groups"] == df.kept.map(len).gt(0).sum()  # unequal n replays


def test_speed_with_dynamic_sampling_draws_new_prompts_until_the_batch_is_full(tmp_path, monkeypatch):
    run_dir, rows = run(tmp_path, monkeypatch, *ALLOCATIONS["speed"], "rl.dynamic_sampling=true",
                        "rl.max_generation_rounds=6", "rl.max_steps=2")
    df = ledger(run_dir)
    check_allocation_steps(rows, df)
    for row, (_, step) in zip(rows, df.groupby("step")):
        assert row["prompts_drawn"] == len(step) and row["groups_trained"] == (step.status == "trained").sum()
        assert row["groups_trained"] == 4 or row["short_batch"]


@pytest.mark.parametrize("extra", [
    ["rl.prompt_rule=band", "rl.prompt_rule_options={low: 0.05, high: 0.95}", "rl.token_mask=entropy_top",
     "rl.token_mask_quantile=0.5", *ALLOCATIONS["speed"], "rl.max_steps=12"],  # the second epoch skips prompts
    ["rl.prompt_rule=snr_top_k", "rl.prompt_rule_options={fraction: 0.5}", "rl.token_mask=entropy_top",
     "rl.token_mask_quantile=0.5", *ALLOCATIONS["ada"]],
], ids=["speed-band-entropy_top", "ada-snr_top_k-entropy_top"])
def test_an_allocation_rule_composes_with_prompt_rules_and_token_masks(tmp_path, monkeypatch, extra):
    run_dir, rows = run(tmp_path, monkeypatch, *extra)
    df = ledger(run_dir)
    check_allocation_steps(rows, df[df.status != "skipped"])
    kept_tokens = []
    for row, (_, step) in zip(rows, df.groupby("step")):
        trained = step[step.status == "trained"]
        kept_tokens.append(sum(sum(r.length[r.kept]) for _, r in trained.iterrows()))
        assert row["cost/tokens_trained"] <= kept_tokens[-1]  # the token mask: a subset of the kept rollouts' tokens
        assert row["cost/prompts_skipped"] == (step.status == "skipped").sum()
    assert sum(r["cost/tokens_trained"] for r in rows) < sum(kept_tokens)
    if "rl.allocation=ada" in extra:  # the group filter keeps 2 of the 4 groups, each judged on its own n
        assert all(r["groups_trained"] == 2 for r in rows) and (df.status == "dropped").sum() == 2 * len(rows)
    else:
        assert (df.status == "skipped").any()


@pytest.mark.slow
def test_sigkill_and_resume_keep_the_ledger_and_the_prompt_rules_choices(tmp_path, monkeypatch):
    """GRESO's random skips come from its own generator and history, both checkpointed: the resumed run skips and
    generates what the uninterrupted one did, and its ledger holds every step once."""
    # 8 prompts a step over the 40 in-test prompts: from step 6 on GRESO meets prompts it has a history of
    extra = ["rl.max_steps=9", "rl.save_steps=3", "rl.prompts_per_step=8", "rl.prompt_rule=greso", "rule=random"]
    killed = tmp_path / "killed"
    proc = train_killed_at(killed, extra, 8, timeout=900)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert set(range(1, 7)) <= set(ledger(killed / "t").step)  # flushed with checkpoint-6 (7, 8: buffered)
    resumed_dir, resumed = run(killed, monkeypatch, *extra)
    straight_dir, straight = run(tmp_path / "straight", monkeypatch, *extra)
    a, b = ledger(resumed_dir), ledger(straight_dir)
    assert sorted(set(a.step)) == list(range(1, 10)) and len(a) == len(b)
    cols = ["step", "round", "slot", "prompt", "status", "n"]
    assert a[cols].values.tolist() == b[cols].values.tolist()
    assert [r.tolist() for r in a.reward] == [r.tolist() for r in b.reward]
    assert [r.tolist() for r in a.kept] == [r.tolist() for r in b.kept]
    assert (a.status == "skipped").sum() > 0  # the rule did skip (all-correct / all-wrong streaks)
    assert [r["cost/prompts_skipped"] for r in resumed] == [r["cost/prompts_skipped"] for r in straight]


@pytest.mark.slow
def test_sigkill_and_resume_under_an_allocation_rule_equal_the_uninterrupted_run(tmp_path, monkeypatch):
    """ada's rounds are seeded by (seed, step, generation call) and the random rollout rule draws from the checkpointed
    selection generator: the resumed run generates, keeps and counts what the uninterrupted one did."""
    extra = ["rl.allocation=ada", "rl.allocation_options={round_n: 4}", "rl.n=16", "rl.rule=random",
             "rl.prompts_per_step=4", "rl.allocation_budget=48", "rl.max_steps=7", "rl.save_steps=3"]
    killed = tmp_path / "killed"
    proc = train_killed_at(killed, extra, 5, timeout=900)
    assert proc.returncode == -9, proc.stderr[-2000:]
    resumed_dir, resumed = run(killed, monkeypatch, *extra)
    straight_dir, straight = run(tmp_path / "straight", monkeypatch, *extra)
    a, b = ledger(resumed_dir), ledger(straight_dir)
    assert sorted(set(a.step)) == list(range(1, 8)) and len(a) == len(b) and len(set(a.n)) > 1
    cols = ["step", "round", "slot", "prompt", "status", "n"]
    assert a[cols].values.tolist() == b[cols].values.tolist()
    assert [r.tolist() for r in a.reward] == [r.tolist() for r in b.reward]
    assert [r.tolist() for r in a.kept] == [r.tolist() for r in b.kept]
    keys = ["cost/rollouts_generated", "cost/tokens_generated", "cost/rounds", "cost/tokens_generated_total",
            "cost/generation_batches_total", "cost/decode_steps_total", "cost/tokens_padded_total"]
    assert [[r[k] for k in keys] for r in resumed] == [[r[k] for k in keys] for r in straight]
    check_allocation_steps(straight, b)


def demo(tmp_path, *extra):
    cmd = [sys.executable, "train.py", "experiment=demo", f"output_root={tmp_path}", "run_name=demo", "evaluation=null",
           "logging.progress=false", *extra]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp_path / "demo"


@pytest.mark.slow
def test_replaying_a_demo_runs_own_rule_agrees_fully(tmp_path):
    run_dir = demo(tmp_path, "rl.max_steps=4")
    rows = replay([run_dir], ["all"])
    own = next(r for r in rows if r["rule"] == "max_variance")
    assert own["agreement"] == 1.0 and own["agreement_rollouts"] == 1.0 and own["groups"] == 4 * 16
    assert {r["rule"] for r in rows} >= {"max_variance", "random", "cppo", "gfpo_length"}
    assert all(r["agreement"] < 1.0 for r in rows if r["rule"] in ("max_reward", "gfpo_length"))


@pytest.mark.bench
def test_bench_ledger_overhead_and_size_on_the_demo(tmp_path):
    """Issue 30: the ledger costs under 1 % of a demo step; its size per 1,000 steps."""
    steps = int(os.environ.get("PODS_BENCH_STEPS", "200"))
    start = time.perf_counter()
    run_dir = demo(tmp_path, f"rl.max_steps={steps}")
    rows = read_metrics(run_dir)
    step_time = sum(r["time/step"] for r in rows)
    ledger_time = sum(r.get("time/ledger", 0.0) for r in rows)
    size = sum(p.stat().st_size for p in (run_dir / "ledger").iterdir())
    from pods.core.losses import token_entropy

    logits = torch.randn(256, 6, 259, requires_grad=True)  # the demo's update: 256 rollouts, <= 6 tokens, bytes
    calls = []
    for _ in range(205):  # the median of 200 calls after 5 warm-up calls (the first pays for thread start-up)
        t = time.perf_counter()
        token_entropy(logits)
        calls.append(time.perf_counter() - t)
    entropy = statistics.median(calls[5:])
    print(f"\nledger on the demo ({steps} steps, {time.perf_counter() - start:.0f} s): recording {ledger_time:.3f} s of "
          f"{step_time:.1f} s of steps = {100 * ledger_time / step_time:.2f} %; the entropy in the update "
          f"{1000 * entropy:.2f} ms/step = {100 * entropy * steps / step_time:.2f} %; "
          f"{size / 1e6 * 1000 / steps:.2f} MB per 1,000 steps")
    assert len(rows) == steps


def test_cppo_batch_scope_trains_b_x_m_of_the_batch_with_drawn_advantages(tmp_path, monkeypatch):
    # CPPO's recipe in the loop: B = 4 prompts x n = 8, half pruned over the whole batch (groups keep 0..8)
    run_dir, rows = run(tmp_path, monkeypatch, "rl.prompts_per_step=4", "rl.rule=cppo", "rl.rule_scope=batch",
                        "rl.advantage_over=drawn", "rl.m=4")
    df = ledger(run_dir)
    for (_, step), row in zip(df.groupby("step"), rows):
        assert sum(len(k) for k in step.kept) == 16 == row["cost/rollouts_trained"]  # B x m of the B x n
        assert row["cost/tokens_trained"] == sum(sum(r.length[r.kept]) for _, r in step.iterrows())
        for _, r in step.iterrows():  # entropy measured exactly on the kept rollouts, whatever their number
            assert {j for j, e in enumerate(r.entropy) if e == e} == set(r.kept.tolist())
    assert len({len(k) for k in df.kept}) > 1  # unequal numbers per group
    meta = json.loads((run_dir / "ledger" / "_ledger.json").read_text())
    assert (meta["rule_scope"], meta["advantage_over"]) == ("batch", "drawn")


@pytest.mark.slow
def test_sigkill_then_a_cut_ledger_file_stops_the_resume_and_a_new_ledger_goes_on(tmp_path, monkeypatch):
    """kill -9 in step 5 (checkpoint-4, the ledger flushed to step 4), then its last file cut short: the resume stops
    before the model loads, naming the file, nothing changed; with ledger/ moved aside as the message says, the rerun
    records a new ledger from step 5, which replay reads, reporting steps 1-4 as not recorded."""
    extra = ["rl.max_steps=6", "rl.save_steps=2"]
    proc = train_killed_at(tmp_path, extra, 5)
    assert proc.returncode == -9, proc.stderr[-2000:]
    run_dir = tmp_path / "t"
    last = run_dir / "ledger" / "steps-00000003-00000004.parquet"
    last.write_bytes(last.read_bytes()[:300])
    before = {p: p.read_bytes() for p in (run_dir / "ledger").iterdir()}
    monkeypatch.setattr(prepare.backends, "build", lambda cfg: pytest.fail("the model loaded"))
    with pytest.raises(CheckpointError, match=f"{last} cannot be read: cut short .* move {run_dir / 'ledger'} aside"):
        run(tmp_path, monkeypatch, *extra)
    assert {p: p.read_bytes() for p in (run_dir / "ledger").iterdir()} == before
    monkeypatch.undo()
    os.replace(run_dir / "ledger", run_dir / "ledger.damaged")
    run(tmp_path, monkeypatch, *extra)
    rec = read_ledger(run_dir)
    assert rec.gaps == [(1, 4, "the ledger starts at step 5")] and sorted(set(rec.steps)) == [5, 6]


@pytest.mark.slow
def test_a_ledger_switched_off_and_on_again_says_so_and_replay_reports_the_gap(tmp_path, monkeypatch):
    run(tmp_path, monkeypatch, "rl.max_steps=2", "rl.save_steps=1")
    run(tmp_path, monkeypatch, "rl.max_steps=4", "rl.save_steps=1", "logging.ledger=false")
    run_dir, _ = run(tmp_path, monkeypatch, "rl.max_steps=5", "rl.save_steps=1")
    index = json.loads((run_dir / "ledger" / "_ledger.json").read_text())
    assert index["gaps"] == [{"first": 3, "last": 4, "why": "logging.ledger=false"}]
    row = replay([run_dir], ["max_variance"])[0]
    assert row["agreement"] == 1.0 and row["steps"] == 3 and row["gaps"] == [[3, 4, "logging.ledger=false"]]
    state = json.loads((run_dir / "checkpoint-5" / "state.json").read_text())
    assert state["ledger_id"] == index["id"]
