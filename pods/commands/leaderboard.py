"""A compute-matched leaderboard: every arm on one budget (tokens or modelled seconds), seeds paired, intervals.

    pods leaderboard --quick                   # every arm x 3 seeds, a fifth of the budget (CPU, ~8 min at -j 2)
    pods leaderboard [--tier cpu|gpu] [--arms grpo pods ...] [--seeds N] [--out DIR] [-j N]
    pods leaderboard --tier gpu --dry-run      # each arm's plan, budget, memory preflight, estimated wall time

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
import sys
import threading
import time
from pathlib import Path

from pods.cli import out_dir, run_script
from pods.commands import parser
from pods.core import profiles
from pods.core.timing import planned_counts, step_seconds
from pods.errors import ConfigError, PodsError
from pods.io import atomic_write_json, atomic_write_text

INTERRUPTED = ("the runs in progress saved their step; rerun the same command to continue (finished runs are "
               "skipped, the others resume)")


def parse(argv, prog: str) -> argparse.Namespace:
    p = parser(prog, __doc__, epilog="docs/leaderboard.md: the protocol, the tiers, measured tables.")
    p.add_argument("--tier", default="cpu", help="cpu: the demo task (default); gpu: Qwen2.5-3B on GSM8K")
    p.add_argument("--quick", action="store_true", help="a first look: a fifth of the budget, 4 points, 3 seeds")
    p.add_argument("--arms", nargs="+", default=None, metavar="ARM",
                   help="arms by name (default: all; --dry-run lists them) or NAME:key=value ...")
    p.add_argument("--seeds", type=int, default=None, help="seeds per arm, 0..N-1 (default: the tier's; at least 2)")
    p.add_argument("--budget", type=float, default=None,
                   help="per run, in --cost's unit: tokens generated + w x tokens trained, or modelled seconds")
    p.add_argument("--cost", choices=("tokens", "seconds"), default=None,
                   help="what the budget counts (default: the tier's; cpu: tokens, gpu: seconds on l40s-unsloth); "
                        "with --report-only, finished runs are re-read under it")
    p.add_argument("--profile", default=None, metavar="NAME|FILE",
                   help="the machine profile of --cost seconds (default: the tier's machine's; pods.core.profiles)")
    p.add_argument("--points", type=int, default=None, help="budget points (checkpoints, evaluations) per run")
    p.add_argument("--weight", type=float, default=None, metavar="W",
                   help="w, what a trained token costs in generated tokens (default: the tier's; `pods gpu-check "
                        "--config ... --random-weights` measures it on your GPU and backend)")
    p.add_argument("--out", type=out_dir, default=None, metavar="DIR", help="default: checkpoints/leaderboard-<tier>")
    p.add_argument("--dry-run", action="store_true", help="print each arm's plan (and memory preflight); run nothing")
    p.add_argument("-j", "--jobs", type=int, default=2, help="runs at once; the CPU threads are split between them")
    p.add_argument("--report-only", action="store_true", help="train and evaluate nothing; report finished runs")
    p.add_argument("--job", type=Path, help=argparse.SUPPRESS)  # internal: train (overrides) + evaluate one run
    p.add_argument("overrides", nargs="*", help=argparse.SUPPRESS)  # internal: the --job's train.py overrides
    return p.parse_args(argv)


def tier_of(args):
    """The tier with --quick / --seeds / --budget / --points / --weight / --cost / --profile applied; ConfigError for
    impossible values, an unknown or bad profile, or a cost the tier has no budget in (without --budget)."""
    import dataclasses

    from pods.studies.leaderboard import TIERS

    if args.tier not in TIERS:
        raise ConfigError(f"--tier {args.tier}: no such tier; the tiers: {', '.join(TIERS)}")
    tier = TIERS[args.tier].quick() if args.quick else TIERS[args.tier]
    cost = args.cost or tier.cost
    if args.profile is not None and cost != "seconds":
        raise ConfigError(f"--profile {args.profile} prices modelled seconds: add --cost seconds (tier {tier.name} "
                          f"counts {cost})")
    if args.weight is not None and cost == "seconds":
        raise ConfigError(f"--weight {args.weight:g} weighs trained tokens, but the budget counts modelled seconds "
                          "on a profile (--cost seconds): drop --weight, or give --cost tokens")
    profile = None
    if cost == "seconds":
        profile = args.profile or (tier.profile if tier.cost == "seconds" else None) or machine_profile(tier)
        profile = str(Path(profile).resolve()) if profile.endswith(".json") or "/" in profile else profile
        profiles.load(profile)  # an unknown name or a bad file: ConfigError, exit 2
    budget = args.budget if args.budget is not None else tier.budget_in(cost)
    if budget is None and not args.report_only:
        raise ConfigError(f"--cost {cost}: tier {tier.name} has no budget in {cost}; give --budget (per run, in "
                          f"{'modelled seconds' if cost == 'seconds' else 'tokens'})")
    given = (("seeds", args.seeds), ("points", args.points), ("weight", args.weight))
    changes = {k: v for k, v in given if v is not None}
    if cost != tier.cost:  # a run's wall seconds per unit of budget, converted where both budgets are known
        was, now = tier.budget_in(tier.cost), tier.budget_in(cost)
        changes["run_seconds"] = (tier.run_seconds[0], tier.run_seconds[1] * was / now) \
            if tier.run_seconds and was and now else None
    tier = dataclasses.replace(tier, **changes, cost=cost, profile=profile, budget=budget or float("nan"))
    if tier.seeds < 2:
        raise ConfigError(f"--seeds {tier.seeds}: intervals over seeds need at least 2 seeds (the protocol: 5)")
    if tier.points < 1 or (budget is not None and not tier.budget > 0):
        raise ConfigError(f"--budget {tier.budget:g} / --points {tier.points}: both must be positive")
    if not tier.weight > 0:
        raise ConfigError(f"--weight {tier.weight:g}: w must be positive (a trained token costs something); "
                          "`pods gpu-check --config ... --random-weights` prints it for a GPU")
    if args.jobs < 1:
        raise ConfigError(f"-j {args.jobs}: at least one run at a time")
    return tier


def machine_profile(tier) -> str:
    """The profile of the tier's machine and backend (ConfigError naming the known ones when none is measured)."""
    from pods.config.files import compose

    cfg = compose(list(tier.overrides))
    on_cpu = not tier.cuda or str(cfg.backend.get("device", "auto")) == "cpu"
    return profiles.for_machine(None if on_cpu else tier.gpu, str(cfg.backend.name)).name


