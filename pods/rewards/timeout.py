"""A hard per-call time limit that works in any thread, without signals or subprocesses.

    call_with_limit(fn, 1.0, default=False)     # fn() if it returns within 1 s, else False
    call_with_limit(fn, None)                   # no limit: fn()

One shared daemon watchdog thread raises `_TimeLimit` (a BaseException, so sympy's `except Exception`
cannot swallow it) in the calling thread once the deadline passes, and again every `REPEAT_S`. Like a
signal it lands between bytecodes: one C-level operation (a huge bigint power) is not interrupted, so the
math verifier screens those out first. Why not math-verify's own time-outs: docs/verifiers.md.
"""

from __future__ import annotations

import ctypes
import heapq
import itertools
import os
import threading
import time
from typing import Any, Callable

# Re-raise interval while a timed-out call keeps running (it swallowed the first exception).
REPEAT_S = 0.1

# Two typed views of the same C function (called with the GIL held): raise exc / clear (NULL).
_set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)
_clear_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


class _TimeLimit(BaseException):
    """Raised inside a call that ran past its deadline (BaseException: not swallowed by sympy)."""


class _Watchdog:
    """One daemon thread holding a heap of (deadline, token); injects _TimeLimit when one passes."""

    def __init__(self):
        self._cv = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._active: dict[int, list] = {}  # token -> [thread id, injected?]
        self._tokens = itertools.count()
        self._pid = None

    def _ensure_thread(self):
        if self._pid != os.getpid():  # first use (or a fork that bypassed the at-fork hook)
            self._pid = os.getpid()
            threading.Thread(target=self._run, name="rewards-watchdog", daemon=True).start()

    def arm(self, seconds: float) -> int:
        with self._cv:
            self._ensure_thread()
            token = next(self._tokens)
            self._active[token] = [threading.get_ident(), False]
            heapq.heappush(self._heap, (time.monotonic() + seconds, token))
            self._cv.notify()
            return token

    def disarm(self, token: int) -> None:
        """Stop watching; clears a pending not-yet-delivered exception. Idempotent."""
        with self._cv:
            entry = self._active.pop(token, None)
            if entry is not None and entry[1]:
                _clear_async_exc(entry[0], None)

    def _run(self):
        with self._cv:
            while True:
                now = time.monotonic()
                while self._heap and (self._heap[0][1] not in self._active or self._heap[0][0] <= now):
                    deadline, token = heapq.heappop(self._heap)
                    entry = self._active.get(token)
                    if entry is None:
                        continue  # finished in time
                    entry[1] = True
                    _set_async_exc(entry[0], _TimeLimit)
                    heapq.heappush(self._heap, (now + REPEAT_S, token))
                    break  # re-read the clock before looking at the next deadline
                timeout = self._heap[0][0] - time.monotonic() if self._heap else None
                self._cv.wait(timeout=None if timeout is None else max(timeout, 0.0))


_WATCHDOG = _Watchdog()


def _reset_after_fork() -> None:
    """A forked child (e.g. a data-loader worker) gets a fresh watchdog: the parent's thread is
    gone there, and its lock may have been copied in a held state."""
    global _WATCHDOG
    _WATCHDOG = _Watchdog()


os.register_at_fork(after_in_child=_reset_after_fork)


def call_with_limit(fn: Callable[[], Any], seconds: float | None, default: Any = None) -> Any:
    """fn() if it returns within `seconds` (None or <= 0: no limit), else `default`.

    Exceptions raised by fn propagate unchanged; only the time limit is turned into `default`.
    """
    if seconds is None or seconds <= 0:
        return fn()
    token = _WATCHDOG.arm(seconds)
    try:
        try:
            return fn()
        finally:
            _WATCHDOG.disarm(token)
    except _TimeLimit:
        _WATCHDOG.disarm(token)  # a late delivery may land in the finally above; clear again
        return default
