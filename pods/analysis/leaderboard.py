"""The leaderboard's statistics, table and figure: arms on one budget grid, paired with the baseline by seed.

    grid = budget_grid(budget=2e6, points=10)                   # [K + 1]: 0, b/K, ..., b
    s = summarize({"grpo": [tr0, tr1, ...], "pods": [...]}, grid, labels, baseline="grpo", seeds=[0, 1, ...])
    print(markdown(s)); draw(s, out_dir)                        # the table; leaderboard.png / .pdf

Contract: traces (pods.analysis.traces.Trace) of every arm list the SAME seeds in the same order (the
pairing). Per metric (sampled, greedy): the final seed mean; the paired difference to the baseline's final
(pods.analysis.paired.paired_difference); the budget ratio = baseline's budget to reach its own final seed mean
over the arm's (linear between budget points; 0 = never within the budget) with its paired bootstrap interval;
"not separable" where an interval covers 1 (ratio) or 0 (difference). Also the classic views (steps, training
seconds) and the zero-signal shares. A run that has not reached the budget yet is a ResultsError.
"""

from __future__ import annotations

import numpy as np

from pods.analysis.figures import new_figure, save
from pods.analysis.paired import paired_bootstrap, paired_difference, separable
from pods.analysis.speedup import first_reach
from pods.analysis.traces import Trace, grid_values
from pods.errors import ResultsError
from pods.extras import require

METRICS = {"sampled": "sampled pass@1 (T = 1)", "greedy": "greedy accuracy"}


def budget_grid(budget: float, points: int) -> np.ndarray:
    """[points + 1] budget points from 0 (the warm start) to `budget`."""
    return np.linspace(0.0, float(budget), int(points) + 1)


def crossing(grid: np.ndarray, curve: np.ndarray, target: np.ndarray) -> np.ndarray:
    """First budget at which `curve` [..., K] reaches `target` [...] (linear between budget points, as
    pods.analysis.speedup.first_reach) -> [...]; NaN where it never does."""
    hit = curve >= target[..., None]  # [..., K]
    i = hit.argmax(-1)  # first index at or above the target
    j = np.maximum(i, 1)
    y0, y1 = np.take_along_axis(curve, (j - 1)[..., None], -1)[..., 0], np.take_along_axis(curve, j[..., None], -1)[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):  # y0 < target <= y1 wherever the fraction is used
        x = np.where(i == 0, grid[0], grid[j - 1] + (target - y0) / (y1 - y0) * (grid[j] - grid[j - 1]))
    return np.where(hit.any(-1), x, np.nan)


def reach_ratios(grid: np.ndarray, arm: np.ndarray, base: np.ndarray) -> np.ndarray:
    """reach_ratio of many data sets at once: arm, base [..., S, K] -> [...] (NaN: undefined)."""
    own = base.mean(-2)  # [..., K] the baseline's seed-mean curve: its final is the target it is read against
    b, a = crossing(grid, own, own[..., -1]), crossing(grid, arm.mean(-2), own[..., -1])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isnan(a), 0.0, np.where((a > 0) & (b > 0), b / a, np.nan))


def reach_ratio(grid: np.ndarray, arm: np.ndarray, base: np.ndarray) -> float | None:
    """Baseline's budget to reach its final seed mean / the arm's (arm, base: [S, K] on `grid`); target and crossings
    read off the same seed-mean curves; 0: the arm never reaches it within the budget; None: undefined (reached at
    budget 0)."""
    r = float(reach_ratios(grid, np.asarray(arm, dtype=float), np.asarray(base, dtype=float)))
    return None if np.isnan(r) else r


def _mean(values: list[float]) -> float:
    """Mean of the finite values (NaN when there are none: runs without a ledger)."""
    v = np.asarray(values, dtype=float)
    return float(v[np.isfinite(v)].mean()) if np.isfinite(v).any() else float("nan")


def _verdict(diff: dict, ratio: dict) -> str:
    """'ahead' / 'behind' when the final difference's interval excludes 0; else 'sooner' / 'later' when the budget
    ratio (reached within the budget) excludes 1; else 'not separable' (from the baseline)."""
    if separable(diff["ci95"], 0.0):
        return "ahead" if diff["ci95"][0] > 0 else "behind"
    if ratio["estimate"] and separable(ratio["ci95"], 1.0):
        return "sooner" if ratio["ci95"][0] > 1 else "later"
    return "not separable" if diff["ci95"] else "-"


