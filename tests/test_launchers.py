"""train.py's `-m` sweeps through pods' launchers (hydra_plugins/pods_launcher, config/hydra/launcher/).

Local (the default): every job in its own process, one after another; a bad job does not stop the others.
Slurm without Slurm: fake `sbatch` / `srun` / `sacct` / `scontrol` on PATH run the submitted array job's
script on this machine, so the whole path (sbatch options, the job's process, the results coming back)
runs; the script is recorded and checked for the requeue and signal settings of docs/long-runs.md.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

from hydra_plugins.pods_launcher.launchers import failures, job_log, requeue_trap, visible_devices
from pods.cli import JobFailure

from helpers import compose

ROOT = Path(__file__).resolve().parents[1]
TINY = ["model=tiny", "dataset=arithmetic", "rl.m=2", "rl.max_steps=1", "rl.max_time=null", "logging.progress=false",
        "optim.name=adamw", "rl.max_completion_tokens=2", "backend.device=cpu"]


def launcher(*overrides):
    return compose(overrides, hydra=True).hydra.launcher


def test_the_default_launcher_runs_each_job_in_its_own_process_on_the_gpu():
    cfg = launcher()
    assert cfg._target_ == "hydra_plugins.pods_launcher.launchers.LocalLauncher"
    assert cfg.gpus_per_node == 1 and cfg.timeout_min >= 24 * 60  # submitit_local hides the GPUs with 0


@pytest.mark.parametrize("caller, seen", [({"CUDA_VISIBLE_DEVICES": "3"}, "3"), ({"CUDA_VISIBLE_DEVICES": "2,5"}, "2,5"),
                                          ({"CUDA_VISIBLE_DEVICES": ""}, ""), ({}, "<unset>")])
def test_a_local_job_gets_the_callers_cuda_visible_devices_back(caller, seen):
    # submitit's local executor starts the job's shell with CUDA_VISIBLE_DEVICES=0 (gpus_per_node=1)
    line = visible_devices(caller)
    out = subprocess.run(["bash", "-c", f"{line}; echo ${{CUDA_VISIBLE_DEVICES-<unset>}}"], capture_output=True,
                         text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": "0"}).stdout
    assert out == seen + "\n"


def test_the_slurm_launcher_has_the_requeue_and_signal_settings_of_long_runs():
    cfg = launcher("hydra/launcher=slurm", "hydra.launcher.signal_delay_s=600")
    assert cfg._target_ == "hydra_plugins.pods_launcher.launchers.SlurmLauncher"
    assert cfg.additional_parameters.requeue is True and cfg.additional_parameters.signal == "TERM@600"
    assert cfg.timeout_min == 420 and cfg.gpus_per_node == 1
    assert cfg.max_num_timeout == 3  # submitit's own default bound on requeues


# (exit code, minutes the job ran of its 420, requeues so far) -> requeued: only a job train.py stopped at the
# time limit (SIGTERM 300 s before it: exit 143 after >= 414 min), and only while it has been requeued < 3 times
@pytest.mark.parametrize("code, ran_min, restarts, requeued", [
    (143, 416, None, True), (143, 416, "2", True), (143, 416, "3", False),  # the bound on requeues
    (143, 30, None, False),  # an early SIGTERM: `scancel --signal=TERM` (or a preemption) stops the job
    (0, 416, None, False), (2, 416, None, False)])
def test_the_slurm_jobs_trap_requeues_only_a_job_train_py_stopped_at_the_time_limit(tmp_path, code, ran_min,
                                                                                   restarts, requeued):
    bin_dir = fake_slurm(tmp_path)
    cfg = launcher("hydra/launcher=slurm")
    start, trap = requeue_trap(cfg.timeout_min, cfg.signal_delay_s, cfg.max_num_timeout)
    assert start == "PODS_JOB_START=$(date +%s)"
    record = tmp_path / "record"
    env = {k: v for k, v in os.environ.items() if k != "SLURM_RESTART_COUNT"}  # Slurm sets it once requeued
    env.update(PATH=f"{bin_dir}:{os.environ['PATH']}", FAKE_SLURM_RECORD=str(record), SLURM_JOB_ID="4243",
               **({"SLURM_RESTART_COUNT": restarts} if restarts else {}))
    began = f"PODS_JOB_START=$(( $(date +%s) - {ran_min * 60} ))"
    proc = subprocess.run(["bash", "-c", f"{began}\n{trap}\nbash -c 'exit {code}'"], env=env)
    assert proc.returncode == code
    calls = Path(f"{record}.scontrol")
    assert (calls.read_text() if calls.exists() else "") == ("requeue 4243\n" if requeued else "")


def test_failures_are_the_returned_ones_and_the_escaped_exceptions_with_their_logs():
    def result(value, status=JobStatus.COMPLETED, job_id="77"):
        return JobReturn(status=status, _return_value=value,
                         hydra_cfg=OmegaConf.create({"hydra": {"job": {"id": job_id}}}))

    bad = JobFailure("job 1 (rl.n=4.5)", 2, "train.py: error in sweep job 1 (rl.n=4.5): rl.n must be an integer")
    found = failures([result(None), result(bad), result(OSError("disk"), JobStatus.FAILED, "4242_2")],
                     ["job 0 (a)", "job 1 (rl.n=4.5)", "job 2 (c)"], "/s/.submitit/%j")
    assert [(f.label, f.code) for f in found] == [("job 1 (rl.n=4.5)", 2), ("job 2 (c)", 1)]
    assert found[0].message == bad.message + "\n  (the job's log: /s/.submitit/77/77_0_log.err)"
    assert found[1].message.startswith("job 2 (c): unexpected OSError: disk\n  (the job's log: /s/.submitit/4242_2/")
    assert job_log(result(None, job_id="9"), "/x/%j") == Path("/x/9/9_0_log.err")


def pid_dataset(tmp_path: Path) -> str:
    """A dataset plug-in that records the process it runs in and the GPUs it sees: <tmp_path>/pids/<pid> holds its
    CUDA_VISIBLE_DEVICES."""
    (tmp_path / "pids.py").write_text(
        "import os\nfrom pathlib import Path\n\n\n"
        "def arithmetic(split):\n"
        "    pids = Path(__file__).with_name('pids')\n"
        "    pids.mkdir(exist_ok=True)\n"
        "    (pids / str(os.getpid())).write_text(os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>'))\n"
        "    return [{'prompt': f'{a}+{b}=', 'answer': str(a + b)} for a in range(10) for b in range(10)]\n")
    return f"dataset.name={tmp_path / 'pids.py'}:arithmetic"


@pytest.mark.slow
def test_a_local_sweep_runs_each_job_in_a_process_of_its_own_with_the_callers_gpus_and_reports_one_that_died(tmp_path):
    """Job 0's process records itself, then dies (SIGKILL, as the kernel's OOM killer would); job 1 still runs."""
    (tmp_path / "dies.py").write_text(
        "import os, signal\nfrom pathlib import Path\n\n\n"
        "def data(split):\n"
        "    pids = Path(__file__).with_name('pids')\n"
        "    pids.mkdir(exist_ok=True)\n"
        "    (pids / str(os.getpid())).write_text(os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>'))\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n")
    pid_dataset(tmp_path)
    jobs = f"dataset.name={tmp_path / 'dies.py'}:data,{tmp_path / 'pids.py'}:arithmetic"
    proc = subprocess.Popen([sys.executable, "train.py", "-m", *TINY, "rl.n=4", jobs, f"output_root={tmp_path / 'runs'}",
                             f"hydra.sweep.dir={tmp_path / 'multirun'}"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PODS_THREADS": "1", "CUDA_VISIBLE_DEVICES": "3"})
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err[-3000:]  # a job died: an unexpected error
    pids = {int(p.name): p.read_text() for p in (tmp_path / "pids").iterdir()}
    assert len(pids) == 2 and proc.pid not in pids  # one process per job, neither of them the sweep's own
    assert set(pids.values()) == {"3"}  # submitit alone gives each job 0
    died = next(line for line in err.splitlines() if "ended without a result" in line)
    assert died.startswith("job 0 (") and "dies.py" in died
    assert "train.py: 1 of 2 sweep jobs failed: job 0 (" in err
    assert len(list((tmp_path / "runs").glob("*/checkpoint-1"))) == 1  # job 1 trained


def fake_slurm(tmp_path: Path) -> Path:
    """sbatch runs each task of the array job's script in the background (with Slurm's variables) and records
    the script; srun runs its command with the --output / --error files; sacct knows nothing; scontrol records."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        "sbatch": f"#!{sys.executable}\n"
                  "import os, re, subprocess, sys\n"
                  "text = open(sys.argv[-1]).read()\n"
                  "open(os.environ['FAKE_SLURM_RECORD'], 'a').write(text)\n"
                  "m = re.search(r'#SBATCH --array=(\\d+)-(\\d+)', text)\n"
                  "for i in range(int(m[1]), int(m[2]) + 1):\n"
                  "    env = dict(os.environ, SLURM_JOB_ID=str(4243 + i), SLURM_ARRAY_JOB_ID='4242',\n"
                  "               SLURM_ARRAY_TASK_ID=str(i), SLURM_NTASKS='1', SLURM_PROCID='0', SLURM_LOCALID='0',\n"
                  "               SLURM_NODEID='0', SLURM_JOB_NUM_NODES='1')\n"
                  "    subprocess.Popen(['bash', sys.argv[-1]], env=env, stdout=subprocess.DEVNULL,\n"
                  "                     stderr=subprocess.DEVNULL, start_new_session=True)\n"
                  "print('Submitted batch job 4242')\n",
        "srun": "#!/bin/bash\n"
                "sub() { local p=${1//%A/$SLURM_ARRAY_JOB_ID}; p=${p//%a/$SLURM_ARRAY_TASK_ID}; echo \"${p//%t/0}\"; }\n"
                "out=/dev/null; err=/dev/null\n"
                "while [[ $1 == --* ]]; do\n"
                "  case $1 in --output) out=$(sub \"$2\"); shift 2;; --error) err=$(sub \"$2\"); shift 2;; *) shift;; esac\n"
                "done\n"
                "mkdir -p \"$(dirname \"$out\")\"\n"
                "exec \"$@\" >>\"$out\" 2>>\"$err\"\n",
        "sacct": "#!/bin/bash\necho 'JobID|State|NodeList'\n",
        "scontrol": "#!/bin/bash\necho \"$@\" >> \"$FAKE_SLURM_RECORD.scontrol\"\n",
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir


