"""A training step's rollouts: generation rounds, and dynamic sampling (DAPO-style refill).

    batch = collect(sample_round, B=16, dynamic=True, max_rounds=4)
    batch.rollouts, batch.total, batch.per_fn      # G = B groups of n: Rollouts, [G, n], {name: [G, n]}
    batch.prompts, batch.rounds, batch.drawn       # dataset index per group [G], rounds run, prompts drawn

`sample_round(r)` draws B new prompts and returns `(prompt indices [B], Rollouts, total [B, n],
per_fn {name: [B, n]})` for round r = 0, 1, ... (the trainer generates and scores them).

Without dynamic sampling there is one round and every group is trained on. With
`rl.dynamic_sampling` a group whose n rewards are all equal (zero advantage, no learning signal) is
dropped BEFORE down-sampling, and further rounds of B prompts are drawn until B groups with reward
spread are collected or `rl.max_generation_rounds` rounds are spent (`choose_groups`):
- groups are taken in drawing order; groups with spread beyond B in the last round are dropped
  (generated, not trained: they count in `drawn` and in the training clock);
- when the rounds run out with fewer than B groups with spread, the batch is topped up with flat
  groups of the latest rounds, so every step trains on B groups ([G, n] shapes never change); the
  flat ones get zero advantages, as in plain GRPO, and `frac_groups_with_spread` < 1 says so. Every
  group flat is the extreme case: a zero-gradient step, as GRPO would take.
A group holding a non-finite reward counts as having spread, so the step-skipping of pods.run.guard sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from pods.core.rollouts import Rollouts


def has_spread(total: torch.Tensor) -> torch.Tensor:
    """[G, n] rewards -> [G] bool: not all n rewards equal (NaN never equals, so it counts as spread)."""
    return ~(total == total[:, :1]).all(dim=1)


def choose_groups(spread: list[torch.Tensor], B: int) -> list[tuple[int, int]]:
    """(round, group) of the B groups to train on, from [B] spread flags per round (pure).

    The first B groups with spread in drawing order; if fewer, the rest are flat groups, latest
    rounds first. The result is in drawing order.
    """
    order = [(r, g) for r, flags in enumerate(spread) for g in range(len(flags))]
    good = [rg for rg in order if bool(spread[rg[0]][rg[1]])][:B]
    if len(good) < B:
        flat = [rg for rg in reversed(order) if not bool(spread[rg[0]][rg[1]])]
        good += flat[:B - len(good)]
    return sorted(good)


@dataclass
class Batch:
    prompts: list[int]  # [G] dataset index of each trained group's prompt
    rollouts: Rollouts  # G groups of n completions
    total: torch.Tensor  # [G, n] weighted reward sum
    per_fn: dict  # {name: [G, n]} each reward function
    rounds: int  # generation rounds run this step
    drawn: int  # prompts drawn (generated) this step: the data position advances by this
    drawn_with_spread: int  # of the drawn groups, how many had reward spread


def collect(sample_round: Callable, B: int, dynamic: bool = False, max_rounds: int = 1) -> Batch:
    """Run generation rounds until the step's B groups are chosen (one round without `dynamic`)."""
    rounds, spread = [], []
    for r in range(max_rounds if dynamic else 1):
        rounds.append(sample_round(r))
        spread.append(has_spread(rounds[-1][2]))
        if not dynamic or int(sum(int(s.sum()) for s in spread)) >= B:
            break
    chosen = choose_groups(spread, B) if dynamic else [(0, g) for g in range(len(spread[0]))]
    drawn = sum(len(s) for s in spread)
    with_spread = int(sum(int(s.sum()) for s in spread))
    if len(rounds) == 1 and len(chosen) == len(spread[0]):  # nothing dropped: the round as it is
        idx, ro, total, per_fn = rounds[0]
        return Batch(list(idx), ro, total, per_fn, 1, drawn, with_spread)
    parts = [rounds[r][1].groups([g]) for r, g in chosen]
    return Batch(
        prompts=[rounds[r][0][g] for r, g in chosen],
        rollouts=Rollouts.concat(parts),
        total=torch.stack([rounds[r][2][g] for r, g in chosen]),
        per_fn={k: torch.stack([rounds[r][3][k][g] for r, g in chosen]) for k in rounds[0][3]},
        rounds=len(rounds), drawn=drawn, drawn_with_spread=with_spread,
    )
