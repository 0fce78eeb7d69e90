"""PODSConfig: `trl.GRPOConfig` plus `pods_m` / `pods_rule`, checked at construction; GRPO-GA kwargs.

    from pods.integrations.trl import PODSConfig, grpo_ga_kwargs
    args = PODSConfig(output_dir="out", num_generations=16, pods_m=4, per_device_train_batch_size=16)
    ga = grpo_ga_kwargs({"num_generations": 16, "pods_m": 4, ...})   # the matching GRPO-GA kwargs

See pods/integrations/trl/__init__.py for the batch bookkeeping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from trl import GRPOConfig

from pods.downsample import RULES


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
    if args.multi_objective_aggregation != "sum_then_normalize":
        raise ValueError(
            "PODS selects on the weighted sum of the reward functions: set "
            f"multi_objective_aggregation='sum_then_normalize' (got {args.multi_objective_aggregation!r})"
        )


def pods_config_class(base: type = GRPOConfig) -> type:
    """`base` (trl.GRPOConfig, or Unsloth's patched one) plus `pods_m` and `pods_rule`, validated.

    `num_generations` is n (generated per prompt); `pods_micro_batch_size` is the number of
    sequences in each loss computation on each process, per_device_train_batch_size * m / n.
    """

    def __post_init__(self):
        base.__post_init__(self)
        check_pods_args(self)

    namespace = {
        "__annotations__": {"pods_m": int | None, "pods_rule": str},
        "pods_m": field(default=None, metadata={"help": "rollouts kept per prompt for the update (m)"}),
        "pods_rule": field(default="max_variance", metadata={"help": f"down-sampling rule: {', '.join(RULES)}"}),
        "__post_init__": __post_init__,
        "pods_micro_batch_size": property(lambda self: self.per_device_train_batch_size * self.pods_m
                                          // self.num_generations),
        "__doc__": pods_config_class.__doc__,
        "__module__": __name__,
    }
    name = "PODSConfig" if base is GRPOConfig else f"PODS{base.__name__}"
    cls = dataclass(type(name, (base,), namespace))
    globals().setdefault(name, cls)  # importable by name, so pickle (training_args.bin) finds it
    return cls


PODSConfig = pods_config_class(GRPOConfig)


def grpo_ga_kwargs(pods_kwargs: dict, group_size: int | None = None) -> dict:
    """`trl.GRPOConfig` kwargs of the GRPO-GA run matching the PODS kwargs `pods_kwargs`.

    Same rollouts generated per optimizer step and same loss micro-batch (m / n of PODS's
    per-device generation batch); all of them are trained, so gradient accumulation (and
    steps_per_generation, if set) grow by n / m. `group_size` is GRPO-GA's num_generations:
    m by default (the paper's runs: PODS n128-m32-ga4 vs GRPO-GA n32-m32-ga16), or n.
    """
    kw = {k: v for k, v in pods_kwargs.items() if not k.startswith("pods_")}
    n, m = pods_kwargs["num_generations"], pods_kwargs["pods_m"]
    ga = pods_kwargs.get("gradient_accumulation_steps", 1)
    per_device = pods_kwargs.get("per_device_train_batch_size", 8)
    if per_device * m % n or ga * n % m or (pods_kwargs.get("steps_per_generation") or m) * n % m:
        raise ValueError(
            f"GRPO-GA needs per_device_train_batch_size * m / n and gradient_accumulation_steps * n / m "
            f"(and steps_per_generation * n / m) to be whole numbers; "
            f"got per_device={per_device}, ga={ga}, n={n}, m={m}"
        )
    kw.update(num_generations=group_size or m, per_device_train_batch_size=per_device * m // n,
              gradient_accumulation_steps=ga * n // m)
    if kw.get("steps_per_generation") is not None:
        kw["steps_per_generation"] = kw["steps_per_generation"] * n // m
    return kw
