"""Rollout rules (down-sampling): which m of the n rollouts of each prompt to keep for the policy update.

    idx = select(rewards, m, rule="max_variance")                 # rewards [G, n] -> idx [G, m]
    idx = select(rewards, m, "gfpo_length", lengths=L)            # a rule that needs lengths [G, n]
    idx = select_ragged(rewards, counts, m, "max_variance")       # row g: only its first counts[g] rollouts
    idx = select_batch(rewards, m, "cppo")                        # G x m of the whole batch: [G, k], -1 pads

Rows (prompt groups) are independent. `max_variance` is the paper's rule (Theorem 1: the k highest plus
the m - k lowest rewards for some k); one sort (or two top-m selections) plus O(m) prefix sums per row,
vectorised. `RULES` holds every rule, `NEEDS` the optional inputs (lengths, entropy) each one requires.
Ties resolve deterministically (lowest index first). A rule in BATCH_SCORES also ranks across the batch
(rl.rule_scope=batch): the G x m best of all G x n, so groups keep unequal numbers (-1 pads the rows).
Papers and the code checked against: docs/rules.md.
"""

from __future__ import annotations

from typing import Callable

import torch

from pods.core.registry import lookup, registrar, require

Rule = Callable[..., torch.Tensor]  # (rewards [G, n], m, *, generator, lengths, entropy) -> idx [G, m]
RULES: dict[str, Rule] = {}
NEEDS: dict[str, tuple[str, ...]] = {}  # rule -> the optional inputs it cannot do without
BALANCED_THRESHOLD = 0.7  # `balanced`: reward > this counts as correct (Reinforce-Ada's positive_threshold)
SCOPES = ("group", "batch")  # rl.rule_scope: a rule keeps m of each group, or G x m of the whole batch
BATCH_SCORES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {}  # rule -> score [G, n] ranked across the batch


rule = registrar(RULES, NEEDS)  # @rule("cppo") where a rule is implemented; @rule("x", needs=("lengths",))
PARTIAL_MIN_RATIO = 2  # n / m from which two top-m selections replace the full sort (faster in benchmarks/bench_downsample.py)


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


@rule("max_variance")
def max_variance(rewards: torch.Tensor, m: int, **_) -> torch.Tensor:
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


@rule("max_reward")
def max_reward(rewards: torch.Tensor, m: int, **_) -> torch.Tensor:
    """[G, n] -> [G, m]: the m highest rewards per row."""
    return _sorted(rewards, descending=True)[1][:, :m]


@rule("random")
def random(rewards: torch.Tensor, m: int, generator=None, **_) -> torch.Tensor:
    """[G, n] -> [G, m]: m distinct indices uniformly at random (reproducible via `generator`)."""
    G, n = rewards.shape
    keys = torch.rand(G, n, generator=generator, device=rewards.device)
    return keys.argsort(dim=1)[:, :m]


