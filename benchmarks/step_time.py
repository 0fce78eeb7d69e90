#!/usr/bin/env python
"""The step-time model's shipped profiles, built from their sources and held against them.

    uv run python benchmarks/step_time.py --paper /work/shared/paper-results     # l40s-unsloth: validation table
    uv run python benchmarks/step_time.py --h100 docs/data/h100-offline-gpu-check.json
    uv run python benchmarks/step_time.py --cpu RUN_DIR [RUN_DIR ...]             # cpu: the demo's metrics rows
    ... --write                                                                    # into pods/core/machines/

`--paper`: every single-GPU setting of the authors (one L40S, Unsloth's vLLM, Qwen2.5-3B / Llama-3.2-3B, 4-bit +
LoRA 64): the constants fitted to their step rates, and per setting the measured and predicted mean seconds per step,
in-sample and leave-one-out (Markdown). `--h100`: the committed H100 random-weight step. `--cpu`: demo runs (train.py
experiment=demo at several n, m; their metrics rows carry the cost ledger and time/step). docs/leaderboard.md
"Time, not tokens".
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

from pods.analysis.timing_fit import (
    FREE,
    REFERENCE_SHARE,
    errors,
    fit_paper,
    h100_constants,
    paper_settings,
    run_points,
    validate_paper,
    validation_table,
)
from pods.analysis.traces import metrics_rows
from pods.backends.checks import model_architecture
from pods.config.files import compose
from pods.core import profiles
from pods.core.timing import fit

MODELS = {"qwen": "qwen2.5-3b-instruct", "llama": "llama3.2-3b-instruct"}
PEAK_BF16 = {"H100": 989e12}  # dense bf16 tensor FLOP/s (NVIDIA's datasheet, SXM)
PREFILL_EFFICIENCY = 0.4  # share of the peak a 512-token prefill reaches (an assumption; prefill is 1 % of the step)
# the demo's completions are all 5-6 tokens and its prompts ~8: decoding steps, prompt and context tokens move in
# step with batches and sequences, so only these are told apart (the others held at 0)
CPU_FREE = ("fixed", "batch", "padded_token", "update_token")


def sizes(model: str) -> tuple[float, float]:
    """(parameters, KV cache bytes per token in bf16) of a config/model preset."""
    arch = model_architecture(compose([f"model={model}"]).model)
    return float(arch.params()), float(arch.kv_bytes_per_token(2))


def paper(results: Path) -> profiles.Profile:
    settings = paper_settings(results, {k: sizes(v) for k, v in MODELS.items()})
    rows = validate_paper(settings)
    print(validation_table(rows))
    gsm = [abs(r["loo_error"]) for r in rows if "GSM8K" in r["setting"]]
    other = [abs(r["loo_error"]) for r in rows if "GSM8K" not in r["setting"]]
    print(f"\nleave-one-out: GSM8K within {100 * max(gsm):.1f} %, other task/model within {100 * max(other):.1f} %")
    c = fit_paper(settings)
    lengths = [L for s in settings for _, L in s.stretches]
    p, kv = sizes(MODELS["qwen"])
    origin = {k: "fitted to the authors' step rates (every single-GPU setting, 30-min stretches)" for k in FREE}
    origin.update({"batch": "0: one generation call per step, inside the fixed part",
                   "padded_token": "0: vLLM drops finished sequences from the batch",
                   "prompt_token": "0: vLLM prefills a prompt once for its n samples (~150 tokens a step, in fixed)",
                   "update_token": f"fitted (reference pass included), {1 - REFERENCE_SHARE:.0%} of it",
                   "reference_token": f"{REFERENCE_SHARE:.0%} of the fitted update: one forward of the four passes "
                                      "(forward, checkpointed recompute, backward = 2) the update makes"})
    return profiles.Profile(
        name="l40s-unsloth", machine="one NVIDIA L40S (48 GB)", gpu="L40S", backend="unsloth", device="cuda",
        model="Qwen2.5-3B-Instruct, 4-bit base, LoRA rank 64 (Llama-3.2-3B scaled from sizes)", model_params=p,
        kv_bytes_per_token=kv, constants=c, origin=origin,
        fitted_range={"sequences": [min(s.n for s in settings), max(s.n for s in settings)],
                      "completion_tokens": [round(min(lengths)), round(max(lengths))],
                      "kept": [min(s.m for s in settings), max(s.m for s in settings)]},
        source="the authors' published step rates (checkpoint names, every 30 min; Llama 10) of all 14 single-GPU "
               "settings, 10 runs each, with the mean completion length of their evaluations at each checkpoint "
               "(YixuanEvenXu/pods, results/ at 0c453d2; config/train.yaml: 1 prompt per step, 512 tokens, Unsloth "
               "fast_inference, gpu_memory_utilization 0.5)", date="2025-09-24")


def h100(path: Path) -> profiles.Profile:
    check = json.loads(path.read_text())
    cfg = compose(list(check["random_weights"]["config"]))
    p, kv = sizes("qwen2.5-3b-instruct")
    prompt = 2 * p / (PREFILL_EFFICIENCY * PEAK_BF16["H100"])
    seqs, kept = int(cfg.rl.prompts_per_step) * int(cfg.rl.n), int(cfg.rl.prompts_per_step) * int(cfg.rl.m)
    c = h100_constants(check, sequences=seqs, kept=kept, prompt_token=prompt)
    r = check["random_weights"]
    origin = {k: "0: not measured (one batch size, one length)" for k in c}
    origin.update({"fixed": "measured: step - generation - update (scoring, hand-over)",
                   "decode_step": f"measured: generation of {seqs} x {r['completion_tokens']} tokens in one "
                                  "model.generate call, less the prefill, per decoding step (the whole batch's cost: "
                                  "its size was not varied)",
                   "prompt_token": f"from sizes: 2 x {p / 1e9:.2f} B FLOPs per token at {PREFILL_EFFICIENCY:.0%} of "
                                   "the H100's dense bf16 peak",
                   "update_token": "measured: update seconds per prompt + completion token trained, "
                                   f"{1 - REFERENCE_SHARE:.0%} of it",
                   "reference_token": f"{REFERENCE_SHARE:.0%} of the measured update (its reference pass included)"})
    return profiles.Profile(
        name="h100-hf", machine=check["stack"]["gpu"], gpu="H100", backend="hf", device="cuda",
        model="Qwen2.5-3B architecture, random weights, NF4 base (bitsandbytes), LoRA rank 64", model_params=p,
        kv_bytes_per_token=kv, constants=c, origin=origin,
        fitted_range={"sequences": [seqs, seqs], "completion_tokens": [r["completion_tokens"]] * 2, "kept": [16, 16]},
        source=f"{path.name}: `gpu_check.py --config {' '.join(r['config'])} --random-weights`, steps 2-3 "
               "(docs/gpu.md 'Measured on an H100')", date="2026-11-27")


def cpu(run_dirs: list[Path], load: float) -> profiles.Profile:
    runs = [metrics_rows(d) for d in run_dirs]
    points = run_points(runs)
    c = fit(points, CPU_FREE, reference=False)
    c["reference_token"] = c["update_token"] * REFERENCE_SHARE / (1 - REFERENCE_SHARE)
    print(f"cpu: {len(points)} runs, one point each (medians of steps 2..); in-sample and leave-one-out:")
    print("| run | n -> m | sequences per batch | median measured s/step | predicted | error | leave-one-out | error |")
    print("|---|---|---|---|---|---|---|---|")
    for i, (d, (k, t)) in enumerate(zip(run_dirs, points)):
        loo = fit(points[:i] + points[i + 1:], CPU_FREE, reference=False)
        p, q = (float(errors([(k, t)], x, reference=False)[0]) for x in (c, loo))
        last = runs[i][max(runs[i])]
        n = last["cost/rollouts_generated"] / last["prompts_drawn"]
        m = last["cost/rollouts_trained"] / last["groups_trained"]
        print(f"| {d.name} | {n:.0f} -> {m:.0f} | "
              f"{k['tokens_padded'] / k['decode_steps']:.0f} | {t:.3f} | {t * (1 + p):.3f} | {100 * p:+.1f} % | "
              f"{t * (1 + q):.3f} | {100 * q:+.1f} % |")
    cfg = compose(["experiment=demo"])
    arch = model_architecture(cfg.model)
    seqs = sorted({r["cost/rollouts_generated"] for rows in runs for r in rows.values()})
    lengths = [r["cost/tokens_generated"] / r["cost/rollouts_generated"] for rows in runs for r in rows.values()]
    kept = sorted({r["cost/rollouts_trained"] // max(1, r.get("groups_trained", 1)) for rows in runs
                   for r in rows.values()})
    origin = {k: "0: not told apart in the demo (5-6-token completions, ~8-token prompts)" for k in c}
    origin.update({k: "fitted to the demo's metrics rows (median time/step per run against the cost ledger's "
                      "counts)" for k in CPU_FREE})
    origin["reference_token"] = (f"from the update: a quarter of it ({REFERENCE_SHARE:.0%} of update + reference); "
                                 "the demo makes no reference pass")
    return profiles.Profile(
        name="cpu", machine=f"2 x86_64 cores, shared: one thread per run, load average {load:.1f} while measured",
        backend="hf",
        device="cpu", model="the demo's tiny Qwen2 (built in code), full-parameter float32",
        model_params=float(arch.params()), kv_bytes_per_token=float(arch.kv_bytes_per_token(4)), constants=c,
        origin=origin, fitted_range={"sequences": [min(seqs), max(seqs)],
                                     "completion_tokens": [round(min(lengths), 1), round(max(lengths), 1)],
                                     "kept": [min(kept), max(kept)]},
        source=f"train.py experiment=demo, {len(runs)} runs: " + ", ".join(d.name for d in run_dirs),
        date=datetime.date.today().isoformat())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--paper", type=Path, help="folder of the authors' <setting>-Run<k>.json")
    p.add_argument("--h100", type=Path, help="an offline-gpu-check.json with a random_weights step")
    p.add_argument("--cpu", type=Path, nargs="+", help="demo run directories (metrics.jsonl with the cost ledger)")
    p.add_argument("--load", type=float, default=None, help="--cpu: the load average while they ran (recorded)")
    p.add_argument("--write", action="store_true", help=f"write the profiles into {profiles.SHIPPED}")
    a = p.parse_args(argv)
    built = ([paper(a.paper)] if a.paper else []) + ([h100(a.h100)] if a.h100 else []) + ([cpu(a.cpu, a.load if a.load is not None else os.getloadavg()[0])] if a.cpu else [])
    if not built:
        p.error("give --paper, --h100 and/or --cpu")
    for prof in built:
        print(f"\n{prof.name}: " + ", ".join(f"{k} {v:.4g}" for k, v in prof.constants.items()))
        if a.write:
            print(f"written: {profiles.save(prof, profiles.SHIPPED)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
