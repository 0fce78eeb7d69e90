"""Will a train.py config fit a GPU? The memory estimate, without a GPU and without downloading the model.

    uv run python scripts/preflight.py --gpu L40S experiment=gsm8k_main
    uv run python scripts/preflight.py --gpu-memory-gib 80 experiment=gsm8k_main backend=vllm model.lora.rank=0 \
        model.load_in_4bit=false
    uv run python scripts/preflight.py --presets --gpu L40S --gpu H100     # every preset and its sweep's jobs
    uv run python scripts/preflight.py --gpu L40S --gpu H100 experiment=gsm8k_main   # one check per GPU

Prints the table of pods.backends.memory (one row per item, with how it was counted) and ends with
"fits: X GiB of N GiB" (exit 0) or "does not fit: X GiB needed, N GiB available; try ..." (exit 3: on any
of the GPUs asked for). --gpu-memory-gib works with --presets too (one column).
A config error is one message, exit 2. The arguments after the options are train.py's overrides.
The model's numbers come from its config/model/*.yaml (`model.architecture`), else from its
config.json (a local directory, or the hub). train.py runs the same check on a GPU before loading.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys

from pods.backends import memory
from pods.backends.checks import model_architecture
from pods.cli import run_script
from pods.config.aliases import rewrite_overrides
from pods.config.checks import validate
from pods.config.files import CONFIG_DIR, compose, groups
from pods.errors import ConfigError

FITS, DOES_NOT_FIT = 0, 3


def gib(text: str) -> float:
    """--gpu-memory-gib's value: a positive, finite number of GiB (argparse says which value was wrong)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number of GiB") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a positive, finite number of GiB (e.g. 80)")
    return value


def gpu_sizes(args, default: list[str]) -> list[tuple[str, float]]:
    """[(label, GiB)] of every GPU asked for: --gpu-memory-gib, else each --gpu, else `default`."""
    if args.gpu_memory_gib is not None:
        return [(f"{args.gpu_memory_gib:g} GiB", args.gpu_memory_gib)]
    return [(name, memory.GPUS[name]) for name in (args.gpu or default)]


def config(overrides: list[str]):
    """The composed, checked config of train.py with `overrides` (as on a GPU machine)."""
    try:
        args, notes = rewrite_overrides(overrides, groups())
    except ValueError as err:
        raise ConfigError(str(err)) from err
    for note in notes:
        print(note, file=sys.stderr)
    try:
        cfg = compose(args)
    except Exception as err:  # Hydra's composition errors: an unknown group option, a bad value
        raise ConfigError(f"cannot compose the config: {str(err).splitlines()[0]}") from err
    validate(cfg, cuda=True)
    return cfg


def one(overrides: list[str], gpu: str, total: float) -> int:
    cfg = config(overrides)
    arch, w = model_architecture(cfg.model), memory.workload(cfg)
    est = memory.estimate(arch, w, total_gib=total)
    print(f"memory estimate: {memory.describe(str(cfg.model.name), arch, w)}, on {gpu} ({total:.2f} GiB)")
    print(est.table())
    print(f"  generation: {est.generation}" + "".join(f"\n  note: {n}" for n in w.notes))
    if str(cfg.backend.get("device", "auto")) == "cpu":
        print("  note: backend.device=cpu: this run trains on the CPU; the table is what it would need on a GPU")
    fits, line = memory.verdict(arch, w, total_gib=total, available_gib=total, est=est)
    print(line)
    return FITS if fits else DOES_NOT_FIT


def sweep_jobs(preset: str) -> list[list[str]]:
    """The overrides of each job `train.py -m experiment=<preset>` runs (its hydra.sweeper.params)."""
    params = compose([f"experiment={preset}"], hydra=True).hydra.sweeper.params or {}
    axes = [[f"{key}={v}" for v in str(values).split(",")] for key, values in params.items()]
    return [list(job) for job in itertools.product(*axes)] or [[]]


def presets(gpus: list[tuple[str, float]], extra: list[str]) -> int:
    """One line per preset and sweep job: the estimate on each GPU ([(label, GiB)])."""
    names = sorted(p.stem for p in (CONFIG_DIR / "experiment").glob("*.yaml"))
    print("| preset | job | backend | " + " | ".join(f"{g} ({size:.1f} GiB)" for g, size in gpus)
          + " | generation |")
    print("|---|---|---|" + "---|" * len(gpus) + "---|")
    for name in names:
        for job in sweep_jobs(name):
            cfg = config([f"experiment={name}", *job, *extra])
            arch, w = model_architecture(cfg.model), memory.workload(cfg)
            estimates = [memory.estimate(arch, w, total_gib=size) for _, size in gpus]
            cells = [f"{est.total_gib:.1f} GiB {'fits' if est.total_gib <= size else 'DOES NOT FIT'}"
                     for (_, size), est in zip(gpus, estimates)]
            print(f"| {name} | {' '.join(job) or '-'} | {w.backend} | " + " | ".join(cells)
                  + f" | {estimates[0].generation} |")
    return 0


def run(argv=None, prog: str = "preflight.py") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--gpu", action="append", choices=sorted(memory.GPUS),
                      help="a GPU by name, repeatable: each is checked (default L40S; --presets: L40S and H100)")
    size.add_argument("--gpu-memory-gib", type=gib, default=None, help="the GPU's memory in GiB")
    p.add_argument("--presets", action="store_true", help="every config/experiment preset and its sweep's jobs")
    args, overrides = p.parse_known_args(argv)
    flags = [o for o in overrides if o.startswith("-")]
    if flags:
        p.error(f"unknown option(s) {flags}; train.py's overrides are key=value")
    if args.presets:
        return presets(gpu_sizes(args, ["L40S", "H100"]), overrides)
    codes = []
    for i, (name, total) in enumerate(gpu_sizes(args, ["L40S"])):
        if i:
            print()
        codes.append(one(overrides, name, total))
    return max(codes)  # DOES_NOT_FIT when one of the GPUs is too small


def main(argv=None, prog: str = "preflight.py") -> int:
    """`run` with a config problem as one message and exit code 2 (pods.cli)."""
    return run_script(lambda a: run(a, prog), argv, program=prog)

