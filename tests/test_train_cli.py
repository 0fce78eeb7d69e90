"""train.py as a subprocess under real signals and a real failing disk (tiny model, arithmetic task, CPU).

SIGTERM / SIGINT / SIGHUP: the step in progress finishes, is checkpointed, the exit code is 143 / 0 / 129 and the
message says how to resume; rerunning the same command continues exactly like an uninterrupted run.
A second signal exits at once. A write refused by the OS (a file size limit: EFBIG, the same path
through torch / safetensors as ENOSPC) ends with exit code 2 and "<cause>: <path>", no traceback.
"""

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from pods.run import checkpoint as ck
from pods.run import trainer
from pods.run.metrics import read_metrics

from helpers import compose

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def args(out, *extra):
    return ["model=tiny", "dataset=arithmetic", "+dataset.options.size=1000", f"output_root={out}", "run_name=r", "backend.device=cpu",
            "rl.m=8", "rl.max_completion_tokens=6", "rl.max_time=null", "rl.save_strategy=steps", "rl.save_steps=100",
            "optim.name=adamw", "optim.lr=1e-3", "logging.progress=false", *extra]


ENV = {k: v for k, v in os.environ.items() if k != "UV_RUN_RECURSION_DEPTH"}  # as if started without `uv run`


def launch(out, *extra, **kw):
    return subprocess.Popen([sys.executable, "train.py", *args(out, *extra)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**ENV, "PODS_THREADS": "1", "PYTHONUNBUFFERED": "1"}, **kw)


def wait_for_rows(run_dir: Path, proc, count: int = 1, timeout: float = 300) -> None:
    end = time.time() + timeout
    while len(read_metrics(run_dir)) < count:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.time() < end, "no metrics row in time"
        time.sleep(0.02)


FAST = ["rl.n=64", "rl.prompts_per_step=8", "rl.micro_batch_size=64", "rl.max_steps=8"]  # ~0.3 s per step


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 0), (signal.SIGHUP, 129)])
def test_a_signal_checkpoints_the_step_in_progress_and_the_same_command_resumes_exactly(tmp_path, sig, code):
    proc = launch(tmp_path, *FAST)
    run_dir = tmp_path / "r"
    wait_for_rows(run_dir, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == code, err[-3000:]
    rows = read_metrics(run_dir)
    k = rows[-1]["step"]
    assert 1 <= k < 8 and [r["step"] for r in rows] == list(range(1, k + 1))  # at most the step in progress lost
    assert [p.name for p in ck.intact(run_dir)] == [f"checkpoint-{k}"]
    name = signal.Signals(sig).name
    assert f"stopped by {name} after step {k}; the run resumes from {run_dir / f'checkpoint-{k}'}" in err
    assert "rerun the same command to resume: python train.py model=tiny" in err and "Traceback" not in err
    if sig != signal.SIGTERM:  # the resume is the same after each (SIGHUP's: tests/test_bad_inputs.py)
        return
    again = subprocess.run([sys.executable, "train.py", *args(tmp_path, *FAST)], cwd=ROOT, text=True,
                           capture_output=True, env={**os.environ, "PODS_THREADS": "1"}, timeout=600)
    assert again.returncode == 0 and f"from checkpoint-{k}" in again.stdout, again.stderr[-3000:]
    resumed = read_metrics(run_dir)
    assert [r["step"] for r in resumed] == list(range(1, 9))
    torch.set_num_threads(1)
    straight = read_metrics(trainer.train(compose(args(tmp_path / "straight", *FAST))))
    for a, b in zip(resumed, straight):
        for key in ("reward/total", "loss", "grad_norm", "data_position"):
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6), (a["step"], key)


def test_a_second_signal_exits_at_once_without_saving(tmp_path):
    proc = launch(tmp_path, "rl.n=1024", "rl.prompts_per_step=16", "rl.micro_batch_size=512", "rl.max_steps=50")
    run_dir = tmp_path / "r"
    wait_for_rows(run_dir, proc)  # steps take ~5 s here: both signals land inside one step
    proc.send_signal(signal.SIGTERM)
    time.sleep(1.5)  # a repeat within 1 s would count as the same signal delivered twice
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "second signal (SIGTERM): exiting now without saving" in err, err[-3000:]
    assert ck.checkpoints(run_dir) == [] and "Traceback" not in err


