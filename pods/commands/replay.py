"""Offline replay: what would another rollout or prompt rule have done with what a run recorded in its ledger? (CPU)

    pods replay checkpoints/<run> --rule cppo [--rule greso ...] [--m 8] [--json]
    pods replay 'checkpoints/demo-*' --rule all --rule all_prompt

A run is a run directory (its ledger/ is read) or a quoted glob of them; --rule all: every rollout rule, all_prompt:
every prompt rule. Per (run, rule) one row; a legend explains the columns (pods.analysis.replay_table), notes say
which rules tie, which had nothing to act on, which steps were not recorded and which files were not counted.
Exit 2 with one message for an unknown rule or one of another hook kind, an impossible m, a missing, damaged,
foreign or truncated ledger, or one of another format version; nothing is written. docs/ledger.md.
"""

from __future__ import annotations

import argparse
import json
import sys

from pods.analysis.replay_table import COLUMNS, legend, notes, report
from pods.cli import run_script
from pods.commands import parser


def parse_args(argv=None, prog: str = "replay.py") -> argparse.Namespace:
    p = parser(prog, __doc__, epilog="\n".join(legend(kind) for kind in COLUMNS))
    p.add_argument("runs", nargs="+", help="run directory (checkpoints/<run>) or a quoted glob of them")
    p.add_argument("--rule", action="append", required=True, help="rollout or prompt rule to replay (repeatable; all: every rollout rule, all_prompt: every prompt rule)")
    p.add_argument("--m", type=int, default=None, help="rollouts kept per group (default: the run's m)")
    p.add_argument("--json", action="store_true", help="print a JSON list (one object per run and rule; notes on stderr)")
    return p.parse_args(argv)


def run(argv=None, prog: str = "replay.py") -> int:
    a = parse_args(argv, prog)
    from pods.analysis.replay import replay, run_dirs  # torch: once the arguments are read

    paths = [p for spec in a.runs for p in run_dirs(spec)]
    rows = replay(paths, a.rule, m=a.m)
    if a.json:
        print(json.dumps(rows, indent=1))
        for line in notes(rows):
            print(line, file=sys.stderr)
    else:
        print(report(rows))
    return 0


def main(argv=None, prog: str = "replay.py") -> int:
    """`run` with a problem of the ledger or arguments as one message and exit code 2 (pods.cli)."""
    return run_script(lambda a: run(a, prog), argv, program=prog)
