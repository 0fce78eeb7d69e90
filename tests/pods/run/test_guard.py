"""pods.run.guard: the stop-on-signal handler, exit codes, the non-finite step checks."""

import math
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from pods.run.guard import (
    Interrupted,
    NonFiniteError,
    NonFiniteStreak,
    StopSignals,
    exit_code,
    nonfinite_count,
    nonfinite_reason,
)


def test_a_first_signal_only_requests_a_stop_and_handlers_are_restored():
    before = signal.getsignal(signal.SIGTERM)
    with StopSignals() as stop:
        assert not stop.requested
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.requested and stop.signum == signal.SIGTERM  # the process is still alive
    assert signal.getsignal(signal.SIGTERM) is before
    with StopSignals() as stop:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: no KeyboardInterrupt inside the loop
        assert stop.signum == signal.SIGINT


def test_the_same_signal_again_within_a_second_is_one_event():
    """`uv run` forwards a Ctrl-C the child already got from the terminal ~0.2 s later: not a second signal."""
    with StopSignals() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)  # would exit the process if it counted as a second signal
        assert stop.signum == signal.SIGINT


def test_a_second_signal_exits_at_once_with_128_plus_its_number():
    script = ("import os, signal, time\nfrom pods.run.guard import StopSignals\n"
              "with StopSignals():\n    os.kill(os.getpid(), signal.SIGTERM)\n    time.sleep(1.2)\n"
              "    os.kill(os.getpid(), signal.SIGTERM)\n    time.sleep(30)\nprint('not reached')\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 143 and "not reached" not in out.stdout
    assert "SIGTERM received: finishing the step" in out.stderr and "second signal (SIGTERM)" in out.stderr


def test_sighup_requests_a_stop_like_sigterm_unless_nohup_ignores_it():
    previous = signal.signal(signal.SIGHUP, signal.SIG_DFL)  # whatever this test runner was started under
    try:
        with StopSignals() as stop:
            os.kill(os.getpid(), signal.SIGHUP)  # the terminal closed: finish the step, save, exit 129
            assert stop.signum == signal.SIGHUP
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # started under nohup
        with StopSignals() as stop:
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.05)
            assert not stop.requested
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_exit_codes():
    assert exit_code(signal.SIGINT) == 0 and exit_code(signal.SIGTERM) == 143 and exit_code(signal.SIGHUP) == 129
    assert exit_code(signal.SIGINT, second=True) == 130
    err = Interrupted(signal.SIGTERM, 7, "runs/x/checkpoint-7")
    assert err.exit_code == 143 and str(err) == "stopped by SIGTERM after step 7; the run resumes from runs/x/checkpoint-7"


def test_nonfinite_reason_and_streak():
    assert nonfinite_reason(0.5, 1.0) is None
    assert nonfinite_reason(math.nan, 1.0) == "loss is nan"
    assert nonfinite_reason(0.1, math.inf) == "grad_norm is inf"
    streak = NonFiniteStreak(limit=3)
    for step, reason in enumerate(["loss is nan", "loss is nan", None, "loss is nan", "grad_norm is inf"], 1):
        streak.update(step, reason)  # a finite step in between resets the count
    with pytest.raises(NonFiniteError, match=r"after step 6: the last 3 steps .*step 6: loss is nan.*max_nonfinite"):
        streak.update(6, "loss is nan", "runs/x/checkpoint-4")


def test_nonfinite_count():
    assert nonfinite_count([torch.ones(3), torch.zeros(2)]) == 0
    assert nonfinite_count([torch.tensor([1.0, math.nan]), torch.tensor([math.inf]), torch.ones(1)]) == 2
