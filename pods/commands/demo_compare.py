"""The CPU demo's per-step comparison: GRPO, PODS, the random control and both with dynamic sampling, 10 seeds.

    uv run pods demo-compare                          # 5 arms x 10 seeds x 500 steps, evaluated every 25 (hours)
    uv run pods demo-compare --steps 100 --seeds 0 1  # a shorter version
    uv run pods demo-compare --report-only            # redraw / re-report finished runs

Finished trainings and evaluations are skipped, interrupted ones resume. Everything lands in --out: runs,
demo_compare.png/.pdf, summary.json, timings.json. The study's logic: pods.studies.demo_compare; docs/demo.md.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pods.cli import out_dir, run_script
from pods.commands import parser
from pods.errors import ConfigError

CHECKOUT = Path(__file__).resolve().parents[2]  # a clone: the demo's relative paths (warm-start cache) live here


def parse(argv, prog: str) -> argparse.Namespace:
    p = parser(prog, __doc__, epilog="docs/demo.md: the study and its results.")
    p.add_argument("--steps", type=int, default=500, help="training steps per run")
    p.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    p.add_argument("--methods", nargs="+", default=None, metavar="METHOD",
                   help="methods by name (default: all five: GRPO, PODS, the random control, each of the first two "
                        "with dynamic sampling; pods.studies.demo_compare.METHODS)")
    p.add_argument("--eval-every", type=int, default=25, help="steps between checkpoints (evaluated)")
    p.add_argument("--eval-size", type=int, default=2000, help="held-out problems per evaluation")
    p.add_argument("--draws", type=int, default=2, help="samples per problem for sampled pass@1")
    p.add_argument("--parallel", type=int, default=2, help="runs at once (one torch thread each)")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples of seeds (0: no intervals)")
    p.add_argument("--out", type=out_dir, default=Path("checkpoints") / "demo-compare", metavar="DIR")
    p.add_argument("--report-only", action="store_true", help="skip training/evaluation; redraw and report")
    p.add_argument("--evaluate-run", type=Path, help=argparse.SUPPRESS)  # internal: evaluate one run dir
    args = p.parse_args(argv)
    for name in ("steps", "eval_every", "eval_size", "draws", "parallel"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.bootstrap < 0:
        p.error(f"--bootstrap must be at least 0, got {args.bootstrap}")
    if args.steps % args.eval_every:
        p.error("--steps must be a multiple of --eval-every")
    return args


def run(argv=None, prog: str = "pods demo-compare") -> int:
    args = parse(argv, prog)
    from pods.studies.demo_compare import METHODS, evaluate_both, report, train_all

    unknown = [m for m in args.methods or () if m not in METHODS]
    if unknown:
        raise ConfigError(f"--methods {' '.join(unknown)}: no such method; the methods: {', '.join(METHODS)}")
    args.methods = args.methods or list(METHODS)

    if args.evaluate_run:
        evaluate_both(args, args.evaluate_run)
        return 0
    if (CHECKOUT / "train.py").is_file():
        os.chdir(CHECKOUT)  # as before the move: relative paths of the demo config are relative to the clone
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        train_all(args)
    report(args)
    print(f"\nfigure: {args.out / 'demo_compare.png'}\nsummary: {args.out / 'summary.json'}")
    return 0


def main(argv=None, prog: str = "pods demo-compare") -> int:
    """`run` with a problem (a failed run, missing results) as one message and exit code 2 (pods.cli)."""
    return run_script(lambda a: run(a, prog), argv, program=prog, interrupted="the runs in progress saved their "
                      "step; rerun the same command to continue (finished runs are skipped)")
