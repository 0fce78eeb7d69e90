"""Group-relative advantages (GRPO): each kept reward compared with the others of its prompt.

    adv = group_advantages(rewards)                      # rewards [G, m] -> adv [G, m]
    adv = group_advantages(rewards, scale="batch")       # group mean, std over the whole batch
    adv = group_advantages(rewards, std="population")    # divide by the population std instead

Computed over the m rollouts kept after down-sampling (as in the paper), not over all n. `scale` has TRL's
`scale_rewards` meaning (group | batch | none); the std is the sample (n - 1) std by default (docs/algorithms.md).
A NaN reward (a rollout no reward function scored) is left out of every mean and std and gets advantage 0.
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
    rewards are all equal gives exact zeros, never NaN; so does a one-element std. NaN rewards
    (unscorable rollouts) are left out of every mean and std and get advantage 0.
    """
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [G, m], got shape {tuple(rewards.shape)}")
    if scale not in SCALES:
        raise ValueError(f"unknown advantage scale {scale!r}; valid: {', '.join(SCALES)}")
    if std not in STDS:
        raise ValueError(f"unknown std {std!r}; valid: {', '.join(STDS)}")
    r = rewards.float()
    if not r.numel():  # no group this step (an allocation rule or a group filter kept none)
        return r.clone()
    if torch.isnan(r).any():
        return _nan_advantages(r, scale, eps, std == "sample")
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


def _nan_advantages(r: torch.Tensor, scale: str, eps: float, unbiased: bool) -> torch.Tensor:
    """group_advantages of [G, m] rewards holding NaN: the NaN entries are left out and get 0."""
    ok = ~torch.isnan(r)  # [G, m]
    x = torch.where(ok, r, torch.zeros_like(r))
    count = ok.sum(dim=1, keepdim=True)  # [G, 1] scored rollouts per group
    centred = torch.where(ok, x - x.sum(dim=1, keepdim=True) / count.clamp(min=1), torch.zeros_like(x))  # [G, m]
    if scale == "none":
        return centred
    dof = int(unbiased)
    if scale == "group":
        sq, n = (centred ** 2).sum(dim=1, keepdim=True), count  # [G, 1] each
    else:  # one std over every scored reward of the batch, around the batch mean
        spread = torch.where(ok, x - x.sum() / count.sum().clamp(min=1), torch.zeros_like(x))
        sq, n = (spread ** 2).sum().expand(r.shape[0], 1), count.sum().expand(r.shape[0], 1)
    sd = torch.where(n > dof, (sq / (n - dof).clamp(min=1)).sqrt(), torch.zeros_like(sq))  # [G, 1]
    return torch.where(ok & (sd > 0), centred / (sd + eps), torch.zeros_like(centred))
