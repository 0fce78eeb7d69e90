"""Drawing helpers (matplotlib, Agg backend): curves with 95% bands, seconds-per-step bars, saving.

    fig, axes = new_figure(2)
    draw_curves(axes[0], curves)     # pods.analysis.curves; hollow markers where fewer than all runs contribute
    save(fig, out, "name")           # out/name.png and out/name.pdf, each to a temporary file, then renamed

Each curve keeps its own axis (time or steps); the band is the 95% t-interval of the mean over runs, clipped to
the metric's range; time is shown in seconds, minutes or hours to suit the data (`time_unit_for`); the legend
counts runs ("3 runs; hollow points: 2 runs", or "4-9 runs"). An interrupted save leaves no half-written figure.
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
from pods.errors import ConfigError, ResultsError  # noqa: E402

X_AXES = {"hours": "training time", "steps": "training step"}  # a Curve's axis; "hours" shown in a TIME_AXIS unit
TIME_AXIS = {"hours": 1.0, "minutes": 60.0, "seconds": 3600.0}  # display factor from hours ("auto": time_unit_for)
_UMASK = os.umask(0)
os.umask(_UMASK)
METRIC_LABELS = {"ans_acc": "answer accuracy", "for_acc": "format accuracy", "both_acc": "answer + format accuracy",
                 "lengths": "mean completion length (tokens)"}
BAND = "band: 95% t-interval of the mean over runs, clipped to the metric's range"


def new_figure(ncols: int = 1, width: float = 5.0, height: float = 3.6, nrows: int = 1):
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    return fig, [ax for row in axes for ax in row]


def time_unit_for(longest_hours: float) -> str:
    """The unit that suits times up to `longest_hours`: seconds below 2 minutes, minutes below 2 hours, else hours."""
    return "seconds" if longest_hours < 2 / 60 else "minutes" if longest_hours < 2 else "hours"


def metric_label(metric: str) -> str:
    """'answer accuracy' for ans_acc (paper_*: 'answer accuracy, paper grader'); unknown names as given."""
    base = metric.removeprefix("paper_")
    label = METRIC_LABELS.get(base, metric)
    return f"{label}, paper grader" if base != metric and base in METRIC_LABELS else label


def axis_label(name: str, unit: str | None, given: str | None = None, *, interpolated: bool = False) -> str:
    """One pair of parentheses: 'training time (minutes; runs interpolated)'; `given` replaces name and unit."""
    label, notes = (given, []) if given else (name, [unit] if unit else [])
    notes += ["runs interpolated"] if interpolated else []
    if not notes:
        return label
    if label.endswith(")"):  # a given label with its own parentheses: "training seconds (1 thread per run)"
        return f"{label[:-1]}; {'; '.join(notes)})"
    return f"{label} ({'; '.join(notes)})"


def check_out_dir(out: str | Path) -> Path:
    """`out` as a folder for figures; ConfigError when it is an existing file (left untouched)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file, not a folder: figures go to <folder>/<name>.png and .pdf; give a "
                          "folder (created when missing); the file was left untouched")
    return out


def curve_label(c: Curve) -> str:
    """Legend text: the label and the honest run count ("3 runs; hollow points: 2 runs")."""
    n, total = c.n[np.isfinite(c.mean)], len(c.run_names)
    fewer = sorted({int(k) for k in n if k < total})
    counts = "" if not fewer else str(fewer[0]) if len(fewer) == 1 else f"{fewer[0]}-{fewer[-1]}"
    note = f"; hollow points: {counts} run{'s' * (fewer[-1] != 1)}" if fewer else ""
    return f"{c.label} ({total} run{'s' * (total != 1)}{note})"


def draw_curves(ax, curves: list[Curve], *, metric: str = "ans_acc", title: str = "", time_label: str | None = None,
                time_unit: str = "auto") -> None:
    """Mean over runs with a shaded 95% band, one line per curve, against each curve's own axis (time in
    time_unit, "auto": `time_unit_for` the longest curve; or steps). Points where fewer than all runs
    contribute are hollow."""
    if time_unit not in TIME_AXIS and time_unit != "auto":
        raise ResultsError(f"unknown time unit {time_unit!r}; valid: auto, {', '.join(sorted(TIME_AXIS))}")
    axis = {c.axis for c in curves}
    if len(axis) != 1:
        raise ResultsError(f"curves on different axes {sorted(axis)}: draw time and step curves on separate axes")
    axis = axis.pop()
    if time_unit == "auto":
        time_unit = time_unit_for(max((float(np.nanmax(c.x)) for c in curves if np.isfinite(c.x).any()), default=0.0))
    for i, c in enumerate(curves):
        xs = c.x * TIME_AXIS[time_unit] if axis == "hours" else c.x
        ok = np.isfinite(xs) & np.isfinite(c.mean)
        if not ok.any():
            raise ResultsError(f"curve {c.label}: nothing to plot against {X_AXES[axis]}")
        color, part = f"C{i}", ok & c.partial
        ax.plot(xs[ok], c.mean[ok], marker="o", ms=3, color=color, label=curve_label(c))
        if part.any():
            ax.plot(xs[part], c.mean[part], "o", ms=5, mfc="white", mec=color, mew=1.2, linestyle="none")
        band = ok & np.isfinite(c.half_width)
        if band.any():
            ax.fill_between(xs[band], c.lo[band], c.hi[band], color=color, alpha=0.2, linewidth=0)
    timed = axis == "hours"
    ax.set_xlabel(axis_label(X_AXES[axis], time_unit if timed else None, time_label if timed else None,
                             interpolated=not all(c.exact for c in curves)), fontsize=9)
    ax.set_ylabel(metric_label(metric))
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
    out = check_out_dir(out_dir)
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
