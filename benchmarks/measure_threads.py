#!/usr/bin/env python
"""Seconds per step of the CPU demo by torch thread count and OpenMP wait policy, idle and beside busy processes.

    uv run python benchmarks/measure_threads.py                 # 40 steps x {1, 2 passive, 2 active} x {0, 1 busy}, twice
    uv run python benchmarks/measure_threads.py --steps 100 --threads 1 2 4 --busy 0 1 2 --repeats 3 --warmstart

Each run is `train.py experiment=demo rl.max_steps=K evaluation=null` in a fresh run directory with
PODS_THREADS=<threads> and OMP_WAIT_POLICY=<policy> (passive: idle threads sleep, what train.py sets;
active: they spin, torch's own default), while <busy> processes `python -c "while True: pass"` spin
beside it. A run's figure is the median of metrics.jsonl's `time/step` (step 1 left out); repeats are
interleaved, and the table gives the best and the median over them. --warmstart also times the demo's
warm start from an empty cache in each run. pods' default (PODS_THREADS unset) is torch's thread count
with passive waiting, printed at the end with the machine's cores and load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=40, help="RL steps per run (K)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="PODS_THREADS values")
    p.add_argument("--busy", type=int, nargs="+", default=[0, 1], help="busy processes beside the run")
    p.add_argument("--wait-policy", nargs="+", default=["passive", "active"], choices=["passive", "active"],
                   help="OMP_WAIT_POLICY of the runs with more than one thread (passive: pods' default)")
    p.add_argument("--warmstart", action="store_true", help="also time the warm start from an empty cache")
    p.add_argument("--repeats", type=int, default=2, help="runs per cell, interleaved (report: best and median)")
    p.add_argument("--json", action="store_true", help="print the cells as a JSON list")
    args = p.parse_args(argv)
    if args.steps < 2 or min(args.threads) < 1 or min(args.busy) < 0 or args.repeats < 1:
        p.error("--steps must be >= 2, --threads and --repeats >= 1, --busy >= 0")
    return args


def child_env(threads: int, policy: str = "passive") -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    return {**env, "PODS_THREADS": str(threads), "OMP_WAIT_POLICY": policy.upper(), "HF_HUB_OFFLINE": "1",
            "WANDB_MODE": "disabled"}


def step_seconds(threads: int, policy: str, steps: int, tmp: Path, cache: Path) -> dict:
    """(median, mean) time/step of a fresh demo run of `steps` steps, warm start from `cache`."""
    out = tmp / f"runs-{threads}-{time.monotonic_ns()}"
    cmd = [sys.executable, str(ROOT / "train.py"), "experiment=demo", f"rl.max_steps={steps}", "evaluation=null",
           "logging.progress=false", "logging.samples_every=0", "rl.save_final=false", "rl.save_strategy=no",
           f"warmstart.cache_dir={cache}", f"output_root={out}", "run_name=m"]
    proc = subprocess.run(cmd, cwd=ROOT, env=child_env(threads, policy), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"measure_threads.py: train.py failed:\n{proc.stderr[-3000:]}")
    rows = [json.loads(line) for line in (out / "m" / "metrics.jsonl").read_text().splitlines()]
    times = [r["time/step"] for r in rows[1:]]
    return {"median": statistics.median(times), "mean": statistics.fmean(times)}


def warmstart_seconds(threads: int, policy: str, tmp: Path) -> float:
    """Seconds of the demo's warm start into an empty cache (as measured by the warm start itself)."""
    cache = Path(tempfile.mkdtemp(dir=tmp, prefix="ws-"))
    proc = subprocess.run([sys.executable, "-m", "pods.run.warmstart", f"cache_dir={cache}"], cwd=ROOT,
                          env=child_env(threads, policy), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"measure_threads.py: the warm start failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.splitlines()[-1])["seconds"]


def main(argv=None) -> int:
    args = parse_args(argv)
    combos = [(t, p) for t in args.threads for p in args.wait_policy[: 1 if t == 1 else None]]
    cells = {(busy, t, p): [] for busy in args.busy for t, p in combos}  # -> one measurement per repeat
    with tempfile.TemporaryDirectory(prefix="pods-threads-") as tmp:
        tmp, cache = Path(tmp), Path(tmp) / "warmstart"
        subprocess.run([sys.executable, "-m", "pods.run.warmstart", f"cache_dir={cache}"], cwd=ROOT,
                       env=child_env(1), capture_output=True, check=True)  # built once, outside the timings
        for rep in range(args.repeats):  # repeats interleaved, so a burst of other load hits one of each
            for busy in args.busy:
                spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
                try:
                    for threads, policy in combos:
                        cell = step_seconds(threads, policy, args.steps, tmp, cache)
                        if args.warmstart:
                            cell["warmstart_seconds"] = warmstart_seconds(threads, policy, tmp)
                        cells[busy, threads, policy].append(cell)
                        print(f"repeat {rep}, busy {busy}, threads {threads} ({policy}): {cell}", file=sys.stderr)
                finally:
                    for s in spinners:
                        s.kill()
                        s.wait()
    rows = [{"busy": b, "threads": t, "policy": p, "runs": runs} for (b, t, p), runs in cells.items()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"demo, {args.steps} steps per run, {args.repeats} run(s) per cell; seconds per RL step: the median "
          "of time/step of each run (step 1 left out); best and median over the runs")
    for r in rows:
        med = [c["median"] for c in r["runs"]]
        policy = f" (OMP_WAIT_POLICY={r['policy']})" if r["threads"] > 1 else ""
        ws = [c["warmstart_seconds"] for c in r["runs"] if "warmstart_seconds" in c]
        ws = f"; warm start best {min(ws):.1f} s, median {statistics.median(ws):.1f} s" if ws else ""
        print(f"  {r['busy']} busy process(es), threads {r['threads']}{policy}: best {min(med):.3f} s, median "
              f"{statistics.median(med):.3f} s{ws}")
    default = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                             capture_output=True, text=True).stdout.strip()
    print(f"pods' default here: {default} thread(s), OMP_WAIT_POLICY=passive. Machine: {os.cpu_count()} cores, "
          f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