@rule("percentile")
def percentile(rewards: torch.Tensor, m: int, **_) -> torch.Tensor:
    """[G, n] -> [G, m]: m rollouts at evenly spaced ranks, lowest and highest included (m=1: median)."""
    G, n = rewards.shape
    order = _sorted(rewards)[1]
    if m == 1:
        ranks = torch.tensor([(n - 1) // 2], device=rewards.device)
    else:  # floor(x + 0.5) of spacing >= 1 gives distinct ranks
        ranks = torch.floor(torch.linspace(0, n - 1, m, dtype=torch.float64) + 0.5).long()
    return order[:, ranks.to(rewards.device)]


@rule("none")
def none(rewards: torch.Tensor, m: int, **_) -> torch.Tensor:
    """[G, n] -> [G, n]: keep everything (vanilla GRPO); requires m == n."""
    G, n = rewards.shape
    if m != n:
        raise ValueError(f"rule 'none' keeps every rollout, so m must equal n (got m={m}, n={n})")
    return torch.arange(n, device=rewards.device).expand(G, n).clone()


def _first_m(score: torch.Tensor, m: int) -> torch.Tensor:
    """[G, n] -> [G, m]: the indices of the m largest scores per row, ties to the lowest index."""
    return torch.sort(score, dim=1, descending=True, stable=True)[1][:, :m]


@rule("cppo")
def cppo(rewards: torch.Tensor, m: int, **_) -> torch.Tensor:
    """[G, n] -> [G, m]: the m largest |advantage| over the whole group (CPPO, arXiv 2503.22342)."""
    r = rewards.float()
    return _first_m((r - r.mean(dim=1, keepdim=True)).abs(), m)  # |A| ranks as |r - mean|: std is one per row


def cppo_abs_advantage(rewards: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """[G, n] -> [G, n]: |A| = |r - group mean| / (group std + eps), CPPO's pruning score across groups (their GRPO
    trainer's eps 1e-4, sample std; a group of equal rewards scores 0)."""
    r = rewards.float()
    sd = r.std(dim=1, keepdim=True) if r.shape[1] > 1 else torch.zeros_like(r[:, :1])
    return ((r - r.mean(dim=1, keepdim=True)) / (sd + eps)).abs()


BATCH_SCORES["cppo"] = cppo_abs_advantage


@rule("gfpo_length", needs=("lengths",))
def gfpo_length(rewards: torch.Tensor, m: int, *, lengths: torch.Tensor, **_) -> torch.Tensor:
    """[G, n] -> [G, m]: the m shortest completions (GFPO, arXiv 2508.09726)."""
    return _first_m(-lengths.double(), m)


@rule("gfpo_efficiency", needs=("lengths",))
def gfpo_efficiency(rewards: torch.Tensor, m: int, *, lengths: torch.Tensor, **_) -> torch.Tensor:
    """[G, n] -> [G, m]: the m highest reward per token (GFPO's token efficiency); a 0-token completion counts 1."""
    return _first_m(rewards.double() / lengths.double().clamp(min=1), m)


@rule("balanced")
def balanced(rewards: torch.Tensor, m: int, **_) -> torch.Tensor:
    """[G, n] -> [G, m]: m // 2 correct and the rest wrong, the first drawn of each, the other kind filling a shortfall.

    Reinforce-Ada's balanced pick; correct = reward > BALANCED_THRESHOLD. Returned in index order.
    """
    pos = rewards > BALANCED_THRESHOLD  # [G, n]
    P = pos.sum(1, keepdim=True)  # [G, 1] correct per row
    N = pos.shape[1] - P
    want_pos = P.clamp(max=m // 2)  # [G, 1]
    take_neg = N.clamp(max=m - want_pos)
    take_pos = m - take_neg  # tops up with correct ones when the wrong ones run short
    rank_pos = pos.cumsum(1) - 1  # [G, n] rank of each correct one among the correct
    rank_neg = (~pos).cumsum(1) - 1
    kept = torch.where(pos, rank_pos < take_pos, rank_neg < take_neg)  # [G, n], m per row
    return torch.sort((~kept).to(torch.int8), dim=1, stable=True)[1][:, :m]


def select_batch(rewards: torch.Tensor, m: int, rule: str = "cppo") -> torch.Tensor:
    """[G, n] -> idx [G, k]: the G x m rollouts of the whole batch with the highest BATCH_SCORES[rule] (ties: the
    first in group-major order), each row's in index order, padded with -1 to the row that keeps most (k)."""
    if rule not in BATCH_SCORES:
        raise ValueError(f"rollout rule {rule!r} ranks within each group only; batch scope: {', '.join(BATCH_SCORES)}")
    r, _ = _as_rows(rewards, "rewards")
    G, n = r.shape
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= n:
        raise ValueError(f"m (rollouts kept per prompt on average) must be an integer in 1..n={n}, got {m!r}")
    order = torch.sort(BATCH_SCORES[rule](r).flatten(), descending=True, stable=True)[1][:G * m]  # [G * m]
    kept = torch.zeros(G * n, dtype=torch.bool, device=r.device)
    kept[order] = True
    kept = kept.view(G, n)
    k = max(int(kept.sum(dim=1).max()), 1) if G else 1
    j = torch.arange(n, device=r.device).expand(G, n)
    first = torch.sort(torch.where(kept, j, j + n), dim=1)[0][:, :k]  # kept indices first, ascending
    return torch.where(first < n, first, torch.full_like(first, -1))


def get_rule(name: str) -> Rule:
    return lookup("rollout rule", name, RULES)


def _as_rows(x, name: str, shape: torch.Size | None = None) -> tuple[torch.Tensor, bool]:
    """(a [G, n] float tensor of finite values, whether it was [n]) from a tensor, list or array."""
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x, dtype=torch.float32)
        except (TypeError, ValueError, RuntimeError) as err:
            raise ValueError(f"{name} must be numbers of shape [G, n] or [n] (a tensor, list or array): {err}") from None
    if x.dim() not in (1, 2):
        raise ValueError(f"{name} must have shape [G, n] or [n], got {tuple(x.shape)}")
    if not x.is_floating_point():
        x = x.float()
    flat = x.dim() == 1
    x = x.unsqueeze(0) if flat else x
    if shape is not None and x.shape != shape:
        raise ValueError(f"{name} must have the shape of rewards {tuple(shape)}, got {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        bad = (~torch.isfinite(x)).any(dim=1).nonzero().flatten()
        raise ValueError(f"{name} must be finite; group(s) {bad.tolist()[:10]} contain NaN or inf")
    return x, flat


def select(
    rewards: torch.Tensor, m: int, rule: str = "max_variance", *, generator: torch.Generator | None = None,
    lengths: torch.Tensor | None = None, entropy: torch.Tensor | None = None,
) -> torch.Tensor:
    """Indices of the m rollouts to keep per group.

    rewards: float [G, n] (or [n], giving [m]), a tensor or anything torch.as_tensor takes (a list, a
    NumPy array); lengths: completion tokens [G, n]; entropy: a per-rollout entropy summary [G, n] (each
    optional unless the rule NEEDS it). Returns int64 [G, m] (or [m]) of distinct indices into the last dimension.
    """
    fn = get_rule(rule)
    require("rollout rule", rule, NEEDS[rule], lengths=lengths, entropy=entropy)
    r, squeeze = _as_rows(rewards, "rewards")  # [G, n]
    n = r.shape[1]
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= n:
        raise ValueError(f"m (rollouts kept per prompt) must be an integer in 1..n={n}, got {m!r}")
    extra = {k: _as_rows(v, k, r.shape)[0] for k, v in (("lengths", lengths), ("entropy", entropy)) if v is not None}
    if "lengths" in extra and (extra["lengths"] < 0).any():
        raise ValueError("lengths must be token counts >= 0")
    idx = fn(r, m, generator=generator, **extra)
    return idx[0] if squeeze else idx


def select_ragged(
    rewards: torch.Tensor, counts: torch.Tensor, m: int, rule: str = "max_variance", *,
    generator: torch.Generator | None = None, lengths: torch.Tensor | None = None, entropy: torch.Tensor | None = None,
) -> torch.Tensor:
    """[G, N] rewards whose row g holds counts[g] rollouts (the rest is padding) -> idx [G, m] into each row.

    For allocation rules, which give prompts unequal numbers of rollouts: rows of one count are selected
    together with `select`, in increasing count order (so a generator is used reproducibly).
    """
    counts = torch.as_tensor(counts, dtype=torch.long).flatten()
    G, N = rewards.shape
    if counts.numel() != G or (counts < m).any() or (counts > N).any():
        raise ValueError(f"counts must be {G} integers in m={m}..N={N} (each row needs at least m rollouts), "
                         f"got {counts.tolist()[:10]}")
    out = torch.empty(G, m, dtype=torch.long)
    for c in sorted(set(counts.tolist())):
        rows = (counts == c).nonzero().flatten()  # [G_c]
        part = lambda x: None if x is None else x[rows, :c]  # noqa: E731
        out[rows] = select(rewards[rows, :c], m, rule, generator=generator,
                           lengths=part(lengths), entropy=part(entropy)).cpu()
    return out.to(rewards.device)
