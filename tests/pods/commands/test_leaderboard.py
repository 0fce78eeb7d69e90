"""`pods leaderboard`: the GPU tier's dry-run plan (budget, arms, memory preflight), the protocol's overrides (the
same budget, seed and warm start for every arm), when a run is finished, and refused input."""

import json
from pathlib import Path

import pytest

from pods.commands.leaderboard import main
from pods.errors import ConfigError
from pods.studies.leaderboard import (
    ARMS,
    TIERS,
    arm_overrides,
    budget_overrides,
    resolve_arms,
    train_overrides,
    trained,
)


def test_gpu_dry_run_prints_every_arms_plan_budget_and_memory_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "board"
    assert main(["--tier", "gpu", "--dry-run", "--out", str(out)], prog="pods leaderboard") == 0
    text = capsys.readouterr().out
    assert ("tier gpu: budget 21600 (seconds of training modelled on l40s-unsloth: one NVIDIA L40S (48 GB), backend "
            "unsloth) per run, 12 budget points") in text
    assert "experiment=gsm8k_main" in text and "rl.token_budget=21600" in text and "rl.save_tokens=1800" in text
    assert "rl.budget_cost=seconds rl.budget_profile=l40s-unsloth" in text and "token_budget_weight" not in text
    shown = [name for name in ARMS if f"\n  {name} " in text]
    assert shown == list(ARMS) and len(ARMS) >= 9
    planned = [line for line in text.splitlines() if "memory: L40S:" in line]
    assert len(planned) == len(ARMS) and "UNAVAILABLE" not in text
    assert all("fits:" in line and "GiB of 45.0 GiB" in line for line in planned)  # Qwen2.5-3B, 4-bit LoRA
    assert "at least 1" in text  # the GRPO step at full length (512 + 512 tokens), modelled: see the next test
    assert not out.exists()


def test_a_measured_weight_replaces_the_tiers_in_the_plan_and_every_runs_overrides(tmp_path, capsys):
    # w = 0.21: the hf backend's step on an H100 (docs/gpu.md), where generation is most of the step
    assert main(["--tier", "gpu", "--dry-run", "--cost", "tokens", "--weight", "0.21", "--arms", "grpo", "pods",
                 "--out", str(tmp_path / "b")], prog="pods leaderboard") == 0
    text = capsys.readouterr().out
    assert "(tokens generated + 0.21 x tokens trained)" in text and "rl.token_budget_weight=0.21" in text
    assert "at least 3632 steps" in text  # GRPO 16/16: 3.6e7 / (512 x (16 + 0.21 x 16))


def test_every_arm_gets_the_same_budget_seed_and_warm_start():
    tier = TIERS["cpu"]
    cmds = {a: train_overrides(tier, arm, 3, Path("/o"), Path("/w"), f"{a}-seed3") for a, arm in ARMS.items()}
    shared = [*budget_overrides(tier), "seed=3", "model.name='/w'", "warmstart=null", "output_root='/o'",
              "experiment=demo", "dataset.limit=1024", "evaluation=null"]  # prompts met again: GRESO acts
    for a, cmd in cmds.items():
        assert all(s in cmd for s in shared), a
        assert [c for c in cmd if c not in shared and not c.startswith("run_name=") and c.startswith("rl.")
                and c not in budget_overrides(tier)] == arm_overrides(tier, ARMS[a])
    assert "rl.prompts_per_step=32" in cmds["cppo"]  # CPPO's recipe: twice the tier's 16 prompts
    assert "rl.token_budget_weight=1.7" in budget_overrides(tier) and "rl.save_tokens=120000" in budget_overrides(tier)


def test_quick_tier_and_custom_arms():
    q = TIERS["cpu"].quick()
    assert (q.budget, q.points, q.seeds, q.eval_size) == (TIERS["cpu"].budget / 5, 4, 3, 500)
    arms = resolve_arms(["grpo", "maxr:rl.n=64 rl.m=16 rl.rule=max_reward"])
    assert arms["maxr"].overrides == ("rl.n=64", "rl.m=16", "rl.rule=max_reward")
    with pytest.raises(ConfigError, match="must include 'grpo'"):
        resolve_arms(["pods"])
    with pytest.raises(ConfigError, match="did you mean gfpo"):
        resolve_arms(["grpo", "gfpoo"])


