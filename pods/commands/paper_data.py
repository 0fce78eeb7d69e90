"""The paper's published results and real completions, with one command.

    pods paper-data                          # git clone the authors' repository -> paper-data/
    pods paper-data --from ~/src/pods        # or use a clone / results folder you already have

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

import sys
from pathlib import Path

from pods.cli import out_dir, run_script
from pods.commands import parser


def run(argv=None, prog: str = "paper_data.py") -> int:
    p = parser(prog, __doc__, epilog="Source: https://github.com/YixuanEvenXu/pods; docs/evaluation.md.")
    p.add_argument("--dest", type=out_dir, default=Path("paper-data"), metavar="DIR",
                   help="output folder (default paper-data/)")
    p.add_argument("--from", dest="source", type=Path, metavar="PATH",
                   help="an existing clone of the authors' repo, or its results/")
    args = p.parse_args(argv)
    from pods.analysis.paper_data import PaperDataError, build

    try:
        build(args.dest, args.source)
    except PaperDataError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    return 0


def main(argv=None, prog: str = "paper_data.py") -> int:
    """`run` with pipes, Ctrl-C and problems of the file system handled as every command's (pods.cli)."""
    return run_script(lambda a: run(a, prog), argv, program=prog)