def step_cost(cfg, tier) -> float:
    """The most one generation round of a step can cost in the tier's unit: B x n completions generated, B x m
    trained, at most rl.max_completion_tokens each (seconds: that step modelled on the tier's profile)."""
    rl = cfg.rl
    if tier.cost == "seconds":
        counts = planned_counts(prompts=rl.prompts_per_step, n=rl.n, m=rl.m, prompt_tokens=rl.max_prompt_tokens,
                                completion_tokens=rl.max_completion_tokens, max_tokens=rl.max_completion_tokens)
        return step_seconds(counts, profiles.load(tier.profile).constants, reference=True)
    return rl.prompts_per_step * rl.max_completion_tokens * (rl.n + tier.weight * rl.m)


def plan(args, tier) -> tuple[dict, dict, dict]:
    """(available arms {name: Arm}, their configs, unavailable {name: why}); ConfigError for a bad arm or budget."""
    import dataclasses

    from pods.studies.leaderboard import ARMS, arm_config, resolve_arms

    arms, configs, unavailable = resolve_arms(args.arms or list(ARMS)), {}, {}
    # a report re-reads finished runs under any cost: their configs are checked as trained on tokens
    checked = dataclasses.replace(tier, cost="tokens", profile=None, budget=1e18) if args.report_only else tier
    for name, arm in list(arms.items()):
        try:
            configs[name] = arm_config(checked, arm, name)
        except ConfigError as err:
            if arm.needs is None or arm.needs not in str(err):
                raise
            unavailable[name] = f"{arm.needs} is not wired in this build's loop yet: {str(err).splitlines()[-1]}"
            del arms[name]
    interval = tier.budget / tier.points
    costly = max(configs, key=lambda a: step_cost(configs[a], tier))
    if not args.report_only and interval < step_cost(configs[costly], tier):
        raise ConfigError(f"budget {tier.budget:g} / {tier.points} points = {interval:g} per point, below one step of "
                          f"arm {costly} (up to {step_cost(configs[costly], tier):g}): every budget point must "
                          "hold at least one step; raise --budget or lower --points")
    return arms, configs, unavailable


