"""Metrics and progress: a step's metrics row, `metrics.jsonl` always, wandb when enabled, phase timers, a tqdm bar.

    row = step_metrics(rollouts, total, per_fn, correct, kept_idx, stats, grad_norm)   # total [G, n], kept_idx [G, k]
    row |= pods.core.cost.cost_metrics(generated=[...], trained_tokens=812, ..., previous=last_row)
    timers = PhaseTimers()
    with timers("generation"): ...            # -> {"time/generation": seconds}
    log = MetricsLogger(run_dir, cfg, resume_step=0)   # log.close() when done
    log.log({"step": 1, "elapsed_seconds": 2.5, **timers.pop(), "reward/total": 0.3})   # + TRL's names

Keys: docs/training.md (TRL's names too: docs/vocabulary.md); a resume loses no row (MetricsLogger);
a failed write raises pods.io.WriteError ("<cause>: <path>").
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import torch
from omegaconf import OmegaConf

from pods.config.aliases import trl_metric_names
from pods.core.cost import COST_TOTAL
from pods.extras import require
from pods.io import atomic_write_text, writing

METRICS_FILE = "metrics.jsonl"


class PhaseTimers:
    """Accumulates wall-clock seconds per phase; `pop()` returns {"time/<phase>": s} and resets."""

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self.totals: dict[str, float] = defaultdict(float)

    @contextmanager
    def __call__(self, phase: str):
        start = self.clock()
        try:
            yield
        finally:
            self.totals[phase] += self.clock() - start

    def pop(self) -> dict[str, float]:
        out = {f"time/{k}": v for k, v in self.totals.items()}
        self.totals = defaultdict(float)
        return out


def read_metrics(run_dir: Path) -> list[dict]:
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut short by a crash
            continue
    return rows


def _warn(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def truncate_metrics(run_dir: Path, step: int, log=_warn) -> None:
    """Keep only rows with row["step"] <= step (atomic rewrite). A line that is not a JSON object before the
    last one (damaged on disk, edited by hand) is left out with a warning, the file as it was kept in
    metrics.damaged-<unix time>.jsonl; a torn last line (a crash while writing it) is dropped silently."""
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        return
    lines = path.read_bytes().decode("utf-8", "replace").splitlines()
    rows, bad = [], []
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            row = "bad"
        if isinstance(row, dict):
            rows.append(row)
        elif row is not None and number < len(lines):
            bad.append(number)
    if bad:
        kept = path.with_name(f"metrics.damaged-{int(time.time())}.jsonl")
        with writing(kept):
            shutil.copyfile(path, kept)
        where = f"line {bad[0]}" if len(bad) == 1 else f"{len(bad)} lines (first: line {bad[0]})"
        log(f"warning: {path}: {where} is not a JSON row (damaged on disk or edited); the file as it was is kept in "
            f"{kept}, and {path} continues without it")
    rows = [r for r in rows if r.get("step", 0) <= step]
    atomic_write_text(path, "".join(json.dumps(r) + "\n" for r in rows))


def keep_earlier_attempt(run_dir: Path, log=print) -> Path | None:
    """Before training from step 0: rename a metrics.jsonl that holds rows (never wipe them); its new path."""
    path = Path(run_dir) / METRICS_FILE
    rows = read_metrics(run_dir)
    if not rows:
        return None
    kept = path.with_name(f"metrics.restarted-{int(time.time())}.jsonl")
    with writing(kept):
        os.replace(path, kept)
    log(f"no checkpoint to resume from: training starts again at step 0; the {len(rows)} rows an earlier "
        f"attempt logged (steps up to {rows[-1].get('step')}) were moved to {kept}")
    return kept


class MetricsLogger:
    """Appends metrics rows to metrics.jsonl; mirrors them to wandb when cfg.logging.wandb.

    Resuming from checkpoint-<k> (`resume_step=k`) drops the rows of steps > k (the interrupted run wrote
    them after that checkpoint; they are trained again identically), so the file reads like one run, and
    restores step k's `resume_row` if its write failed after the checkpoint was saved. At step 0 an earlier
    attempt's rows are kept in `metrics.restarted-<unix time>.jsonl`, never wiped.
    """

    def __init__(self, run_dir: Path, cfg=None, resume_step: int = 0, resume_row: dict | None = None):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / METRICS_FILE
        if resume_step == 0:
            keep_earlier_attempt(self.run_dir)
        truncate_metrics(self.run_dir, resume_step)
        with writing(self.path):
            self.file = open(self.path, "a")
        self.wandb = None
        if cfg is not None and cfg.logging.wandb:
            self.wandb = _start_wandb(self.run_dir, cfg)
        if resume_row is not None and resume_row.get("step") == resume_step and \
                all(r.get("step") != resume_step for r in read_metrics(self.run_dir)):
            self.log(resume_row)  # its write failed after the checkpoint was saved

    def log(self, row: dict) -> None:
        row = {**row, **trl_metric_names(row)}  # TRL's names too, where the quantity is the same
        with writing(self.path):
            self.file.write(json.dumps(row) + "\n")
            self.file.flush()
        if self.wandb is not None:
            self.wandb.log({k: v for k, v in row.items() if k != "step"}, step=row["step"])

    def close(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass  # a failed flush was already reported by log()
        if self.wandb is not None:
            self.wandb.finish()


def _start_wandb(run_dir: Path, cfg):
    wandb = require("wandb", "wandb")

    if not os.environ.get("WANDB_API_KEY") and "WANDB_MODE" not in os.environ:  # no account: log offline
        os.environ["WANDB_MODE"] = "offline"
    return wandb.init(project=cfg.logging.project, entity=cfg.logging.entity, name=run_dir.name,
                      id=run_dir.name.replace("/", "_")[:128], resume="allow", dir=str(run_dir),  # resumes continue it
                      config=OmegaConf.to_container(cfg, resolve=True))


class Progress:
    """tqdm bar over steps (or over the time budget) showing reward, accuracy and ETA."""

    def __init__(self, enabled: bool, max_steps: int | None, max_time: float | None, step: int = 0,
                 elapsed: float = 0.0):
        self.bar = None
        self.max_steps, self.max_time = max_steps, max_time
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=max_steps, initial=step, unit="step", dynamic_ncols=True,
                            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"
                            if max_steps else "{desc}{n_fmt} steps [{elapsed}{postfix}]")

    @staticmethod
    def eta(step: int, elapsed: float, max_steps: int | None, max_time: float | None) -> float | None:
        """Seconds of training time left: the sooner of the step and time budgets."""
        left = []
        if max_time is not None:
            left.append(max(0.0, max_time - elapsed))
        if max_steps is not None and step > 0:
            left.append(max(0, max_steps - step) * elapsed / step)
        return min(left) if left else None

    def update(self, row: dict) -> None:
        if self.bar is None:
            return
        eta = self.eta(row["step"], row["elapsed_seconds"], self.max_steps, self.max_time)
        post = {"reward": f"{row.get('reward/total', float('nan')):.3f}",
                "acc": f"{row.get('accuracy', float('nan')):.3f}"}
        if COST_TOTAL["tokens_generated"] in row:  # the cost ledger: tokens generated / trained so far
            post["tokens"] = (f"{_short(row[COST_TOTAL['tokens_generated']])} gen, "
                              f"{_short(row[COST_TOTAL['tokens_trained']])} trained")
            if row.get(COST_TOTAL["prompts_skipped"]):
                post["skipped"] = _short(row[COST_TOTAL["prompts_skipped"]])
        if eta is not None:
            post["eta"] = time.strftime("%H:%M:%S", time.gmtime(eta))
        self.bar.set_postfix(post, refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ----------------------------------------------------------------------------- one step's row


def _group_stats(prefix: str, total: torch.Tensor, per_fn: dict, acc: torch.Tensor, lengths, drawn=None) -> dict:
    """total [G, k], per_fn {name: [G, k]}, acc [G, k] -> metrics; drawn [G, k] bool: the entries that hold a
    rollout (None: all; an allocation rule's rows of unequal n are padded)."""
    drawn = torch.ones(total.shape, dtype=torch.bool) if drawn is None else drawn
    mean = lambda x: float(x[drawn].float().mean())  # noqa: E731
    row = {f"{prefix}/total": mean(total)}
    row.update({f"{prefix}/{k}": mean(v) for k, v in per_fn.items()})
    kept = prefix.endswith("_kept")
    row["accuracy_kept" if kept else "accuracy"] = mean(acc)
    hi, lo = total.masked_fill(~drawn, -math.inf).max(1).values, total.masked_fill(~drawn, math.inf).min(1).values
    row["frac_groups_with_spread_kept" if kept else "frac_groups_with_spread"] = float((hi > lo).float().mean())
    row["completion_length_kept/mean" if kept else "completion_length/mean"] = mean(lengths)
    return row


def step_metrics(rollouts, total, per_fn, correct, kept_idx, stats, grad_norm, counts=None) -> dict:
    """Metrics of one step: total [G, n], per_fn {name: [G, n]}, correct [G, n] bool, kept_idx [G, k] (-1: none);
    counts [G]: rollouts per group when an allocation rule made them unequal (padding past them is left out)."""
    lengths = rollouts.completion_lengths()  # [G, n]
    drawn = None if counts is None else torch.arange(total.shape[1]).unsqueeze(0) < counts.unsqueeze(1)  # [G, n]
    row = _group_stats("reward", total, per_fn, correct, lengths, drawn)
    at, kept = kept_idx.clamp(min=0), kept_idx >= 0  # -1: a batch-level rule's rows keep fewer
    row.update(_group_stats("reward_kept", total.gather(1, at), {k: v.gather(1, at) for k, v in per_fn.items()},
                            correct.gather(1, at), lengths.gather(1, at), None if bool(kept.all()) else kept))
    row["completion_length/max"] = float(lengths.max()) if lengths.numel() else math.nan  # nan: no group trained
    finished = [r for j, r in enumerate(rollouts.finish_reasons) if drawn is None or drawn.view(-1)[j]]
    row["frac_truncated"] = sum(r == "length" for r in finished) / len(finished) if finished else math.nan
    row.update(stats)
    row["grad_norm"] = grad_norm
    return row


# ----------------------------------------------------------------------------- the cost ledger

def _short(x: float) -> str:
    """12345 -> 12.3k, 4.5e6 -> 4.5M: a progress-line number."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.1f}{unit}"
    return f"{x:.0f}"
