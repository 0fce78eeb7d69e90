"""Train with GRPO-PODS / GRPO / GRPO-GA (`pods train`, train.py): config/train.yaml composed by Hydra.

    pods train experiment=demo                                    # the CPU demo (= python train.py experiment=demo)
    pods train model=tiny dataset=arithmetic rl.max_steps=2 rl.n=8 rl.m=4
    pods train experiment=gsm8k_main                              # the paper's GRPO 16/16 vs PODS 64/16 (GPU)
    pods train -m rl.n=16,32,64 rl.m=16                           # a sweep

The run goes to checkpoints/<run_name>/ (docs/training.md); rerunning the same command resumes
from its newest intact checkpoint. TRL's names work as aliases with a note (`num_generations=16`
is `rl.n=16`, `learning_rate=1e-6` is `optim.lr=1e-6`; table: docs/vocabulary.md), and an unknown
key is refused with the closest one ("did you mean rl.n?"). Every setting and data file is checked
before a model loads (docs/configuration.md). Exit codes (docs/long-runs.md): 0 done, or stopped by
Ctrl-C (SIGINT) after checkpointing the step in progress; 143 stopped by SIGTERM after checkpointing
(a scheduler may requeue it); 129 stopped by SIGHUP (the terminal closed) after checkpointing; 2 a problem to fix, one message: a setting or data file, a failed write
("no space left on device: <path>"), non-finite steps, no intact checkpoint, or the run directory in
use by another process; 130 / 143 / 129 a second signal (exit at once), or a signal during the final held-out
evaluation (training saved); 1 an unexpected error (its traceback, and what the program was doing).
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pods.cli import HydraApp, quiet_openmp, set_cpu_threads, show, sweep_job
from pods.commands import hydra_help
from pods.config.files import CONFIG_DIR, groups

if TYPE_CHECKING:  # omegaconf loads with Hydra, after --help
    from omegaconf import DictConfig

quiet_openmp()  # before torch loads: idle OpenMP threads sleep (pods/cli.py, CPU threads)

PROG = "train.py"  # how this program was started: "train.py" (python train.py) or "pods train"


def command(args: list[str] | None = None, prog: str = PROG) -> str:
    """The command line `prog args` (default args: this program's own), as the user would type it again
    (`uv run` kept, `python` before a script)."""
    launcher = ["uv", "run"] if os.environ.get("UV_RUN_RECURSION_DEPTH") else []  # set by `uv run` for its child
    words = shlex.split(prog)
    return shlex.join([*launcher, *(["python"] if words[0].endswith(".py") else []), *words,
                       *(sys.argv[1:] if args is None else args)])


def resume_hint(prog: str = PROG) -> str:
    """How to resume: this command, or in a sweep's job (its own process) the job's own command."""
    job = sweep_job()
    if job is None:
        return "rerun the same command to resume: " + command(prog=prog)
    return "rerun the sweep to resume, or this job alone: " + command(job[1], prog)


class Stop(Exception):
    """SIGTERM or SIGHUP during the final evaluation (raised by its handler; args[0]: the signal)."""


def _raise_stop(signum, frame):
    raise Stop(signum)


def final_evaluation(run_dir: Path, prog: str = PROG) -> None:
    """The held-out before/after line; SIGTERM, SIGHUP or Ctrl-C stop it with a message saying the training is saved."""
    from pods.evaluation.heldout import final_heldout

    previous = {s: signal.signal(s, _raise_stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        final_heldout(run_dir)
    except (Stop, KeyboardInterrupt) as stop:
        signum = stop.args[0] if isinstance(stop, Stop) else signal.SIGINT
        signal.signal(signum, signal.SIG_IGN)  # a second copy of the signal must not cut the message short
        try:
            print(f"stopped by {signal.Signals(signum).name} during the final evaluation; the training itself is "
                  f"complete and saved in {run_dir}. Rerunning the same command trains nothing more and only "
                  f"evaluates what is missing: {command(prog=prog)}", file=sys.stderr)
        except OSError:  # SIGHUP: the terminal that would show it is gone
            pass
        sys.exit(128 + signum)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def describe(cfg: DictConfig) -> str:
    """'training checkpoints/<run>' for the line under an unexpected traceback."""
    from pods.config import run_dir

    try:
        return f"training {run_dir(cfg)}"
    except Exception:  # noqa: BLE001 - a config too broken to name its run: validate says why
        return "training"


def run(cfg: DictConfig, prog: str = PROG) -> None:
    """Train; our own errors (pods.errors.PodsError) reach HydraApp.job, signals and failed writes exit here."""
    from pods.io import WriteError
    from pods.run.guard import Interrupted
    from pods.run.trainer import train

    set_cpu_threads()  # PODS_THREADS, else as pods.cli.cpu_threads chooses
    try:
        run_dir = train(cfg)
    except Interrupted as stop:
        # exiting now: a late copy of the same signal (`uv run` passes Ctrl-C on again) must not turn 0 into 130
        signal.signal(stop.signum, signal.SIG_IGN)
        print(f"{stop}; {resume_hint(prog)}", file=sys.stderr)
        sys.exit(stop.exit_code)
    except WriteError as err:
        print(f"{prog}: error: {err}. Files already written (earlier checkpoints, metrics.jsonl) are intact; "
              f"free the space or fix the permissions, then {resume_hint(prog)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:  # Ctrl-C before the training loop started: nothing trained, nothing to save
        print(f"interrupted before training started; nothing was trained in this attempt; {resume_hint(prog)}",
              file=sys.stderr)
        sys.exit(130)
    print(f"run directory: {run_dir}")
    if cfg.get("evaluation"):  # held-out accuracy before and after RL (the CPU demo sets this)
        final_evaluation(run_dir, prog)


def cli_overrides(argv: list[str], prog: str = PROG) -> list[str]:
    """argv with TRL's names replaced by ours (a note each); exit 2 with a hint on an unknown key."""
    from pods.config.aliases import rewrite_overrides

    try:
        args, notes = rewrite_overrides(argv, groups())
    except ValueError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        sys.exit(2)
    for note in notes:
        print(note, file=sys.stderr)
    return args


HELP = """usage: {prog} [key=value ...] [group=option ...] [-m] [--cfg job] [--config-help]

arguments:
  key=value       a setting of config/train.yaml: rl.n=64 rl.m=16 rl.rule=max_variance; TRL's
                  names work (num_generations=64); an unknown key is refused with the closest one
  group=option    a file of config/<group>/:
{groups}
options:
  -m, --multirun  a sweep: a job per value of a comma list (rl.n=16,32,64), each in its own process
  --cfg job       print the composed config and exit
  --config-help   every setting with its default (Hydra's help: the whole config, long)
  --hydra-help    Hydra's own options
  -h, --help      this help

Rerunning the same command resumes from the newest intact checkpoint. Exit codes: 0 done, or
stopped by Ctrl-C after saving the step; 129 / 143 stopped by SIGHUP / SIGTERM after saving;
2 a problem to fix (one message); 1 a bug (its traceback). docs/training.md, docs/configuration.md.
"""


def main(argv: list[str] | None = None, prog: str = PROG) -> None:
    """Run `prog argv` (default: this process's own arguments): Hydra composes config/train.yaml with them."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:  # before Hydra loads: a screen, not the config dump
        sys.exit(show(hydra_help(__doc__, HELP, prog, "train")))
    import hydra

    app = HydraApp(prog)  # errors -> messages (exit 2), bugs -> traceback + what it was doing (pods/cli.py)

    @hydra.main(config_path=str(CONFIG_DIR), config_name="train", version_base=None)
    def job(cfg: DictConfig):  # a sweep's launcher runs it in each job's process (pickled with `app`, `prog`)
        return app.job(lambda: run(cfg, prog), doing=describe(cfg))  # a failed sweep job hands its JobFailure back

    sys.argv[1:] = cli_overrides(["--help" if a == "--config-help" else a for a in argv], prog)  # Hydra's dump
    app.main(job)
