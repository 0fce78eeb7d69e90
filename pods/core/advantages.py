"""Group-relative advantages (GRPO): each kept reward compared with the others of its prompt.

    adv = group_advantages(rewards)                      # rewards [G, m] -> adv [G, m]
    adv = group_advantages(rewards, scale="batch")       # group mean, std over the whole batch
    adv = group_advantages(rewards, std="population")    # divide by the population std instead
    adv = kept_advantages(rewards, idx, over="drawn", scale="none")   # [G, N], idx [G, k] -> [G, k]

group_advantages: over the m rollouts kept after down-sampling (as in the paper), not over all n. kept_advantages:
the kept rollouts' advantages with the statistics of the kept (the paper's) or of every rollout drawn for the
prompt (Reinforce-Ada's global statistics; CPPO, which prunes after its advantages). `scale` has TRL's
`scale_rewards` meaning (group | batch | none); the std is the sample (n - 1) std by default (docs/algorithms.md).
A NaN reward (a rollout no reward function scored) is left out of every mean and std and gets advantage 0.
"""

from __future__ import annotations

import torch

SCALES = ("group", "batch", "none")
STDS = ("sample", "population")
OVER = ("kept", "drawn")  # rl.advantage_over: the rollouts whose mean (and std) the advantages use


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


def kept_advantages(rewards: torch.Tensor, idx: torch.Tensor, *, over: str = "kept", scale: str = "group",
                    eps: float = 1e-4, std: str = "sample") -> torch.Tensor:
    """rewards [G, N] (NaN: not drawn), idx [G, k] kept (-1: none) -> adv [G, k] of the kept (0 at -1).

    over="kept": group_advantages of the kept rewards. over="drawn": r - the mean of every rollout drawn for the
    prompt, divided (scale group / batch) by the std of those drawn (of the whole batch's drawn for batch); a
    statistic over a single rollout gives 0, as group_advantages does."""
    if over not in OVER:
        raise ValueError(f"unknown advantage statistics {over!r}; valid: {', '.join(OVER)}")
    if idx.dim() != 2 or idx.shape[0] != rewards.shape[0]:
        raise ValueError(f"idx must be [G={rewards.shape[0]}, k], got {tuple(idx.shape)}")
    r = rewards.float()
    kept = torch.where(idx >= 0, r.gather(1, idx.clamp(min=0)), torch.full(idx.shape, float("nan")))  # [G, k]
    if over == "kept":
        return group_advantages(kept, scale=scale, eps=eps, std=std)
    if scale not in SCALES:
        raise ValueError(f"unknown advantage scale {scale!r}; valid: {', '.join(SCALES)}")
    if std not in STDS:
        raise ValueError(f"unknown std {std!r}; valid: {', '.join(STDS)}")
    drawn = ~torch.isnan(r)  # [G, N]
    x = torch.where(drawn, r, torch.zeros_like(r))
    count = drawn.sum(dim=1, keepdim=True)  # [G, 1]
    mean = x.sum(dim=1, keepdim=True) / count.clamp(min=1)  # [G, 1]
    centred = torch.where(torch.isnan(kept), torch.zeros_like(kept), kept - mean)  # [G, k]
    if scale == "none":
        return centred
    dof = int(std == "sample")
    dev = torch.where(drawn, x - mean, torch.zeros_like(x))
    if scale == "group":
        sq, n = (dev ** 2).sum(dim=1, keepdim=True), count  # [G, 1]
    else:  # one std over every drawn reward of the batch, around the batch mean
        spread = torch.where(drawn, x - x.sum() / count.sum().clamp(min=1), torch.zeros_like(x))
        sq, n = (spread ** 2).sum().expand(r.shape[0], 1), count.sum().expand(r.shape[0], 1)
    sd = torch.where(n > dof, (sq / (n - dof).clamp(min=1)).sqrt(), torch.zeros_like(sq))  # [G, 1]
    return torch.where(sd > 0, centred / (sd + eps), torch.zeros_like(centred))
