"""The CPU demo's comparison: GRPO 16/16, PODS max-variance 64->16, random 64->16, and GRPO and PODS with
dynamic sampling (grpo-ds, pods-ds), 10 seeds each.

    uv run pods demo-compare                      # train 50 runs, evaluate, plot, report (hours); = scripts/demo_compare.py
    uv run pods demo-compare --steps 100 --seeds 0 1   # a shorter version
    uv run pods demo-compare --report-only        # redraw / re-report finished runs
    train_all(args) ; report(args)                # what the command runs (args: pods.commands.demo_compare.parse)

1. the shared warm start of config/experiment/demo.yaml (pods.run.warmstart, cached);
2. `train.py experiment=demo` once per (method, seed), checkpoint every --eval-every steps, one torch
   thread per run, at most --parallel runs at once; seed s gives every method the same prompt stream;
3. evaluate-run.py on each run: sampled pass@1 (T = 1, --draws samples per problem, eval_results.json)
   and greedy accuracy (eval_greedy.json) on the first --eval-size held-out problems, with the same
   evaluation seeds for every run, at every checkpoint and at step 0 (the warm start);
4. seed-mean curves against update steps and training seconds (PNG and PDF; drawn by pods.analysis as
   scripts/plot.py draws them: 95% t-band of the seed mean clipped to [0, 1], hollow points where
   fewer seeds contribute), final accuracies, and the steps (and seconds) each method needs to reach
   GRPO's final accuracy, with the random control; every "x fewer" ratio with a 95% interval from a
   bootstrap over seeds (pods.analysis.speedup.reach_ratio_ci: seeds resampled with replacement within
   each arm, seed-mean curves and their crossing recomputed; --bootstrap resamples), and the differences
   of final seed means between arms (PAIRS) with the same kind of interval.
Everything lands in --out (default checkpoints/demo-compare/): runs, demo_compare.png, summary.json.
Rerunning continues: finished trainings and evaluations are skipped (train.py and evaluate-run.py resume).
This is the per-step view at a fixed number of steps; scripts/leaderboard.py compares arms on one token budget
and shares its runner and evaluation (pods.studies.runner, pods.studies.leaderboard).
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import numpy as np

from pods.analysis import figures
from pods.analysis.curves import setting_curve
from pods.analysis.loaders import load_run_dir, read_json
from pods.analysis.speedup import difference_ci, first_reach, reach_ratio_ci, speedups
from pods.config.files import compose, quote
from pods.errors import PodsError, ResultsError
from pods.io import atomic_write_json
from pods.run.warmstart import ensure_warmstart
from pods.studies import leaderboard
from pods.studies.leaderboard import TIERS, Tier
from pods.studies.runner import note, pods_command, run_jobs, run_logged

METHODS = {  # name -> (n, m, rule, dynamic sampling, label)
    "grpo": (16, 16, "none", False, "GRPO 16/16"),
    "pods": (64, 16, "max_variance", False, "PODS max-variance 64->16"),
    "random": (64, 16, "random", False, "random 64->16 (control)"),
    "grpo-ds": (16, 16, "none", True, "GRPO 16/16 + dynamic sampling"),
    "pods-ds": (64, 16, "max_variance", True, "PODS 64->16 + dynamic sampling"),
}
# (a, b): differences of final seed means reported with a bootstrap interval (summary.json "final_differences")
PAIRS = (("pods", "grpo"), ("random", "grpo"), ("pods", "random"), ("grpo-ds", "grpo"), ("pods-ds", "grpo-ds"),
         ("pods-ds", "pods"))
METRICS = {"sampled": ("eval_results.json", "sampled pass@1 (T=1)"), "greedy": ("eval_greedy.json", "greedy accuracy")}


def demo_config(overrides=()):
    return compose(["experiment=demo", *overrides])


def run_name(method: str, seed: int) -> str:
    return f"{method}-seed{seed}"


def train_command(args, method: str, seed: int, model_dir: Path) -> list[str]:
    n, m, rule, dynamic, _ = METHODS[method]
    return [*pods_command("train"), "experiment=demo", f"seed={seed}", f"rl.n={n}", f"rl.m={m}",
            f"rl.rule={rule}", f"rl.dynamic_sampling={str(dynamic).lower()}", "logging.samples_every=0", f"rl.max_steps={args.steps}", "rl.save_strategy=steps", f"rl.save_steps={args.eval_every}",
            f"model.name={quote(model_dir)}", "warmstart=null", "evaluation=null", "logging.progress=false",
            f"output_root={quote(args.out)}", f"run_name={run_name(method, seed)}"]


def eval_tier(args) -> Tier:
    """The leaderboard's CPU tier with this comparison's held-out size and draws (the same evaluation)."""
    return dataclasses.replace(TIERS["cpu"], eval_size=args.eval_size, draws=args.draws)


def eval_overrides(args, run_dir: Path, greedy: bool) -> list[str]:
    """config/evaluate.yaml overrides of the sampled (eval_results.json) or greedy (eval_greedy.json) sweep."""
    return leaderboard.eval_overrides(eval_tier(args), run_dir, greedy)


def eval_command(args, run_dir: Path) -> list[str]:
    """One process evaluating both sweeps of a run (saves a second start-up of torch/transformers)."""
    return [*pods_command("demo-compare"), "--evaluate-run", str(run_dir), "--eval-size", str(args.eval_size),
            "--draws", str(args.draws)]


def evaluate_both(args, run_dir: Path) -> None:
    leaderboard.evaluate_both(run_dir, eval_tier(args))


def do_run(args, method: str, seed: int, model_dir: Path, lock: threading.Lock, timings: dict) -> None:
    run_dir = args.out / run_name(method, seed)
    log = args.out / f"{run_name(method, seed)}.log"
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    if not (run_dir / f"checkpoint-{args.steps}" / "state.json").is_file():
        note(f"[{time.strftime('%H:%M:%S')}] train {run_name(method, seed)}")
        t = run_logged(train_command(args, method, seed, model_dir), log, threads=1)
        with lock:
            timings[run_name(method, seed)] = {"train": t}
            save_timings(args, timings)
    note(f"[{time.strftime('%H:%M:%S')}] evaluate {run_name(method, seed)}")
    t = run_logged(eval_command(args, run_dir), log, threads=1)
    with lock:
        timings.setdefault(run_name(method, seed), {})["eval"] = t
        save_timings(args, timings)


def save_timings(args, timings: dict) -> None:
    """Merge this invocation's wall/CPU seconds into <out>/timings.json (a resumed run: its last part)."""
    path = args.out / "timings.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    for k, v in timings.items():
        old.setdefault(k, {}).update(v)
    atomic_write_json(path, old)


