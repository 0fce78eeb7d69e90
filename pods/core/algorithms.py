"""Which rollouts a training step trains on, and with which advantages: PODS, GRPO, GRPO-GA.

    idx, adv = plan_update(rewards, "pods", m=16, rule="max_variance")  # rewards [G, n]
    # idx [G, k] indices into each group's n rollouts, adv [G, k] (k = m; k = n for grpo_ga)
    idx = keep(rewards, "pods", m=16)                # the selection alone (dynamic sampling filters on it)
    idx, adv = plan_update(rewards, "pods", m=16, kept=idx)   # the same update from that selection
    idx, adv = plan_update(rewards, "pods", m=8, rule="cppo", scope="batch", over="drawn")  # CPPO's recipe

Contract: ONE optimizer step per training step on `idx` (gradient accumulated over micro-batches, every importance
ratio 1). pods: the m of n chosen by `select(rewards, m, rule)` (scope batch: G x m of the whole batch,
`select_batch`, -1 pads idx), advantages over the kept m (over="drawn": over all drawn); grpo (m = n) and grpo_ga
(m = n required; the paper's 8-GPU baseline, by name) train all n, advantages over all n. docs/algorithms.md.
"""

from __future__ import annotations

import torch

from pods.core.advantages import kept_advantages
from pods.core.downsample import select, select_batch, select_ragged

ALGORITHMS = ("pods", "grpo", "grpo_ga")


def keep(rewards: torch.Tensor, algorithm: str, m: int, rule: str = "max_variance", *,
         generator: torch.Generator | None = None, counts: torch.Tensor | None = None, scope: str = "group",
         **inputs) -> torch.Tensor:
    """rewards [G, n] -> idx [G, k]: the rollouts the step trains on (k = m; all n for grpo_ga).
    inputs: what a rule may weigh besides the rewards (lengths=[G, n], entropy=[G, n]; pods.core.downsample);
    counts [G]: row g holds only its first counts[g] rollouts (an allocation rule's rows of unequal n);
    scope "batch": G x m of the whole batch (pods.core.downsample.select_batch; -1 pads rows that keep fewer)."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; valid: {', '.join(ALGORITHMS)}")
    G, n = rewards.shape
    if algorithm == "grpo_ga":  # the paper's 8-GPU baseline: all n in one optimizer step (docs/algorithms.md)
        if m != n:
            raise ValueError(f"grpo_ga trains on all n rollouts: m={m} must equal n={n}")
        return torch.arange(n, device=rewards.device).expand(G, n)  # [G, n]
    if scope == "batch" and m < n:
        return select_batch(rewards, m, rule)  # [G, k], -1 pads; CPPO prunes over the batch
    if counts is not None:
        return select_ragged(rewards, counts, m, rule, generator=generator, **inputs)  # [G, m]
    return select(rewards, m, rule, generator=generator, **inputs)  # [G, m]; maxvargrpo_trainer.py:515-525 at 3fc107e


def plan_update(
    rewards: torch.Tensor, algorithm: str, m: int, rule: str = "max_variance", *,
    scale: str = "group", std: str = "sample", generator: torch.Generator | None = None,
    kept: torch.Tensor | None = None, scope: str = "group", over: str = "kept",
) -> tuple[torch.Tensor, torch.Tensor]:
    """rewards [G, n] (NaN: not drawn) -> (idx [G, k], adv [G, k]) for the training step's one optimizer step.

    scale / std / over: the advantages' scale and statistics (pods.core.advantages.kept_advantages); kept: idx
    [G, k] from `keep` made earlier (pods.core.collect selects per generation round), None: selected here.
    """
    idx = keep(rewards, algorithm, m, rule, generator=generator, scope=scope) if kept is None else kept  # [G, k]
    return idx, kept_advantages(rewards, idx, over=over, scale=scale, std=std)
