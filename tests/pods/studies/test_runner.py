"""pods.studies.runner.run_jobs: the (arm, seed) jobs of the leaderboard and demo_compare, N at a time."""

import threading

import pytest

from pods.errors import PodsError
from pods.studies.runner import run_jobs


def test_jobs_run_in_order_and_a_failed_job_does_not_stop_the_others():
    done, lock = [], threading.Lock()

    def do(name, seed):
        with lock:
            done.append((name, seed))
        if name == "bad":
            raise PodsError(f"run {seed} broke")

    jobs = [("grpo", 0), ("bad", 0), ("pods", 0), ("bad", 1), ("grpo", 1)]
    assert run_jobs(jobs, do, workers=1) == ["bad seed 0: run 0 broke", "bad seed 1: run 1 broke"]
    assert done == jobs  # one worker: exactly the jobs' order
    done.clear()
    assert len(run_jobs(jobs, do, workers=2)) == 2 and sorted(done) == sorted(jobs)


def test_an_error_it_does_not_catch_is_raised_once_the_other_jobs_are_done():
    done = []

    def do(name, seed):
        done.append(name)
        if name == "bug":
            raise KeyError(name)

    with pytest.raises(KeyError):
        run_jobs([("bug", 0), ("grpo", 0), ("pods", 0)], do, workers=1)
    assert done == ["bug", "grpo", "pods"]
    assert run_jobs([("bug", 0)], do, workers=1, catch=Exception) == ["bug seed 0: 'bug'"]


def test_the_progress_bar_counts_runs_done_and_the_time_left(capsys):
    assert run_jobs([("grpo", 0), ("pods", 0)], lambda name, seed: None, workers=2, progress="leaderboard",
                    done=1) == []
    err = capsys.readouterr().err
    assert "leaderboard: 100%" in err and "| 3/3 runs [" in err and "<" in err  # 1 skipped + 2 run; elapsed<left


INTERRUPTED = r"""
import signal, sys
from pathlib import Path
from pods.cli import run_script
from pods.studies.runner import run_jobs, run_logged

CHILD = '''
import signal, sys, time
from pathlib import Path
def save(signum, frame):  # what a training run does: finish the step, save, exit
    time.sleep(0.5)
    Path(sys.argv[1]).write_text("saved")
    sys.exit(0)
signal.signal(signal.SIGINT, save)
Path(sys.argv[1] + ".started").write_text("")
time.sleep(120)
'''

def main(argv):
    out = Path(argv[0])
    do = lambda name, seed: run_logged([sys.executable, "-c", CHILD, str(out / f"{name}-{seed}")], out / "log")
    run_jobs([("a", 0), ("b", 0), ("c", 0)], do, workers=2)

signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (a background job ignores Ctrl-C)
sys.exit(run_script(main, sys.argv[1:], program="p", interrupted="the runs in progress saved their step"))
"""


def test_ctrl_c_stops_new_runs_lets_the_running_ones_save_then_is_one_line_and_130(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED, str(tmp_path)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("*.started"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # to the parent only: it passes Ctrl-C on to its children
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "p: stopped by Ctrl-C; the runs in progress saved their step\n"
    assert (tmp_path / "a-0").read_text() == "saved" and (tmp_path / "b-0").read_text() == "saved"
    assert not (tmp_path / "c-0.started").exists()  # the run not yet started never starts
