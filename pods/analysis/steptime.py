"""Seconds per training step: from our runs' `metrics.jsonl`, or derived from the paper's checkpoints.

    run_step_seconds(Path("checkpoints/demo-pods"))   # {"total": 0.13, "time/generation": 0.05, ...}
    paper_step_seconds(run, max_hours=0.5)            # training seconds at the last checkpoint / its optimizer step

Contract: our runs' total = last `elapsed_seconds` / last step (the curves' training clock); a phase `time/<phase>` =
its sum / logged steps (absent from a record: 0 s); `time/step*`, `time/total*` are totals, not phases (`phases`).
The multi-GPU CSVs' steps are decoded from the tracker's `_step` (pods.analysis.csvruns);
`paper_convention_step_seconds` is the paper's own bar (rows / ga, not steps): docs/multi-gpu.md "Step time".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from pods.analysis.loaders import Run, reading
from pods.errors import ResultsError

METRICS_FILE = "metrics.jsonl"
METRICS_WHAT = "the metrics.jsonl train.py writes (one JSON object per step)"
METRICS_FIX = "fix or delete that line (train.py writes one JSON object per step)"
TOTAL_PREFIXES = ("time/step", "time/total")


def read_metrics(path: Path) -> list[dict]:
    """Records of a metrics.jsonl (a torn last line from a killed run is skipped)."""
    f = path / METRICS_FILE if path.is_dir() else path
    if not f.is_file():
        raise ResultsError(f"{path}: no {METRICS_FILE}; step times need a training run's metrics log")
    out = []
    with reading(f, METRICS_WHAT):
        lines = f.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                continue  # partially written last line
            raise ResultsError(f"{f}: line {i + 1} is not JSON; {METRICS_FIX}") from None
        if not isinstance(row, dict):
            raise ResultsError(f"{f}: line {i + 1} is a JSON {type(row).__name__}, not an object; {METRICS_FIX}")
        out.append(row)
    return out


def run_step_seconds(path: Path) -> dict[str, float]:
    """{"total": seconds/step, "time/<phase>": mean seconds/step, ...} for one run directory."""
    recs = [r for r in read_metrics(path) if "step" in r]
    if not recs:
        raise ResultsError(f"{path}: {METRICS_FILE} has no records with 'step'")
    out: dict[str, float] = {}
    timed = [r for r in recs if "elapsed_seconds" in r]
    with reading(path / METRICS_FILE if path.is_dir() else path, METRICS_WHAT):
        if timed and float(timed[-1]["step"]) > 0:  # the training clock the curves use, per step
            out["total"] = float(timed[-1]["elapsed_seconds"]) / float(timed[-1]["step"])
    keys = sorted({k for r in recs for k in r if k.startswith("time/")})
    for k in keys:  # a timer missing from a record (e.g. time/checkpoint) spent 0 s in that step
        out[k] = float(sum(float(r[k]) for r in recs if isinstance(r.get(k), (int, float))) / len(recs))
    if "total" not in out:
        totals = [k for k in keys if k.startswith(TOTAL_PREFIXES)]
        if totals:
            out["total"] = out[totals[0]]
        elif keys:
            out["total"] = sum(out[k] for k in keys)
        else:
            raise ResultsError(f"{path}: {METRICS_FILE} has neither elapsed_seconds nor time/* timers")
    return out


def phases(step_seconds: dict[str, float]) -> dict[str, float]:
    """The stackable phase timers (everything but the totals)."""
    return {k: v for k, v in step_seconds.items() if k != "total" and not k.startswith(TOTAL_PREFIXES)}


def _last_within(run: Run, steps: np.ndarray, max_hours: float | None) -> int:
    """Index of the last checkpoint up to max_hours with a positive step; ResultsError without one."""
    ok = np.isfinite(steps) & (steps > 0)
    if max_hours is not None:
        ok &= run.hours <= max_hours + 1e-6
    if not ok.any():
        by = f" by {max_hours} h" if max_hours else ""
        csv = "logged_steps" in run.meta
        why = " (tracker rows that do not decode into optimizer steps: docs/multi-gpu.md)" if csv else ""
        raise ResultsError(f"run {run.name}: no checkpoint with a step number{by}{why}")
    return int(np.nonzero(ok)[0][-1])


def paper_step_seconds(run: Run, max_hours: float | None = None) -> float:
    """Seconds per optimizer step of a paper run: training seconds at its last checkpoint (up to max_hours)
    / its step (multi-GPU CSV runs: the optimizer steps decoded from the tracker's rows)."""
    i = _last_within(run, run.steps, max_hours)
    return float(run.hours[i] * 3600.0 / run.steps[i])


def paper_convention_step_seconds(run: Run, max_hours: float | None = None) -> float:
    """The paper's bar for a multi-GPU CSV run: training seconds / (tracker `_step` / ga), which counts
    logged rows per ga, not optimizer steps (kept to label it; paper_step_seconds is the step time)."""
    logged = np.asarray(run.meta.get("logged_steps", run.steps), float)
    i = _last_within(run, logged, max_hours)
    ga = re.search(r"-ga(\d+)", run.name)
    return float(run.hours[i] * 3600.0 / (logged[i] / (int(ga.group(1)) if ga else 1)))
