"""PODS for TRL: a `trl.GRPOTrainer` that generates n completions per prompt and trains on m.

    from pods.integrations.trl import PODSConfig, PODSTrainer
    args = PODSConfig(output_dir="out", num_generations=16, pods_m=4, pods_rule="max_variance",
                      per_device_train_batch_size=16, gradient_accumulation_steps=2)
    PODSTrainer(model=..., reward_funcs=[...], args=args, train_dataset=ds).train()

Launch on several GPUs with `accelerate launch` (scripts/train_trl.py, docs/multi-gpu.md). Only TRL's
extension points are used: `_calculate_rewards` (to read the rewards TRL gathered over all
processes) and `_generate_and_score_completions` (to down-sample its output); generation, the
loss, vLLM and DeepSpeed stay TRL's.

Batch bookkeeping. TRL's batch fields count *generated* completions, as in plain TRL: each process
generates `per_device_train_batch_size * steps_per_generation` completions per generation round,
the round holds G = generation_batch_size / n whole prompt groups of n = num_generations
completions, and one group may span processes. PODS then
  1. gathers the rewards of the round, [G, n] (TRL gathers them over processes),
  2. selects m per group with `pods.core.downsample.select` (identically on every process),
  3. recomputes the group advantages over the m kept (`pods.core.advantages.group_advantages`),
  4. gives each process an equal, consecutive share of the G * m kept rollouts (sorted by group):
     its own rows when every group lies on one process (no communication), otherwise the kept
     rows are gathered and re-split, so every process trains on the same number of sequences,
  5. TRL splits that share into `steps_per_generation` loss micro-batches.
So each loss micro-batch holds per_device_train_batch_size * m / n sequences
(`PODSConfig.pods_micro_batch_size`), which must be a whole number: checked at config time.

`prompt_repeats = k` (sampler.py) makes each sampled prompt fill k consecutive groups of n, the
authors' 8-GPU layout (one prompt per process per step, n x ga completions of it).

GRPO-GA, the paper's comparison, is TRL's GRPOTrainer with that sampler (`GRPOGATrainer`,
`GRPOGAConfig`): `grpo_ga_kwargs(pods_kwargs)` gives the arguments that generate as many rollouts
of as many prompts per optimizer step with the same loss micro-batch and train on all of them
through n/m times more gradient accumulation.

Resuming: PODSTrainer keeps its generation-round counter (which seeds the `random` rule) in every
checkpoint (`PODSRound`), so `trainer.train(resume_from_checkpoint=...)` continues its draws.

Unsloth (one GPU): import unsloth first (it patches trl), then build both classes on the patched
ones: `pods_config_class(trl.GRPOConfig)`, `pods_trainer_class(trl.GRPOTrainer)`; the trainer mixin
needs only the two methods named above and the output dict of `_generate_and_score_completions`.
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

from pods.integrations.trl.config import (GRPOGAConfig, PODSConfig, check_pods_args, check_prompt_repeats,
                                          grpo_ga_config_class, grpo_ga_kwargs, pods_config_class)
from pods.integrations.trl.rewards import trl_reward_funcs
from pods.integrations.trl.sampler import PromptRepeatsMixin, repeat_prompt_sampler
from pods.integrations.trl.trainer import (GRPOGATrainer, PODSMixin, PODSTrainer, grpo_ga_trainer_class,
                                           pods_trainer_class, selection_generator)

__all__ = ["GRPOGAConfig", "GRPOGATrainer", "PODSConfig", "PODSMixin", "PODSTrainer", "PromptRepeatsMixin",
           "check_pods_args", "check_prompt_repeats", "grpo_ga_config_class", "grpo_ga_kwargs",
           "grpo_ga_trainer_class", "pods_config_class", "pods_trainer_class", "repeat_prompt_sampler",
           "selection_generator", "trl_reward_funcs"]
