"""PODS for TRL: a `trl.GRPOTrainer` that generates n completions per prompt and trains on m.

    from pods.integrations.trl import PODSConfig, PODSTrainer
    args = PODSConfig(output_dir="out", num_generations=16, pods_m=4, per_device_train_batch_size=16)
    PODSTrainer(model=..., reward_funcs=[...], args=args, train_dataset=ds).train()

Contract: TRL's batch fields count generated completions. Each round's rewards [G, n], gathered over processes, keep
m per group (identically everywhere), advantages are recomputed over the m, and each process trains an equal share in
micro-batches of per_device_train_batch_size * m / n sequences (whole: checked by PODSConfig). GRPOGATrainer and
grpo_ga_kwargs give the paper's baseline. docs/multi-gpu.md (batch bookkeeping, prompt_repeats, resume, Unsloth).
"""

from __future__ import annotations

import os
import sys

import torch

if not torch.cuda.is_available() and "triton" not in sys.modules:
    # TRL 1.15 patches in a Triton kernel that only runs interpreted on a machine without CUDA; the
    # switch must be set before triton is first imported (an explicit TRITON_INTERPRET wins)
    os.environ.setdefault("TRITON_INTERPRET", "1")

try:  # TRL is a dependency, but keep the import error readable
    import trl  # noqa: F401
except ImportError as err:  # pragma: no cover
    raise ImportError("pods.integrations.trl needs `trl` (pinned in pyproject.toml): run `uv sync`") from err

from pods.integrations.trl.config import (
    GRPOGAConfig,
    PODSConfig,
    check_pods_args,
    check_prompt_repeats,
    grpo_ga_config_class,
    grpo_ga_kwargs,
    pods_config_class,
)
from pods.integrations.trl.rewards import trl_reward_funcs
from pods.integrations.trl.sampler import PromptRepeatsMixin, repeat_prompt_sampler
from pods.integrations.trl.trainer import (
    GRPOGATrainer,
    PODSMixin,
    PODSTrainer,
    grpo_ga_trainer_class,
    pods_trainer_class,
    selection_generator,
)

__all__ = ["GRPOGAConfig", "GRPOGATrainer", "PODSConfig", "PODSMixin", "PODSTrainer", "PromptRepeatsMixin",
           "check_pods_args", "check_prompt_repeats", "grpo_ga_config_class", "grpo_ga_kwargs",
           "grpo_ga_trainer_class", "pods_config_class", "pods_trainer_class", "repeat_prompt_sampler",
           "selection_generator", "trl_reward_funcs"]
