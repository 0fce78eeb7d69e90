"""Train with GRPO-PODS / GRPO / GRPO-GA (Hydra entry point; config in config/train.yaml).

    uv run python train.py experiment=demo                        # the CPU demo
    uv run python train.py model=tiny dataset=arithmetic rl.max_steps=2 rl.n=8 rl.m=4
    uv run python train.py experiment=gsm8k_main                  # the paper's GRPO 16/16 vs PODS 64/16 (GPU)
    uv run python train.py -m rl.n=16,32,64 rl.m=16               # a sweep

The run goes to checkpoints/<run_name>/ (see pods/trainer.py); rerunning the same command resumes
from its latest complete checkpoint.
"""

import os
import sys

import hydra
from omegaconf import DictConfig


@hydra.main(config_path="config", config_name="train", version_base=None)
def main(cfg: DictConfig) -> None:
    import torch

    from pods.config import ConfigError
    from pods.trainer import train

    if "PODS_THREADS" in os.environ:
        torch.set_num_threads(int(os.environ["PODS_THREADS"]))
    try:
        run_dir = train(cfg)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    print(f"run directory: {run_dir}")
    if cfg.get("evaluation"):  # held-out accuracy of the final checkpoint (the CPU demo sets this)
        from pods.heldout import final_heldout

        final_heldout(run_dir)


if __name__ == "__main__":
    main()
