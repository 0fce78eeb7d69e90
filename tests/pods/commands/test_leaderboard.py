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
    assert "tier gpu: budget 3.6e+07 (tokens generated + 2.1 x tokens trained) per run, 12 budget points" in text
    assert "experiment=gsm8k_main" in text and "rl.token_budget=3.6e+07" in text and "rl.save_tokens=3e+06" in text
    shown = [name for name in ARMS if f"\n  {name} " in text]
    assert shown == list(ARMS) and len(ARMS) >= 9
    planned = [line for line in text.splitlines() if "memory: L40S:" in line]
    assert len(planned) == len(ARMS) and "UNAVAILABLE" not in text
    assert all("fits:" in line and "GiB of 45.0 GiB" in line for line in planned)  # Qwen2.5-3B, 4-bit LoRA
    assert "at least 1418 steps" in text  # GRPO 16/16: 3.6e7 / (16 x 512 x (16 + 2.1 x 16))
    assert not out.exists()


def test_a_measured_weight_replaces_the_tiers_in_the_plan_and_every_runs_overrides(tmp_path, capsys):
    # w = 0.21: the hf backend's step on an H100 (docs/gpu.md), where generation is most of the step
    assert main(["--tier", "gpu", "--dry-run", "--weight", "0.21", "--arms", "grpo", "pods", "--out",
                 str(tmp_path / "b")], prog="pods leaderboard") == 0
    text = capsys.readouterr().out
    assert "(tokens generated + 0.21 x tokens trained)" in text and "rl.token_budget_weight=0.21" in text
    assert "at least 3632 steps" in text  # GRPO 16/16: 3.6e7 / (512 x (16 + 0.21 x 16))


def test_every_arm_gets_the_same_budget_seed_and_warm_start():
    tier = TIERS["cpu"]
    cmds = {a: train_overrides(tier, arm, 3, Path("/o"), Path("/w"), f"{a}-seed3") for a, arm in ARMS.items()}
    shared = [*budget_overrides(tier), "seed=3", "model.name=/w", "warmstart=null", "output_root=/o",
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
    (["--arms", "grpo", "x:rl.n=64 rl.m=16 rl.rule=max_varianse"],
     "arm x (rl.n=64 rl.m=16 rl.rule=max_varianse): invalid config:\n  - unknown rl.rule 'max_varianse'; valid: max_variance"),
    (["--arms", "grpo", "pods", "--budget", "1000"], "below one step of arm pods"),
])
def test_bad_input_is_exit_2_before_anything_is_written(tmp_path, capsys, argv, message):
    out = tmp_path / "board"
    assert main([*argv, "--out", str(out)], prog="pods leaderboard") == 2
    assert message in capsys.readouterr().err and not out.exists()


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
