"""Load evaluation results of many runs into `Run` objects with a time and step per checkpoint.

    run = load_paper_file(".../Instruct-GSM8K-512-16-16-Run0.json", "Instruct-GSM8K-512-16-16", 0.5)
    base = load_base(".../base-qwen.json")          # {dataset: {metric: [R]}}: a run with one point, t = 0
    run = load_run_dir("checkpoints/<run>")         # our eval_results.json: each checkpoint's step and time
    runs = check_irregular(runs, 0.5, policy="align")   # IRREGULAR_POLICIES; warns IrregularCheckpointsWarning

A paper file's i-th checkpoint (0-based, in step order) is placed at (i + 1) x hours_per_checkpoint, and its
accuracies are also `paper_ans_acc` etc.; a bad file is a ResultsError naming it. A whole SETTING:
pods.analysis.settings.load_setting; the sources (and the multi-GPU CSVs, csvruns): docs/analysis.md.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pods.errors import ResultsError

METRICS = ("ans_acc", "for_acc", "both_acc", "lengths", "paper_ans_acc", "paper_for_acc", "paper_both_acc")
GRADED = ("ans_acc", "for_acc", "both_acc")  # our runs: the suite's verifiers; the authors' files: their grader
IRREGULAR_POLICIES = {
    "align": "match checkpoints to grid slots by step (order-preserving, nearest to the setting's typical "
    "step profile); a slot without a checkpoint stays empty, extra checkpoints are dropped",
    "warn": "keep the (i+1) x hours timing of the i-th checkpoint anyway",
    "drop": "leave irregular runs out of the setting",
}
RUN_FILE = "eval_results.json"
PAPER_FILE = "a results file {checkpoint-<step>: {dataset: {metric: [values]}}}"
RUN_RESULTS = "the eval_results.json evaluate-run.py writes (rerun evaluate-run.py to rebuild it)"
_CKPT = re.compile(r"^checkpoint-(\d+)$")


class IrregularCheckpointsWarning(UserWarning):
    """A run of a setting has a different number of checkpoints than most of its runs."""


@dataclass
class Run:
    """One training run: its checkpoints' times, steps and metrics."""

    name: str  # e.g. "Instruct-GSM8K-512-16-16-Run3" or a run directory name
    setting: str  # the setting (group of runs) it belongs to
    hours: np.ndarray  # [C] training hours at each checkpoint, increasing
    steps: np.ndarray  # [C] optimizer step of each checkpoint (float, NaN if unknown)
    data: dict[str, dict[str, np.ndarray]]  # dataset -> metric -> [C, R] (R repeats, NaN padded)
    irregular: bool = False  # checkpoint count differed from the setting's usual count
    meta: dict = field(default_factory=dict)  # free-form extras (source path, ...)

    def metric(self, dataset: str, metric: str) -> np.ndarray:
        """[C] the metric at each checkpoint, mean over evaluation repeats."""
        if dataset not in self.data:
            raise ResultsError(f"run {self.name}: no dataset {dataset!r}; it has {sorted(self.data)}")
        if metric not in self.data[dataset]:
            raise ResultsError(f"run {self.name}: no metric {metric!r} for {dataset}; "
                               f"it has {sorted(self.data[dataset])}")
        vals = self.data[dataset][metric]  # [C, R]
        ok = np.isfinite(vals)
        n = ok.sum(axis=1)
        return np.where(n > 0, np.where(ok, vals, 0.0).sum(axis=1) / np.maximum(n, 1), np.nan)  # NaN if none


def _step_of(key: str, entry: dict) -> int:
    if isinstance(entry, dict) and "step" in entry:
        return int(entry["step"])
    m = _CKPT.match(key)
    if m:
        return int(m.group(1))
    if key == "base":
        return 0
    raise ResultsError(f"checkpoint key {key!r} is neither 'checkpoint-<step>' nor 'base' and has no 'step'")


