"""Many command lines in one Python process: each as `python <program> <args>` would run it, minus the start-up.

    results = run_many([{"program": "train.py", "args": ["rl.n=4.5"], "env": {...}}], cwd=ROOT)
    results[0]["code"], results[0]["stdout"], results[0]["stderr"]     # exit status and both streams

Each command line runs with `runpy.run_path(program, run_name="__main__")` under its own sys.argv and
environment, its streams captured; an exception that escapes the program is printed as a traceback and
counts as exit code 1, as the interpreter would. Hydra's global state is reset between programs. One
interpreter start-up (torch, Hydra, transformers) serves them all.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import subprocess
import sys
import time
import traceback
from pathlib import Path


def run_many(cases: list[dict], *, cwd: Path, timeout: float = 900) -> list[dict]:
    """Run `cases` ({program, args, env}) in one fresh interpreter; [{code, stdout, stderr, seconds}] in order."""
    proc = subprocess.run([sys.executable, __file__], input=json.dumps(cases), capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env=cases[0]["env"] if cases else None)
    if proc.returncode != 0:
        raise RuntimeError(f"cli_runner failed ({proc.returncode}):\n{proc.stderr[-5000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _exit_code(err: SystemExit) -> int:
    if err.code is None:
        return 0
    if isinstance(err.code, int):
        return err.code
    print(err.code, file=sys.stderr)  # sys.exit("message"): the interpreter prints it and exits 1
    return 1


def _run(case: dict) -> dict:
    from hydra.core.global_hydra import GlobalHydra

    os.environ.clear()
    os.environ.update(case["env"])
    sys.argv = [case["program"], *case["args"]]
    out, err, start = io.StringIO(), io.StringIO(), time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(case["program"], run_name="__main__")
            code = 0
        except SystemExit as stop:
            code = _exit_code(stop)
        except BaseException:  # noqa: BLE001 - what the interpreter would print for an uncaught exception
            traceback.print_exc()
            code = 1
    GlobalHydra.instance().clear()
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(), "seconds": time.perf_counter() - start}


if __name__ == "__main__":
    cases = json.loads(sys.stdin.read())
    results = [_run(case) for case in cases]
    sys.__stdout__.write("\n" + json.dumps(results) + "\n")
