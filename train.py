"""Train with GRPO-PODS / GRPO / GRPO-GA (Hydra entry point; config in config/train.yaml).

    uv run python train.py experiment=demo                        # the CPU demo
    uv run python train.py model=tiny dataset=arithmetic rl.max_steps=2 rl.n=8 rl.m=4
    uv run python train.py experiment=gsm8k_main                  # the paper's GRPO 16/16 vs PODS 64/16 (GPU)
    uv run python train.py -m rl.n=16,32,64 rl.m=16               # a sweep

The run goes to checkpoints/<run_name>/ (see pods/trainer.py); rerunning the same command resumes
from its newest intact checkpoint. TRL's names work as aliases with a note (`num_generations=16`
is `rl.n=16`, `learning_rate=1e-6` is `optim.lr=1e-6`; table: docs/vocabulary.md), and an unknown
key is refused with the closest one ("did you mean rl.n?"). Exit codes (docs/long-runs.md): 0 done,
or stopped by Ctrl-C (SIGINT) after checkpointing the step in progress; 143 stopped by SIGTERM after
checkpointing (a scheduler may requeue it); 2 a config problem, a failed write ("no space left on
device: <path>"), non-finite steps, or no intact checkpoint; 130 / 143 a second signal (exit at once).
"""

import os
import shlex
import signal
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig


def resume_hint() -> str:
    return "rerun the same command to resume: " + shlex.join(["python", *sys.argv])


@hydra.main(config_path="config", config_name="train", version_base=None)
def main(cfg: DictConfig) -> None:
    import torch

    from pods.checkpoint import CheckpointError
    from pods.config import ConfigError
    from pods.guard import Interrupted, NonFiniteError
    from pods.io import WriteError
    from pods.trainer import train

    if "PODS_THREADS" in os.environ:
        torch.set_num_threads(int(os.environ["PODS_THREADS"]))
    try:
        run_dir = train(cfg)
    except Interrupted as stop:
        # exiting now: a late copy of the same signal (`uv run` passes Ctrl-C on again) must not turn 0 into 130
        signal.signal(stop.signum, signal.SIG_IGN)
        print(f"{stop}; {resume_hint()}", file=sys.stderr)
        sys.exit(stop.exit_code)
    except WriteError as err:
        print(f"error: {err}. Files already written (earlier checkpoints, metrics.jsonl) are intact; "
              f"free the space or fix the permissions, then {resume_hint()}", file=sys.stderr)
        sys.exit(2)
    except (ConfigError, CheckpointError, NonFiniteError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:  # Ctrl-C before the training loop started: nothing trained, nothing to save
        print(f"interrupted before training started; nothing was trained in this attempt; {resume_hint()}",
              file=sys.stderr)
        sys.exit(130)
    print(f"run directory: {run_dir}")
    if cfg.get("evaluation"):  # held-out accuracy of the final checkpoint (the CPU demo sets this)
        from pods.heldout import final_heldout

        try:
            final_heldout(run_dir)
        except KeyboardInterrupt:
            print("interrupted during the final evaluation; the training itself is complete and saved",
                  file=sys.stderr)
            sys.exit(130)


def cli_overrides(argv: list[str]) -> list[str]:
    """argv with TRL's names replaced by ours (a note each); exit 2 with a hint on an unknown key."""
    from pods.aliases import rewrite_overrides

    groups = [p.name for p in (Path(__file__).resolve().parent / "config").iterdir() if p.is_dir()]
    try:
        args, notes = rewrite_overrides(argv, groups)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    for note in notes:
        print(note, file=sys.stderr)
    return args


if __name__ == "__main__":
    sys.argv[1:] = cli_overrides(sys.argv[1:])
    main()
