"""PODSConfig and GRPOGAConfig: `trl.GRPOConfig` plus the PODS fields, checked at construction.

    from pods.integrations.trl import PODSConfig, GRPOGAConfig, grpo_ga_kwargs
    args = PODSConfig(output_dir="out", num_generations=16, pods_m=4, per_device_train_batch_size=16)
    ga = GRPOGAConfig(**grpo_ga_kwargs({"num_generations": 16, "pods_m": 4, ...}))  # the matching GRPO-GA

PODSConfig adds `pods_m`, `pods_rule`, `prompt_repeats` and the lab's settings (pods/integrations/trl/lab_settings.py:
train.py's lab keys in TRL's spelling), GRPOGAConfig `prompt_repeats` (k: each sampled prompt fills k consecutive
groups of n, pods/integrations/trl/sampler.py); a bad value raises ValueError saying what to change. The batch
bookkeeping: docs/multi-gpu.md.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import torch
from trl import GRPOConfig

from pods.core.downsample import RULES
from pods.integrations.trl.lab_settings import LAB_ANNOTATIONS, check_lab_args, lab_fields


def check_pods_args(args) -> None:
    """Validate the PODS fields of a (post-init) GRPO config; ValueError saying what to change."""
    n, m = args.num_generations, args.pods_m
    if args.pods_rule not in RULES:
        raise ValueError(f"unknown pods_rule {args.pods_rule!r}; valid rules: {', '.join(RULES)}")
    if m is None:
        raise ValueError("PODSConfig needs pods_m (rollouts kept per prompt); for plain GRPO use trl.GRPOConfig")
    if isinstance(m, bool) or not isinstance(m, int) or not 2 <= m <= n:
        raise ValueError(
            f"pods_m must be an integer in 2..num_generations={n}, got {m!r} "
            "(advantages over a single kept rollout are always zero)"
        )
    if args.pods_rule == "none" and m != n:
        raise ValueError(f"pods_rule 'none' keeps every rollout: set pods_m = num_generations = {n} (got {m})")
    per_device = args.per_device_train_batch_size
    if per_device * m % n:
        raise ValueError(
            f"each loss micro-batch holds per_device_train_batch_size * m / n = {per_device} * {m} / {n} "
            f"sequences, which is not a whole number: make per_device_train_batch_size (completions "
            f"generated per device per accumulation step) a multiple of {n // math.gcd(n, m)}"
        )
    if getattr(args, "use_vllm", False) and getattr(args, "vllm_importance_sampling_correction", False):
        warnings.warn(
            "PODS with vLLM: TRL's vllm_importance_sampling_correction scores all n generated completions with the "
            "training model before PODS keeps m of them (about doubling the update cost); set "
            "vllm_importance_sampling_correction=False as config/trl/*-vllm.yaml do", stacklevel=3)
    if args.multi_objective_aggregation != "sum_then_normalize":
        raise ValueError(
            "PODS selects on the weighted sum of the reward functions: set "
            f"multi_objective_aggregation='sum_then_normalize' (got {args.multi_objective_aggregation!r})"
        )


def check_prompt_repeats(args) -> None:
    """Validate `prompt_repeats` of a (post-init) config; ValueError saying what to change."""
    k, n = args.prompt_repeats, args.num_generations
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"prompt_repeats must be a positive integer (groups of n per sampled prompt), got {k!r}")
    if args.generation_batch_size % (n * k):
        raise ValueError(
            f"prompt_repeats={k}: a generation round of generation_batch_size={args.generation_batch_size} "
            f"completions must hold whole prompts of prompt_repeats * num_generations = {k * n} completions; "
            f"make per_device_train_batch_size * steps_per_generation * processes a multiple of {k * n}"
        )


def _repeats_field():
    return field(default=1, metadata={"help": "consecutive groups of num_generations completions per sampled "
                                              "prompt, each selected and normalised on its own (1: TRL's sampler)"})


def _cpu_as_cpu(base: type) -> property:
    """`base.device`, with a CPU rank's `cpu:<index>` (accelerate's name on several CPU processes) spelled `cpu`:
    transformers loads a multi-process run's optimizer with map_location=args.device, which torch.load cannot map
    to `cpu:0`, so a 2-process CPU run could not resume (transformers 5.17, accelerate 1.15, torch 2.13)."""
    def device(self):
        found = base.device.fget(self)
        return torch.device("cpu") if found.type == "cpu" else found

    return property(device)


def _make(name: str, base: type, fields: dict, annotations: dict, post_init, **extra) -> type:
    namespace = {"__annotations__": annotations, **fields, "__post_init__": post_init, "__module__": __name__,
                 "device": _cpu_as_cpu(base), **extra}
    cls = dataclass(type(name, (base,), namespace))
    globals().setdefault(name, cls)  # importable by name, so pickle (training_args.bin) finds it
    return cls


def grpo_ga_config_class(base: type = GRPOConfig) -> type:
    """`base` (trl.GRPOConfig or Unsloth's) plus `prompt_repeats`: the GRPO-GA baseline's config."""

    def __post_init__(self):
        base.__post_init__(self)
        check_prompt_repeats(self)

    name = "GRPOGAConfig" if base is GRPOConfig else f"GRPOGA{base.__name__}"
    return _make(name, base, {"prompt_repeats": _repeats_field()}, {"prompt_repeats": int}, __post_init__,
                 __doc__=grpo_ga_config_class.__doc__)


GRPOGAConfig = grpo_ga_config_class(GRPOConfig)


def pods_config_class(base: type = GRPOConfig) -> type:
    """`base` (trl.GRPOConfig, or Unsloth's patched one) plus `pods_m`, `pods_rule` and
    `prompt_repeats`, validated.

    `num_generations` is n (generated per prompt); `pods_micro_batch_size` is the number of
    sequences in each loss computation on each process, per_device_train_batch_size * m / n.
    """

    def __post_init__(self):
        base.__post_init__(self)
        check_pods_args(self)
        check_prompt_repeats(self)
        check_lab_args(self)

    fields = {"pods_m": field(default=None, metadata={"help": "rollouts kept per prompt for the update (m)"}),
              "pods_rule": field(default="max_variance", metadata={"help": f"down-sampling rule: {', '.join(RULES)}"}),
              "prompt_repeats": _repeats_field(), **lab_fields()}
    annotations = {"pods_m": int | None, "pods_rule": str, "prompt_repeats": int, **LAB_ANNOTATIONS}
    name = "PODSConfig" if base is GRPOConfig else f"PODS{base.__name__}"
    micro = property(lambda self: self.per_device_train_batch_size * self.pods_m // self.num_generations)
    return _make(name, base, fields, annotations, __post_init__, pods_micro_batch_size=micro,
                 __doc__=pods_config_class.__doc__)


PODSConfig = pods_config_class(GRPOConfig)


def grpo_ga_kwargs(pods_kwargs: dict, group_size: int | None = None) -> dict:
    """`GRPOGAConfig` kwargs of the GRPO-GA run matching the PODS kwargs `pods_kwargs`.

    Same prompts and rollouts generated per optimizer step and same loss micro-batch (m / n of
    PODS's per-device generation batch); all of them are trained, so gradient accumulation (and
    steps_per_generation, if set) grow by n / m. `group_size` is GRPO-GA's num_generations:
    m by default (the paper's runs: PODS n128-m32-ga4 vs GRPO-GA n32-m32-ga16), or n. Each
    sampled prompt keeps its k * n completions: prompt_repeats becomes k * n / group_size.
    """
    kw = {k: v for k, v in pods_kwargs.items() if not k.startswith("pods_")}
    n, m = pods_kwargs["num_generations"], pods_kwargs["pods_m"]
    ga = pods_kwargs.get("gradient_accumulation_steps", 1)
    per_device = pods_kwargs.get("per_device_train_batch_size", 8)
    group, k = group_size or m, pods_kwargs.get("prompt_repeats", 1)
    if per_device * m % n or ga * n % m or (pods_kwargs.get("steps_per_generation") or m) * n % m or k * n % group:
        raise ValueError(
            f"GRPO-GA needs per_device_train_batch_size * m / n, gradient_accumulation_steps * n / m "
            f"(and steps_per_generation * n / m) and prompt_repeats * n / group_size to be whole numbers; "
            f"got per_device={per_device}, ga={ga}, n={n}, m={m}, prompt_repeats={k}, group_size={group}"
        )
    kw.update(num_generations=group, per_device_train_batch_size=per_device * m // n,
              gradient_accumulation_steps=ga * n // m, prompt_repeats=k * n // group)
    if kw.get("steps_per_generation") is not None:
        kw["steps_per_generation"] = kw["steps_per_generation"] * n // m
    return kw
