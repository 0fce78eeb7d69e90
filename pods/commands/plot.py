"""Figures (PNG + PDF) from evaluation results: the paper's, curves of any runs, seconds per step.

    pods plot curves --results checkpoints --setting demo-grpo --setting demo-pods --out figures/ --name demo
    pods plot paper --results paper-data/results --out figures/     # every paper figure (or --only gsm8k ...)
    pods plot step-time --results checkpoints --setting demo-grpo --setting demo-pods --out figures/
    pods plot list                                                  # names of the paper figures

curves: mean over runs with a 95% band (clipped to the metric's range), against time and steps; step axes align
runs by their real step numbers, hollow points have fewer than all runs. step-time: seconds per step bars from our
runs' metrics.jsonl (phase timers stacked). SETTING: see `pods speedup --help` (file prefix, run directory /
run_name / folder of seeds, a quoted glob of run directories, or `<stem>:<pattern>`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pods.analysis.csvruns import TIME_UNITS
from pods.analysis.curves import AXES
from pods.analysis.loaders import IRREGULAR_POLICIES, RUN_FILE
from pods.analysis.settings import hours_arg
from pods.cli import run_script
from pods.commands import parser
from pods.errors import ConfigError

SETTING = "SETTING: see `pods speedup --help`."


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", default=".", metavar="DIR", help="folder with results files / run directories")
    p.add_argument("--out", default="figures", metavar="DIR", help="output folder for <name>.png and <name>.pdf")
    p.add_argument("--irregular", default="align", choices=sorted(IRREGULAR_POLICIES),
                   help="runs whose checkpoint count differs from their setting's usual count")
    p.add_argument("--csv-time-unit", default="seconds", choices=sorted(TIME_UNITS),
                   help="unit of eval/time in the multi-GPU CSVs")


def parse_args(argv=None, prog: str = "plot.py") -> argparse.Namespace:
    ap = parser(prog, __doc__, epilog="`<command> --help`: its options. " + SETTING)
    sub = ap.add_subparsers(dest="command", required=True, metavar="{curves,paper,step-time,list}")
    p = sub.add_parser("paper", help="the paper's figures from its results folder", doc="The paper's figures from "
                       "its results folder.\n\n    pods plot paper --results paper-data/results --out figures/")
    _common(p)
    p.add_argument("--only", action="append", metavar="FIGURE",
                   help="draw only this figure (repeatable; `pods plot list` names them)")
    p = sub.add_parser("curves", help="metric against hours / steps for any settings", epilog=SETTING,
                       doc="A metric against hours and steps for any settings, with a 95% band over runs.\n\n"
                           "    pods plot curves --results checkpoints --setting demo-grpo --setting demo-pods")
    _common(p)
    p.add_argument("--setting", action="append", required=True, help="SETTING (repeatable)")
    p.add_argument("--label", action="append", help="legend label per --setting (default: the setting)")
    p.add_argument("--dataset", default="gsm8k")
    p.add_argument("--metric", default=None, help="ans_acc (default), for_acc, both_acc, lengths; paper_ans_acc, "
                   "paper_for_acc, paper_both_acc: the paper's grader (the default beside the paper's files)")
    p.add_argument("--x", default="both", choices=sorted(AXES) + ["both"], help="x axis: time, steps or both")
    p.add_argument("--time-axis", default="auto", choices=["auto", *sorted(TIME_UNITS)],
                   help="unit shown on the time axis (auto: to suit the runs)")
    p.add_argument("--hours-per-checkpoint", type=hours_arg, default=0.5, metavar="H",
                   help="paper files' checkpoint interval")
    p.add_argument("--max-hours", type=hours_arg, default=None, metavar="H")
    p.add_argument("--base", default=None, metavar="JSON", help="base-model results for a t = 0 point")
    p.add_argument("--results-file", default=RUN_FILE, metavar="NAME", help="results file in our run directories")
    p.add_argument("--title", default="")
    p.add_argument("--name", default="curves", help="output file name (without extension)")
    p = sub.add_parser("step-time", help="seconds per step bars (run dirs: metrics.jsonl; paper: from steps)",
                       epilog=SETTING, doc="Seconds per step bars: our runs' metrics.jsonl (phases stacked), the "
                       "paper's files from their steps.\n\n"
                       "    pods plot step-time --results checkpoints --setting demo-grpo --setting demo-pods")
    _common(p)
    p.add_argument("--setting", action="append", required=True, help="SETTING (repeatable)")
    p.add_argument("--label", action="append", help="bar label per --setting")
    p.add_argument("--hours-per-checkpoint", type=hours_arg, default=0.5, metavar="H",
                   help="paper files' checkpoint interval")
    p.add_argument("--max-hours", type=hours_arg, default=None, metavar="H",
                   help="paper files / CSVs: use the last checkpoint by then")
    p.add_argument("--name", default="step-time")
    sub.add_parser("list", help="print the paper figure names", doc="The names of the paper's figures.\n\n"
                   "    pods plot list")
    return ap.parse_args(argv)


def _labels(args) -> list[str]:
    if args.label and len(args.label) != len(args.setting):
        raise ConfigError(f"{len(args.label)} --label for {len(args.setting)} --setting; give one per setting or none")
    return args.label or args.setting


def build_curves(args) -> dict[str, list]:
    """{x: one curve per --setting}: time axes on a time grid (clipped to --max-hours), step axes with
    the runs aligned by their own step numbers (checkpoints up to --max-hours)."""
    from pods.analysis.curves import setting_curve, within_hours
    from pods.analysis.loaders import comparable_metric
    from pods.analysis.settings import base_run, load_setting

    base = base_run(args.base)
    xs = ["hours", "steps"] if args.x == "both" else [args.x]
    curves = {x: [] for x in xs}
    loaded = [(lab, load_setting(s, args.results, hours_per_checkpoint=args.hours_per_checkpoint,
                                 irregular=args.irregular, csv_time_unit=args.csv_time_unit,
                                 results_file=args.results_file)) for s, lab in zip(args.setting, _labels(args))]
    args.metric = comparable_metric(args.metric, [r for _, runs in loaded for r in runs] + [base] * (base is not None))
    for lab, runs in loaded:
        for x in xs:
            kept = [within_hours(r, args.max_hours) for r in runs] if x == "steps" else runs
            c = setting_curve(kept, args.dataset, args.metric, x=x, base=base, label=lab)
            curves[x].append(c.clip(args.max_hours) if x == "hours" else c)
    return curves


def cmd_curves(args) -> list[Path]:
    from pods.analysis.figures import draw_curves, metric_label, new_figure, save  # matplotlib: when drawing

    curves = build_curves(args)
    fig, axes = new_figure(len(curves))
    for ax, x in zip(axes, curves):
        draw_curves(ax, curves[x], metric=args.metric, title=args.title or f"{args.dataset}: {metric_label(args.metric)}",
                    time_unit=args.time_axis)
    return save(fig, args.out, args.name)


def cmd_step_time(args) -> list[Path]:
    import numpy as np

    from pods.analysis.figures import draw_bars, new_figure, save
    from pods.analysis.settings import find_run_dirs, load_setting
    from pods.analysis.steptime import METRICS_FILE, paper_step_seconds, phases, run_step_seconds

    values, stacks = [], []
    for s in args.setting:
        dirs = find_run_dirs(s, args.results, METRICS_FILE)
        if dirs:  # our run directories: metrics.jsonl
            per_run = [run_step_seconds(d) for d in dirs]
            values.append(np.array([d["total"] for d in per_run]))
            names = sorted({k for d in per_run for k in phases(d)})
            stacks.append({k: float(np.mean([d.get(k, 0.0) for d in per_run])) for k in names})
        else:  # paper files: hours at the last checkpoint / its step
            runs = load_setting(s, args.results, hours_per_checkpoint=args.hours_per_checkpoint,
                                irregular=args.irregular, csv_time_unit=args.csv_time_unit)
            values.append(np.array([paper_step_seconds(r, args.max_hours) for r in runs]))
            stacks.append({})
    fig, axes = new_figure(1, width=max(5.0, 0.8 * len(values) + 2))
    draw_bars(axes[0], _labels(args), values, phases=stacks if any(stacks) else None, title="seconds per step")
    return save(fig, args.out, args.name)


def run(argv=None, prog: str = "plot.py") -> int:
    args = parse_args(argv, prog)
    from pods.analysis.figures import check_out_dir
    from pods.analysis.paper import FIGURES, draw_figure

    unknown = sorted(set(getattr(args, "only", None) or ()) - set(FIGURES))
    if unknown:
        raise ConfigError(f"--only {' '.join(unknown)}: no such paper figure; the figures: "
                          + ", ".join(sorted(FIGURES)))
    if args.command != "list":
        check_out_dir(args.out)  # before anything is read or drawn
    if args.command == "list":
        print("\n".join(sorted(FIGURES)))
        return 0
    if args.command == "paper":
        paths = []
        for name in args.only or FIGURES:
            paths += draw_figure(name, args.results, args.out, irregular=args.irregular,
                                 csv_time_unit=args.csv_time_unit)
    elif args.command == "curves":
        paths = cmd_curves(args)
    else:
        paths = cmd_step_time(args)
    for p in paths:
        print(p)
    return 0


def main(argv=None, prog: str = "plot.py") -> int:
    """`run` with a problem of the results or arguments as one message and exit code 2 (pods.cli)."""
    return run_script(lambda a: run(a, prog), argv, program=prog)

