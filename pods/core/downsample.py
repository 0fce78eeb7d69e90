"""Down-sampling rules: which m of the n rollouts of each prompt to keep for the policy update.

    idx = select(rewards, m, rule="max_variance")   # rewards [G, n] -> idx [G, m]

Rows (prompt groups) are independent: selection never mixes rollouts of different prompts.
`max_variance` is the paper's rule (Theorem 1: the max-variance m-subset is the k highest plus
the m - k lowest rewards for some k in 0..m); it costs one sort per row (or, for n >= 2m, two
partial top-m selections) plus O(m) prefix sums, vectorised over all rows. Ties resolve
deterministically.
"""

from __future__ import annotations

from typing import Callable

import torch

Rule = Callable[..., torch.Tensor]
PARTIAL_MIN_RATIO = 2  # n / m from which two top-m selections replace the full sort (faster in scripts/bench_downsample.py)


def _sorted(rewards: torch.Tensor, descending: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.sort(rewards, dim=-1, descending=descending, stable=True)  # [G, n] each


def _extremes(rewards: torch.Tensor, m: int) -> tuple[torch.Tensor, ...]:
    """The m lowest (ascending) and m highest (descending) rewards of each row, as disjoint index sets.

    For n >= PARTIAL_MIN_RATIO * m two partial selections (top-k) replace the full sort; the m
    lowest are excluded before picking the m highest, so ties can never select an index twice.
    """
    G, n = rewards.shape
    if n >= PARTIAL_MIN_RATIO * m:
        low_v, low_i = torch.topk(rewards, m, dim=1, largest=False, sorted=True)  # [G, m]
        rest = rewards.scatter(1, low_i, float("-inf"))  # [G, n] lows removed
        high_v, high_i = torch.topk(rest, m, dim=1, largest=True, sorted=True)  # [G, m]
        return low_v, low_i, high_v, high_i
    values, order = _sorted(rewards)  # ascending [G, n]
    return values[:, :m], order[:, :m], values[:, n - m :].flip(1), order[:, n - m :].flip(1)


def max_variance(rewards: torch.Tensor, m: int, generator=None) -> torch.Tensor:
    """[G, n] -> [G, m]: the m-subset with the largest reward variance per row."""
    G, n = rewards.shape
    if m == n:  # the only m-subset is the whole row (vanilla GRPO)
        return torch.arange(n, device=rewards.device).expand(G, n).clone()
    low_v, low_i, high_v, high_i = _extremes(rewards, m)  # [G, m] each
    shift = (low_v[:, :1].double() + high_v[:, :1].double()) / 2  # variance is shift invariant
    low, high = low_v.double() - shift, high_v.double() - shift  # [G, m]
    zero = low.new_zeros(low.shape[0], 1)
    sum_low = torch.cat([zero, low.cumsum(1)], 1)  # [G, m+1] sum of the j lowest
    sq_low = torch.cat([zero, (low * low).cumsum(1)], 1)
    sum_high = torch.cat([zero, high.cumsum(1)], 1)  # [G, m+1] sum of the k highest
    sq_high = torch.cat([zero, (high * high).cumsum(1)], 1)
    k = torch.arange(m + 1, device=rewards.device)  # candidate number of highest rewards
    s = sum_high[:, k] + sum_low[:, m - k]  # [G, m+1]
    sq = sq_high[:, k] + sq_low[:, m - k]
    var = sq / m - (s / m) ** 2  # [G, m+1]
    best_k = var.argmax(dim=1, keepdim=True)  # [G, 1], first maximum on ties
    j = torch.arange(m, device=rewards.device).unsqueeze(0)  # [1, m]
    take_low = j < m - best_k  # [G, m]: the m-k lowest, then the k highest
    return torch.where(take_low, low_i, high_i.gather(1, (j - (m - best_k)).clamp(min=0)))


def max_reward(rewards: torch.Tensor, m: int, generator=None) -> torch.Tensor:
    """[G, n] -> [G, m]: the m highest rewards per row."""
    return _sorted(rewards, descending=True)[1][:, :m]


def random(rewards: torch.Tensor, m: int, generator=None) -> torch.Tensor:
    """[G, n] -> [G, m]: m distinct indices uniformly at random (reproducible via `generator`)."""
    G, n = rewards.shape
    keys = torch.rand(G, n, generator=generator, device=rewards.device)
    return keys.argsort(dim=1)[:, :m]


def percentile(rewards: torch.Tensor, m: int, generator=None) -> torch.Tensor:
    """[G, n] -> [G, m]: m rollouts at evenly spaced ranks, lowest and highest included (m=1: median)."""
    G, n = rewards.shape
    order = _sorted(rewards)[1]
    if m == 1:
        ranks = torch.tensor([(n - 1) // 2], device=rewards.device)
    else:  # floor(x + 0.5) of spacing >= 1 gives distinct ranks
        ranks = torch.floor(torch.linspace(0, n - 1, m, dtype=torch.float64) + 0.5).long()
    return order[:, ranks.to(rewards.device)]


def none(rewards: torch.Tensor, m: int, generator=None) -> torch.Tensor:
    """[G, n] -> [G, n]: keep everything (vanilla GRPO); requires m == n."""
    G, n = rewards.shape
    if m != n:
        raise ValueError(f"rule 'none' keeps every rollout, so m must equal n (got m={m}, n={n})")
    return torch.arange(n, device=rewards.device).expand(G, n).clone()


RULES: dict[str, Rule] = {
    "max_variance": max_variance,
    "max_reward": max_reward,
    "random": random,
    "percentile": percentile,
    "none": none,
}


def get_rule(name: str) -> Rule:
    if name not in RULES:
        raise ValueError(f"unknown down-sampling rule {name!r}; valid rules: {', '.join(RULES)}")
    return RULES[name]


def select(
    rewards: torch.Tensor, m: int, rule: str = "max_variance", *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Indices of the m rollouts to keep per group.

    rewards: float [G, n] (or [n], giving [m]), a tensor or anything torch.as_tensor takes (a list, a
    NumPy array); returns int64 [G, m] (or [m]) of distinct indices into the last dimension.
    """
    fn = get_rule(rule)
    if not isinstance(rewards, torch.Tensor):
        try:
            rewards = torch.as_tensor(rewards, dtype=torch.float32)
        except (TypeError, ValueError, RuntimeError) as err:
            raise ValueError(f"rewards must be numbers of shape [G, n] or [n] (a tensor, list or array): {err}") from None
    if rewards.dim() not in (1, 2):
        raise ValueError(f"rewards must have shape [G, n] or [n], got {tuple(rewards.shape)}")
    if not rewards.is_floating_point():
        rewards = rewards.float()
    squeeze = rewards.dim() == 1
    r = rewards.unsqueeze(0) if squeeze else rewards  # [G, n]
    n = r.shape[1]
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= n:
        raise ValueError(f"m (rollouts kept per prompt) must be an integer in 1..n={n}, got {m!r}")
    if not torch.isfinite(r).all():
        bad = (~torch.isfinite(r)).any(dim=1).nonzero().flatten()
        raise ValueError(f"rewards must be finite; group(s) {bad.tolist()[:10]} contain NaN or inf")
    idx = fn(r, m, generator=generator)
    return idx[0] if squeeze else idx