def print_plan(tier, arms, configs, unavailable, out: Path, jobs: int) -> None:
    from pods.studies.leaderboard import arm_overrides, budget_overrides, few_seeds

    budget = (f"budget {tier.budget:g} ({cost_words(tier)}) per run, {tier.points} budget points every "
              f"{tier.budget / tier.points:g}" if tier.budget == tier.budget else
              f"cost: {cost_words(tier)}, read up to the largest budget every run reached, {tier.points} budget points")
    print(f"tier {tier.name}: {budget}, {tier.seeds} seeds x {len(arms)} arms "
          f"= {tier.seeds * len(arms)} runs; held-out: {tier.dataset} "
          f"{tier.eval_size or 'test split'} problems, sampled ({tier.draws} draw(s)) and greedy; out: {out}")
    if tier.budget == tier.budget:
        print(f"every run: {' '.join(tier.overrides + tuple(budget_overrides(tier)))}")
    for name, arm in arms.items():
        cfg = configs[name]
        steps = tier.budget / step_cost(cfg, tier)
        print(f"  {name:14s} {arm.label:42s} {' '.join(arm_overrides(tier, arm))}"
              + (f"\n  {'':14s} at least {steps:.0f} steps (one round per step, full-length completions)"
                 if steps == steps else "") + (f"; memory: {memory_line(cfg, tier)}" if tier.gpu else ""))
    for name, why in unavailable.items():
        print(f"  {name:14s} UNAVAILABLE: {why}")
    print(wall_line(tier, tier.seeds * len(arms), jobs))
    warning = few_seeds(tier)
    if warning:
        print(warning, file=sys.stderr)


def wall_line(tier, runs: int, jobs: int) -> str:
    """'estimated wall time: 33 min (45 runs x 80 s, 2 at a time; measured: docs/leaderboard.md)'."""
    from pods.studies.leaderboard import wall_seconds

    wall = wall_seconds(tier, runs, jobs, os.cpu_count() or 1)
    if wall is None or wall != wall:  # not measured, or no budget (a report)
        return f"estimated wall time: not measured for tier {tier.name} at this cost yet"
    fixed, per = tier.run_seconds
    each = fixed + per * tier.budget
    how = (f"{runs} runs x {each / 3600:.1f} h of training on one {tier.gpu}, one at a time; "
           "evaluation not counted") if tier.gpu else \
        f"{runs} runs x {each:.0f} CPU s, {max(1, min(jobs, os.cpu_count() or 1))} at a time"
    return f"estimated wall time: {duration(wall)} ({how}; measured: docs/leaderboard.md)"


def duration(seconds: float) -> str:
    """'7 min', '1 h 05 min', '3 d 4 h'."""
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{max(minutes, 1)} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours < 48 else f"{hours // 24} d {hours % 24} h"


def cost_words(tier) -> str:
    """What the tier's budget counts, in words."""
    if tier.cost == "seconds":
        prof = profiles.load(tier.profile)
        return f"seconds of training modelled on {prof.name}: {prof.machine}, backend {prof.backend}"
    return f"tokens generated + {tier.weight:g} x tokens trained"


def memory_line(cfg, tier) -> str:
    """The memory preflight of one arm on the tier's GPU (pods.backends.memory, as scripts/preflight.py)."""
    from pods.backends import memory
    from pods.backends.checks import model_architecture

    total = memory.GPUS[tier.gpu]
    arch, w = model_architecture(cfg.model), memory.workload(cfg)
    fits, line = memory.verdict(arch, w, total_gib=total, available_gib=total)
    return f"{tier.gpu}: {line}"


def needs_cuda(tier) -> None:
    """ConfigError before anything is written when the tier trains on a CUDA GPU and this machine has none."""
    import torch

    if tier.cuda and not torch.cuda.is_available():
        from pods.backends.checks import no_cuda_reason

        raise ConfigError(f"tier {tier.name} trains on a CUDA GPU, and {no_cuda_reason()}; nothing was written. On "
                          "this machine: --tier cpu (the demo task; --quick for a first look), or --dry-run for the "
                          f"{tier.name} tier's plan and memory preflight")


def run_dir(out: Path, arm: str, seed: int) -> Path:
    return out / "runs" / f"{arm}-seed{seed}"


