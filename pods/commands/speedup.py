"""Speed-up table: how much sooner each method reaches the baseline's peak (wall-clock).

    pods speedup --results paper-data/results --baseline Instruct-GSM8K-512-16-16 --method Instruct-GSM8K-512-64-16
    pods speedup ... --dataset gsm8k --metric ans_acc --hours-per-checkpoint 0.5 --max-hours 6 [--json]

A SETTING is a `<prefix>` of `<prefix>-Run<k>.json` files in --results, a run directory of ours
(`checkpoints/<run>`, a train.py run_name, or a folder of such run directories = seeds), a quoted glob
naming several (`'*-pods-*n64-m16*'`), or `<stem>:<pattern>` for the multi-GPU CSVs (`h100s:n32-m32-ga16`). Definitions: pods/analysis/speedup.py. With --json it prints
a JSON list, one object per method, keys as in `pods.analysis.speedup.KEYS` (null = not reached, or
no interval: see the *_runs keys). The table shows times in seconds, minutes or hours to suit the
runs (--time-unit), "n/a (1 run)" where a setting has one run, and next to an interval that starts
at 0 the share of bootstrap resamples in which the method never reaches the level.
"""

from __future__ import annotations

import argparse
import json

from pods.analysis.csvruns import TIME_UNITS
from pods.analysis.loaders import IRREGULAR_POLICIES, RUN_FILE
from pods.analysis.settings import hours_arg
from pods.cli import run_script
from pods.commands import parser

UNITS = {"seconds": ("s", 3600.0), "minutes": ("min", 60.0), "hours": ("h", 1.0)}  # symbol, factor from hours
TIME_KEYS = ("baseline_peak_hours", "method_peak_hours", "method_hours_to_baseline_peak")


def parse_args(argv=None, prog: str = "speedup.py") -> argparse.Namespace:
    p = parser(prog, __doc__, epilog="SETTING: a file prefix in --results, a run directory, a folder of seeds, a "
               "quoted glob, or <stem>:<pattern> (CSVs). Definitions: pods/analysis/speedup.py; docs/evaluation.md.")
    p.add_argument("--results", default=".", metavar="DIR",
                   help="folder with <prefix>-Run<k>.json files, CSVs or run directories")
    p.add_argument("--baseline", required=True, metavar="SETTING", help="the baseline")
    p.add_argument("--method", action="append", required=True, metavar="SETTING", help="a method (repeatable)")
    p.add_argument("--dataset", default="gsm8k", help="evaluation dataset (gsm8k, math500, amc23)")
    p.add_argument("--metric", default=None, help="ans_acc (default), for_acc, both_acc, lengths; paper_ans_acc, "
                   "paper_for_acc, paper_both_acc: the paper's grader (the default beside the paper's files)")
    p.add_argument("--hours-per-checkpoint", type=hours_arg, default=0.5, metavar="H",
                   help="paper files: checkpoint i is at (i+1) x H (Llama: 1/6)")
    p.add_argument("--max-hours", type=hours_arg, default=None, metavar="H", help="ignore checkpoints after H")
    p.add_argument("--base", default=None, metavar="JSON", help="base-model results: a t = 0 point for every run")
    p.add_argument("--results-file", default=RUN_FILE, metavar="NAME", help="results file in our run directories")
    p.add_argument("--irregular", default="align", choices=sorted(IRREGULAR_POLICIES),
                   help="runs whose checkpoint count differs from the setting's usual")
    p.add_argument("--csv-time-unit", default="seconds", choices=sorted(TIME_UNITS),
                   help="unit of eval/time in the multi-GPU CSVs")
    p.add_argument("--bootstrap", type=int, default=2000, metavar="N", help="bootstrap resamples (0: no intervals)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--time-unit", default="auto", choices=["auto", *UNITS], help="unit of the table's times")
    p.add_argument("--json", action="store_true", help="a JSON list instead of a table (times in hours)")
    return p.parse_args(argv)


def pick_unit(rows: list[dict]) -> str:
    """The time unit that suits the runs (pods.analysis.figures.time_unit_for of the longest time)."""
    from pods.analysis.figures import time_unit_for  # matplotlib: once the arguments are read

    return time_unit_for(max((r[k] for r in rows for k in TIME_KEYS if r[k] is not None), default=0.0))


