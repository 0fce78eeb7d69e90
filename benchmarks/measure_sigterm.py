"""Measure how long train.py takes to exit after a SIGTERM (finish the step, checkpoint it, exit 143).

    uv run python benchmarks/measure_sigterm.py                       # the CPU demo, 5 signals
    uv run python benchmarks/measure_sigterm.py --trials 3 --threads 1 -- rl.n=16   # extra train.py overrides

Each trial starts `train.py experiment=demo` in a fresh run directory under a temp dir (the warm
start is trained once into ~/.cache/pods/warmstart/ if it is not cached yet, before any timing),
waits until `--after` + trial steps are logged, sends SIGTERM and times signal -> process exit.
Prints per trial: the exit code, the seconds to exit, the step the run stopped after, the time
to write its checkpoint, the time from the checkpoint on disk and from the printed resume message
to the exit (interpreter shutdown),
the mean step time of the run so far; then min / median / max.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pods.run.metrics import read_metrics

ROOT = Path(__file__).resolve().parents[1]


def trial(out: Path, after: int, threads: int | None, extra: list[str]) -> dict:
    env = {**os.environ, **({"PODS_THREADS": str(threads)} if threads else {})}
    cmd = [sys.executable, "train.py", "experiment=demo", f"output_root={out}", "run_name=r", "logging.progress=false",
           "evaluation=null", *extra]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    run_dir = out / "r"
    while len(read_metrics(run_dir)) < after:
        if proc.poll() is not None:
            raise SystemExit(f"train.py ended before step {after}:\n{proc.stderr.read()[-3000:]}")
        time.sleep(0.01)
    lines: list[tuple[float, str]] = []  # stderr lines with their arrival time
    reader = threading.Thread(target=lambda: lines.extend((time.time(), x) for x in proc.stderr), daemon=True)
    reader.start()
    sent = time.time()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=600)
    ended = time.time()
    reader.join(timeout=10)
    err = "".join(x for _, x in lines)
    said = next((t for t, x in lines if x.startswith("stopped by SIGTERM")), None)
    logged = read_metrics(run_dir)
    manifest = run_dir / f"checkpoint-{logged[-1]['step']}" / "manifest.json"
    if proc.returncode != 143:
        raise SystemExit(f"exit code {proc.returncode}, expected 143:\n{err[-3000:]}")
    last = logged[-1]
    return {"exit_code": proc.returncode, "seconds_to_exit": ended - sent, "stopped_after_step": last["step"],
            "saved_to_exit": ended - manifest.stat().st_mtime if manifest.exists() else None,
            "message_to_exit": ended - said if said else None,
            "mean_step_seconds": statistics.mean(r["time/step"] for r in logged),
            "checkpoint_seconds": last.get("time/checkpoint", 0.0),
            "checkpoint": (run_dir / f"checkpoint-{last['step']}").is_dir()}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--after", type=int, default=5, help="steps logged before the first signal (+1 per trial)")
    p.add_argument("--threads", type=int, default=None, help="PODS_THREADS for train.py (default: torch's)")
    p.add_argument("overrides", nargs="*", help="extra train.py overrides (after --)")
    args = p.parse_args(argv)
    os.chdir(ROOT)
    from omegaconf import OmegaConf

    from pods.run.warmstart import ensure_warmstart

    if "warmstart=null" not in args.overrides:  # train (or find) the demo's warm start first: not timed
        ensure_warmstart(OmegaConf.load(ROOT / "config" / "experiment" / "demo.yaml").warmstart)
    results = []
    with tempfile.TemporaryDirectory(prefix="pods-sigterm-") as tmp:
        for i in range(args.trials):
            r = trial(Path(tmp) / f"t{i}", args.after + i, args.threads, args.overrides)
            results.append(r)
            print(f"trial {i + 1}: exit {r['exit_code']} after {r['seconds_to_exit']:.2f} s, stopped after step "
                  f"{r['stopped_after_step']} (checkpoint {'written' if r['checkpoint'] else 'MISSING'}, "
                  f"{r['checkpoint_seconds']:.3f} s to write, exit {r['saved_to_exit']:.2f} s after it, "
                  f"{r['message_to_exit']:.2f} s after the resume message), "
                  f"mean step {r['mean_step_seconds']:.3f} s", flush=True)
    secs = [r["seconds_to_exit"] for r in results]
    print(f"SIGTERM -> exit: min {min(secs):.2f} s, median {statistics.median(secs):.2f} s, max {max(secs):.2f} s "
          f"over {len(secs)} trials")


if __name__ == "__main__":
    main()