def _metrics_table(entries: list[dict], where: str) -> dict[str, dict[str, np.ndarray]]:
    """entries: [C] dicts {dataset: {metric: [R]}} -> dataset -> metric -> [C, R]."""
    datasets = sorted({d for e in entries for d, v in e.items() if isinstance(v, dict)})
    out: dict[str, dict[str, np.ndarray]] = {}
    for ds in datasets:
        out[ds] = {}
        names = sorted({m for e in entries for m in e.get(ds, {}) if m in METRICS})
        for name in names:
            rows = []
            for e in entries:
                v = e.get(ds, {}).get(name)
                rows.append([_number(x, f"{where}: {ds} {name}", name) for x in (v if isinstance(v, list) else [v])])
            width = max(len(r) for r in rows)
            arr = np.full((len(rows), width), np.nan)
            for i, r in enumerate(rows):
                arr[i, : len(r)] = np.asarray(r, dtype=float)
            out[ds][name] = arr
    if not out:
        raise ResultsError(f"{where}: no datasets with metrics {METRICS} found")
    return out


def _number(value, where: str, metric: str) -> float:
    """One stored metric value as a float (null: NaN); ResultsError for text, booleans, lists and accuracies
    outside [0, 1]."""
    if value is None:
        return np.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ResultsError(f"{where} holds {value!r} ({type(value).__name__}), not a number; fix or remove the file "
                           "(evaluate-run.py writes numbers)")
    if metric != "lengths" and not (0.0 <= value <= 1.0 or math.isnan(value)):
        raise ResultsError(f"{where} holds {value!r}, not an accuracy in [0, 1]; fix or remove the file")
    return float(value)


@contextmanager
def reading(path: str | Path, what: str):
    """Turn a file's unexpected content (or an unreadable file) met inside the block into a ResultsError
    naming the file and what it should be; our own ResultsErrors pass through."""
    try:
        yield
    except ResultsError:
        raise
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}: not valid JSON ({e}); fix or remove the file") from e
    except UnicodeDecodeError as e:
        raise ResultsError(f"{path}: not UTF-8 text (byte {e.start}); is it {what}? Fix or remove the file") from e
    except OSError as e:
        raise ResultsError(f"{path}: cannot be read ({e.strerror or e}); check the path and its permissions") from e
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
        raise ResultsError(f"{path}: unexpected content ({type(e).__name__}: {e}); it should be {what}. "
                           "Fix or remove the file") from e


def read_json(path: Path, what: str = "an evaluation results file") -> dict:
    with reading(path, what):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: holds a JSON {type(data).__name__}, not an object of checkpoints; it should be "
                           f"{what}. Fix or remove the file")
    return data


def load_paper_file(path: str | Path, setting: str, hours_per_checkpoint: float) -> Run:
    """One `<setting>-Run<k>.json`: checkpoints sorted by step, i-th at (i+1) * hours_per_checkpoint."""
    path = Path(path)
    raw = read_json(path, PAPER_FILE)
    with reading(path, PAPER_FILE):
        items = sorted(((_step_of(k, v), v) for k, v in raw.items() if k != "examples"), key=lambda kv: kv[0])
        if not items:
            raise ResultsError(f"{path}: no checkpoints")
        steps = np.array([s for s, _ in items], dtype=float)
        hours = hours_per_checkpoint * np.arange(1, len(items) + 1, dtype=float)
        data = _paper_alias(_metrics_table([v for _, v in items], str(path)))
    return Run(path.stem, setting, hours, steps, data, meta={"source": str(path), "grader": "paper"})


def load_base(path: str | Path) -> Run:
    """A base-model file `{dataset: {metric: [R]}}` as a one-checkpoint run at t = 0, step 0."""
    path = Path(path)
    raw = read_json(path, "a base-model file {dataset: {metric: [values]}}")
    with reading(path, "a base-model file {dataset: {metric: [values]}}"):
        table = _paper_alias(_metrics_table([raw], str(path)))
    return Run(path.stem, path.stem, np.zeros(1), np.zeros(1), table, meta={"source": str(path), "grader": "paper"})