def summarize(traces: dict[str, list[Trace]], grid: np.ndarray, labels: dict[str, str], *, baseline: str = "grpo",
              seeds: list[int]) -> dict:
    """The leaderboard as a dict (summary.json): per arm its rows per metric, the grid and per-seed curves."""
    if baseline not in traces:
        raise ResultsError(f"the baseline arm {baseline!r} is not among the arms {list(traces)}")
    on = {a: [grid_values(t, grid) for t in trs] for a, trs in traces.items()}
    for a, vals in on.items():
        short = [seeds[i] for i, v in enumerate(vals) if not np.isfinite(v["sampled"][-1])]
        if short:
            raise ResultsError(f"arm {a}: seed(s) {short} have no checkpoint at the full budget; rerun to finish them")
    out = {"grid": grid.tolist(), "seeds": seeds, "baseline": baseline, "arms": {}}
    base = {m: np.stack([v[m] for v in on[baseline]]) for m in METRICS}
    for a, vals in on.items():
        cur = {k: np.stack([v[k] for v in vals]) for k in (*METRICS, "steps", "seconds")}  # [S, K] each
        row = {"label": labels.get(a, a), "curves": {m: cur[m].tolist() for m in METRICS},
               "steps": float(cur["steps"][:, -1].mean()), "seconds": float(cur["seconds"][:, -1].mean()),
               "zero_signal": {k: _mean([t.zero_signal.get(k, np.nan) for t in traces[a]]) for k in ("generated", "trained")}}
        for m in METRICS:
            e = {"final": float(cur[m][:, -1].mean()), "final_per_seed": cur[m][:, -1].tolist()}
            if a != baseline:
                e["diff"] = paired_difference(cur[m][:, -1], base[m][:, -1])
                e["ratio"] = paired_bootstrap(lambda x, y: reach_ratios(grid, x, y), cur[m], base[m])
                e["verdict"] = _verdict(e["diff"], e["ratio"])
                # the classic views: the same crossing on the steps and the training-seconds axes (point estimates)
                for view in ("steps", "seconds"):
                    bx, ax_ = np.stack([v[view] for v in on[baseline]]).mean(0), cur[view].mean(0)
                    target = float(base[m].mean(0)[-1])  # the same curve's final as the budget ratio's
                    tb = first_reach(bx, base[m].mean(0), target, True)
                    ta = first_reach(ax_, cur[m].mean(0), target, True)
                    e[f"{view}_ratio"] = tb / ta if tb and ta else None
            row[m] = e
        out["arms"][a] = row
    return out


def _ci(e: dict | None, fmt: str, scale: float = 1.0) -> str:
    if e is None or e["estimate"] is None:
        return "-"
    text = fmt.format(scale * e["estimate"])
    return text + (f" [{fmt.format(scale * e['ci95'][0])}, {fmt.format(scale * e['ci95'][1])}]" if e["ci95"] else "")


def markdown(s: dict) -> str:
    """The leaderboard table (one row per arm) in Markdown, GRPO first."""
    head = ("| arm | sampled pass@1 | greedy | Δ sampled vs GRPO, points | Δ greedy vs GRPO, points | budget ratio to "
            "GRPO's final, sampled | budget ratio, greedy | verdict (sampled / greedy) | zero-signal groups, "
            "generated / trained | steps | training s | step ratio, sampled | seconds ratio, sampled |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for a, r in s["arms"].items():
        sa, gr = r["sampled"], r["greedy"]
        ratio = lambda e: "not reached" if e["estimate"] == 0 else _ci(e, "{:.2f}x")  # noqa: E731
        cells = [r["label"], f"{100 * sa['final']:.1f} %", f"{100 * gr['final']:.1f} %"]
        if "diff" in sa:
            cells += [_ci(sa["diff"], "{:+.1f}", 100), _ci(gr["diff"], "{:+.1f}", 100), ratio(sa["ratio"]),
                      ratio(gr["ratio"]), f"{sa['verdict']} / {gr['verdict']}"]
        else:
            cells += ["baseline", "baseline", "1.00x", "1.00x", "-"]
        z = r["zero_signal"]
        cells += [f"{z['generated']:.2f} / {z['trained']:.2f}", f"{r['steps']:.0f}", f"{r['seconds']:.0f}",
                  "1.00x" if "diff" not in sa else (f"{sa['steps_ratio']:.2f}x" if sa["steps_ratio"] else "not reached"),
                  "1.00x" if "diff" not in sa else (f"{sa['seconds_ratio']:.2f}x" if sa["seconds_ratio"] else
                                                    "not reached")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def draw(s: dict, out_dir, name: str = "leaderboard", title: str = "") -> list:
    """Accuracy against budget, one line and 95 % t-band of the seed mean per arm; sampled and greedy panels. The
    x axis is named by s["axis"] ({"label", "scale"}: the cost in words and the unit it is divided by)."""
    fig, axes = new_figure(2, width=6.0, height=4.2)
    axis = s.get("axis") or {"label": f"budget (millions of tokens: generated + {s.get('weight', 'w')} x trained)",
                             "scale": 1e6}  # the cost's name in words (summary.json's "axis")
    grid = np.asarray(s["grid"]) / axis["scale"]
    for ax, (m, label) in zip(axes, METRICS.items()):
        for i, (a, r) in enumerate(s["arms"].items()):
            y = np.asarray(r["curves"][m])  # [S, K]
            t = require("scipy.stats", "analysis").t.ppf(0.975, len(y) - 1)
            mean, half = y.mean(0), t * y.std(0, ddof=1) / np.sqrt(len(y))
            ax.plot(grid, mean, marker="o", ms=3, color=f"C{i % 10}", ls="-" if i < 10 else "--", label=r["label"])
            ax.fill_between(grid, np.clip(mean - half, 0, 1), np.clip(mean + half, 0, 1), color=f"C{i % 10}",
                            alpha=0.15, linewidth=0)
        ax.set_xlabel(axis["label"])
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(title or f"{len(s['seeds'])} seeds; band: 95 % t-interval of the seed mean", fontsize=10)
    return save(fig, out_dir, name)