def _file_size_limit(limit):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_write_the_os_refuses_ends_with_cause_and_path_and_loses_nothing(tmp_path):
    full = ["rl.n=16", "rl.prompts_per_step=4", "rl.micro_batch_size=64", "model.lora.rank=0", "rl.save_steps=2"]
    torch.set_num_threads(1)
    trainer.train(compose(args(tmp_path, *full, "rl.max_steps=2")))  # checkpoint-2 (model: 0.5 MB)
    run_dir = tmp_path / "r"
    proc = launch(tmp_path, *full, "rl.max_steps=4", preexec_fn=_file_size_limit(256 * 1024))
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, err[-3000:]
    assert f"error: file too large: {run_dir / 'checkpoint-4' / 'policy'}. Files already written" in err
    assert "Traceback" not in err
    assert [p.name for p in ck.intact(run_dir)] == ["checkpoint-2"] and not list(run_dir.glob(".tmp-*"))
    assert [r["step"] for r in read_metrics(run_dir)] == [1, 2, 3]
    trainer.train(compose(args(tmp_path, *full, "rl.max_steps=4")))  # space again: the same run resumes
    assert [r["step"] for r in read_metrics(run_dir)] == [1, 2, 3, 4]
    assert [p.name for p in ck.intact(run_dir)] == ["checkpoint-2", "checkpoint-4"]


@pytest.mark.skipif(__import__("shutil").which("uv") is None, reason="uv is not on PATH")
def test_ctrl_c_through_uv_run_saves_the_step_in_progress(tmp_path):
    """Ctrl-C in a terminal signals the whole process group (uv and python), and uv passes it on again
    ~0.2 s later: the trainer must count that as one Ctrl-C, save and exit 0."""
    proc = subprocess.Popen(["uv", "run", "--no-sync", "python", "train.py", *args(tmp_path, *FAST)], cwd=ROOT,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "PODS_THREADS": "1"})
    run_dir = tmp_path / "r"
    wait_for_rows(run_dir, proc)
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "second signal" not in err, err[-3000:]
    k = read_metrics(run_dir)[-1]["step"]
    assert f"stopped by SIGINT after step {k}" in err and [p.name for p in ck.intact(run_dir)] == [f"checkpoint-{k}"]
    assert "rerun the same command to resume: uv run python train.py model=tiny" in err  # `uv run` kept


def test_a_second_train_py_on_the_same_run_is_refused_until_the_first_ends(tmp_path):
    """Two train.py on one run directory: the second exits 2 naming the first's PID and host, and writes
    nothing; once the first is gone (kill -9: no cleanup at all) the run directory is free again."""
    import socket

    first = launch(tmp_path, *FAST[:-1], "rl.max_steps=100000")  # still training when the second starts
    run_dir = tmp_path / "r"
    wait_for_rows(run_dir, first)
    second = subprocess.run([sys.executable, "train.py", *args(tmp_path, *FAST)], cwd=ROOT, text=True,
                            capture_output=True, env={**ENV, "PODS_THREADS": "1"}, timeout=600)
    assert second.returncode == 2, second.stderr[-3000:]
    assert (f"train.py: error: run directory {run_dir} is in use by another process (pid {first.pid} on host "
            f"{socket.gethostname()} since") in second.stderr
    assert "run_name=NAME" in second.stderr and "Traceback" not in second.stderr
    first.kill()  # SIGKILL: the lock goes with the process, its file stays behind
    first.communicate()
    assert (run_dir / ".lock").exists()
    third = subprocess.run([sys.executable, "train.py", *args(tmp_path, *FAST[:-1], "rl.max_steps=2")], cwd=ROOT,
                           text=True, capture_output=True, env={**ENV, "PODS_THREADS": "1"}, timeout=600)
    assert third.returncode == 0, third.stderr[-3000:]
    assert not (run_dir / ".lock").exists()


def test_sigterm_during_the_final_evaluation_says_the_training_is_saved(tmp_path):
    slow_eval = "+evaluation={size: 2000, draws: 100, temperature: 1.0, max_tokens: 6, batch_size: 64}"
    proc = launch(tmp_path, "rl.n=4", "rl.m=2", "rl.max_steps=1", "rl.save_steps=1", slow_eval)
    for line in proc.stdout:  # the evaluation of the base model has begun
        if line.startswith("held-out evaluation of r/base"):
            break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    run_dir = tmp_path / "r"
    assert proc.returncode == 143, err[-3000:]
    assert (f"stopped by SIGTERM during the final evaluation; the training itself is complete and saved in "
            f"{run_dir}. Rerunning the same command trains nothing more and only evaluates what is missing: "
            "python train.py model=tiny") in err
    assert "Traceback" not in err and [p.name for p in ck.intact(run_dir)] == ["checkpoint-1"]
    assert not (run_dir / ".lock").exists() and not list(run_dir.glob(".heldout*"))


def test_the_resume_hint_is_the_command_as_typed(monkeypatch):
    from pods.commands import train as entry

    monkeypatch.setattr(sys, "argv", ["train.py", "experiment=demo", "run_name=a b"])
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)
    assert entry.resume_hint() == "rerun the same command to resume: python train.py experiment=demo 'run_name=a b'"
    assert entry.resume_hint("pods train") == "rerun the same command to resume: pods train experiment=demo 'run_name=a b'"
    monkeypatch.setenv("UV_RUN_RECURSION_DEPTH", "1")  # set by `uv run` for the program it starts
    assert entry.command() == "uv run python train.py experiment=demo 'run_name=a b'"
    assert entry.command(["rl.n=4"], "pods train") == "uv run pods train rl.n=4"
