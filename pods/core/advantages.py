"""Group-relative advantages (GRPO): each kept reward compared with the others of its prompt.

    adv = group_advantages(rewards)                      # rewards [G, m] -> adv [G, m]
    adv = group_advantages(rewards, scale="batch")       # group mean, std over the whole batch
    adv = group_advantages(rewards, std="population")    # divide by the population std instead

Computed over the m rollouts kept after down-sampling (as in the paper), not over all n.
`scale` has TRL's `scale_rewards` meaning (group | batch | none) and the std is the sample
(unbiased, n - 1) std by default, as in TRL 1.15 (`nanstd`), verl and the authors' code
(`torch.std`); `std="population"` divides by n instead.
"""

from __future__ import annotations

import torch

SCALES = ("group", "batch", "none")
STDS = ("sample", "population")


def group_advantages(rewards: torch.Tensor, scale: str = "group", eps: float = 1e-4,
                     std: str = "sample") -> torch.Tensor:
    """[G, m] -> [G, m]: (r - group mean) / (std + eps).

    scale: "group" divides by each row's std, "batch" by the std of all G * m rewards, "none"
    returns r - mean (Dr. GRPO style). std: "sample" (unbiased) or "population". A row whose
    rewards are all equal gives exact zeros, never NaN; so does a one-element std.
    """
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [G, m], got shape {tuple(rewards.shape)}")
    if scale not in SCALES:
        raise ValueError(f"unknown advantage scale {scale!r}; valid: {', '.join(SCALES)}")
    if std not in STDS:
        raise ValueError(f"unknown std {std!r}; valid: {', '.join(STDS)}")
    r = rewards.float()
    centred = r - r.mean(dim=1, keepdim=True)  # [G, m]
    if scale == "none":
        return centred
    unbiased = std == "sample"
    if scale == "group":
        sd = r.std(dim=1, unbiased=unbiased, keepdim=True) if r.shape[1] > 1 else torch.zeros_like(r[:, :1])  # [G, 1]
    else:
        sd = r.std(unbiased=unbiased).expand(r.shape[0], 1) if r.numel() > 1 else torch.zeros_like(r[:, :1])  # [G, 1]
    adv = centred / (sd + eps)
    return torch.where(sd > 0, adv, torch.zeros_like(adv))
