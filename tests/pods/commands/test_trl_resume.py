"""scripts/train_trl.py survives kill -9: rerunning the same command continues from the latest complete checkpoint.

    uv run pytest tests/pods/commands/test_trl_resume.py     (~3-4 min on 2 busy cores: 5 real launches)

The CPU preset (warm-started tiny Qwen2, arithmetic, PODS 16 -> 4 with the `random` rule, so the
PODS round counter matters) runs 6 steps with a checkpoint every 2; the run is killed with SIGKILL
once checkpoint-4 is complete, then the same command is run again. It must end at step 6 with every
step logged once, the round counter and the training clock continuing, and (1 process) the same
weights and training rewards as an uninterrupted run. The 2-process launch (gloo, the lab-cpu preset: GRESO and
Reinforce-Ada with the rollout ledger) is killed as a whole process group and resumed the same way.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]
ARGS = ["--preset", str(ROOT / "config/trl/tiny-cpu.yaml"), "train_steps=6", "trl.save_steps=2", "trl.eval_steps=3",
        "dataset.limit=512", "eval.limit=16", "trl.pods_rule=random", "trl.per_device_train_batch_size=64"]
ENV = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture(scope="module", autouse=True)
def warm_model():
    from pods.run.warmstart import ensure_warmstart

    # built once (~30 s) and cached where the launched runs look for it (the user cache), as `train.py
    # experiment=demo` does
    return ensure_warmstart({})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _command(run_dir: Path, processes: int, args=ARGS) -> list[str]:
    script = [str(ROOT / "scripts/train_trl.py"), *args, f"run_dir={run_dir}"]
    if processes == 1:
        return [sys.executable, *script]
    return [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
            str(ROOT / "config/accelerate/cpu-2proc.yaml"), "--main_process_port", str(_free_port()), *script]


def _run(run_dir: Path, processes: int, args=ARGS) -> None:
    proc = subprocess.run(_command(run_dir, processes, args), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]


def _run_and_kill(run_dir: Path, processes: int, args=ARGS) -> None:
    log = open(run_dir.parent / f"{run_dir.name}.log", "w")
    proc = subprocess.Popen(_command(run_dir, processes, args), cwd=ROOT, env=ENV, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)  # its own process group: the launcher and every rank
    deadline = time.monotonic() + 600
    while not (run_dir / "checkpoint-4" / "trainer_state.json").is_file():
        assert proc.poll() is None, (run_dir.parent / f"{run_dir.name}.log").read_text()[-4000:]
        assert time.monotonic() < deadline, "no checkpoint-4 within 10 minutes"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    assert not (run_dir / "finished.json").exists()


def _rows(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _check_resumed(run_dir: Path) -> list[dict]:
    rows = _rows(run_dir)
    assert [r["step"] for r in rows] == list(range(7))  # every step once, step 0 = evaluation at start
    assert [r["pods/round"] for r in rows[1:]] == [float(r) for r in range(6)]  # random rule's rounds continue
    clock = [r["elapsed_seconds"] for r in rows]
    assert all(a < b for a, b in zip(clock, clock[1:]))  # the training clock counts on
    assert sorted(json.loads((run_dir / "eval_results.json").read_text())) == [
        "checkpoint-0", "checkpoint-3", "checkpoint-6"]  # 0 and 3 before the kill, 6 after the resume
    assert json.loads((run_dir / "finished.json").read_text())["step"] == 6
    assert json.loads((run_dir / "checkpoint-6" / "trainer_state.json").read_text())["global_step"] == 6
    return rows


def test_one_process_kill_and_resume_equals_an_uninterrupted_run(tmp_path):
    from safetensors.torch import load_file

    resumed, reference = tmp_path / "resumed", tmp_path / "reference"
    _run_and_kill(resumed, 1)
    _run(resumed, 1)
    rows = _check_resumed(resumed)
    _run(reference, 1)
    ref = _rows(reference)
    assert [r["pods/kept_reward"] for r in rows[1:]] == [r["pods/kept_reward"] for r in ref[1:]]
    assert [r["loss"] for r in rows[1:]] == [r["loss"] for r in ref[1:]]
    a, b = (load_file(d / "checkpoint-6" / "model.safetensors") for d in (resumed, reference))
    assert max((a[k] - b[k]).abs().max().item() for k in a) == 0.0
    assert any(r["pods/kept_reward"] > 0 for r in rows[1:])  # the warm-started model does get rewards


LAB = ["--preset", str(ROOT / "config/trl/lab-cpu.yaml"), "model=tiny", "train_steps=8", "trl.save_steps=2",
       "trl.eval_steps=3", "dataset.limit=10", "eval.limit=8", "trl.per_device_train_batch_size=16",
       "trl.pods_token_budget=null", "trl.max_completion_length=4"]


def test_two_processes_under_greso_and_ada_resume_whole_across_kill_and_resume(tmp_path):
    """2 processes (gloo), 2 prompts x up to 16 rollouts per step, 10 prompts (GRESO sees its history from step 6 on):
    killed as a whole process group once checkpoint-4 is complete, rerun: the evaluations, the round counter and the
    training clock continue, and the ledger holds steps 1..8 once each, every group once, and replays its own rules
    at 100 %."""
    import pyarrow.dataset as pds

    from pods.analysis.replay import replay

    run_dir = tmp_path / "lab"
    _run_and_kill(run_dir, 2, LAB)
    _run(run_dir, 2, LAB)
    rows = _rows(run_dir)
    assert [r["step"] for r in rows] == list(range(9))  # metrics.jsonl: every step once, step 0 = evaluation at start
    rounds = [r["pods/round"] for r in rows[1:]]  # ada's rounds: one or more a step, counted on across the resume
    assert all(a < b for a, b in zip(rounds, rounds[1:])), rounds
    clock = [r["elapsed_seconds"] for r in rows]
    assert all(a < b for a, b in zip(clock, clock[1:]))
    assert sorted(json.loads((run_dir / "eval_results.json").read_text())) == [
        "checkpoint-0", "checkpoint-3", "checkpoint-6", "checkpoint-8"]
    assert json.loads((run_dir / "finished.json").read_text())["step"] == 8
    assert json.loads((run_dir / "checkpoint-8" / "trainer_state.json").read_text())["global_step"] == 8
    df = pds.dataset(run_dir / "ledger").to_table().to_pandas()
    assert sorted(set(df.step)) == list(range(1, 9))
    assert not df.duplicated(["step", "round", "slot", "status"]).any()
    trained = df[df.status != "skipped"]
    assert trained.groupby("step").size().tolist() == [2] * 8  # B = 16 x 2 processes / n = 16 prompts a step
    assert set(trained.n) <= {8, 16} and len(list((run_dir / "ledger").glob("steps-*.parquet"))) >= 2
    rows = {r["rule"]: r["agreement"] for r in replay([run_dir], ["balanced", "greso"])}
    assert rows == {"balanced": 1.0, "greso": 1.0}
