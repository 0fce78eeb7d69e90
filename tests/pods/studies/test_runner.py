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
