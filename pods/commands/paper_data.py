"""The paper's published results and real completions, with one command.

    uv run python scripts/paper_data.py                    # git clone the authors' repository -> paper-data/
    uv run python scripts/paper_data.py --from ~/src/pods  # or use a clone / results folder you already have

Writes
  paper-data/results/            the authors' results folder as published (per-run JSON, base-model JSON,
                                 the 8-GPU CSVs): pods speedup, pods plot and benchmarks/paper_steps.py find it
                                 (or pass `--results paper-data/results`);
  paper-data/examples.jsonl.gz   every example completion stored in those files (their `examples` lists,
                                 22,885 of them), one JSON per line: dataset, model (qwen | llama), question
                                 (the user turn of the prompt, cut to 600 characters), answer, completion,
                                 correct and format_correct (the authors' grader's verdicts): the input of
                                 benchmarks/grader_agreement.py and benchmarks/bench_rewards.py.
Source: https://github.com/YixuanEvenXu/pods (pods/analysis/paper_data.py does the work).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pods.analysis.paper_data import PaperDataError, build


def main(argv=None, prog: str = "paper_data.py") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    p.add_argument("--dest", type=Path, default=Path("paper-data"), help="output folder (default paper-data/)")
    p.add_argument("--from", dest="source", type=Path, help="an existing clone of the authors' repo, or its results/")
    args = p.parse_args(argv)
    try:
        build(args.dest, args.source)
    except PaperDataError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


