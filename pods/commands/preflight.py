"""Will a train.py config fit a GPU, and how long will its steps take? Memory and time, before any model loads.

    pods preflight --gpu L40S experiment=gsm8k_main
    pods preflight --gpu-memory-gib 80 experiment=gsm8k_main backend=vllm model.lora.rank=0 model.load_in_4bit=false
    pods preflight --presets --gpu L40S --gpu H100     # every preset and its sweep's jobs
    pods preflight --time --gpu L40S experiment=gsm8k_main      # + seconds per step, wall time
    pods preflight --time --profile my-gpu.json -m experiment=n_scaling --json   # a line per job

Prints the table of pods.backends.memory (one row per item, with how it was counted) and ends with
"fits: X GiB of N GiB" (exit 0) or "does not fit: X GiB needed, N GiB available; try ..." (exit 3: on any
of the GPUs asked for). --gpu-memory-gib works with --presets too (one column). --time (or --profile) adds
"seconds per step: S (...)" from pods.backends.speed on the GPU's profile for the run's backend (or --profile's),
with notes where the setting lies outside what the profile was fitted on; -m one line per job of the preset's
sweep; --json one JSON object per check (seconds_per_step, steps_per_hour, wall_seconds, fits, ...).
A config error, an unknown or bad profile, a profile of another backend: one message, exit 2.
The arguments after the options are train.py's overrides.
The model's numbers come from its config/model/*.yaml (`model.architecture`), else from its
config.json (a local directory, or the hub). train.py runs the same check on a GPU before loading.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys

from pods.backends import memory, speed
from pods.backends.checks import model_architecture
from pods.cli import run_script
from pods.commands import parser
from pods.config.aliases import rewrite_overrides
from pods.config.files import CONFIG_DIR, compose, groups
from pods.core import profiles
from pods.errors import ConfigError

FITS, DOES_NOT_FIT = 0, 3


def positive(unit: str, example: str):
    """An argparse type: a positive, finite number of `unit` (argparse says which value was wrong)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: not a number of {unit}") from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be a positive, finite number of {unit} ({example})")
        return value
    return parse


gib = positive("GiB", "e.g. 80")  # --gpu-memory-gib
tokens = positive("tokens", "a mean, e.g. 230")  # --prompt-tokens / --completion-tokens


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
    from pods.config.checks import validate  # torch: once the arguments are read

    validate(cfg, cuda=True)
    return cfg


def one(overrides: list[str], gpu: str, total: float, args=None) -> int:
    cfg = config(overrides)
    arch, w = model_architecture(cfg.model), memory.workload(cfg)
    est = memory.estimate(arch, w, total_gib=total)
    fits, line = memory.verdict(arch, w, total_gib=total, available_gib=total, est=est)
    timed = timing(cfg, arch, gpu, args) if args is not None and args.time else None
    if args is not None and args.json:
        print(json.dumps({"overrides": overrides, "gpu": gpu, "gpu_gib": total, "memory_gib": est.total_gib,
                          "fits": fits, **(timed.as_dict() if timed else {})}))
        return FITS if fits else DOES_NOT_FIT
    print(f"memory estimate: {memory.describe(str(cfg.model.name), arch, w)}, on {gpu} ({total:.2f} GiB)")
    print(est.table())
    print(f"  generation: {est.generation}" + "".join(f"\n  note: {n}" for n in w.notes))
    if str(cfg.backend.get("device", "auto")) == "cpu":
        print("  note: backend.device=cpu: this run trains on the CPU; the table is what it would need on a GPU")
    print(line)
    if timed:
        print(timed.line() + "".join(f"\n  note: {n}" for n in timed.notes))
    return FITS if fits else DOES_NOT_FIT


def timing(cfg, arch, gpu: str, args) -> speed.TimeEstimate:
    """The time preflight of one config: --profile, else the GPU's (the CPU's for backend.device=cpu) profile of
    the run's backend; ConfigError for an unknown or bad profile, or one of another backend."""
    backend = str(cfg.backend.name)
    on_cpu = str(cfg.backend.get("device", "auto")) == "cpu"
    prof = profiles.load(args.profile) if args.profile else profiles.for_machine(None if on_cpu else gpu, backend)
    prof.check_backend(backend)
    return speed.estimate(cfg, prof, arch, prompt_tokens=args.prompt_tokens, completion_tokens=args.completion_tokens)


