"""One leaderboard run (an arm x seed run directory) as a trace on the budget axis, and the authors' layout.

    tr = read_trace(run_dir, 2.0, files={"sampled": "eval_results.json", "greedy": "eval_greedy.json"})  # w = 2
    tr = read_trace(run_dir, Meter(constants=profile.constants), files)     # on a modelled-seconds axis
    tr.cost, tr.steps, tr.seconds, tr.acc["sampled"]    # [C] each: base (cost 0) first, then every checkpoint
    grid_values(tr, grid)                                # {"sampled": [K], ..., "steps": [K], "seconds": [K]}
    write_authors_layout(results_dir, "pods", 3, run_dir, tr, files)   # pods-sampled-Run3.json, base-sampled.json

Contract: a checkpoint's cost is its step's metrics.jsonl row priced by `cost` (w: pods.core.cost.spent; a
pods.core.timing.Meter: tokens or modelled seconds, from the row's step count and cost ledger); accuracy between
checkpoints is interpolated linearly on the cost axis (the same budget points for every arm); a missing file or
step is a ResultsError naming it. Zero-signal groups come from the rollout ledger (pods.analysis.ledger).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pods.analysis.ledger import read_ledger
from pods.analysis.loaders import read_json
from pods.core.cost import spent
from pods.errors import ResultsError
from pods.io import atomic_write_json

DATASET = "arithmetic"


@dataclass
class Trace:
    """A run's checkpoints on the cost axis (base first)."""

    cost: np.ndarray  # [C] tokens generated + w x tokens trained at each checkpoint (0 = the warm start)
    steps: np.ndarray  # [C] training steps
    seconds: np.ndarray  # [C] training seconds
    acc: dict[str, np.ndarray]  # metric -> [C] accuracy (mean over the evaluation's draws)
    zero_signal: dict[str, float] = field(default_factory=dict)  # {"generated", "trained"}: shares of groups