def _paper_alias(data: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, np.ndarray]]:
    """The authors' own files were graded by the paper's grader: their ans/for/both_acc are also
    readable as paper_ans/for/both_acc, so `--metric paper_ans_acc` compares like with like."""
    for metrics in data.values():
        for m in GRADED:
            if m in metrics:
                metrics.setdefault(f"paper_{m}", metrics[m])
    return data


def comparable_metric(metric: str | None, runs: list[Run]) -> str:
    """The metric that compares `runs` like with like: `metric`, or by default `ans_acc`, `paper_ans_acc` when
    our runs (`Run.meta["grader"]` "suite") sit beside the authors' results ("paper", "authors": the CSVs).
    ResultsError when `metric` would put the suite's verifiers beside their grader, or our runs lack it."""
    theirs = sorted({r.setting for r in runs if r.meta.get("grader") in ("paper", "authors")})
    ours = sorted({r.setting for r in runs if r.meta.get("grader") == "suite"})
    if not (theirs and ours):
        return metric or "ans_acc"
    if metric in GRADED:
        raise ResultsError(f"--metric {metric}: our runs ({', '.join(ours)}) would be graded by this suite's verifiers "
                           f"and the authors' files ({', '.join(theirs)}) by their grader, which is all they hold; "
                           f"compare on their grader with --metric paper_{metric} (the default for such a mix)")
    metric = metric or "paper_ans_acc"
    lacking = sorted({r.setting for r in runs if r.meta.get("grader") == "suite"
                      and not any(metric in m for m in r.data.values())})
    if metric.startswith("paper_") and lacking:
        raise ResultsError(f"{', '.join(lacking)}: no {metric} (evaluated without the paper's grader), so they cannot "
                           "stand beside the authors' files: rerun evaluate-run.py with protocol=paper (or "
                           "paper_grader=paper_answer), or plot our runs alone")
    return metric


def load_run_dir(path: str | Path, setting: str | None = None, results_file: str = RUN_FILE) -> Run:
    """Our run directory: `eval_results.json` (or `results_file`) entries carry `step` and `elapsed_seconds`."""
    path = Path(path)
    f = path / results_file
    if not f.is_file():
        raise ResultsError(f"{path}: no {results_file}; run evaluate-run.py on this run directory first")
    raw = read_json(f, RUN_RESULTS)
    items = []
    with reading(f, RUN_RESULTS):
        for k, v in raw.items():
            if not isinstance(v, dict) or k == "examples":
                continue
            if "elapsed_seconds" not in v and k != "base":
                raise ResultsError(f"{f}: entry {k!r} has no 'elapsed_seconds'; re-run evaluate-run.py to add it")
            t = float(v.get("elapsed_seconds", 0.0))
            items.append((_step_of(k, v), t, {d: m for d, m in v.items() if isinstance(m, dict)}))
        if not items:
            raise ResultsError(f"{f}: no checkpoints evaluated yet")
        items.sort(key=lambda x: (x[0], x[1]))
        steps = np.array([s for s, _, _ in items], dtype=float)
        hours = np.array([t for _, t, _ in items]) / 3600.0
        data = _metrics_table([e for _, _, e in items], str(f))
    return Run(path.name, setting or path.name, hours, steps, data, meta={"source": str(path), "grader": "suite"})


