"""Allocation rules: how many rollouts each of a step's B prompts gets, over generation rounds, within a budget.

    plan = make_allocation("speed", n=24, m=8, budget=None, screen=4)   # ALLOCATIONS[name](n, m, budget, **params)
    counts = plan.first(B)                        # [B] rollouts per prompt in round 0
    more = plan.more(correct, counts, round=1)    # correct [B, N] accuracy so far, counts [B] -> [B] more (0: done)
    trained = plan.trained(correct, counts)       # [B] bool: the prompts that get a policy update

Contract: the loop draws `first(B)`, then asks `more` after each round (round = 1, 2, ...) until it returns all
zeros; entries of row b beyond counts[b] are ignored. n is the most rollouts a prompt can get; `budget` caps the
step's total (default B x n): `more` grants requests in prompt order until it is spent. Rows end with unequal
counts (ada): select with pods.core.downsample.select_ragged. Stateless across steps. Papers: docs/rules.md.
"""

from __future__ import annotations

import torch

from pods.core.registry import lookup, registrar

ALLOCATIONS: dict[str, type["Allocation"]] = {}


allocation = registrar(ALLOCATIONS)  # @allocation("speed") where a rule is implemented


def make_allocation(name: str, n: int, m: int, budget: int | None = None, **params) -> "Allocation":
    """ALLOCATIONS[name](n, m, budget, **params); a ValueError names the nearest rule or the bad parameter."""
    cls = lookup("allocation", name, ALLOCATIONS)
    try:
        return cls(n, m, budget, **params)
    except TypeError as err:
        raise ValueError(f"allocation {name!r}: {err}") from None


@allocation("none")
class Allocation:
    """n rollouts for every prompt in one round, all trained (today's behaviour)."""

    def __init__(self, n: int, m: int, budget: int | None = None):
        if not (isinstance(n, int) and isinstance(m, int) and 1 <= m <= n):
            raise ValueError(f"allocation needs integers 1 <= m <= n, got n={n!r}, m={m!r}")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise ValueError(f"budget must be a whole number of rollouts per step >= 1 (or None), got {budget!r}")
        self.n, self.m, self.budget = n, m, budget
        self.drawn = 0

    def first(self, B: int) -> torch.Tensor:
        counts = self._first(B)
        total = int(counts.sum())
        if self.budget is not None and total > self.budget:
            raise ValueError(f"allocation {self.name!r} draws {total} rollouts in its first round for {B} prompts, "
                             f"over the step's budget of {self.budget}: raise the budget or draw fewer prompts")
        self.drawn = total
        return counts

    def more(self, correct: torch.Tensor, counts: torch.Tensor, round: int) -> torch.Tensor:
        """[B, N] accuracy so far, [B] rollouts drawn per prompt -> [B] rollouts to draw now (0: done)."""
        counts = torch.as_tensor(counts, dtype=torch.long)
        want = self._more(torch.as_tensor(correct).float(), counts, round).clamp(min=0)
        want = torch.minimum(want, self.n - counts)  # never past n per prompt
        if self.budget is not None:  # grant in prompt order until the step's budget is spent
            left = self.budget - self.drawn
            before = torch.cat([want.new_zeros(1), want.cumsum(0)[:-1]])  # [B] granted to earlier prompts
            want = torch.minimum(want, (left - before).clamp(min=0))
        self.drawn += int(want.sum())
        return want

    def trained(self, correct: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """[B] bool: the prompts whose rollouts go to the update."""
        return torch.ones(len(counts), dtype=torch.bool)

    def _first(self, B: int) -> torch.Tensor:
        return torch.full((B,), self.n, dtype=torch.long)

    def _more(self, correct, counts, round) -> torch.Tensor:
        return torch.zeros_like(counts)


def _drawn(correct: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """[B, N] bool: the entries that hold a drawn rollout (the first counts[b] of row b)."""
    return torch.arange(correct.shape[1]).unsqueeze(0) < counts.unsqueeze(1)


@allocation("speed")
class Speed(Allocation):
    """SPEED-RL (arXiv 2506.09016): screen every prompt with `screen` rollouts; only prompts whose screening
    pass rate is strictly between 0 and 1 get the other n - screen and are trained."""

    def __init__(self, n: int, m: int, budget: int | None = None, screen: int = 4):
        super().__init__(n, m, budget)
        if not 2 <= screen < n:
            raise ValueError(f"speed needs 2 <= screen < n={n} (screening rollouts, the rest continue), got {screen}")
        self.screen = screen

    def _first(self, B):
        return torch.full((B,), self.screen, dtype=torch.long)

    def _mixed(self, correct, counts) -> torch.Tensor:
        c = correct[:, : self.screen] > 0.5  # [B, screen] the screening rollouts
        return c.any(dim=1) & ~c.all(dim=1)  # [B] 0 < pass rate < 1 (their std > 0 on acc)

    def _more(self, correct, counts, round):
        go = self._mixed(correct, counts) & (counts == self.screen) & (round == 1)
        return torch.where(go, self.n - self.screen, 0)

    def trained(self, correct, counts):
        return self._mixed(torch.as_tensor(correct).float(), counts) & (torch.as_tensor(counts) == self.n)


@allocation("ada")
class Ada(Allocation):
    """Reinforce-Ada (arXiv 2510.04996), balanced: `round_n` more rollouts a round for each prompt until it has
    m // 2 correct and m - m // 2 wrong, at most n in all (their 4 rounds of 8 with m = 4: n = 32); all trained."""

    def __init__(self, n: int, m: int, budget: int | None = None, round_n: int = 8):
        super().__init__(n, m, budget)
        if not m <= round_n <= n:
            raise ValueError(f"{self.name} needs m={m} <= round_n <= n={n} (every prompt keeps m of its first "
                             f"round at least), got round_n={round_n}")
        self.round_n = round_n

    def done(self, correct: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """[B] bool: the prompt has enough signal."""
        seen = _drawn(correct, counts)
        pos = ((correct > 0.5) & seen).sum(1)
        return (pos >= self.m // 2) & (counts - pos >= self.m - self.m // 2)

    def _first(self, B):
        return torch.full((B,), self.round_n, dtype=torch.long)

    def _more(self, correct, counts, round):
        return torch.where(self.done(correct, counts), 0, self.round_n)


@allocation("ada_positive")
class AdaPositive(Ada):
    """Reinforce-Ada's positive-focused variant: a prompt is done once one rollout is correct."""

    def done(self, correct, counts):
        return ((correct > 0.5) & _drawn(correct, counts)).any(dim=1)