def metrics_rows(run_dir: Path) -> dict[int, dict]:
    """{step: row} of a run's metrics.jsonl (a line cut short by a crash is skipped)."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise ResultsError(f"{run_dir}: no metrics.jsonl; train this run first")
    rows = {}
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "step" in row:
            rows[int(row["step"])] = row
    return rows


def _entries(path: Path, dataset: str) -> list[tuple[int, float, float]]:
    """[(step, elapsed seconds, accuracy)] of an evaluate-run results file, base (step 0) included, by step."""
    if not path.is_file():
        raise ResultsError(f"{path}: missing; evaluate this run first (rerun the leaderboard: it resumes)")
    out = []
    for key, v in read_json(path).items():
        if isinstance(v, dict) and dataset in v and v[dataset].get("ans_acc"):
            step = 0 if key == "base" else int(v["step"])
            out.append((step, float(v.get("elapsed_seconds", 0.0)), float(np.mean(v[dataset]["ans_acc"]))))
    return sorted(out)


def read_trace(run_dir: Path, cost: float | Callable[[dict | None], float], files: dict[str, str],
               dataset: str = DATASET) -> Trace:
    """The run's trace: every evaluated checkpoint of each results file (they must cover the same steps); `cost`:
    w of the token cost, or a function of a metrics row (None: before the first step)."""
    price = cost if callable(cost) else (lambda row: spent(row, cost))
    run_dir, rows = Path(run_dir), metrics_rows(run_dir)
    per = {metric: _entries(run_dir / f, dataset) for metric, f in files.items()}
    steps = [s for s, _, _ in next(iter(per.values()))]
    for metric, entries in per.items():
        if [s for s, _, _ in entries] != steps:
            raise ResultsError(f"{run_dir}: {files[metric]} and {next(iter(files.values()))} cover different "
                               "checkpoints; rerun the leaderboard to finish the evaluation")
    missing = [s for s in steps if s and s not in rows]
    if missing:
        raise ResultsError(f"{run_dir}/metrics.jsonl has no row for checkpoint step(s) {missing}")
    first = next(iter(per.values()))
    return Trace(cost=np.array([price(rows.get(s)) for s in steps]), steps=np.array(steps, dtype=float),
                 seconds=np.array([t for _, t, _ in first]),
                 acc={m: np.array([a for _, _, a in e]) for m, e in per.items()},
                 zero_signal=zero_signal(run_dir) if (run_dir / "ledger").is_dir() else {})


def grid_values(tr: Trace, grid: np.ndarray) -> dict[str, np.ndarray]:
    """Accuracies, steps and seconds at the budget points `grid` [K] (linear between checkpoints; NaN past the
    run's last checkpoint, i.e. a run that has not reached that budget yet)."""
    out = {m: np.interp(grid, tr.cost, a, right=np.nan) for m, a in tr.acc.items()}
    out["steps"] = np.interp(grid, tr.cost, tr.steps, right=np.nan)
    out["seconds"] = np.interp(grid, tr.cost, tr.seconds, right=np.nan)
    return out


def zero_signal(run_dir: Path) -> dict[str, float]:
    """Shares of zero-signal groups in the run's ledger: generated groups whose rewards are all equal, and
    trained groups whose KEPT rollouts all get advantage 0 (no gradient): their rewards all equal, or, with
    rl.advantage_over=drawn, all equal to the mean of the group's drawn rollouts; a group that kept none."""
    rec = read_ledger(run_dir)
    gen = ~np.isnan(rec.rewards[:, 0])  # groups with rollouts (a skipped prompt has none)
    spread = _spread(rec.rewards)  # [R]
    kept = np.where(rec.kept >= 0, rec.kept, 0)  # [R, k]
    kr = np.where(rec.kept >= 0, np.take_along_axis(rec.rewards, kept, 1), np.nan)  # [R, k] the kept rewards
    if rec.meta.get("advantage_over", "kept") == "drawn":  # advantages r - mean of all drawn: 0 only at that mean
        mean = np.nanmean(np.where(gen[:, None], rec.rewards, 0.0), 1, keepdims=True)  # [R, 1] (a skipped prompt: 0)
        kept_spread = np.nan_to_num(np.abs(kr - mean)).max(1, initial=0.0) > 1e-9
    else:
        kept_spread = _spread(kr)  # a group that kept none has no signal either
    trained = rec.trained & gen
    return {"generated": float(np.mean(~spread[gen])) if gen.any() else float("nan"),
            "trained": float(np.mean(~kept_spread[trained])) if trained.any() else float("nan")}


def _spread(x: np.ndarray) -> np.ndarray:
    """[R, k] -> [R] bool: the row's values (NaN left out) are not all equal; False for a row of none."""
    return np.where(np.isnan(x), -np.inf, x).max(1) > np.where(np.isnan(x), np.inf, x).min(1)


def write_authors_layout(results: Path, arm: str, k: int, run_dir: Path, tr: Trace, files: dict[str, str],
                         dataset: str = DATASET) -> list[Path]:
    """`<arm>-<metric>-Run<k>.json` ({checkpoint-<step>: {dataset: {metric: [values]}, step, budget}}, as the
    paper's results/) and `base-<metric>.json` (the warm start, {dataset: {...}}) for each results file."""
    written = []
    for metric, name in files.items():
        raw = read_json(Path(run_dir) / name)
        by_step = dict(zip(tr.steps.astype(int).tolist(), tr.cost.tolist()))
        out = {}
        for key, v in raw.items():
            if not isinstance(v, dict) or dataset not in v:
                continue
            block = {m: x for m, x in v[dataset].items() if m != "examples"}
            if key == "base":
                base = results / f"base-{metric}.json"
                if not base.exists():
                    atomic_write_json(base, {dataset: block})
                    written.append(base)
                continue
            step = int(v["step"])
            out[f"checkpoint-{step}"] = {dataset: block, "step": step, "budget": by_step.get(step),
                                         "elapsed_seconds": v.get("elapsed_seconds")}
        path = results / f"{arm}-{metric}-Run{k}.json"
        atomic_write_json(path, out)
        written.append(path)
    return written
