"""Group-relative advantages (GRPO): each kept reward compared with the others of its prompt.

    adv = group_advantages(rewards)   # rewards [G, m] -> adv [G, m]

Computed over the m rollouts kept after down-sampling (as in the paper), not over all n.
"""

from __future__ import annotations

import torch


def group_advantages(rewards: torch.Tensor, scale_std: bool = True, eps: float = 1e-4) -> torch.Tensor:
    """[G, m] -> [G, m]: (r - mean) / (std + eps) per row; std is the population std.

    scale_std=False gives r - mean (Dr. GRPO style). A row whose rewards are all equal gives
    exact zeros, never NaN.
    """
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [G, m], got shape {tuple(rewards.shape)}")
    r = rewards.float()
    centred = r - r.mean(dim=1, keepdim=True)  # [G, m]
    if not scale_std:
        return centred
    std = r.std(dim=1, unbiased=False, keepdim=True)  # [G, 1]
    adv = centred / (std + eps)
    return torch.where(std > 0, adv, torch.zeros_like(adv))
