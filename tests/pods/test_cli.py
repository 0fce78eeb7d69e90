"""pods.cli: our errors become one message and exit 2; anything else keeps its traceback plus what it was doing."""

import pytest

from pods import cli
from pods.errors import CheckpointError, ConfigError, DataError, PodsError, ResultsError


def test_the_hierarchy_keeps_the_builtin_bases():
    assert all(issubclass(e, PodsError) for e in (ConfigError, DataError, CheckpointError, ResultsError))
    assert issubclass(ConfigError, ValueError) and issubclass(DataError, ValueError)
    assert issubclass(CheckpointError, RuntimeError) and issubclass(ResultsError, ValueError)


def test_run_script_prints_our_error_without_a_traceback(capsys):
    def main(argv):
        raise ResultsError(f"{argv[0]}: not valid JSON; fix or remove the file")

    assert cli.run_script(main, ["x.json"], program="speedup.py") == 2
    err = capsys.readouterr().err
    assert err == "speedup.py: error: x.json: not valid JSON; fix or remove the file\n"


def test_run_script_passes_the_exit_code_through():
    assert cli.run_script(lambda argv: None, [], program="p") == 0
    assert cli.run_script(lambda argv: 3, [], program="p") == 3


def test_an_unexpected_error_keeps_its_traceback_and_says_what_was_being_done(capsys):
    def main(argv):
        with cli.doing("evaluating checkpoint-40 on gsm8k"):
            with cli.doing("loading checkpoint-40/policy"):
                raise KeyError("lm_head.weight")

    assert cli.run_script(main, ["--results", "r"], program="p.py") == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "KeyError: 'lm_head.weight'" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("p.py: unexpected KeyError while loading checkpoint-40/policy, evaluating checkpoint-40 "
                           "on gsm8k; the traceback above shows where")


def test_without_notes_the_line_names_the_command(capsys):
    def main(argv):
        raise ZeroDivisionError("boom")

    assert cli.run_script(main, ["--x", "1"], program="p.py") == 1
    assert "p.py: unexpected ZeroDivisionError while running p.py --x 1;" in capsys.readouterr().err


def test_doing_leaves_our_errors_alone():
    with pytest.raises(DataError) as info:
        with cli.doing("reading data"):
            raise DataError("train.jsonl line 3 is not valid JSON")
    assert not getattr(info.value, "__notes__", None)


def test_a_single_hydra_job_exits_with_the_code(capsys):
    app = cli.HydraApp("train.py")
    with pytest.raises(SystemExit) as stop:
        app.job(lambda: (_ for _ in ()).throw(ConfigError("invalid config:\n  - rl.n must be an integer, got 4.5")))
    assert stop.value.code == 2
    assert capsys.readouterr().err.startswith("train.py: error: invalid config:\n  - rl.n must be an integer")
    with pytest.raises(SystemExit) as stop:
        app.job(lambda: 1 / 0, doing="training checkpoints/x")
    assert stop.value.code == 1
    assert "train.py: unexpected ZeroDivisionError while training checkpoints/x" in capsys.readouterr().err


def test_hydras_own_errors_exit_2_and_failed_sweep_jobs_are_summarised(capsys):
    app = cli.HydraApp("train.py")

    def hydra_fails():
        raise SystemExit(1)  # Hydra printed why it could not compose the config

    with pytest.raises(SystemExit) as stop:
        app.main(hydra_fails)
    assert stop.value.code == 2
    app.jobs, app.failed = 3, [cli.JobFailure("job 1 (rl.n=4.5)", 2, "train.py: error in sweep job 1 ...")]
    with pytest.raises(SystemExit) as stop:
        app.main(lambda: None)
    assert stop.value.code == 2
    assert "train.py: 1 of 3 sweep jobs failed: job 1 (rl.n=4.5)" in capsys.readouterr().err


