"""Paired intervals over seeds: arms that share a seed share its prompt stream and warm start.

    d = paired_difference(acc_arm, acc_grpo)            # {"estimate", "ci95", "se"}: mean of a - b, paired by seed
    r = paired_interval(ratio_stat, x, y, low=0.0)      # any statistic of [S, ...] arrays, seeds left out jointly
    separable(d["ci95"], null=0.0)                      # False: "not separable from GRPO"

Contract: the Student t interval, estimate +- t_{S-1, 97.5 %} x se. For a difference of means it is the paired t
interval (se = s / sqrt(S) of the per-seed differences); for any other statistic se is the jackknife's over
seeds, each seed left out of every array at once (the pairing). Coverage at 5 and 10 seeds is ~95 %
(tests/pods/analysis/test_paired.py simulates it). A statistic that is None (undefined) at the data or at a
left-out sample has no interval. docs/leaderboard.md "The statistics" says why not a bootstrap.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import stats

LEVEL = 0.95


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


def separable(ci: list[float] | None, null: float) -> bool | None:
    """True when the interval excludes `null` (1 for a ratio, 0 for a difference); None without an interval."""
    if ci is None:
        return None
    return not (ci[0] <= null <= ci[1])