def train_and_evaluate(args, tier, arms: dict, model_dir) -> dict:
    """Every arm x seed: train (skipped when at the budget, else train.py resumes), then evaluate. -j at a time."""
    from pods.studies.leaderboard import evaluated, train_overrides, trained
    from pods.studies.runner import note, pods_command, run_jobs, run_logged

    jobs = [(a, s) for s in range(tier.seeds) for a in arms]
    finished = [(a, s) for a, s in jobs if trained(run_dir(args.out, a, s), tier) and evaluated(run_dir(args.out, a, s))]
    todo = [job for job in jobs if job not in finished]
    threads = max(1, (os.cpu_count() or 1) // args.jobs)
    lock, timings = threading.Lock(), {}

    def one(arm: str, seed: int) -> None:  # one child process trains (or resumes) and evaluates: one start-up
        rdir, log = run_dir(args.out, arm, seed), args.out / "logs" / f"{arm}-seed{seed}.log"
        note(f"[{time.strftime('%H:%M:%S')}] {'evaluate' if trained(rdir, tier) else 'train'} {arm} seed {seed} "
             f"(log: {log})")
        cmd = [*pods_command("leaderboard"), "--job", str(rdir), "--tier", args.tier,
               *(["--quick"] if args.quick else []), "--",
               *train_overrides(tier, arms[arm], seed, args.out / "runs", model_dir, f"{arm}-seed{seed}")]
        t = run_logged(cmd, log, threads=threads)
        with lock:
            timings[f"{arm}-seed{seed}"] = t

    (args.out / "logs").mkdir(parents=True, exist_ok=True)
    errors = run_jobs(todo, one, args.jobs, progress="leaderboard", done=len(jobs) - len(todo))
    if errors:
        raise PodsError("failed runs (rerun the same command: finished runs are skipped, the rest resume):\n  "
                        + "\n  ".join(errors))
    return timings


def report(args, tier, arms: dict, unavailable: dict, wall: float) -> dict:
    """Read every run, compute the leaderboard, then write the results layout, table, figure and summary.

    Every checkpoint is placed at its cost under the tier's meter (tokens, or modelled seconds on its profile) from
    its step count and cost ledger; runs trained under another cost (a re-read) are compared up to the largest
    budget all of them reached. With seconds, the break-even fixed part of each arm against GRPO too."""
    from pods.analysis.leaderboard import budget_grid, draw, markdown, summarize
    from pods.analysis.traces import metrics_rows, read_trace, write_authors_layout
    from pods.core.cost import measure_weight
    from pods.studies.leaderboard import arm_overrides, makes_reference

    files = {"sampled": "eval_results.json", "greedy": "eval_greedy.json"}
    seeds = list(range(tier.seeds))
    dirs = {a: [run_dir(args.out, a, x) for x in seeds] for a in arms}
    meters = {a: [tier.meter(makes_reference(d)) for d in ds] for a, ds in dirs.items()}
    traces = {a: [read_trace(d, m, files, tier.dataset) for d, m in zip(ds, meters[a])] for a, ds in dirs.items()}
    reread = not all(trained_under(d, tier) for ds in dirs.values() for d in ds)
    reach = min(float(tr.cost[-1]) for trs in traces.values() for tr in trs)
    end = reach if reread or tier.budget != tier.budget else tier.budget  # NaN budget: a re-read without one
    s = summarize(traces, budget_grid(end, tier.points), {a: arm.label for a, arm in arms.items()}, seeds=seeds)
    measured = {a: measure_weight([metrics_rows(d) for d in dirs[a]]) for a in ("grpo", "pods") if a in arms}
    prof = profiles.load(tier.profile) if tier.cost == "seconds" else None
    s.update(tier=tier.name, budget=end, points=tier.points, weight=tier.weight, weight_measured=measured,
             unavailable=unavailable, wall_seconds=wall,
             arms_overrides={a: arm_overrides(tier, arm) for a, arm in arms.items()},
             cost={"kind": tier.cost, "words": cost_words(tier), "profile": prof.name if prof else None,
                   "compared_up_to": end, "re_read": reread},
             axis=time_axis(end, prof.name) if prof else
             {"label": f"budget (millions of tokens: generated + {tier.weight:g} x trained)", "scale": 1e6})
    old = [f"{a}-seed{x}" for a, ds in dirs.items() for x, d in zip(seeds, ds)
           if "cost/decode_steps_total" not in metrics_rows(d)[max(metrics_rows(d))]]
    head = (f"Cost: {cost_words(tier)}; arms compared up to {end:,.6g}"
            + (" (the largest budget every run reached: runs trained under another cost, re-read)" if reread else "")
            + (f". Runs written before the cost ledger's batch counts ({len(old)}: {', '.join(old[:3])}"
               f"{', ...' if len(old) > 3 else ''}) are priced with their estimates (pods.core.cost.step_counts)"
               if old and tier.cost == "seconds" else "") + ".\n\n")
    table = head + markdown(s) + "".join(f"\n{a}: unavailable ({why})\n" for a, why in unavailable.items())
    rows = break_even_rows(tier, arms, dirs, meters, files) if prof and "grpo" in arms else {}
    if rows:
        from pods.analysis.breakeven import markdown as be_markdown

        s["break_even"] = {a: be for a, (_, be) in rows.items()}
        table += "\nBreak-even: the fixed part of a step at which the budget ratio reaches 1\n\n" + be_markdown(rows)
    # everything computed: now write (a failure above leaves no half-written table)
    for a in arms:
        for k in seeds:
            write_authors_layout(args.out / "results", a, k, dirs[a][k], traces[a][k], files, tier.dataset)
    draw(s, args.out)
    if rows:
        from pods.analysis.breakeven import draw_break_even

        draw_break_even(rows, args.out, prof.name)
    atomic_write_json(args.out / "summary.json", s)
    atomic_write_text(args.out / "leaderboard.md", table)
    print(table)
    print("w measured in these runs (median update s per trained token / generation s per generated token): "
          + ", ".join(f"{a} {w:.2f}" for a, w in measured.items()) + f"; used: {tier.weight:g}")
    return s


def time_axis(end: float, profile: str) -> dict:
    """The figure's budget axis in words for a modelled-seconds budget up to `end`: seconds, minutes or hours."""
    unit, scale = next((u, x) for u, x, top in (("seconds", 1.0, 600), ("minutes", 60.0, 3 * 3600),
                                                ("hours", 3600.0, float("inf"))) if end < top)
    return {"label": f"budget ({unit} of training modelled on {profile})", "scale": scale}


def break_even_rows(tier, arms: dict, dirs: dict, meters: dict, files: dict) -> dict:
    """{arm: (label, pods.analysis.breakeven.break_even)} against GRPO, the fixed part swept from 0 to 9 x GRPO's
    variable seconds per step (a fixed share of 0-90 %) on the tier's profile."""
    import numpy as np

    from pods.analysis import breakeven
    from pods.analysis.traces import read_trace

    var = {a: [read_trace(d, m.with_fixed(0.0), files, tier.dataset) for d, m in zip(dirs[a], meters[a])]
           for a in arms}
    grpo_step = float(np.mean([tr.cost[-1] / tr.steps[-1] for tr in var["grpo"]]))
    fixed = np.linspace(0.0, 9 * grpo_step, 46)
    return {a: (arm.label, breakeven.break_even(var[a], var["grpo"], fixed=fixed, points=tier.points,
                                                grpo_step=grpo_step, resamples=breakeven.RESAMPLES))
            for a, arm in arms.items() if a != "grpo"}


def trained_under(rdir: Path, tier) -> bool:
    """The run was trained on the tier's budget and cost (its config.yaml): else reading it is a re-read."""
    from omegaconf import OmegaConf

    path = rdir / "config.yaml"
    if not path.is_file():
        return False
    rl = OmegaConf.load(path).rl
    if str(rl.get("budget_cost", "tokens")) != tier.cost or rl.token_budget is None:
        return False
    if abs(float(rl.token_budget) - tier.budget) > 1e-9 * tier.budget:
        return False
    if tier.cost == "tokens":
        return float(rl.token_budget_weight) == tier.weight
    return profiles.load(str(rl.budget_profile)).constants == profiles.load(tier.profile).constants


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
    print_plan(tier, arms, configs, unavailable, args.out, args.jobs)
    if args.dry_run:
        return 0
    t0 = time.time()
    if not args.report_only:
        needs_cuda(tier)  # before anything is written
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
    return run_script(lambda a: run(a, prog), argv, program=prog, interrupted=INTERRUPTED)