def test_failures_of_jobs_in_other_processes_are_printed_and_summarised(capsys):
    """A launcher running jobs in their own processes raises SweepFailed with what each job printed."""
    app = cli.HydraApp("train.py")
    lost = [cli.JobFailure("job 0 (seed=0)", 2, "train.py: error in sweep job 0 (seed=0): bad\n  (the job's log: x)"),
            cli.JobFailure("job 2 (seed=2)", 1, "train.py: unexpected OSError: disk")]

    def sweep():
        raise cli.SweepFailed(lost, 3)

    with pytest.raises(SystemExit) as stop:
        app.main(sweep)
    assert stop.value.code == 1  # a job hit an unexpected error
    err = capsys.readouterr().err
    assert err.splitlines() == ["train.py: error in sweep job 0 (seed=0): bad", "  (the job's log: x)",
                                "train.py: unexpected OSError: disk",
                                "train.py: 2 of 3 sweep jobs failed: job 0 (seed=0); job 2 (seed=2)"]
    with pytest.raises(SystemExit) as stop:
        app.main(lambda: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert stop.value.code == 130 and "interrupted; a job in progress saves its step" in capsys.readouterr().err


def test_a_sweep_job_returns_its_failure_and_takes_ctrl_c_back(monkeypatch, capsys):
    import signal

    app = cli.HydraApp("train.py")
    monkeypatch.setattr(cli, "sweep_job", lambda: (1, ["rl.n=4.5"]))
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as pods' local launcher starts a job
    try:
        failure = app.job(lambda: (_ for _ in ()).throw(ConfigError("rl.n must be an integer, got 4.5")))
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
    assert failure == cli.JobFailure("job 1 (rl.n=4.5)", 2,
                                     "train.py: error in sweep job 1 (rl.n=4.5): rl.n must be an integer, got 4.5")
    assert app.failed == [failure] and app.job(lambda: None) is None


def test_an_unexpected_error_in_training_says_which_step_of_which_run(tmp_path, monkeypatch):
    from pods.run import sampler, trainer

    import helpers as th

    th.patch_task(monkeypatch)
    th.skip_reward_check(monkeypatch)
    calls = []

    def score(*args):  # the second step's verifier crashes
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("a verifier crashed")
        return th.fake_score(*args)

    monkeypatch.setattr(sampler, "score", score)
    with pytest.raises(RuntimeError) as info:
        trainer.train(th.tiny_cfg(tmp_path))
    assert cli.activity(info.value) == f"training step 2 of {tmp_path / 't'}"


def test_an_override_hydra_cannot_parse_is_named(capsys):
    cli.check_overrides("train.py", ["-m", "--cfg", "job", "rl.n=16,64", "rl.m=4"])  # fine: nothing printed
    with pytest.raises(SystemExit) as stop:
        cli.check_overrides("train.py", ["rl.n=[", "seed=1", "x={a:"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "cannot parse 'rl.n=['" in err and "cannot parse 'x={a:'" in err and "seed" not in err


def test_cpu_threads_default_to_one_per_core_only_when_idle_threads_sleep():
    assert cli.cpu_threads({"OMP_WAIT_POLICY": "PASSIVE"}) is None  # torch's default: one per core
    assert cli.cpu_threads({"OMP_WAIT_POLICY": "passive"}) is None
    assert cli.cpu_threads({}) == 1  # torch loaded before quiet_openmp could act: its threads spin
    assert cli.cpu_threads({"OMP_WAIT_POLICY": "ACTIVE"}) == 1
    assert cli.cpu_threads({"PODS_THREADS": "3", "OMP_WAIT_POLICY": "ACTIVE"}) == 3  # the override wins


@pytest.mark.parametrize("value", ["many", "0", "-2", "1.5", ""])
def test_pods_threads_must_be_a_positive_integer(value):
    with pytest.raises(ConfigError, match=f"PODS_THREADS={value!r}: must be a positive integer"):
        cli.cpu_threads({"PODS_THREADS": value})


def test_quiet_openmp_keeps_a_users_policy_and_acts_only_before_torch_loads(monkeypatch):
    import sys

    env = {"OMP_WAIT_POLICY": "ACTIVE"}
    cli.quiet_openmp(env)
    assert env == {"OMP_WAIT_POLICY": "ACTIVE"}
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    env = {}
    cli.quiet_openmp(env)
    assert env == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_quiet_openmp_leaves_the_environment_alone_once_torch_is_loaded():
    import torch  # noqa: F401  (loaded: OpenMP already read its settings)

    env = {}
    cli.quiet_openmp(env)
    assert env == {}  # so cpu_threads sees spinning threads and keeps to 1
    assert cli.cpu_threads(env) == 1


def test_set_cpu_threads_applies_the_choice():
    import torch

    before = torch.get_num_threads()
    try:
        assert cli.set_cpu_threads({"PODS_THREADS": "1"}) == 1 == torch.get_num_threads()
        assert cli.set_cpu_threads({"OMP_WAIT_POLICY": "PASSIVE"}) == 1  # None: left as it is
    finally:
        torch.set_num_threads(before)


def test_a_closed_stdout_ends_quietly_with_141(monkeypatch, capsys):
    class Closed:  # a pipe whose reader went away
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", Closed())

    def main(argv):
        try:
            print("a line")
        except Exception:  # noqa: BLE001 - an `except Exception` on the way does not swallow it
            raise AssertionError("ClosedPipe is not an Exception")

    assert cli.run_script(main, [], program="p") == 141
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("stop, code, line", [
    (KeyboardInterrupt(), 130, "p: stopped by Ctrl-C; rerun to continue\n"),
    (cli.Stopped(15), 143, "p: stopped by SIGTERM; rerun to continue\n"),
])
def test_ctrl_c_and_a_signal_are_one_line_and_128_plus_the_signal(capsys, stop, code, line):
    def main(argv):
        raise stop

    assert cli.run_script(main, [], program="p", interrupted="rerun to continue") == code
    assert capsys.readouterr().err == line


def test_a_file_system_problem_of_a_named_path_is_one_message_and_exit_2(capsys):
    def is_a_directory(argv):
        with cli.doing("resuming checkpoints/x"):
            raise IsADirectoryError(21, "Is a directory", "checkpoints/x/metrics.jsonl")

    assert cli.run_script(is_a_directory, [], program="p") == 2
    assert capsys.readouterr().err == ("p: error: checkpoints/x/metrics.jsonl: is a directory where a file was "
                                       "expected: move it aside (while resuming checkpoints/x)\n")
    with pytest.raises(SystemExit) as stop:  # the same in a Hydra program's job
        cli.HydraApp("train.py").job(lambda: is_a_directory([]))
    assert stop.value.code == 2 and "train.py: error: checkpoints/x/metrics.jsonl: is a directory" in \
        capsys.readouterr().err
    assert cli.environment_problem(FileNotFoundError(2, "No such file", "x")) is None  # not named: a traceback
    assert cli.environment_problem(OSError(28, "No space left")) is None  # no path: a traceback


def test_an_output_directory_that_is_a_file_is_refused(tmp_path):
    import argparse

    (tmp_path / "f").write_text("")
    with pytest.raises(argparse.ArgumentTypeError, match="is a file; give a directory"):
        cli.out_dir(str(tmp_path / "f"))
    assert cli.out_dir(str(tmp_path / "new")) == tmp_path / "new"


def test_the_progress_bar_shows_counts_and_the_time_left(capsys):
    with cli.progress(4, "leaderboard", "runs", initial=1) as bar:
        for _ in range(3):
            bar.update(1)
    err = capsys.readouterr().err
    assert "leaderboard: 100%" in err and "| 4/4 runs [00:00<00:00, " in err  # [elapsed<left, rate]


SIGNALLED = r"""
import subprocess, sys
from pods.cli import run_script

def main(argv):
    subprocess.run([sys.executable, "-c", "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); "
                    "time.sleep(120)", argv[0]])

sys.exit(run_script(main, sys.argv[1:], program="p", interrupted="nothing is left running"))
"""


def test_a_signal_ends_the_programs_children_and_is_one_line(tmp_path):
    """`pods gpu-check` under `timeout`: SIGTERM to the parent ends the child it waits for (it used to run on)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "child.pid"
    proc = subprocess.Popen([sys.executable, "-c", SIGNALLED, str(pid_file)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (pid_file.is_file() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pid_file.read_text())
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err == "p: stopped by SIGTERM; nothing is left running\n"
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
