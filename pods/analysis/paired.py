"""Paired intervals over seeds: arms that share a seed share its prompt stream and warm start.

    d = paired_difference(acc_arm, acc_grpo)            # {"estimate", "ci95", "se"}: mean of a - b, paired by seed
    r = paired_interval(ratio_stat, x, y, low=0.0)      # any smooth statistic of [S, ...] arrays, seeds left out jointly
    r = paired_bootstrap(batched_stat, x, y)            # a crossing: seeds resampled jointly, expanded percentile
    separable(d["ci95"], null=0.0)                      # False: "not separable from GRPO"

Contract: a difference of means gets the paired t interval (se = s / sqrt(S) of the per-seed differences), a
smooth statistic the Student t interval with the jackknife's se over seeds, each seed left out of every array at
once (the pairing): ~95 % at 5 and 10 seeds. A statistic that jumps with the data (the first crossing of a curve)
gets the expanded percentile bootstrap (seeds resampled jointly; the percentile level widened so that for a mean it
is as wide as the t interval). An undefined statistic has no interval. Coverage: tests/pods/analysis/; reasons:
docs/leaderboard.md "The statistics".
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import stats

LEVEL = 0.95
RESAMPLES = 2000  # paired_bootstrap: resamples of the seeds


def _jackknife_se(values: np.ndarray) -> np.float64:
    """[S] leave-one-out estimates -> the jackknife standard error (NaN if any estimate is undefined)."""
    s = len(values)
    return np.sqrt((s - 1) / s * np.sum((values - values.mean()) ** 2))


def _student(estimate: float, se: float, s: int) -> list[float]:
    """estimate +- t_{S-1} se."""
    half = float(stats.t.ppf((1 + LEVEL) / 2, s - 1)) * se
    return [round(estimate - half, 6), round(estimate + half, 6)]


def paired_difference(a, b) -> dict:
    """Mean over seeds of a - b (per-seed values [S], the same seed at the same index) with its 95 % interval."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)  # [S]
    s = len(d)
    estimate = float(d.mean())
    if s < 2:
        return {"estimate": estimate, "ci95": None, "se": None}
    se = float(d.std(ddof=1) / np.sqrt(s))
    return {"estimate": estimate, "ci95": _student(estimate, se, s), "se": se}


def paired_interval(stat: Callable[..., float | None], *arrays, low: float | None = None) -> dict:
    """`stat(*arrays)` (each array [S, ...], seed first) with its 95 % interval, se by the jackknife over seeds
    (every array loses the same seed) -> {"estimate", "ci95", "se"}; `low`: the statistic's floor (a ratio's 0),
    the interval clipped to it."""
    arrays = [np.asarray(x, dtype=float) for x in arrays]
    s = len(arrays[0])
    if any(len(x) != s for x in arrays):
        raise ValueError(f"paired arrays need the same seeds: lengths {[len(x) for x in arrays]}")
    estimate = stat(*arrays)
    if estimate is None or s < 2:
        return {"estimate": estimate, "ci95": None, "se": None}
    left_out = [stat(*(np.delete(x, i, axis=0) for x in arrays)) for i in range(s)]  # [S]
    se = float(_jackknife_se(np.array([np.nan if v is None else v for v in left_out], dtype=float)))
    if not np.isfinite(se):
        return {"estimate": float(estimate), "ci95": None, "se": None}
    ci = _student(float(estimate), se, s)
    return {"estimate": float(estimate), "ci95": [max(low, b) for b in ci] if low is not None else ci, "se": se}


def expanded_level(s: int) -> float:
    """The two-sided level of the percentile interval that, for the mean of s normal values, is as wide as the
    Student t interval at LEVEL (Hesterberg 2015, "expanded percentile"): 2 Phi(sqrt(s / (s - 1)) t_{s-1})  - 1."""
    t = float(stats.t.ppf((1 + LEVEL) / 2, s - 1))
    return float(2 * stats.norm.cdf(np.sqrt(s / (s - 1)) * t) - 1)


def paired_bootstrap(stat: Callable[..., np.ndarray], *arrays, resamples: int = RESAMPLES, seed: int = 0,
                     low: float | None = None) -> dict:
    """`stat` of arrays [S, ...] (seed first) with its 95 % interval from resampling the seeds jointly (every array
    gets the same resampled seeds) -> {"estimate", "ci95", "se"}. `stat` is batched: arrays [R, S, ...] -> [R]
    (NaN: undefined). The interval: the expanded percentile (expanded_level) of the resampled values that are
    defined (se: their standard deviation); None when the estimate, or half the resamples, is undefined."""
    arrays = [np.asarray(x, dtype=float) for x in arrays]
    s = len(arrays[0])
    if any(len(x) != s for x in arrays):
        raise ValueError(f"paired arrays need the same seeds: lengths {[len(x) for x in arrays]}")
    estimate = float(stat(*(x[None] for x in arrays))[0])
    if np.isnan(estimate) or s < 2:
        return {"estimate": None if np.isnan(estimate) else estimate, "ci95": None, "se": None}
    idx = np.random.default_rng(seed).integers(0, s, (resamples, s))  # [R, S]
    values = np.asarray(stat(*(x[idx] for x in arrays)), dtype=float)  # [R]
    values = values[np.isfinite(values)]
    if len(values) < resamples / 2:
        return {"estimate": estimate, "ci95": None, "se": None}
    tail = (1 - expanded_level(s)) / 2
    ci = [round(float(q), 6) for q in np.quantile(values, [tail, 1 - tail])]
    return {"estimate": estimate, "ci95": [max(low, b) for b in ci] if low is not None else ci,
            "se": float(values.std(ddof=1))}


def separable(ci: list[float] | None, null: float) -> bool | None:
    """True when the interval excludes `null` (1 for a ratio, 0 for a difference); None without an interval."""
    if ci is None:
        return None
    return not (ci[0] <= null <= ci[1])