def _monotone_match(frac: np.ndarray, profile: np.ndarray) -> list[tuple[int, int]]:
    """Order-preserving match of checkpoints frac [C] to slots profile [E] with the least squared
    distance; uses every slot when C >= E (extra checkpoints dropped), else every checkpoint."""
    c, e = len(frac), len(profile)
    cost = np.full((c + 1, e + 1), np.inf)  # cost[i, j]: first i checkpoints vs first j slots
    cost[0, 0] = 0.0
    move = np.zeros((c + 1, e + 1), dtype=int)  # 1 = matched, 2 = checkpoint dropped, 3 = slot left empty
    for i in range(c + 1):
        for j in range(e + 1):
            options = []
            if i and j:
                options.append((cost[i - 1, j - 1] + (frac[i - 1] - profile[j - 1]) ** 2, 1))
            if i and c > e:
                options.append((cost[i - 1, j], 2))
            if j and c < e:
                options.append((cost[i, j - 1], 3))
            if options:
                cost[i, j], move[i, j] = min(options)
    pairs, i, j = [], c, e
    while i or j:
        m = move[i, j]
        if m == 1:
            pairs.append((i - 1, j - 1))
        i, j = (i - (m in (1, 2)), j - (m in (1, 3)))
    return pairs[::-1]


def _align_to_grid(run: Run, profile: np.ndarray, hours_per_checkpoint: float) -> Run:
    """Place run's checkpoints into the slots whose typical step fraction matches theirs.

    profile: [E] median of step / final step at each slot over the setting's regular runs.
    Assumes the run trained for the full time (its last checkpoint belongs near the last slot).
    """
    frac = run.steps / run.steps[-1]  # [C]
    pairs = _monotone_match(frac, profile)
    idx = np.array([i for i, _ in pairs])
    slots = np.array([j for _, j in pairs])
    data = {ds: {m: a[idx] for m, a in ms.items()} for ds, ms in run.data.items()}
    hours = (slots + 1) * hours_per_checkpoint
    dropped = [int(s) for k, s in enumerate(run.steps) if k not in set(idx.tolist())]
    meta = dict(run.meta, aligned_slots=slots.tolist(), dropped_steps=dropped)
    return Run(run.name, run.setting, hours, run.steps[idx], data, True, meta)


def check_irregular(runs: list[Run], hours_per_checkpoint: float, policy: str = "align") -> list[Run]:
    """Warn about runs whose checkpoint count differs from the setting's most common count; apply policy."""
    if policy not in IRREGULAR_POLICIES:
        raise ResultsError(f"unknown irregular policy {policy!r}; valid: {sorted(IRREGULAR_POLICIES)}")
    counts = Counter(len(r.hours) for r in runs)
    expected = max(counts, key=lambda c: (counts[c], c))  # most common count (ties: the larger)
    bad = [r for r in runs if len(r.hours) != expected]
    if not bad:
        return runs
    warnings.warn(
        f"setting {runs[0].setting}: {len(bad)} of {len(runs)} runs have an irregular checkpoint count "
        f"(expected {expected}): " + ", ".join(f"{r.name}={len(r.hours)}" for r in bad)
        + f"; policy {policy!r}: {IRREGULAR_POLICIES[policy]}",
        IrregularCheckpointsWarning, stacklevel=2)
    if policy == "drop":
        return [r for r in runs if len(r.hours) == expected]
    if policy == "warn":
        for r in bad:
            r.irregular = True
        return runs
    regular = [r for r in runs if len(r.hours) == expected]
    profile = np.median(np.stack([r.steps / r.steps[-1] for r in regular]), axis=0)  # [E]
    return [_align_to_grid(r, profile, hours_per_checkpoint) if len(r.hours) != expected else r for r in runs]


def paper_run_files(results: Path, prefix: str) -> list[tuple[int, Path]]:
    """[(k, path)] of `<prefix>-Run<k>.json` in results, sorted by k."""
    pat = re.compile(r"^" + re.escape(prefix) + r"-Run(\d+)\.json$")
    found = [(int(m.group(1)), p) for p in results.iterdir() if (m := pat.match(p.name))]
    return sorted(found)


def run_dirs_in(path: Path, results_file: str = RUN_FILE) -> list[Path]:
    """path itself if it is a run directory (has results_file), else its subdirectories that are."""
    if (path / results_file).is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.is_dir() and (p / results_file).is_file())
