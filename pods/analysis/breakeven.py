"""Break-even: the fixed part of a step at which an arm's budget ratio to GRPO's final reaches 1.

    be = break_even(arm_traces, grpo_traces, fixed=np.linspace(0, 20, 41), points=10)   # variable-cost traces
    be["sampled"]["fixed"], be["sampled"]["ci95"], be["sampled"]["share"]     # seconds; share of a GRPO step
    draw_break_even({"pods": (label, be), ...}, out_dir)                      # ratio against the fixed part

Contract: the traces carry each checkpoint's variable cost (a profile's modelled seconds with the fixed part 0) and
its step count; with a fixed part f a checkpoint costs variable + f x steps. At each f the pair is compared up to the
largest budget both arms' runs reached, on `points` equal budget points, with pods.analysis.leaderboard's budget
ratio (GRPO's target read off its seed-mean curve). The break-even is the first f at which the ratio crosses 1
(linear between the f grid's points; `direction` says whether the arm gains above or below it), its interval the
paired bootstrap over seeds (seeds resampled jointly, the expanded percentile of pods.analysis.paired); the ratio's
band at each f from the same resamples. None where the ratio stays on one side over the grid.
docs/leaderboard.md "Break-even".
"""

from __future__ import annotations

import numpy as np

from pods.analysis.figures import new_figure, save
from pods.analysis.leaderboard import METRICS, reach_ratios
from pods.analysis.paired import expanded_level
from pods.analysis.traces import Trace

RESAMPLES = 1000


def _curves(traces: list[Trace], fixed: np.ndarray, ends: np.ndarray, points: int, metric: str) -> np.ndarray:
    """[S, F, K] accuracy of each run at each fixed part's budget points (0 .. ends[f])."""
    out = np.empty((len(traces), len(fixed), points + 1))
    for s, tr in enumerate(traces):
        for i, f in enumerate(fixed):
            cost = tr.cost + f * tr.steps
            out[s, i] = np.interp(np.linspace(0, ends[i], points + 1), cost, tr.acc[metric])
    return out