def _fmt(v, digits=3) -> str:
    return "not reached" if v is None else f"{v:.{digits}f}"


def _time(v, unit: str) -> str:
    return "not reached" if v is None else f"{v * UNITS[unit][1]:.2f} {UNITS[unit][0]}"


def _runs(text: str, k: int | None, total: int) -> str:
    """`text`, plus "(k of N runs)" when the mean at that point averages fewer than all runs."""
    return text if k is None or k >= total else f"{text} ({k} of {total} runs)"


def _ci(r: dict, kind: str) -> str:
    """The interval, or why there is none; an interval from 0 says how many resamples never reach."""
    ci = r[f"ci95_{kind}"]
    if r[f"speedup_{kind}"] is None:
        return "-"  # nothing to put an interval around
    if ci is None:
        runs = min(r["baseline_runs"], r["method_runs"])
        return f"n/a ({runs} run)" if runs < 2 else "n/a (no bootstrap)"
    text = "[" + ", ".join(f"{x:.2f}" for x in ci) + "]"
    if ci[0] == 0:
        text += f" ({r[f'never_reached_{kind}']:.0%} of resamples never reach)"
    return text


def table(rows: list[dict], unit: str = "auto") -> str:
    """Human-readable table, one line per method; times in `unit` (auto: `pick_unit`)."""
    unit = pick_unit(rows) if unit == "auto" else unit
    head = ["method (runs)", "peak at", f"{UNITS[unit][0]} to base peak", "exact", "exact interp", "ci95", "99%",
            "99% interp", "ci95"]
    r0 = rows[0]
    lines = [f"baseline: {r0['baseline']} ({r0['baseline_runs']} runs)  peak {_fmt(r0['baseline_peak'])} at "
             + _runs(_time(r0["baseline_peak_hours"], unit), r0["baseline_peak_runs"], r0["baseline_runs"]),
             " | ".join(head)]
    for r in rows:
        lines.append(" | ".join([
            f"{r['method']} ({r['method_runs']})", f"{_fmt(r['method_peak'])} at {_time(r['method_peak_hours'], unit)}",
            _runs(_time(r["method_hours_to_baseline_peak"], unit), r["method_reach_runs"], r["method_runs"]),
            _fmt(r["speedup_exact"], 2),
            _fmt(r["speedup_exact_interp"], 2), _ci(r, "exact"), _fmt(r["speedup_99"], 2),
            _fmt(r["speedup_99_interp"], 2), _ci(r, "99")]))
    return "\n".join(lines)


def compute(args: argparse.Namespace) -> list[dict]:
    from pods.analysis.curves import setting_curve  # numpy, scipy: once the arguments are read
    from pods.analysis.loaders import comparable_metric
    from pods.analysis.settings import base_run, load_setting
    from pods.analysis.speedup import speedup

    base = base_run(args.base)
    load = lambda s: load_setting(s, args.results, hours_per_checkpoint=args.hours_per_checkpoint,  # noqa: E731
                                  irregular=args.irregular, csv_time_unit=args.csv_time_unit,
                                  results_file=args.results_file)
    runs = {s: load(s) for s in [args.baseline, *args.method]}
    metric = comparable_metric(args.metric, [r for rs in runs.values() for r in rs] + [base] * (base is not None))
    b = setting_curve(runs[args.baseline], args.dataset, metric, base=base, label=args.baseline)
    return [speedup(b, setting_curve(runs[m], args.dataset, metric, base=base, label=m),
                    max_hours=args.max_hours, n_boot=args.bootstrap, seed=args.seed) for m in args.method]


def run(argv=None, prog: str = "speedup.py") -> int:
    args = parse_args(argv, prog)
    rows = compute(args)
    print(json.dumps(rows, indent=2) if args.json else table(rows, args.time_unit))
    return 0


def main(argv=None, prog: str = "speedup.py") -> int:
    """`run` with a problem of the results or arguments as one message and exit code 2 (pods.cli)."""
    return run_script(lambda a: run(a, prog), argv, program=prog)