def train_all(args) -> None:
    """Every (method, seed): train (resumed or skipped when done), then evaluate; --parallel at a time."""
    cfg = demo_config()
    model_dir = ensure_warmstart(cfg.warmstart).resolve()
    print(f"warm start: {model_dir}\n{(model_dir / 'warmstart.json').read_text()[:400]}", flush=True)
    jobs = [(meth, s) for s in args.seeds for meth in args.methods]
    lock, timings = threading.Lock(), {}
    errors = run_jobs(jobs, lambda meth, s: do_run(args, meth, s, model_dir, lock, timings), args.parallel,
                      catch=Exception, progress="demo-compare")
    if errors:
        raise PodsError("failed runs (rerun the same command: finished runs are skipped):\n  " + "\n  ".join(errors))


# ----------------------------------------------------------------------------- report


def load_curve(run_dir: Path, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(steps [C], training seconds [C], accuracy [C]) of one run, base (step 0) included."""
    path = run_dir / METRICS[metric][0]
    if not path.is_file():
        raise ResultsError(f"{path}: missing; train and evaluate this run first (run without --report-only)")
    data = read_json(path)
    rows = sorted((v["step"], v["elapsed_seconds"], float(np.mean(v["arithmetic"]["ans_acc"])))
                  for k, v in data.items() if isinstance(v, dict) and "arithmetic" in v and v["arithmetic"]["ans_acc"])
    return tuple(np.array(c, dtype=float) for c in zip(*rows))


def seed_mean(args, method: str, metric: str):
    """Seed-mean curve on the common checkpoint steps: (steps, mean seconds, mean acc, acc [S, C], seconds [S, C])."""
    curves = [load_curve(args.out / run_name(method, s), metric) for s in args.seeds]
    C = min(len(c[0]) for c in curves)
    steps = curves[0][0][:C]
    if any((c[0][:C] != steps).any() for c in curves):
        raise ResultsError(f"{method}: seeds have different checkpoint steps; finish all runs first")
    acc, secs = np.stack([c[2][:C] for c in curves]), np.stack([c[1][:C] for c in curves])
    return steps, secs.mean(0), acc.mean(0), acc, secs


def train_stats(args, method: str) -> dict:
    """Means over seeds of per-step medians/means from metrics.jsonl: phase times, groups with spread."""
    keys = {"median_generation_s": "time/generation", "median_update_s": "time/update", "median_step_s": "time/step"}
    out = {k: [] for k in [*keys, "groups_with_spread", "groups_with_spread_kept", "generation_rounds",
                           "prompts_drawn"]}
    for s in args.seeds:
        f = args.out / run_name(method, s) / "metrics.jsonl"
        if not f.exists():
            return {}
        rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip().endswith("}")]
        for k, v in keys.items():
            out[k].append(float(np.median([r[v] for r in rows if v in r])))
        out["groups_with_spread"].append(float(np.mean([r["frac_groups_with_spread"] for r in rows])))
        out["groups_with_spread_kept"].append(float(np.mean([r["frac_groups_with_spread_kept"] for r in rows])))
        out["generation_rounds"].append(float(np.mean([r.get("generation_rounds", 1) for r in rows])))
        out["prompts_drawn"].append(float(np.mean([r.get("prompts_drawn", 0) for r in rows])))
    stats = {k: float(np.mean(v)) for k, v in out.items()}
    stats["wasted_update_fraction"] = 1.0 - stats["groups_with_spread_kept"]  # kept groups with zero spread
    return stats


def report(args) -> dict:
    fig, axes = figures.new_figure(2, width=5.5, height=4.0, nrows=2)  # [sampled steps, sampled time, greedy ...]
    summary = {"steps": args.steps, "seeds": args.seeds, "eval_size": args.eval_size, "draws": args.draws,
               "bootstrap": args.bootstrap, "metrics": {}}
    for row, metric in enumerate(METRICS):
        curves = {m: seed_mean(args, m, metric) for m in args.methods}
        out = summary["metrics"][metric] = {}
        base = curves.get("grpo")
        target = float(base[2][-1]) if base is not None else None
        for meth, (steps, secs, mean, acc, seed_secs) in curves.items():
            e = {"start": float(mean[0]), "final": float(mean[-1]), "final_per_seed": acc[:, -1].tolist(),
                 "peak": float(mean.max()), "seconds_per_step": float(secs[-1] / steps[-1])}
            if target is not None:
                e["steps_to_grpo_final"] = first_reach(steps, mean, target, interp=True)
                e["seconds_to_grpo_final"] = first_reach(secs, mean, target, interp=True)
                sb, tb = first_reach(base[0], base[2], target, True), first_reach(base[1], base[2], target, True)
                e["step_ratio_vs_grpo"] = sb / e["steps_to_grpo_final"] if e["steps_to_grpo_final"] else None
                e["time_ratio_vs_grpo"] = tb / e["seconds_to_grpo_final"] if e["seconds_to_grpo_final"] else None
                e["paper_speedups_in_steps"] = {k: v for k, v in speedups(base[0], base[2], steps, mean).items()
                                                if k.startswith("speedup")}
                grid = lambda st, a: np.broadcast_to(st, a.shape)  # noqa: E731  steps of every seed [S, C]
                for kind, bx, x in (("step", grid(base[0], base[3]), grid(steps, acc)), ("time", base[4], seed_secs)):
                    ci = (reach_ratio_ci(bx, base[3], x, acc, n_boot=args.bootstrap, seed=0) if meth != "grpo"
                          else {"ci95": None, "never_reached": None})  # GRPO against itself: 1 by definition
                    e[f"{kind}_ratio_ci95"], e[f"{kind}_ratio_never_reached"] = ci["ci95"], ci["never_reached"]
            e.update(train_stats(args, meth))
            out[meth] = e
        summary.setdefault("final_differences", {})[metric] = {
            f"{a} - {b}": difference_ci(out[a]["final_per_seed"], out[b]["final_per_seed"], n_boot=args.bootstrap)
            for a, b in PAIRS if a in out and b in out}
        # the figure: the same curves, bands and markers as scripts/plot.py (pods.analysis)
        runs = {m: [load_run_dir(args.out / run_name(m, s), m, METRICS[metric][0]) for s in args.seeds]
                for m in args.methods}
        for col, x in enumerate(("steps", "hours")):
            ax = axes[2 * row + col]
            figures.draw_curves(ax, [setting_curve(runs[m], "arithmetic", "ans_acc", x=x, label=METHODS[m][4])
                             for m in args.methods], metric="ans_acc", time_unit="seconds",
                        time_label="training seconds (1 thread per run)",
                        title=f"{METRICS[metric][1]}, {len(args.seeds)} seeds" if col == 0 else "")
            ax.set_xlabel(ax.get_xlabel().replace("training step", "update steps"), fontsize=9)
            ax.set_ylabel(METRICS[metric][1])
    fig.suptitle(f"CPU demo: tiny Qwen2 on 3-digit addition, {args.eval_size} held-out problems ({figures.BAND})",
                 fontsize=10)
    figures.save(fig, args.out, "demo_compare")
    atomic_write_json(args.out / "summary.json", summary)
    print_table(summary)
    return summary


def with_ci(value, ci) -> str:
    """'1.71 [1.20, 2.35]': a ratio and its 95% bootstrap interval ('-' when not reached)."""
    if value is None:
        return "-"
    return f"{value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def print_table(summary: dict) -> None:
    fmt = lambda v, f="{:.3f}": "-" if v is None else f.format(v)  # noqa: E731
    for metric, rows in summary["metrics"].items():
        print(f"\n{METRICS[metric][1]} ({summary['eval_size']} held-out problems, {len(summary['seeds'])} seeds, "
              f"{summary['steps']} steps; x fewer / x less s: ratio [95% bootstrap interval over seeds])")
        print(f"{'method':31s} {'start':>6s} {'final':>6s} {'peak':>6s} {'steps->GRPO':>11s} {'x fewer':>18s} "
              f"{'s->GRPO':>8s} {'x less s':>18s} {'s/step':>7s} {'gen s':>6s} {'upd s':>6s} {'wasted':>6s} "
              f"{'rounds':>6s}")
        for meth, e in rows.items():
            print(f"{METHODS[meth][4]:31s} {e['start']:6.3f} {e['final']:6.3f} {e['peak']:6.3f} "
                  f"{fmt(e.get('steps_to_grpo_final'), '{:.0f}'):>11s} "
                  f"{with_ci(e.get('step_ratio_vs_grpo'), e.get('step_ratio_ci95')):>18s} "
                  f"{fmt(e.get('seconds_to_grpo_final'), '{:.0f}'):>8s} "
                  f"{with_ci(e.get('time_ratio_vs_grpo'), e.get('time_ratio_ci95')):>18s} "
                  f"{e['seconds_per_step']:7.3f} {fmt(e.get('median_generation_s'), '{:.2f}'):>6s} "
                  f"{fmt(e.get('median_update_s'), '{:.2f}'):>6s} {fmt(e.get('wasted_update_fraction'), '{:.2f}'):>6s} "
                  f"{fmt(e.get('generation_rounds'), '{:.2f}'):>6s}")
    for metric, diffs in summary.get("final_differences", {}).items():
        print(f"\n{METRICS[metric][1]}, final seed means: difference in points [95% bootstrap interval over seeds]")
        for pair, d in diffs.items():
            ci = f" [{100 * d['ci95'][0]:+.1f}, {100 * d['ci95'][1]:+.1f}]" if d["ci95"] else ""
            print(f"  {pair:20s} {100 * d['diff']:+.1f}{ci}")
