"""Per-setting curves: a metric (mean over repeats per run) against training hours or steps, its mean and 95% band.

    c = setting_curve(runs, "gsm8k", "ans_acc", x="steps", base=base_run)   # base: every run's point at x = 0
    c.x, c.mean, c.lo, c.hi, c.n        # [C] grid, mean over runs, band, runs with a value at each point

Contract: when the checkpoints are shared (`common_grid`), the grid is their union and each run counts only at its
own; else each run is interpolated linearly between its own checkpoints onto a common grid, missing outside its
span. A step curve never borrows steps from a time grid. The band is the 95% t-interval of the mean over runs,
clipped to METRIC_BOUNDS; points where `n` is below the run count are drawn hollow. docs/analysis.md.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from pods.analysis.loaders import Run
from pods.errors import ResultsError
from pods.extras import require

AXES = ("hours", "steps")
METRIC_BOUNDS = {"ans_acc": (0.0, 1.0), "for_acc": (0.0, 1.0), "both_acc": (0.0, 1.0), "lengths": (0.0, np.inf)}


@dataclass
class Curve:
    """One setting's metric on a shared grid: per-run values and their mean with a 95% band."""

    label: str
    x: np.ndarray  # [C] grid: training hours (axis "hours") or optimizer steps (axis "steps")
    values: np.ndarray  # [N, C] per-run metric (NaN where a run has no value)
    run_names: list[str]
    axis: str = "hours"
    exact: bool = True  # True: grid points are the runs' own checkpoints; False: interpolated between them
    bounds: tuple[float, float] = (-np.inf, np.inf)  # the metric's range: the band is clipped to it

    @property
    def hours(self) -> np.ndarray:
        if self.axis != "hours":
            raise ResultsError(f"curve {self.label} is aligned by {self.axis}, not by training time")
        return self.x

    @property
    def mean(self) -> np.ndarray:
        """[C] mean over runs (ignoring missing values)."""
        return nanmean_rows(self.values)

    @property
    def n(self) -> np.ndarray:
        """[C] number of runs with a value at each grid point."""
        return np.isfinite(self.values).sum(axis=0)

    @property
    def partial(self) -> np.ndarray:
        """[C] bool: fewer than all runs contribute to the point (some run has no value there)."""
        return self.n < len(self.run_names)

    @property
    def half_width(self) -> np.ndarray:
        """[C] half width of the 95% t-interval of the mean over runs (NaN with fewer than 2 runs)."""
        n = self.n
        t = require("scipy.stats", "analysis").t.ppf(0.975, np.maximum(n - 1, 1))  # scipy: when drawn, not imported
        return np.where(n >= 2, t * nanstd_rows(self.values) / np.sqrt(np.maximum(n, 1)), np.nan)

    @property
    def lo(self) -> np.ndarray:
        """[C] lower end of the band, inside the metric's range."""
        return np.clip(self.mean - self.half_width, *self.bounds)

    @property
    def hi(self) -> np.ndarray:
        return np.clip(self.mean + self.half_width, *self.bounds)

    def clip(self, max_hours: float | None) -> Curve:
        """The time curve restricted to hours <= max_hours (all of it for None)."""
        if max_hours is None:
            return self
        keep = self.hours <= max_hours + 1e-6  # tolerate rounding (e.g. 9 x 0.1666667 h vs 1.5 h)
        return Curve(self.label, self.x[keep], self.values[:, keep], self.run_names, self.axis, self.exact,
                     self.bounds)


def nanmean_rows(values: np.ndarray) -> np.ndarray:
    """[N, C] -> [C] mean over rows ignoring NaN (NaN where a column is all NaN), without warnings."""
    ok = np.isfinite(values)
    n = ok.sum(axis=0)
    total = np.where(ok, values, 0.0).sum(axis=0)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def nanstd_rows(values: np.ndarray) -> np.ndarray:
    """[N, C] -> [C] sample standard deviation (ddof 1) ignoring NaN; NaN with fewer than 2 values."""
    ok = np.isfinite(values)
    n = ok.sum(axis=0)
    dev = np.where(ok, values - nanmean_rows(values), 0.0)
    return np.where(n > 1, np.sqrt((dev ** 2).sum(axis=0) / np.maximum(n - 1, 1)), np.nan)


