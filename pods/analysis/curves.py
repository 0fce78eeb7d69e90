"""Per-setting curves: metric (mean over repeats per run) on a common time grid, mean over runs, 95% band.

If all runs' checkpoint times lie on one grid (the paper's, a missing checkpoint left empty) they are
stacked as they are; otherwise
(our runs, the multi-GPU CSVs) each run is linearly interpolated onto a common grid (the mean
checkpoint times when all runs have the same count, else a uniform grid from the median first to the
median last checkpoint time, so at least half of the runs cover every point), missing outside its
own span. A base run adds a t = 0, step 0 point to every run.

Use: `c = setting_curve(runs, "gsm8k", "ans_acc", base=base_run)`; `c.hours`, `c.mean`, `c.lo`, `c.hi`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from pods.analysis.loaders import Run
from pods.extras import require

stats = require("scipy.stats", "analysis")


@dataclass
class Curve:
    """One setting's metric over time: per-run values on a shared grid and their mean with a 95% band."""

    label: str
    hours: np.ndarray  # [C] time of each grid point
    steps: np.ndarray  # [C] mean optimizer step at each grid point (NaN if unknown)
    values: np.ndarray  # [N, C] per-run metric (NaN where a run has no value)
    run_names: list[str]

    @property
    def mean(self) -> np.ndarray:
        """[C] mean over runs (ignoring missing values)."""
        return nanmean_rows(self.values)

    @property
    def n(self) -> np.ndarray:
        """[C] number of runs with a value at each grid point."""
        return np.isfinite(self.values).sum(axis=0)

    @property
    def half_width(self) -> np.ndarray:
        """[C] half width of the 95% t-interval of the mean over runs (NaN with fewer than 2 runs)."""
        n = self.n
        t = stats.t.ppf(0.975, np.maximum(n - 1, 1))
        return np.where(n >= 2, t * nanstd_rows(self.values) / np.sqrt(np.maximum(n, 1)), np.nan)

    @property
    def lo(self) -> np.ndarray:
        return self.mean - self.half_width

    @property
    def hi(self) -> np.ndarray:
        return self.mean + self.half_width

    def clip(self, max_hours: float | None) -> Curve:
        """The curve restricted to hours <= max_hours (all of it for None)."""
        if max_hours is None:
            return self
        keep = self.hours <= max_hours + 1e-6  # tolerate rounding (e.g. 9 x 0.1666667 h vs 1.5 h)
        return Curve(self.label, self.hours[keep], self.steps[keep], self.values[:, keep], self.run_names)


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
    out[(x < xp[0] - 1e-12) | (x > xp[-1] + 1e-12)] = np.nan
    return out


def common_grid(runs: list[Run]) -> tuple[np.ndarray, bool]:
    """(grid [C], exact): exact=True if every run's times are points of the grid (shared or a subset
    of the longest run's, e.g. a missing checkpoint), else False: interpolate runs onto the grid."""
    times = [np.round(r.hours, 9) for r in runs]
    union = np.unique(np.concatenate(times))
    if len(union) == max(len(t) for t in times):
        return union, True
    if len({len(t) for t in times}) == 1:
        return np.mean(np.stack(times), axis=0), False
    start, end = np.median([t[0] for t in times]), np.median([t[-1] for t in times])  # >= half the runs
    count = int(np.median([len(t) for t in times]))
    return np.linspace(start, end, max(count, 2)), False


def _place(grid: np.ndarray, t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """y at its times t placed on grid points (NaN where the run has no checkpoint)."""
    out = np.full(len(grid), np.nan)
    out[np.searchsorted(grid, np.round(t, 9))] = y
    return out


def setting_curve(runs: list[Run], dataset: str, metric: str, *, base: Run | None = None,
                  label: str | None = None) -> Curve:
    """Mean-over-repeats metric of every run on a shared grid; with `base`, a t = 0 point first."""
    if not runs:
        raise ValueError("setting_curve: no runs given")
    have = [r for r in runs if metric in r.data.get(dataset, {})]
    if not have:
        raise ValueError(f"setting {runs[0].setting}: no run has {dataset}/{metric}; "
                         f"the first has {({d: sorted(m) for d, m in runs[0].data.items()})}")
    if len(have) < len(runs):
        warnings.warn(f"setting {runs[0].setting}: {len(runs) - len(have)} runs lack {dataset}/{metric} "
                      "and are left out: " + ", ".join(r.name for r in runs if r not in have), stacklevel=2)
    runs = have
    grid, exact = common_grid(runs)
    fit = _place if exact else _interp_at
    rows = [fit(grid, r.hours, r.metric(dataset, metric)) for r in runs]  # N x [C]
    steps = [fit(grid, r.hours, r.steps) for r in runs]
    hours = grid
    values, step_rows = np.stack(rows), np.stack(steps)  # [N, C]
    if base is not None:
        b = float(base.metric(dataset, metric)[0])
        values = np.concatenate([np.full((len(runs), 1), b), values], axis=1)
        step_rows = np.concatenate([np.zeros((len(runs), 1)), step_rows], axis=1)
        hours = np.concatenate([[0.0], hours])
    return Curve(label or runs[0].setting, np.asarray(hours, float), nanmean_rows(step_rows), values,
                 [r.name for r in runs])