def ratio_curves(arm: np.ndarray, base: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """arm, base [..., S, F, K] -> [..., F] the budget ratio at each fixed part (0: never reached; NaN: undefined)."""
    out = []
    for i, end in enumerate(ends):
        grid = np.linspace(0, end, arm.shape[-1])
        out.append(reach_ratios(grid, arm[..., i, :], base[..., i, :]))
    return np.stack(out, -1)


def crossing_one(fixed: np.ndarray, ratios: np.ndarray) -> np.ndarray:
    """[..., F] ratios -> [...] the first fixed part where the ratio crosses 1 (linear between grid points; NaN:
    none, or undefined ratios)."""
    d = ratios - 1.0
    flips = (np.sign(d[..., 1:]) != np.sign(d[..., :-1])) & np.isfinite(d[..., 1:]) & np.isfinite(d[..., :-1])
    has = flips.any(-1)
    j = flips.argmax(-1)  # [...]
    d0, d1 = np.take_along_axis(d, j[..., None], -1)[..., 0], np.take_along_axis(d, (j + 1)[..., None], -1)[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        f = fixed[j] + d0 / (d0 - d1) * (fixed[j + 1] - fixed[j])
    return np.where(has, f, np.nan)


def break_even(arm: list[Trace], base: list[Trace], *, fixed: np.ndarray, points: int, grpo_step: float,
               resamples: int = RESAMPLES) -> dict:
    """Per metric: the ratio at each fixed part (with its interval band), the break-even fixed part with its paired
    bootstrap interval, as seconds and as a share of a GRPO step (`grpo_step`: GRPO's variable seconds per step)."""
    fixed = np.asarray(fixed, dtype=float)
    ends = np.array([min(float(tr.cost[-1] + f * tr.steps[-1]) for tr in [*arm, *base]) for f in fixed])  # [F]
    out = {"fixed_grid": fixed.tolist(), "grpo_variable_step": grpo_step}
    for m in METRICS:
        a, b = _curves(arm, fixed, ends, points, m), _curves(base, fixed, ends, points, m)  # [S, F, K]
        ratios = ratio_curves(a, b, ends)  # [F]
        idx = np.random.default_rng(0).integers(0, len(a), (resamples, len(a)))  # seeds resampled jointly
        boot = ratio_curves(a[idx], b[idx], ends)  # [R, F]
        tail = (1 - expanded_level(len(a))) / 2  # the expanded percentile, as pods.analysis.paired.paired_bootstrap
        band = [np.nanquantile(boot, q, axis=0).tolist() if np.isfinite(boot).any() else None for q in (tail, 1 - tail)]
        f = float(crossing_one(fixed, ratios))
        f = None if np.isnan(f) else f
        cross = crossing_one(fixed, boot)  # [R]
        cross = cross[np.isfinite(cross)]
        ci = ([float(q) for q in np.quantile(cross, [tail, 1 - tail])] if f is not None and len(cross) >= resamples / 2
              else None)
        d0 = ratios[0] - 1
        out[m] = {"ratio": ratios.tolist(), "band": band, "fixed": f, "ci95": ci,
                  "share": None if f is None else f / (f + grpo_step),
                  "share_ci95": None if ci is None else [x / (x + grpo_step) for x in ci],
                  "direction": None if f is None else ("gains above" if d0 < 0 else "gains below"),
                  "ahead_everywhere": bool(np.all(ratios > 1)), "behind_everywhere": bool(np.all(ratios < 1))}
    return out


def describe(e: dict, grid_max: float) -> str:
    """A table cell: 'f s [lo, hi] (share of a GRPO step), gains above' or where the ratio stays on one side."""
    if e["fixed"] is None:
        if e["ahead_everywhere"]:
            return f"none: ratio > 1 for every fixed part up to {grid_max:.3g} s"
        if e["behind_everywhere"]:
            return f"none: ratio < 1 for every fixed part up to {grid_max:.3g} s"
        return "undefined"
    ci = f" [{e['ci95'][0]:.2f}, {e['ci95'][1]:.2f}]" if e["ci95"] else ""
    return f"{e['fixed']:.2f} s{ci} ({100 * e['share']:.0f} % of a GRPO step), {e['direction']}"


def markdown(rows: dict[str, tuple[str, dict]]) -> str:
    """One row per arm: the break-even fixed part, sampled and greedy."""
    lines = ["| arm | break-even fixed part, sampled | break-even, greedy | ratio at fixed 0 / at the grid's end, "
             "sampled |", "|---|---|---|---|"]
    for label, be in rows.values():
        top = be["fixed_grid"][-1]
        r = be["sampled"]["ratio"]
        lines.append(f"| {label} | {describe(be['sampled'], top)} | {describe(be['greedy'], top)} | "
                     f"{r[0]:.2f}x / {r[-1]:.2f}x |")
    return "\n".join(lines) + "\n"


def draw_break_even(rows: dict[str, tuple[str, dict]], out_dir, profile: str, name: str = "breakeven") -> list:
    """Budget ratio to GRPO's final against the fixed part of a step, one line and bootstrap band per arm."""
    fig, axes = new_figure(2, width=6.0, height=4.2)
    for ax, (m, label) in zip(axes, METRICS.items()):
        for i, (label_, be) in enumerate(rows.values()):
            x, y = np.asarray(be["fixed_grid"]), np.asarray(be[m]["ratio"], dtype=float)
            ax.plot(x, y, color=f"C{i % 10}", label=label_)
            if be[m]["band"][0] is not None:
                ax.fill_between(x, be[m]["band"][0], be[m]["band"][1], color=f"C{i % 10}", alpha=0.15, linewidth=0)
        ax.axhline(1.0, color="black", lw=0.8, ls=":")
        g = next(iter(rows.values()))[1]["grpo_variable_step"]  # GRPO's variable seconds per step
        top = ax.secondary_xaxis("top", functions=(lambda f: f / (f + g),
                                                   lambda x: np.clip(x, 0, 0.999) * g / (1 - np.clip(x, 0, 0.999))))
        top.set_xticks([0.25, 0.5, 0.75, 0.9])
        top.set_xlabel("the fixed part as a share of a GRPO step", fontsize=8)
        ax.set_xlabel(f"fixed part of a step (seconds), the rest modelled on {profile}")
        ax.set_ylabel(f"budget ratio to GRPO's final ({label})")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("above 1: the arm reaches GRPO's final accuracy on less budget; band: 95 % bootstrap over seeds",
                 fontsize=9)
    return save(fig, out_dir, name)