def _interp_at(x: np.ndarray, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """Linear interpolation of (xp, fp) at x, NaN outside [xp[0], xp[-1]] and where fp is NaN."""
    ok = np.isfinite(fp) & np.isfinite(xp)
    xp, fp = xp[ok], fp[ok]
    if len(xp) == 0:
        return np.full(len(x), np.nan)
    out = np.interp(x, xp, fp)
    out[(x < xp[0] - 1e-9) | (x > xp[-1] + 1e-9)] = np.nan  # the grid is rounded to 9 decimals
    return out


def common_grid(xs: list[np.ndarray]) -> tuple[np.ndarray, bool]:
    """(grid [C], exact) for the runs' checkpoint x values: exact=True when the checkpoints are shared
    (at the median grid point more than half the runs have one), the grid then being their union;
    else a grid to interpolate every run onto."""
    xs = [np.round(x[np.isfinite(x)], 9) for x in xs]
    union, counts = np.unique(np.concatenate(xs), return_counts=True)
    if 2 * np.median(counts) > len(xs):
        return union, True
    if len({len(x) for x in xs}) == 1:
        return np.mean(np.stack(xs), axis=0), False
    start, end = np.median([x[0] for x in xs]), np.median([x[-1] for x in xs])  # >= half the runs
    count = int(np.median([len(x) for x in xs]))
    return np.linspace(start, end, max(count, 2)), False


def _place(grid: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """y at its checkpoints x placed on grid points (NaN where the run has no checkpoint)."""
    ok = np.isfinite(x)
    out = np.full(len(grid), np.nan)
    out[np.searchsorted(grid, np.round(x[ok], 9))] = y[ok]
    return out


def within_hours(run: Run, max_hours: float | None) -> Run:
    """The run's checkpoints up to max_hours (all of them for None)."""
    if max_hours is None:
        return run
    keep = run.hours <= max_hours + 1e-6
    data = {d: {m: a[keep] for m, a in ms.items()} for d, ms in run.data.items()}
    return Run(run.name, run.setting, run.hours[keep], run.steps[keep], data, run.irregular, run.meta)


def setting_curve(runs: list[Run], dataset: str, metric: str, *, x: str = "hours", base: Run | None = None,
                  label: str | None = None) -> Curve:
    """Mean-over-repeats metric of every run on a shared grid of x (hours or steps); with `base`, an
    x = 0 point first."""
    if x not in AXES:
        raise ResultsError(f"unknown x axis {x!r}; valid: {', '.join(AXES)}")
    if not runs:
        raise ResultsError("setting_curve: no runs given")
    have = [r for r in runs if metric in r.data.get(dataset, {})]
    if not have:
        raise ResultsError(f"setting {runs[0].setting}: no run has {dataset}/{metric}; "
                           f"the first has {({d: sorted(m) for d, m in runs[0].data.items()})}")
    if len(have) < len(runs):
        warnings.warn(f"setting {runs[0].setting}: {len(runs) - len(have)} runs lack {dataset}/{metric} "
                      "and are left out: " + ", ".join(r.name for r in runs if r not in have), stacklevel=2)
    runs = have
    xs = [r.hours if x == "hours" else r.steps for r in runs]
    ys = [r.metric(dataset, metric) for r in runs]
    if not any(np.isfinite(v).any() for v in xs):
        raise ResultsError(f"setting {runs[0].setting}: no checkpoint has a step number; plot it against hours")
    if base is not None:  # the base model is every run's checkpoint at x = 0 (unless the run has its own)
        b = float(base.metric(dataset, metric)[0])
        has0 = [bool(len(v)) and v[0] == 0 for v in xs]
        xs = [v if h else np.concatenate([[0.0], v]) for v, h in zip(xs, has0)]
        ys = [y if h else np.concatenate([[b], y]) for y, h in zip(ys, has0)]
    grid, exact = common_grid(xs)
    fit = _place if exact else _interp_at
    values = np.stack([fit(grid, v, y) for v, y in zip(xs, ys)])  # [N, C]
    return Curve(label or runs[0].setting, np.asarray(grid, float), values, [r.name for r in runs], x, exact,
                 METRIC_BOUNDS.get(metric, (-np.inf, np.inf)))
