"""Drawing helpers (matplotlib, Agg backend): curves with 95% bands, seconds-per-step bars, saving.

Every figure is written as PNG and PDF, each to a temporary file first and then renamed, so an
interrupted run never leaves a half-written figure behind.

Use: `fig, axes = new_figure(2)`; `draw_curves(axes[0], curves, x="hours")`; `save(fig, out, "name")`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pods.extras import require

require("matplotlib", "analysis").use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from pods.analysis.curves import Curve  # noqa: E402

X_AXES = {"hours": "training time", "steps": "training step"}  # "hours" = time, shown in a TIME_AXIS unit
TIME_AXIS = {"hours": 1.0, "minutes": 60.0, "seconds": 3600.0}  # display factor from hours
_UMASK = os.umask(0)
os.umask(_UMASK)
METRIC_LABELS = {"ans_acc": "answer accuracy", "for_acc": "format accuracy", "both_acc": "answer + format accuracy",
                 "lengths": "mean completion length (tokens)"}


def new_figure(ncols: int = 1, width: float = 5.0, height: float = 3.6):
    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, list(axes[0])


def draw_curves(ax, curves: list[Curve], *, x: str = "hours", metric: str = "ans_acc", title: str = "",
                time_label: str | None = None, time_unit: str = "hours") -> None:
    """Mean over runs with a shaded 95% band, one line per curve, against time (in time_unit) or steps."""
    if x not in X_AXES:
        raise ValueError(f"unknown x axis {x!r}; valid: {sorted(X_AXES)}")
    if time_unit not in TIME_AXIS:
        raise ValueError(f"unknown time unit {time_unit!r}; valid: {sorted(TIME_AXIS)}")
    for i, c in enumerate(curves):
        xs = c.hours * TIME_AXIS[time_unit] if x == "hours" else c.steps
        ok = np.isfinite(xs) & np.isfinite(c.mean)
        if not ok.any():
            raise ValueError(f"curve {c.label}: nothing to plot against {x} (no step numbers?)")
        color = f"C{i}"
        ax.plot(xs[ok], c.mean[ok], marker="o", ms=3, color=color, label=f"{c.label} ({len(c.run_names)} runs)")
        band = ok & np.isfinite(c.half_width)
        if band.any():
            ax.fill_between(xs[band], c.lo[band], c.hi[band], color=color, alpha=0.2, linewidth=0)
    if x == "hours":
        ax.set_xlabel(time_label or f"training time ({time_unit})")
    else:
        ax.set_xlabel(X_AXES[x])
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def draw_bars(ax, labels: list[str], values: list[np.ndarray], *, phases: list[dict[str, float]] | None = None,
              ylabel: str = "seconds per step", title: str = "") -> None:
    """One bar per setting: mean of `values[i]` (per run) with a 95% t-interval error bar;
    with `phases`, the bar is stacked from the phase timers (mean over runs) instead."""
    from scipy import stats

    pos = np.arange(len(labels))
    means = np.array([np.mean(v) for v in values])
    errs = np.array([stats.t.ppf(0.975, len(v) - 1) * np.std(v, ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0.0
                     for v in values])
    if phases and any(phases):
        names = sorted({k for p in phases for k in p})
        bottom = np.zeros(len(labels))
        for j, name in enumerate(names):
            h = np.array([p.get(name, 0.0) for p in phases])
            ax.bar(pos, h, bottom=bottom, color=f"C{j}", label=name.removeprefix("time/"))
            bottom += h
        ax.errorbar(pos, means, yerr=errs, fmt="_", color="k", ms=14, capsize=3, label="total")
        ax.legend(fontsize=7)
    else:
        ax.bar(pos, means, yerr=errs, capsize=3, color=[f"C{i}" for i in range(len(labels))])
    ax.set_xticks(pos, labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)


def save(fig, out_dir: str | Path, name: str) -> list[Path]:
    """Write `<out_dir>/<name>.png` and `.pdf` atomically; returns both paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    paths = []
    for ext in ("png", "pdf"):
        final = out / f"{name}.{ext}"
        fd, tmp = tempfile.mkstemp(dir=out, prefix=f".{name}.", suffix=f".{ext}")
        os.close(fd)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the usual permissions
        try:
            fig.savefig(tmp, format=ext, dpi=150)
            os.replace(tmp, final)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        paths.append(final)
    plt.close(fig)
    return paths
