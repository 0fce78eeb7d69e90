"""The paper's figures as data: which settings, dataset, metric and time grid each panel shows.

`FIGURES` maps a figure name to its panels; `draw_figure(name, results, out)` loads the settings
from the paper-results folder and writes `<out>/<name>.png|pdf`. Curve panels are drawn against
hours and against steps; `step-time` draws seconds-per-step bars derived from checkpoint steps (the
8-GPU runs: optimizer steps decoded from the tracker's rows, and the paper's own bars, rows / ga, labelled
as the paper's).

Use: `for name in FIGURES: draw_figure(name, "paper-data/results", "figures")`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pods.analysis.curves import setting_curve, within_hours
from pods.analysis.figures import draw_bars, draw_curves, new_figure, save
from pods.analysis.settings import base_run, load_setting
from pods.analysis.steptime import paper_convention_step_seconds, paper_step_seconds
from pods.errors import ResultsError

Q = "Instruct-GSM8K-512-"


@dataclass
class Panel:
    """One axes: settings (spec, label) of one dataset/metric, against `x` (hours or steps)."""

    settings: list[tuple[str, str]]
    dataset: str = "gsm8k"
    metric: str = "ans_acc"
    hours_per_checkpoint: float = 0.5
    max_hours: float | None = None
    base: str | None = "base-qwen.json"  # base-model file in the results folder (t = 0), or None
    title: str = ""
    xs: tuple[str, ...] = ("hours", "steps")
    time_unit: str = "hours"  # unit shown on the time axis
    paper_bars: bool = False  # step-time: the paper's convention (tracker rows / ga) instead of optimizer steps


@dataclass
class Figure:
    panels: list[Panel]
    kind: str = "curves"  # "curves" | "step-time"


GRPO_PODS = [(Q + "16-16", "GRPO (16-16)"), (Q + "64-16", "PODS (64-16)")]
MATH = [("Instruct-MATH-NF-512-8-8", "GRPO (8-8)"), ("Instruct-MATH-NF-512-32-8", "PODS (32-8)")]
LLAMA = [("Instruct-Llama-512-16-16-0.04", "GRPO (16-16)"), ("Instruct-Llama-512-64-16-0.04", "PODS (64-16)")]
LLAMA_GRID = dict(hours_per_checkpoint=1 / 6, max_hours=1.5, base="base-llama.json")
MULTI = [("{gpu}:n32-m32-ga16", "GRPO-GA (n32-m32-ga16)"), ("{gpu}:n128-m32-ga4", "PODS (n128-m32-ga4)")]
TIME_ONLY = ("hours",)
MULTI_GRID = dict(base=None, xs=TIME_ONLY, max_hours=0.5, time_unit="minutes")  # the authors plot 0-30 min
EIGHT_GPU = [("h100s:n32-m32-ga16", "H100 GRPO-GA"), ("h100s:n128-m32-ga4", "H100 PODS"),
             ("a100s:n32-m32-ga16", "A100 GRPO-GA"), ("a100s:n128-m32-ga4", "A100 PODS")]

FIGURES: dict[str, Figure] = {
    "gsm8k": Figure([Panel(GRPO_PODS, title="GSM8K: GRPO vs PODS, Qwen2.5-3B")]),
    "n-scaling": Figure([Panel([(Q + f"{n}-16", f"n={n}, m=16") for n in (16, 32, 64, 128, 256)],
                               title="GSM8K: scaling n (m = 16)")]),
    "m-scaling": Figure([Panel([(Q + f"64-{m}", f"n=64, m={m}") for m in (16, 8, 4, 2)],
                               title="GSM8K: scaling m (n = 64)")]),
    "rules": Figure([Panel([(Q + "64-16", "max-variance"), ("Instruct-GSM8K-MaxR-512-64-16", "max-reward"),
                            ("Instruct-GSM8K-Rand-512-64-16", "random")], title="GSM8K: down-sampling rules (64-16)")]),
    "math": Figure([Panel(MATH, dataset="math500", title="MATH (eval math500): GRPO vs PODS")]),
    "llama": Figure([Panel(LLAMA, metric="both_acc", title="Llama-3.2-3B GSM8K: GRPO vs PODS", **LLAMA_GRID)]),
    "lengths": Figure([Panel(GRPO_PODS, metric="lengths", title="GSM8K", xs=TIME_ONLY),
                       Panel(MATH, dataset="math500", metric="lengths", title="MATH (math500)", xs=TIME_ONLY),
                       Panel(LLAMA, metric="lengths", title="Llama GSM8K", xs=TIME_ONLY, **LLAMA_GRID)]),
    "step-time": Figure([Panel([(Q + f"{n}-16", f"{n}-16") for n in (16, 32, 64, 128, 256)]
                               + [(Q + f"64-{m}", f"64-{m}") for m in (8, 4, 2)]
                               + [("Instruct-GSM8K-MaxR-512-64-16", "MaxR 64-16"),
                                  ("Instruct-GSM8K-Rand-512-64-16", "Rand 64-16")]
                               + [(MATH[0][0], "MATH 8-8"), (MATH[1][0], "MATH 32-8")],
                               title="seconds per step (single L40S, from checkpoint steps)"),
                         Panel([(LLAMA[0][0], "Llama 16-16"), (LLAMA[1][0], "Llama 64-16")], title="Llama",
                               **LLAMA_GRID),
                         Panel(EIGHT_GPU, title="8 GPUs: seconds per optimizer step (first 30 min)", **MULTI_GRID),
                         Panel(EIGHT_GPU, title="8 GPUs: the paper's bars, tracker rows / ga (not steps)",
                               paper_bars=True, **MULTI_GRID)],
                        kind="step-time"),
    "multi-gpu": Figure([Panel([(s.format(gpu="h100s"), lab) for s, lab in MULTI], title="8 x H100, Qwen2.5-3B, GSM8K",
                               **MULTI_GRID),
                         Panel([(s.format(gpu="a100s"), lab) for s, lab in MULTI], title="8 x A100, Qwen2.5-7B, GSM8K",
                               **MULTI_GRID)]),
    "multi-gpu-lengths": Figure([Panel([(s.format(gpu="h100s"), lab) for s, lab in MULTI], metric="lengths",
                                       title="8 x H100: completion length", **MULTI_GRID),
                                 Panel([(s.format(gpu="a100s"), lab) for s, lab in MULTI], metric="lengths",
                                       title="8 x A100: completion length", **MULTI_GRID)]),
}


def _curves(p: Panel, results: Path, irregular: str, csv_time_unit: str) -> dict[str, list]:
    """{x: one curve per setting} for each axis the panel is drawn against (checkpoints up to max_hours)."""
    base = base_run(results / p.base) if p.base and (results / p.base).is_file() else None
    out = {x: [] for x in p.xs}
    for spec, label in p.settings:
        runs = load_setting(spec, results, hours_per_checkpoint=p.hours_per_checkpoint, irregular=irregular,
                            csv_time_unit=csv_time_unit)
        for x in p.xs:
            kept = [within_hours(r, p.max_hours) for r in runs] if x == "steps" else runs
            c = setting_curve(kept, p.dataset, p.metric, x=x, base=base, label=label)
            out[x].append(c.clip(p.max_hours) if x == "hours" else c)
    return out


def draw_figure(name: str, results: str | Path, out: str | Path, *, irregular: str = "align",
                csv_time_unit: str = "seconds") -> list[Path]:
    """Draw one paper figure from the results folder; returns the written PNG and PDF paths."""
    if name not in FIGURES:
        raise ResultsError(f"unknown figure {name!r}; valid: {sorted(FIGURES)}")
    fig_spec, results = FIGURES[name], Path(results)
    if fig_spec.kind == "step-time":
        fig, axes = new_figure(len(fig_spec.panels), width=6.0)
        for ax, p in zip(axes, fig_spec.panels):
            seconds = paper_convention_step_seconds if p.paper_bars else paper_step_seconds
            vals = [np.array([seconds(r, p.max_hours) for r in load_setting(
                s, results, hours_per_checkpoint=p.hours_per_checkpoint, irregular=irregular,
                csv_time_unit=csv_time_unit)]) for s, _ in p.settings]
            draw_bars(ax, [lab for _, lab in p.settings], vals, title=p.title)
        return save(fig, out, name)
    n_axes = sum(len(p.xs) for p in fig_spec.panels)
    fig, axes = new_figure(n_axes)
    i = 0
    for p in fig_spec.panels:
        curves = _curves(p, results, irregular, csv_time_unit)
        for x in p.xs:
            draw_curves(axes[i], curves[x], metric=p.metric, title=p.title, time_unit=p.time_unit)
            i += 1
    return save(fig, out, name)