@pytest.mark.slow
def test_a_slurm_sweep_submits_an_array_job_with_requeue_and_reports_its_bad_job(tmp_path):
    record = tmp_path / "sbatch-script"
    env = {**os.environ, "PATH": f"{fake_slurm(tmp_path)}:{os.environ['PATH']}", "FAKE_SLURM_RECORD": str(record),
           "PODS_THREADS": "1"}
    proc = subprocess.run([sys.executable, "train.py", "-m", *TINY, "+dataset.options.size=64", "rl.n=4,4.5", "hydra/launcher=slurm",
                           f"output_root={tmp_path / 'runs'}", f"hydra.sweep.dir={tmp_path / 'multirun'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 2, proc.stderr[-3000:]
    script = record.read_text()
    for line in ("#SBATCH --array=0-1%2", "#SBATCH --requeue", "#SBATCH --signal=TERM@300", "#SBATCH --time=420",
                 "#SBATCH --gpus-per-node=1", "PODS_JOB_START=$(date +%s)\ntrap 'code=$?;",
                 '-ge 24840 ] && [ "${restarts:-0}" -lt 3 ]; then scontrol requeue'):
        assert line in script, script
    assert (tmp_path / "runs" / "arithmetic-tiny-pods-max_variance-n4-m2-seed0" / "checkpoint-1").is_dir()
    log = tmp_path / "multirun" / ".submitit" / "4242_1" / "4242_1_0_log.err"
    assert "rl.n must be an integer, got 4.5" in log.read_text()  # the job's own message, in its log ...
    assert f"rl.n must be an integer, got 4.5 (counts are whole numbers)\n  (the job's log: {log})" in proc.stderr
    assert "train.py: 1 of 2 sweep jobs failed: job 1 (" in proc.stderr  # ... and in the sweep's summary


@pytest.mark.slow
@pytest.mark.parametrize("sig, code, said", [
    ("SIGINT", 130, "train.py: interrupted; a job in progress saves its step"),
    ("SIGHUP", 129, "train.py: stopped by SIGHUP (the terminal closed); a sweep job in progress saves its step")])
def test_ctrl_c_stops_a_local_sweep_after_the_running_job_saved_its_step(tmp_path, sig, code, said):
    """The terminal's Ctrl-C (or its closing: SIGHUP) reaches the sweep, submitit's controller and the job (one
    process group): the job finishes its step and saves it (the controller, which would kill it 1 s later, ignores
    Ctrl-C)."""
    import signal
    import time

    from pods.run import checkpoint as ck

    out = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "train.py", "-m", *TINY, "+dataset.options.size=512", "rl.n=64", "rl.m=8", "rl.prompts_per_step=8",
                             "rl.max_completion_tokens=6", "rl.max_steps=5000", "rl.save_strategy=steps",
                             "rl.save_steps=1000", "seed=0,1", f"output_root={out}",
                             f"hydra.sweep.dir={tmp_path / 'multirun'}"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PODS_THREADS": "1"}, start_new_session=True,
                            # a terminal's process takes Ctrl-C even where the tests run with SIGINT ignored (a
                            # background job of a non-interactive shell: Python then keeps it ignored)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    end = time.time() + 300
    while not [m for m in out.glob("*/metrics.jsonl") if m.read_text().count("\n") >= 2]:
        assert proc.poll() is None and time.time() < end, proc.communicate()[1][-3000:]
        time.sleep(0.05)
    os.killpg(proc.pid, getattr(signal, sig))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == code and said in err, err[-3000:]
    (run,) = out.iterdir()  # the second job never started
    end = time.time() + 60
    while not ck.intact(run) and time.time() < end:  # the job may still be writing it
        time.sleep(0.1)
    (saved,) = ck.intact(run)
    assert int(saved.name.split("-")[1]) >= 2
    log_file = next((tmp_path / "multirun" / ".submitit").glob("*/*_0_log.err"))
    while f"stopped by {sig} after step" not in log_file.read_text() and time.time() < end:  # it may still be
        time.sleep(0.1)  # exiting (the sweep's own process does not wait for it after a SIGHUP)
    log = log_file.read_text()
    assert f"stopped by {sig} after step" in log  # the job's own command, `uv run` kept when it started the tests
    assert re.search(r"or this job alone: (uv run )?python train\.py model=tiny", log), log[-2000:]
