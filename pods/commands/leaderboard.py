"""A compute-matched leaderboard: every arm on the same token budget, seeds paired, intervals, the authors' layout.

    uv run python scripts/leaderboard.py --quick                   # every arm x 3 seeds, a fifth of the budget
    uv run python scripts/leaderboard.py [--tier cpu|gpu] [--arms grpo pods ...] [--seeds N] [--out DIR] [-j N]
    uv run python scripts/leaderboard.py --tier gpu --dry-run      # each arm's plan, budget, memory preflight

Each arm x seed trains (train.py, resumed when interrupted, skipped when finished) until tokens generated +
w x tokens trained reach the budget, checkpointing at the same budget points, and is evaluated on the same
held-out problems (sampled pass@1 and greedy). Then: <out>/leaderboard.md (the table), leaderboard.png/.pdf
(accuracy against budget), summary.json, results/<arm>-<metric>-Run<k>.json (the authors' layout: `pods plot`,
`pods speedup` read them). Bad input (an unknown arm or rule, a budget below one step per budget point, fewer
than 2 seeds) is one message, exit 2, before anything is written. Protocol: pods.studies.leaderboard;
statistics: pods.analysis.leaderboard; docs/leaderboard.md.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path

from pods.cli import run_script
from pods.errors import ConfigError, PodsError
from pods.io import atomic_write_json, atomic_write_text


def parse(argv, prog: str) -> argparse.Namespace:
    from pods.studies.leaderboard import ARMS, TIERS

    p = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    p.add_argument("--tier", choices=sorted(TIERS), default="cpu", help="cpu: the demo task; gpu: Qwen2.5-3B on GSM8K")
    p.add_argument("--quick", action="store_true", help="a first look: a fifth of the budget, 4 points, 3 seeds")
    p.add_argument("--arms", nargs="+", default=list(ARMS), metavar="ARM",
                   help=f"arms ({', '.join(ARMS)}) or NAME:key=value ... (default: all)")
    p.add_argument("--seeds", type=int, default=None, help="seeds per arm, 0..N-1 (default: the tier's; at least 2)")
    p.add_argument("--budget", type=float, default=None, help="tokens generated + w x tokens trained per run")
    p.add_argument("--points", type=int, default=None, help="budget points (checkpoints, evaluations) per run")
    p.add_argument("--weight", type=float, default=None, metavar="W",
                   help="w, what a trained token costs in generated tokens (default: the tier's; `pods gpu-check "
                        "--config ... --random-weights` measures it on your GPU and backend)")
    p.add_argument("--out", type=Path, default=None, help="default: checkpoints/leaderboard-<tier>")
    p.add_argument("--dry-run", action="store_true", help="print each arm's plan (and memory preflight); run nothing")
    p.add_argument("-j", "--jobs", type=int, default=2, help="runs at once; the CPU threads are split between them")
    p.add_argument("--report-only", action="store_true", help="train and evaluate nothing; report finished runs")
    p.add_argument("--job", type=Path, help=argparse.SUPPRESS)  # internal: train (overrides) + evaluate one run
    p.add_argument("overrides", nargs="*", help=argparse.SUPPRESS)  # internal: the --job's train.py overrides
    return p.parse_args(argv)


def tier_of(args):
    """The tier with --quick / --seeds / --budget / --points / --weight applied; ConfigError for impossible values."""
    import dataclasses

    from pods.studies.leaderboard import TIERS

    tier = TIERS[args.tier].quick() if args.quick else TIERS[args.tier]
    given = (("seeds", args.seeds), ("budget", args.budget), ("points", args.points), ("weight", args.weight))
    changes = {k: v for k, v in given if v is not None}
    tier = dataclasses.replace(tier, **changes)
    if tier.seeds < 2:
        raise ConfigError(f"--seeds {tier.seeds}: intervals over seeds need at least 2 seeds (the protocol: 5)")
    if tier.points < 1 or not tier.budget > 0:
        raise ConfigError(f"--budget {tier.budget:g} / --points {tier.points}: both must be positive")
    if not tier.weight > 0:
        raise ConfigError(f"--weight {tier.weight:g}: w must be positive (a trained token costs something); "
                          "`pods gpu-check --config ... --random-weights` prints it for a GPU")
    if args.jobs < 1:
        raise ConfigError(f"-j {args.jobs}: at least one run at a time")
    return tier


def step_cost(cfg, weight: float) -> float:
    """The most one generation round of a step can cost: B x n completions generated, B x m trained, at most
    rl.max_completion_tokens each."""
    rl = cfg.rl
    return rl.prompts_per_step * rl.max_completion_tokens * (rl.n + weight * rl.m)


def plan(args, tier) -> tuple[dict, dict, dict]:
    """(available arms {name: Arm}, their configs, unavailable {name: why}); ConfigError for a bad arm or budget."""
    from pods.studies.leaderboard import arm_config, resolve_arms

    arms, configs, unavailable = resolve_arms(args.arms), {}, {}
    for name, arm in list(arms.items()):
        try:
            configs[name] = arm_config(tier, arm, name)
        except ConfigError as err:
            if arm.needs is None or arm.needs not in str(err):
                raise
            unavailable[name] = f"{arm.needs} is not wired in this build's loop yet: {str(err).splitlines()[-1]}"
            del arms[name]
    interval = tier.budget / tier.points
    costly = max(configs, key=lambda a: step_cost(configs[a], tier.weight))
    if interval < step_cost(configs[costly], tier.weight):
        raise ConfigError(f"budget {tier.budget:g} / {tier.points} points = {interval:g} per point, below one step of "
                          f"arm {costly} (up to {step_cost(configs[costly], tier.weight):g}): every budget point must "
                          "hold at least one step; raise --budget or lower --points")
    return arms, configs, unavailable


def print_plan(tier, arms, configs, unavailable, out: Path) -> None:
    from pods.studies.leaderboard import arm_overrides, budget_overrides

    print(f"tier {tier.name}: budget {tier.budget:g} (tokens generated + {tier.weight:g} x tokens trained) per run, "
          f"{tier.points} budget points every {tier.budget / tier.points:g}, {tier.seeds} seeds x {len(arms)} arms "
          f"= {tier.seeds * len(arms)} runs; held-out: {tier.dataset} "
          f"{tier.eval_size or 'test split'} problems, sampled ({tier.draws} draw(s)) and greedy; out: {out}")
    print(f"every run: {' '.join(tier.overrides + tuple(budget_overrides(tier)))}")
    for name, arm in arms.items():
        cfg = configs[name]
        steps = tier.budget / step_cost(cfg, tier.weight)
        print(f"  {name:14s} {arm.label:42s} {' '.join(arm_overrides(tier, arm))}\n"
              f"  {'':14s} at least {steps:.0f} steps (one round per step, full-length completions)"
              + (f"; memory: {memory_line(cfg, tier)}" if tier.gpu else ""))
    for name, why in unavailable.items():
        print(f"  {name:14s} UNAVAILABLE: {why}")


def memory_line(cfg, tier) -> str:
    """The memory preflight of one arm on the tier's GPU (pods.backends.memory, as scripts/preflight.py)."""
    from pods.backends import memory
    from pods.backends.checks import model_architecture

    total = memory.GPUS[tier.gpu]
    arch, w = model_architecture(cfg.model), memory.workload(cfg)
    fits, line = memory.verdict(arch, w, total_gib=total, available_gib=total)
    return f"{tier.gpu}: {line}"