def test_a_run_is_finished_once_its_last_row_reaches_the_budget_and_is_checkpointed(tmp_path):
    tier = TIERS["cpu"]
    assert not trained(tmp_path, tier)
    row = {"step": 7, "cost/tokens_generated_total": tier.budget, "cost/tokens_trained_total": 0}
    (tmp_path / "metrics.jsonl").write_text(json.dumps(row) + "\n")
    assert not trained(tmp_path, tier)  # not checkpointed yet
    (tmp_path / "checkpoint-7").mkdir()
    assert trained(tmp_path, tier)
    (tmp_path / "metrics.jsonl").write_text(json.dumps({**row, "cost/tokens_generated_total": 10}) + "\n")
    assert not trained(tmp_path, tier)


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "1"], "--seeds 1: intervals over seeds need at least 2 seeds"),
    (["--arms", "grpo", "podz"], ("unknown arm 'podz'; did you mean pods", "NAME:key=value")),
    (["--weight", "0"], ("--weight 0: w must be positive", "pods gpu-check --config ... --random-weights")),
    (["--arms", "grpo", "x:rl.n=64 rl.m=16 rl.rule=max_varianse"],
     "arm x (rl.n=64 rl.m=16 rl.rule=max_varianse): invalid config:\n  - unknown rl.rule 'max_varianse'; valid: max_variance"),
    (["--arms", "grpo", "pods", "--budget", "1000"], "below one step of arm pods"),
    (["--cost", "seconds", "--profile", "l40s"], "unknown profile 'l40s'; known: cpu, h100-hf, l40s-unsloth"),
    (["--cost", "seconds"], "--cost seconds: tier cpu has no budget in seconds; give --budget"),
    (["--profile", "cpu"], "--profile cpu prices modelled seconds: add --cost seconds"),
    (["--tier", "gpu", "--weight", "2"], "--weight 2 weighs trained tokens, but the budget counts modelled seconds"),
    (["--arms", "grpo", "pods", "--cost", "seconds", "--budget", "600", "--profile", "l40s-unsloth"],
     "rl.budget_profile: profile 'l40s-unsloth' was measured on backend=unsloth"),  # the CPU tier runs hf
])
def test_bad_input_is_exit_2_before_anything_is_written(tmp_path, capsys, argv, message):
    out = tmp_path / "board"
    assert main([*argv, "--out", str(out)], prog="pods leaderboard") == 2
    err = capsys.readouterr().err
    assert all(text in err for text in ((message,) if isinstance(message, str) else message)), err
    assert not out.exists()


@pytest.mark.parametrize("argv, message", [
    (["--tier", "nope"], "--tier nope: no such tier; the tiers: cpu, gpu"),
    pytest.param(["--tier", "gpu", "--arms", "grpo"], "tier gpu trains on a CUDA GPU, and ",
                 marks=pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a machine without CUDA")),
])
def test_a_tier_that_does_not_exist_or_needs_a_gpu_here_is_refused_before_anything_is_written(tmp_path, capsys, argv,
                                                                                            message):
    out = tmp_path / "board"
    assert main([*argv, "--out", str(out)], prog="pods leaderboard") == 2
    assert message in capsys.readouterr().err and not out.exists()


def test_an_out_that_is_a_file_is_one_message(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit) as stop:  # it used to be a FileExistsError "This is a bug"
        main(["--out", str(tmp_path / "file")], prog="pods leaderboard")
    assert stop.value.code == 2 and "argument --out: " in capsys.readouterr().err


def test_the_dry_run_estimates_the_wall_time_and_two_seeds_get_the_width_they_imply(tmp_path, capsys):
    assert main(["--dry-run", "--arms", "grpo", "random", "--seeds", "2", "-j", "2", "--out", str(tmp_path / "b")],
                prog="pods leaderboard") == 0
    out, err = capsys.readouterr()
    cores = min(2, __import__("os").cpu_count())  # 4 runs x (20 + 5e-5 x 1.2 M = 80 CPU s), 2 at a time
    assert f"estimated wall time: {round(4 * 80 / cores / 60)} min (4 runs x 80 CPU s, {cores} at a time" in out
    assert err == ("warning: 2 seeds: a paired 95 % interval is +-t(1) x SD / sqrt(2) = +-9.0 seed-to-seed SDs wide, "
                   "7x the protocol's 5 seeds; at this tier's measured spread (2.1 points) that is +-19 points; use "
                   "--seeds 3 or more\n")


@pytest.mark.slow
def test_a_tiny_leaderboard_end_to_end_and_a_rerun_trains_nothing(tmp_path, capsys):
    out = tmp_path / "lb"
    argv = ["--arms", "grpo", "random", "--seeds", "2", "--budget", "20000", "--points", "2", "--out", str(out),
            "-j", "2"]
    assert main(argv, prog="pods leaderboard") == 0
    s = json.loads((out / "summary.json").read_text())
    assert list(s["arms"]) == ["grpo", "random"] and s["grid"] == [0.0, 10000.0, 20000.0]
    assert s["arms"]["random"]["sampled"]["diff"]["ci95"] is not None and s["weight_measured"]["grpo"] > 0
    assert (out / "results" / "random-greedy-Run1.json").is_file() and (out / "leaderboard.png").is_file()
    assert "| random 64->16 (control) |" in (out / "leaderboard.md").read_text()
    saved = {p: p.stat().st_mtime_ns for p in out.glob("runs/*/checkpoint-*")}
    assert len(saved) >= 2 * 2 * 2  # 2 arms x 2 seeds x 2 budget points
    capsys.readouterr()
    assert main(argv, prog="pods leaderboard") == 0  # a rerun: every run is trained and evaluated
    assert "] train " not in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in out.glob("runs/*/checkpoint-*")} == saved


