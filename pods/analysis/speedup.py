"""Speed-up of a method over a baseline in wall-clock time, from their setting curves.

    row = speedup(base_curve, method_curve, max_hours=6.0, n_boot=2000, seed=0)   # dict, keys in KEYS
    row["speedup_99"], row["ci95_99"]       # baseline's time to 0.99 x its peak / the method's, and its interval
    ci = reach_ratio_ci(base_x, base_y, x, y)   # per-seed curves on shared checkpoints (scripts/demo_compare.py)
    d = difference_ci(finals_a, finals_b)       # {"diff", "ci95"}: difference of two arms' seed means

Contract: hours on each curve's grid, clipped to max_hours; peak = first highest mean; `speedup_*` use the first
checkpoint at or above the level (`_interp`: the linear crossing), None = not reached; bootstraps resample runs
within each setting (not reached = 0, `never_reached_*` its share), None with one run or n_boot 0. docs/analysis.md.
"""

from __future__ import annotations

import numpy as np

from pods.analysis.curves import Curve, nanmean_rows

KEYS = ("baseline", "method", "baseline_peak", "baseline_peak_hours", "method_peak", "method_peak_hours",
        "method_hours_to_baseline_peak", "speedup_exact", "speedup_exact_interp", "speedup_99",
        "speedup_99_interp", "ci95_exact", "ci95_99", "baseline_runs", "method_runs", "never_reached_exact",
        "never_reached_99", "baseline_peak_runs", "method_reach_runs")
LEVEL_99 = 0.99


