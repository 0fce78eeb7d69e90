"""A study's runner: (arm, seed) jobs N at a time in threads, each one child process with its own log.

    errors = run_jobs([("grpo", 0), ("pods", 0)], do, workers=2)      # do(name, seed); failures listed, in order
    t = run_logged([*pods_command("train"), "experiment=demo"], log, threads=1)  # {"wall_seconds", "cpu_seconds"}

Contract: `run_jobs` runs every job even when some fail with `catch` (reported at the end in the jobs' order) and
raises any other exception once the others are done; `run_logged` raises PodsError naming the log on a non-zero
exit. The leaderboard (pods.studies.leaderboard) and the demo comparison (pods.studies.demo_compare) share them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from pods.errors import PodsError

_PODS = "import sys; from pods.commands import main; sys.exit(main())"  # the `pods` command, wheel or checkout


def pods_command(*args: str) -> list[str]:
    """`pods <args>` as a child process of this Python (no console script or checkout needed)."""
    return [sys.executable, "-c", _PODS, *args]


def run_jobs(jobs: list[tuple[str, int]], do: Callable, workers: int,
             catch: type[BaseException] = PodsError) -> list[str]:
    """do(name, seed) for every job, `workers` threads at a time, in the jobs' order; a job that raises `catch` does
    not stop the others. Returns "<name> seed <seed>: <error>" for each failed job, in the jobs' order."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [(name, seed, pool.submit(do, name, seed)) for name, seed in jobs]
    errors = []
    for name, seed, future in futures:
        error = future.exception()
        if error is not None and not isinstance(error, catch):
            raise error
        if error is not None:  # the other runs went on; reported at the end
            errors.append(f"{name} seed {seed}: {error}")
    return errors


def run_logged(cmd: list[str], log: Path, *, threads: int = 1, cwd: Path | None = None) -> dict:
    """Run cmd with `threads` torch threads, output appended to `log`; its wall and CPU seconds (os.wait4)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), PODS_THREADS=str(threads),
               TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", WANDB_MODE="disabled", PYTHONUNBUFFERED="1")
    t0 = time.time()
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd, env=env)
        _, status, usage = os.wait4(p.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise PodsError(f"command failed ({code}), see {log}: {' '.join(cmd)}")
    return {"wall_seconds": time.time() - t0, "cpu_seconds": usage.ru_utime + usage.ru_stime}
