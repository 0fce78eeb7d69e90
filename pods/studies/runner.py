"""A study's runner: (arm, seed) jobs N at a time in threads, each one child process with its own log.

    errors = run_jobs([("grpo", 0), ("pods", 0)], do, workers=2, progress="runs")  # do(name, seed); failures listed
    t = run_logged([*pods_command("train"), "experiment=demo"], log, threads=1)  # {"wall_seconds", "cpu_seconds"}
    note("[12:00:01] train grpo seed 0")          # a line above the progress bar

Contract: `run_jobs` runs every job even when some fail with `catch` (reported at the end in the jobs' order) and
raises any other exception once the others are done; `run_logged` raises PodsError naming the log on a non-zero
exit. Ctrl-C or a signal (pods.cli.Stopped) in the main thread, or a closed stdout in a job: no new job starts, the
running children get the same signal (SIGINT for a closed pipe) and save their step, and once they have ended the
exception goes on. The leaderboard (pods.studies.leaderboard) and the demo comparison (pods.studies.demo_compare)
share them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Callable

from pods.cli import DUPLICATE_SECONDS, Stopped
from pods.cli import progress as progress_bar
from pods.errors import PodsError

_PODS = "import sys; from pods.commands import main; sys.exit(main())"  # the `pods` command, wheel or checkout
RUNNING: set[subprocess.Popen] = set()  # this process's children from run_logged (their own process group each)
_RUNNING_LOCK = threading.Lock()


def pods_command(*args: str) -> list[str]:
    """`pods <args>` as a child process of this Python (no console script or checkout needed)."""
    return [sys.executable, "-c", _PODS, *args]


def note(line: str) -> None:
    """Print a line above any progress bar (tqdm.write)."""
    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stdout)
    sys.stdout.flush()


def run_jobs(jobs: list[tuple[str, int]], do: Callable, workers: int, catch: type[BaseException] = PodsError, *,
             progress: str | None = None, done: int = 0) -> list[str]:
    """do(name, seed) for every job, `workers` threads at a time, in the jobs' order; a job that raises `catch` does
    not stop the others. Returns "<name> seed <seed>: <error>" for each failed job, in the jobs' order. `progress`:
    a bar of that name counting finished jobs with an ETA (`done`: finished before, counted, not timed)."""
    pool = ThreadPoolExecutor(max_workers=workers)
    futures = [(name, seed, pool.submit(do, name, seed)) for name, seed in jobs]
    bar = progress_bar(len(jobs) + done, progress, "runs", initial=done) if progress else None
    pending = {f for _, _, f in futures}
    try:
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                if bar is not None:
                    bar.update(1)
                error = future.exception()
                if error is not None and not isinstance(error, Exception):  # a closed stdout (pods.cli.ClosedPipe)
                    raise error
    except BaseException as stop:  # Ctrl-C, a signal, a closed pipe: the children save their step, then it goes on
        pool.shutdown(wait=False, cancel_futures=True)
        _stop_children(signal.SIGTERM if isinstance(stop, Stopped) and stop.signum == signal.SIGTERM else
                       signal.SIGHUP if isinstance(stop, Stopped) else signal.SIGINT)
        _await([f for _, _, f in futures])
        raise
    finally:
        if bar is not None:
            bar.close()
    pool.shutdown()
    errors = []
    for name, seed, future in futures:
        error = future.exception()
        if error is not None and not isinstance(error, catch):
            raise error
        if error is not None:  # the other runs went on; reported at the end
            errors.append(f"{name} seed {seed}: {error}")
    return errors


def _stop_children(signum: int) -> None:
    with _RUNNING_LOCK:  # run_logged removes a child under the lock once it is reaped: its pid is still its own
        for child in RUNNING:
            try:
                os.kill(child.pid, signum)
            except OSError:  # it has just ended
                pass


def _await(futures) -> None:
    """Wait for the jobs in flight; a further signal is passed on to the children (a second one within
    DUPLICATE_SECONDS is the first delivered twice, as `uv run` relays Ctrl-C: ignored)."""
    first, running = time.monotonic(), [f for f in futures if not f.cancelled()]  # a cancelled one never "finishes"
    while True:
        try:
            wait(running)
            return
        except (KeyboardInterrupt, Stopped) as again:
            if time.monotonic() - first > DUPLICATE_SECONDS:  # a second signal: the children stop at once
                _stop_children(signal.SIGINT if isinstance(again, KeyboardInterrupt) else again.signum)


def run_logged(cmd: list[str], log: Path, *, threads: int = 1, cwd: Path | None = None) -> dict:
    """Run cmd with `threads` torch threads, output appended to `log`; its wall and CPU seconds (os.wait4). The child
    has a process group of its own: Ctrl-C reaches it through `run_jobs`, once."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), PODS_THREADS=str(threads),
               TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", WANDB_MODE="disabled", PYTHONUNBUFFERED="1")
    t0 = time.time()
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd, env=env, process_group=0)
        with _RUNNING_LOCK:
            RUNNING.add(p)
        try:
            _, status, usage = os.wait4(p.pid, 0)
        finally:
            with _RUNNING_LOCK:
                RUNNING.discard(p)
    p.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise PodsError(f"command failed ({code}), see {log}: {' '.join(cmd)}")
    return {"wall_seconds": time.time() - t0, "cpu_seconds": usage.ru_utime + usage.ru_stime}