def run_dir(out: Path, arm: str, seed: int) -> Path:
    return out / "runs" / f"{arm}-seed{seed}"


def train_and_evaluate(args, tier, arms: dict, model_dir) -> dict:
    """Every arm x seed: train (skipped when at the budget, else train.py resumes), then evaluate. -j at a time."""
    from pods.studies.leaderboard import evaluated, train_overrides, trained
    from pods.studies.runner import pods_command, run_jobs, run_logged

    jobs = [(a, s) for s in range(tier.seeds) for a in arms]
    threads = max(1, (os.cpu_count() or 1) // args.jobs)
    lock, timings = threading.Lock(), {}

    def one(arm: str, seed: int) -> None:  # one child process trains (or resumes) and evaluates: one start-up
        rdir, log = run_dir(args.out, arm, seed), args.out / "logs" / f"{arm}-seed{seed}.log"
        if trained(rdir, tier) and evaluated(rdir):
            return
        print(f"[{time.strftime('%H:%M:%S')}] {'evaluate' if trained(rdir, tier) else 'train'} {arm} seed {seed}",
              flush=True)
        cmd = [*pods_command("leaderboard"), "--job", str(rdir), "--tier", args.tier,
               *(["--quick"] if args.quick else []), "--",
               *train_overrides(tier, arms[arm], seed, args.out / "runs", model_dir, f"{arm}-seed{seed}")]
        t = run_logged(cmd, log, threads=threads)
        with lock:
            timings[f"{arm}-seed{seed}"] = t

    (args.out / "logs").mkdir(parents=True, exist_ok=True)
    errors = run_jobs(jobs, one, args.jobs)
    if errors:
        raise PodsError("failed runs (rerun the same command: finished runs are skipped, the rest resume):\n  "
                        + "\n  ".join(errors))
    return timings


def report(args, tier, arms: dict, unavailable: dict, wall: float) -> dict:
    """Read every run, compute the leaderboard, then write the results layout, table, figure and summary."""
    from pods.analysis.leaderboard import budget_grid, draw, markdown, summarize
    from pods.analysis.traces import metrics_rows, read_trace, write_authors_layout
    from pods.core.cost import measure_weight
    from pods.studies.leaderboard import arm_overrides
    files = {"sampled": "eval_results.json", "greedy": "eval_greedy.json"}
    seeds = list(range(tier.seeds))
    traces = {a: [read_trace(run_dir(args.out, a, s), tier.weight, files, tier.dataset) for s in seeds] for a in arms}
    s = summarize(traces, budget_grid(tier.budget, tier.points), {a: arm.label for a, arm in arms.items()},
                  seeds=seeds)
    measured = {a: measure_weight([metrics_rows(run_dir(args.out, a, x)) for x in seeds])
                for a in ("grpo", "pods") if a in arms}
    s.update(tier=tier.name, budget=tier.budget, points=tier.points, weight=tier.weight, weight_measured=measured,
             unavailable=unavailable, wall_seconds=wall, arms_overrides={a: arm_overrides(tier, arm) for a, arm in arms.items()})
    # everything computed: now write (a failure above leaves no half-written table)
    for a in arms:
        for k in seeds:
            write_authors_layout(args.out / "results", a, k, run_dir(args.out, a, k), traces[a][k], files, tier.dataset)
    table = markdown(s) + "".join(f"\n{a}: unavailable ({why})\n" for a, why in unavailable.items())
    draw(s, args.out)
    atomic_write_json(args.out / "summary.json", s)
    atomic_write_text(args.out / "leaderboard.md", table)
    print(table)
    print("w measured in these runs (median update s per trained token / generation s per generated token): "
          + ", ".join(f"{a} {w:.2f}" for a, w in measured.items()) + f"; used: {tier.weight:g}")
    return s


def warm_start(tier):
    """The CPU tier's shared warm start (cached; built once), or None where the tier starts from the hub model."""
    if not tier.name.startswith("cpu"):
        return None
    from pods.config.files import compose
    from pods.run.warmstart import ensure_warmstart

    return ensure_warmstart(compose(list(tier.overrides)).warmstart).resolve()


def job(rdir: Path, tier, overrides: list[str]) -> int:
    """In a child process: train the run until its budget (train.py resumes it; skipped once there), evaluate it."""
    from pods.commands.train import main as train_main
    from pods.studies.leaderboard import evaluate_both, trained

    if not trained(rdir, tier):
        train_main(overrides, prog="train.py")
    evaluate_both(rdir, tier)
    return 0


def run(argv=None, prog: str = "leaderboard.py") -> int:
    args = parse(argv, prog)
    tier = tier_of(args)
    if args.job:
        return job(args.job.resolve(), tier, args.overrides)
    args.out = (args.out or Path("checkpoints") / f"leaderboard-{tier.name}").resolve()
    arms, configs, unavailable = plan(args, tier)
    print_plan(tier, arms, configs, unavailable, args.out)
    if args.dry_run:
        return 0
    t0 = time.time()
    if not args.report_only:
        args.out.mkdir(parents=True, exist_ok=True)
        timings = train_and_evaluate(args, tier, arms, warm_start(tier))
        old = json.loads((args.out / "timings.json").read_text()) if (args.out / "timings.json").exists() else {}
        atomic_write_json(args.out / "timings.json", {**old, **timings})
    report(args, tier, arms, unavailable, time.time() - t0)
    print(f"\ntable: {args.out / 'leaderboard.md'}\nfigure: {args.out / 'leaderboard.png'}\nresults (authors' layout): "
          f"{args.out / 'results'}")
    return 0


def main(argv=None, prog: str = "leaderboard.py") -> int:
    """`run` with bad input (an unknown arm or rule, a budget too small, seeds < 2) as one message, exit 2."""
    return run_script(lambda a: run(a, prog), argv, program=prog)
