"""Guards of a training run: stop cleanly on SIGTERM / SIGHUP / Ctrl-C, skip non-finite steps, keep NaN out of saves.

    with StopSignals() as stop:                   # or stop.install() ... stop.restore()
        ...  # one step; if stop.requested: checkpoint, then raise Interrupted(stop.signum, step, checkpoint)
    reason = nonfinite_reason(loss, grad_norm)    # None, or e.g. "loss is nan"
    streak = NonFiniteStreak(limit=3); streak.update(step, reason, last_checkpoint)  # NonFiniteError: 3rd in a row
    nonfinite_count(policy.trainable_parameters())  # tensors holding NaN/inf (pods.run.checkpoint refuses to save)

The first signal only sets `stop.signum`; a second one exits at once with 128 + its number, but the same
signal again within DUPLICATE_SECONDS is the first delivered twice. SIGHUP (the terminal closed) also points
the streams that were that terminal at /dev/null, so the messages after it cannot fail. Exit codes: docs/long-runs.md.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time

import torch

from pods.cli import DUPLICATE_SECONDS
from pods.errors import PodsError

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)  # SIGHUP: the terminal or ssh session closed


def exit_code(signum: int, second: bool = False) -> int:
    """Exit status after a signal: SIGINT that was handled -> 0; otherwise 128 + the signal's number."""
    return 0 if signum == signal.SIGINT and not second else 128 + signum


class Interrupted(Exception):
    """The run stopped after a signal; `checkpoint` is the one it resumes from (None: step 0)."""

    def __init__(self, signum: int, step: int, checkpoint=None, note: str = ""):
        self.signum, self.step, self.checkpoint = signum, step, checkpoint
        self.exit_code = exit_code(signum)
        name = signal.Signals(signum).name
        resumes = checkpoint if checkpoint is not None else "step 0 (no checkpoint was written)"
        super().__init__(f"stopped by {name} after step {step}{note}; the run resumes from {resumes}")


class StopSignals:
    """Context manager: SIGTERM / SIGINT / SIGHUP request a stop (`requested`, `signum`); a second one exits now.

    Installs its handlers only in the main thread (Python delivers signals there) and restores
    the previous handlers on exit. A SIGHUP that is ignored (`nohup`) stays ignored.
    """

    def __init__(self):
        self.signum: int | None = None
        self._first = 0.0  # time.monotonic() of the first signal
        self._previous: dict = {}
        self._terminal: list[int] = []  # stdout / stderr fds that are a terminal when installed

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def install(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            self._terminal = [fd for fd in (1, 2) if _isatty(fd)]
            self._previous = {s: signal.signal(s, self._handle) for s in SIGNALS
                              if s != signal.SIGHUP or signal.getsignal(s) is not signal.SIG_IGN}  # nohup: ignored
        return self

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}

    def __enter__(self) -> "StopSignals":
        return self.install()

    def __exit__(self, *exc) -> None:
        self.restore()

    def _handle(self, signum, frame) -> None:
        name = signal.Signals(signum).name
        now = time.monotonic()
        if signum == signal.SIGHUP:
            _detach(self._terminal)  # a hung-up terminal fails every write (EIO): the rest goes nowhere
        if self.signum == signum and now - self._first < DUPLICATE_SECONDS:
            return  # the first signal delivered again (e.g. by `uv run` and the terminal)
        if self.signum is None:
            self.signum, self._first = signum, now
            _say(f"\n{name} received: finishing the step in progress, then saving a checkpoint and stopping "
                 f"(send it again to exit at once without saving)\n")
            return
        _say(f"\nsecond signal ({name}): exiting now without saving; rerun the same command to resume "
             f"from the last checkpoint\n")
        os._exit(exit_code(signum, second=True))


def _say(text: str) -> None:
    try:
        os.write(2, text.encode())  # not print(): a signal may arrive while stderr is being written
    except OSError:  # stderr is gone (a closed terminal): the stop goes on without the message
        pass


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _detach(fds: list[int]) -> None:
    """Point `fds` at /dev/null (the files and pipes they might be are never touched: only terminals)."""
    if not fds:
        return
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in fds:
        os.dup2(null, fd)
    os.close(null)


# ----------------------------------------------------------------------------- non-finite steps


class NonFiniteError(PodsError, RuntimeError):
    """Too many consecutive non-finite steps, or non-finite weights about to be saved."""


def nonfinite_reason(loss: float, grad_norm: float) -> str | None:
    """Why an optimizer step must be skipped ("loss is nan; grad_norm is inf"), or None when both are finite."""
    bad = [f"{name} is {value}" for name, value in (("loss", loss), ("grad_norm", grad_norm))
           if not math.isfinite(value)]
    return "; ".join(bad) or None


class NonFiniteStreak:
    """Counts consecutive skipped steps; raises NonFiniteError when `limit` are skipped in a row."""

    def __init__(self, limit: int, count: int = 0):
        self.limit, self.count = limit, count

    def update(self, step: int, reason: str | None, checkpoint=None) -> None:
        self.count = self.count + 1 if reason else 0
        if reason and self.count >= self.limit:
            latest = checkpoint if checkpoint is not None else "none yet"
            raise NonFiniteError(
                f"stopped after step {step}: the last {self.count} steps had a non-finite loss or gradient norm "
                f"(step {step}: {reason}), so their updates were skipped and nothing non-finite was saved "
                f"(latest checkpoint: {latest}). "
                "Lower optim.lr or enable gradient clipping (optim.max_grad_norm), or raise rl.max_nonfinite_steps")


def nonfinite_count(tensors) -> int:
    """How many of `tensors` hold a NaN or an inf."""
    return sum(1 for t in tensors if not bool(torch.isfinite(t.detach()).all()))
