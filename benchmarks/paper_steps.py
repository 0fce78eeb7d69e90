#!/usr/bin/env python
"""Optimizer steps each arm of the paper's single-GPU runs reached in its time budget, and how much of
that a warm-up of `--warmup-ratio` of one epoch (this suite's old default, 1 %) would have taken.

    uv run python benchmarks/paper_steps.py [--results paper-data/results] [--warmup-ratio 0.01]

Reads the authors' `<setting>-Run<k>.json` files: their checkpoint names carry the step, and the
authors took one optimizer step per training step (one prompt, gradient accumulation 1), so the
last checkpoint's step is the optimizer steps of the run. Checkpoints are every 30 min (Llama:
10 min), so the first checkpoint's step / that interval is the early step rate. Warm-up steps =
ceil(ratio x training prompts per epoch) with one prompt per step (GSM8K 7,473; MATH 7,500 before
the length filter). Prints a markdown table of medians over the runs (min-max in brackets).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from pods.errors import ResultsError

RUN = re.compile(r"^(Instruct-.+)-Run(\d+)\.json$")
CKPT = re.compile(r"^checkpoint-(\d+)$")
EPOCH_PROMPTS = {"GSM8K": 7473, "Llama": 7473, "MATH-NF": 7500}  # training prompts of one epoch
MINUTES_PER_CHECKPOINT = {"Llama": 10}  # others: 30


def task_of(setting: str) -> str:
    return setting.split("-")[1] if not setting.startswith("Instruct-MATH-NF") else "MATH-NF"


def load_steps(results: Path) -> dict[str, list[list[int]]]:
    """{setting: [sorted checkpoint steps of each run]} of the single-GPU result files."""
    out = defaultdict(list)
    for path in sorted(results.glob("Instruct-*-Run*.json")):
        match = RUN.match(path.name)
        if not match:
            continue
        try:
            keys = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError) as err:  # JSON, UTF-8 or read errors
            raise ResultsError(f"{path}: cannot be read as a results file ({err}); fix or remove it") from None
        if not isinstance(keys, dict):
            raise ResultsError(f"{path}: holds a JSON {type(keys).__name__}, not an object of checkpoints")
        steps = sorted(int(m.group(1)) for key in keys if (m := CKPT.match(key)))
        if steps:
            out[match.group(1)].append(steps)
    return dict(out)


def summarise(setting: str, runs: list[list[int]], warmup_ratio: float) -> dict:
    task = task_of(setting)
    minutes = MINUTES_PER_CHECKPOINT.get(task, 30)
    finals, firsts = [r[-1] for r in runs], [r[0] for r in runs]
    warmup = math.ceil(warmup_ratio * EPOCH_PROMPTS[task])
    rate = statistics.median(firsts) / minutes  # steps per minute in the first checkpoint interval
    return {"setting": setting, "runs": len(runs), "hours": statistics.median(len(r) for r in runs) * minutes / 60,
            "final": statistics.median(finals), "final_range": (min(finals), max(finals)),
            "first": statistics.median(firsts), "checkpoint_minutes": minutes, "warmup_steps": warmup,
            "warmup_share": warmup / statistics.median(finals), "warmup_minutes": warmup / rate}


def table(rows: list[dict], warmup_ratio: float) -> str:
    head = (f"| setting | runs | budget | optimizer steps (median, min-max) | steps in the first checkpoint "
            f"interval | {warmup_ratio:g}-epoch warm-up: steps | share of the run | minutes |")
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        lines.append(f"| {r['setting']} | {r['runs']} | {r['hours']:g} h | {r['final']:g} ({r['final_range'][0]}-"
                     f"{r['final_range'][1]}) | {r['first']:g} in {r['checkpoint_minutes']} min | {r['warmup_steps']} | "
                     f"{100 * r['warmup_share']:.1f} % | {r['warmup_minutes']:.0f} |")
    return "\n".join(lines)


def run(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", default=None, help="folder with <setting>-Run<k>.json files "
                   "(default: paper-data/results from scripts/paper_data.py)")
    p.add_argument("--warmup-ratio", type=float, default=0.01, help="warm-up as a fraction of one epoch")
    a = p.parse_args(argv)
    from pods.analysis.paper_data import GET_IT, locate_results

    results = Path(a.results) if a.results else (locate_results() or Path("paper-data/results"))
    runs = load_steps(results) if results.is_dir() else {}
    if not runs:
        print(f"error: no Instruct-*-Run<k>.json files in {results}; {GET_IT}", file=sys.stderr)
        return 2
    print(table([summarise(s, r, a.warmup_ratio) for s, r in sorted(runs.items())], a.warmup_ratio))
    return 0


def main(argv=None) -> int:
    """`run` with a results problem as one message and exit code 2 (pods.cli)."""
    from pods.cli import run_script

    return run_script(run, argv, program="paper_steps.py")


if __name__ == "__main__":
    sys.exit(main())
