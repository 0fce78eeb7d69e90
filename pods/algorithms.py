"""Which rollouts each optimizer step of a training step trains on, and with which advantages.

    plan = plan_updates(rewards, "pods", m=16, rule="max_variance")  # rewards [G, n]
    for idx, adv in plan: ...   # idx [G, m] indices into each group's n, adv [G, m]

- pods / grpo: one optimizer step on the m rollouts per prompt chosen by `select` (grpo: m = n,
  rule none), advantages over the kept m (as in the paper).
- grpo_ga: advantages over all n, then n/m optimizer steps of m rollouts per prompt each, in
  order (GRPO with gradient accumulation split into optimizer steps: the paper's multi-GPU
  baseline); the caller computes the sampling policy's log-probs for the later chunks.
"""

from __future__ import annotations

import torch

from pods.advantages import group_advantages
from pods.downsample import select

ALGORITHMS = ("pods", "grpo", "grpo_ga")


def plan_updates(
    rewards: torch.Tensor, algorithm: str, m: int, rule: str = "max_variance", *,
    scale: str = "group", std: str = "sample", generator: torch.Generator | None = None,
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """rewards [G, n] -> [(idx [G, m], adv [G, m])], one pair per optimizer step.

    scale / std: how the advantages are scaled (pods.advantages.group_advantages).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; valid: {', '.join(ALGORITHMS)}")
    G, n = rewards.shape
    if algorithm == "grpo_ga":
        if n % m:
            raise ValueError(f"grpo_ga updates on n/m chunks of m rollouts: n={n} must be a multiple of m={m}")
        adv = group_advantages(rewards, scale=scale, std=std)  # [G, n]
        chunks = [torch.arange(j * m, (j + 1) * m).expand(G, m) for j in range(n // m)]  # [G, m] each
        return [(idx, adv.gather(1, idx)) for idx in chunks]
    idx = select(rewards, m, rule, generator=generator)  # [G, m]
    return [(idx, group_advantages(rewards.gather(1, idx), scale=scale, std=std))]