def sweep(overrides: list[str], gpu: str, total: float, args) -> int:
    """-m: one line (or JSON object) per job of the preset's sweep (hydra.sweeper.params)."""
    preset = next((o.split("=", 1)[1] for o in overrides if o.startswith("experiment=")), None)
    if preset is None:
        raise ConfigError("-m runs the jobs of a preset's sweep: give experiment=NAME")
    codes, said = [], set()
    for job in sweep_jobs(preset):
        job_overrides = [*overrides, *job]
        if args.json:
            codes.append(one(job_overrides, gpu, total, args))
            continue
        cfg = config(job_overrides)
        arch, w = model_architecture(cfg.model), memory.workload(cfg)
        fits, _ = memory.verdict(arch, w, total_gib=total, available_gib=total)
        est = memory.estimate(arch, w, total_gib=total)
        timed = timing(cfg, arch, gpu, args) if args.time else None
        print(f"{' '.join(job) or '-'}: {'fits' if fits else 'DOES NOT FIT'} ({est.total_gib:.1f} GiB of "
              f"{total:.1f} on {gpu})" + (f"; {timed.line()}" if timed else "")
              + "".join(f"\n  note: {n}" for n in (timed.notes if timed else []) if n not in said))
        said |= set(timed.notes if timed else [])
        codes.append(FITS if fits else DOES_NOT_FIT)
    return max(codes)


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
    p = parser(prog, __doc__, usage="%(prog)s [options] [key=value ...]   (train.py's overrides)",
               epilog="Exit 0: fits; 3: does not fit on a GPU asked for; 2: a config problem. docs/gpu.md.")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--gpu", action="append", choices=sorted(memory.GPUS), metavar="NAME",
                      help="a GPU by name, repeatable: each is checked (default L40S; --presets: L40S and H100): "
                      + ", ".join(sorted(memory.GPUS)))
    size.add_argument("--gpu-memory-gib", type=gib, default=None, metavar="GIB", help="the GPU's memory in GiB")
    p.add_argument("--presets", action="store_true", help="every config/experiment preset and its sweep's jobs")
    p.add_argument("--time", action="store_true", help="also seconds per step and the run's wall time (a profile)")
    p.add_argument("--profile", default=None, metavar="NAME|FILE",
                   help=f"the machine profile of --time (implies it; default: the GPU's for the run's backend; known: "
                        f"{', '.join(profiles.known())})")
    p.add_argument("--prompt-tokens", type=tokens, default=None, help="--time: mean prompt tokens (default: assumed)")
    p.add_argument("--completion-tokens", type=tokens, default=None,
                   help="--time: mean completion tokens (default: assumed)")
    p.add_argument("-m", "--multirun", action="store_true", help="one line per job of experiment=NAME's sweep")
    p.add_argument("--json", action="store_true", help="one JSON object per check (seconds_per_step, fits, ...)")
    args, overrides = p.parse_known_args(argv)
    args.time = args.time or args.profile is not None
    flags = [o for o in overrides if o.startswith("-")]
    if flags:
        p.error(f"unknown option(s) {flags}; train.py's overrides are key=value")
    if args.presets:
        return presets(gpu_sizes(args, ["L40S", "H100"]), overrides)
    codes = []
    for i, (name, total) in enumerate(gpu_sizes(args, ["L40S"])):
        if i and not args.json:
            print()
        codes.append(sweep(overrides, name, total, args) if args.multirun else one(overrides, name, total, args))
    return max(codes)  # DOES_NOT_FIT when one of the GPUs is too small


def main(argv=None, prog: str = "preflight.py") -> int:
    """`run` with a config problem as one message and exit code 2 (pods.cli)."""
    return run_script(lambda a: run(a, prog), argv, program=prog)