def _finite(t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok = np.isfinite(y) & np.isfinite(t)
    return t[ok], y[ok]


def peak(t: np.ndarray, y: np.ndarray) -> tuple[float, float] | tuple[None, None]:
    """(peak value, first time it is attained) of y [C] over t [C], ignoring NaN."""
    t, y = _finite(t, y)
    if len(y) == 0:
        return None, None
    i = int(np.argmax(y))  # argmax returns the first of tied maxima
    return float(y[i]), float(t[i])


def first_reach(t: np.ndarray, y: np.ndarray, level: float, interp: bool = False) -> float | None:
    """First time y reaches >= level: the checkpoint time, or with interp the linear crossing point
    between the previous checkpoint and that one. None if never reached."""
    t, y = _finite(t, y)
    hit = np.nonzero(y >= level)[0]
    if len(hit) == 0:
        return None
    i = int(hit[0])
    if not interp or i == 0:
        return float(t[i])
    frac = (level - y[i - 1]) / (y[i] - y[i - 1])  # y[i-1] < level <= y[i], so 0 < frac <= 1
    return float(t[i - 1] + frac * (t[i] - t[i - 1]))


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den <= 0 or num <= 0:
        return None
    return num / den


def _ci95(values: np.ndarray) -> list[float]:
    """The 2.5th and 97.5th percentiles of bootstrap values (rounded: floating-point noise off)."""
    return [round(float(np.percentile(values, q)), 6) for q in (2.5, 97.5)]


def speedups(tb: np.ndarray, yb: np.ndarray, tm: np.ndarray, ym: np.ndarray) -> dict:
    """Point estimates from mean curves (tb, yb) baseline and (tm, ym) method, each [C]."""
    b_peak, b_peak_t = peak(tb, yb)
    m_peak, m_peak_t = peak(tm, ym)
    out = {"baseline_peak": b_peak, "baseline_peak_hours": b_peak_t, "method_peak": m_peak,
           "method_peak_hours": m_peak_t}
    if b_peak is None:
        return {**out, **{k: None for k in KEYS[6:]}}
    level = LEVEL_99 * b_peak
    m_to_peak = first_reach(tm, ym, b_peak)
    out.update(
        method_hours_to_baseline_peak=m_to_peak,
        speedup_exact=_ratio(b_peak_t, m_to_peak),
        speedup_exact_interp=_ratio(first_reach(tb, yb, b_peak, True), first_reach(tm, ym, b_peak, True)),
        speedup_99=_ratio(first_reach(tb, yb, level), first_reach(tm, ym, level)),
        speedup_99_interp=_ratio(first_reach(tb, yb, level, True), first_reach(tm, ym, level, True)),
    )
    return out


def bootstrap_ci(base: Curve, method: Curve, n_boot: int = 2000, seed: int = 0) -> dict:
    """95% percentile intervals of speedup_exact and speedup_99 resampling runs within each setting, and
    the share of resamples in which the method never reaches the level (counted as speed-up 0).

    {"ci95_exact", "ci95_99", "never_reached_exact", "never_reached_99"}; all None when a setting has
    fewer than 2 runs or n_boot is 0."""
    if n_boot <= 0 or len(base.run_names) < 2 or len(method.run_names) < 2:
        return dict.fromkeys(("ci95_exact", "ci95_99", "never_reached_exact", "never_reached_99"))
    rng = np.random.default_rng(seed)
    nb, nm = len(base.run_names), len(method.run_names)
    exact, s99 = np.zeros(n_boot), np.zeros(n_boot)
    for i in range(n_boot):
        yb = nanmean_rows(base.values[rng.integers(0, nb, nb)])  # [Cb]
        ym = nanmean_rows(method.values[rng.integers(0, nm, nm)])  # [Cm]
        s = speedups(base.hours, yb, method.hours, ym)
        exact[i] = s["speedup_exact"] or 0.0
        s99[i] = s["speedup_99"] or 0.0
    return {"ci95_exact": _ci95(exact), "ci95_99": _ci95(s99), "never_reached_exact": float(np.mean(exact == 0)),
            "never_reached_99": float(np.mean(s99 == 0))}


def reach_ratio_ci(base_x: np.ndarray, base_y: np.ndarray, x: np.ndarray, y: np.ndarray, *, n_boot: int = 2000,
                   seed: int = 0) -> dict:
    """95% interval of "x fewer" to the baseline's final mean: per-seed curves base [Sb, C], method [S, C] (x: steps
    or seconds, y: accuracy), seeds resampled with replacement within each arm, the seed-mean curves and their
    (interpolated) crossing of the resampled baseline's final mean recomputed. A resample in which the method
    never reaches it counts as 0 -> {"ci95": [lo, hi], "never_reached": share}; None values with < 2 seeds."""
    if n_boot <= 0 or len(base_y) < 2 or len(y) < 2:
        return {"ci95": None, "never_reached": None}
    rng = np.random.default_rng(seed)
    ratios = np.zeros(n_boot)
    for i in range(n_boot):
        b, m = rng.integers(0, len(base_y), len(base_y)), rng.integers(0, len(y), len(y))
        bx, by, mx, my = base_x[b].mean(0), base_y[b].mean(0), x[m].mean(0), y[m].mean(0)  # [C] each
        to_base, to_method = first_reach(bx, by, by[-1], True), first_reach(mx, my, by[-1], True)
        ratios[i] = _ratio(to_base, to_method) or 0.0
    return {"ci95": _ci95(ratios),
            "never_reached": float(np.mean(ratios == 0))}


def difference_ci(a: np.ndarray, b: np.ndarray, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """Mean of `a` minus mean of `b` (per-seed values [Sa], [Sb], e.g. final accuracies) with its 95% interval,
    each arm's seeds resampled with replacement -> {"diff": d, "ci95": [lo, hi]} (ci95 None with < 2 seeds)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = float(a.mean() - b.mean())
    if n_boot <= 0 or len(a) < 2 or len(b) < 2:
        return {"diff": diff, "ci95": None}
    rng = np.random.default_rng(seed)
    boot = a[rng.integers(0, len(a), (n_boot, len(a)))].mean(1) - b[rng.integers(0, len(b), (n_boot, len(b)))].mean(1)
    return {"diff": diff, "ci95": _ci95(boot)}


def _runs_at(c: Curve, hours: float | None) -> int | None:
    """Runs contributing to the curve's grid point at `hours` (a grid time), None for None."""
    return None if hours is None else int(c.n[int(np.argmin(np.abs(c.hours - hours)))])


def speedup(base: Curve, method: Curve, *, max_hours: float | None = None, n_boot: int = 2000,
            seed: int = 0) -> dict:
    """The full row for one method: point estimates, bootstrap intervals (None where not reached)."""
    base, method = base.clip(max_hours), method.clip(max_hours)
    row = {"baseline": base.label, "method": method.label, "baseline_runs": len(base.run_names),
           "method_runs": len(method.run_names)}
    row.update(speedups(base.hours, base.mean, method.hours, method.mean))
    row.update(bootstrap_ci(base, method, n_boot, seed))
    row["baseline_peak_runs"] = _runs_at(base, row["baseline_peak_hours"])
    row["method_reach_runs"] = _runs_at(method, row["method_hours_to_baseline_peak"])
    for kind in ("exact", "99"):
        if row[f"speedup_{kind}"] is None:  # not reached by the mean curves: no interval around nothing
            row[f"ci95_{kind}"] = row[f"never_reached_{kind}"] = None
    return {k: row[k] for k in KEYS}