def finished_run(d: Path, per_step: dict, accs: list[float], every: int) -> None:
    """A finished leaderboard run: metrics rows with the cost ledger's counts (per_step) and totals, a checkpoint
    every `every` steps evaluated (accs[i] at checkpoint i, accs[0] the warm start)."""
    d.mkdir(parents=True)
    steps = every * (len(accs) - 1)
    rows = [{"step": s, **TIMES, **{f"cost/{k}": v for k, v in per_step.items()},
             **{f"cost/{k}_total": v * s for k, v in per_step.items()}} for s in range(1, steps + 1)]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name, shift in (("eval_results.json", 0.0), ("eval_greedy.json", 0.1)):
        (d / name).write_text(json.dumps({("base" if i == 0 else f"checkpoint-{every * i}"): {
            "step": every * i, "arithmetic": {"ans_acc": [a + shift] * 2}} for i, a in enumerate(accs)}))


GRPO_STEP = {"tokens_generated": 1280, "tokens_trained": 1280, "rollouts_generated": 256, "rounds": 1,
             "generation_batches": 1, "decode_steps": 6, "tokens_padded": 1536, "tokens_updated": 3300}
TIMES = {"time/generation": 0.1, "time/update": 0.2}  # w measured from them (the report prints it)
PODS_STEP = {**GRPO_STEP, "tokens_generated": 5120, "rollouts_generated": 1024, "tokens_padded": 6144}


def test_report_only_rereads_finished_runs_in_modelled_seconds_with_the_break_even(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("pods.analysis.breakeven.RESAMPLES", 100)  # the statistics are tested in tests/pods/analysis
    out = tmp_path / "lb"
    old = {k: v for k, v in GRPO_STEP.items() if k in ("tokens_generated", "tokens_trained", "rollouts_generated")}
    for seed, e in enumerate((0.0, 0.01)):  # seed 1's GRPO run predates the batch counts: read with estimates
        finished_run(out / "runs" / f"grpo-seed{seed}", old if seed else GRPO_STEP, [0.1, 0.15 + e, 0.2 + e, 0.25 + e],
                     every=10)
        finished_run(out / "runs" / f"pods-seed{seed}", PODS_STEP, [0.1, 0.2 + e, 0.28 + e, 0.32 + e], every=4)
    argv = ["--report-only", "--arms", "grpo", "pods", "--seeds", "2", "--points", "3", "--out", str(out)]
    assert main([*argv, "--cost", "seconds", "--profile", "l40s-unsloth"], prog="pods leaderboard") == 0
    table = (out / "leaderboard.md").read_text()
    assert table.startswith("Cost: seconds of training modelled on l40s-unsloth") and "re-read" in table
    assert "Runs written before the cost ledger's batch counts (1: grpo-seed1)" in table
    assert "Break-even: the fixed part of a step" in table and "| PODS 64->16 |" in table
    s = json.loads((out / "summary.json").read_text())
    assert s["cost"]["profile"] == "l40s-unsloth" and s["cost"]["re_read"]
    assert s["axis"]["label"].endswith(" of training modelled on l40s-unsloth)")
    assert s["budget"] == pytest.approx(min(s["grid"][-1], s["budget"])) and s["grid"][-1] == s["budget"]
    be = s["break_even"]["pods"]["sampled"]
    assert len(be["ratio"]) == len(s["break_even"]["pods"]["fixed_grid"]) == 46
    assert (out / "breakeven.png").is_file() and (out / "leaderboard.png").is_file()
