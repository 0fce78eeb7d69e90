"""A training step's rollouts: generation rounds, and dynamic sampling (DAPO's filter of uninformative groups).

    batch = collect(sample_round, B=16, keep=keep, dynamic=True, metric="accuracy", max_rounds=30)
    batch.rollouts, batch.total, batch.per_fn, batch.idx   # G groups: Rollouts, [G, n], {name: [G, n]}, [G, k]

Contract: `sample_round(r) -> Round` generates and scores B new prompts; `keep(total [B, n]) -> idx [B, k]` selects
once per round. Without `dynamic`: one round, every group trained. With it, rounds run until B groups whose KEPT
rollouts differ in `metric` (FILTER_METRICS) are found (the first B drawn) or `max_rounds` are spent; then `short`
(SHORT_BATCH): `partial` trains those found (none: the last round's), `top_up` adds flat ones up to B, `error` raises
ShortBatchError. `stop()` is asked between rounds (True raises RoundsStopped). Why, and verl's names: docs/workbench.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from pods.core.rollouts import Rollouts
from pods.errors import PodsError

FILTER_METRICS = ("accuracy", "total")  # rl.dynamic_sampling_metric
SHORT_BATCH = ("partial", "top_up", "error")  # rl.short_batch
MAX_ROUNDS = 32  # rl.max_generation_rounds at most: a bound on a step; its default 30 is verl's DAPO recipe budget
# (recipe/dapo/run_dapo_qwen2.5_32b.sh: max_num_gen_batches=10 of gen_prompt_bsz = 3 x train_prompt_bsz prompts)


class ShortBatchError(PodsError, RuntimeError):
    """rl.short_batch=error: the rounds ran out before B informative groups were found."""


class RoundsStopped(Exception):
    """A stop was requested between generation rounds: the step in progress is dropped, not trained."""


@dataclass
class Round:
    prompts: list[int]  # [B] dataset index of each prompt drawn
    rollouts: Rollouts  # B groups of n completions
    total: torch.Tensor  # [B, n] weighted reward sum (pods.rewards.Combined)
    per_fn: dict  # {name: [B, n]} each reward item
    correct: torch.Tensor  # [B, n] bool: the accuracy reward > 0
    positions: list[int] | None = None  # [B] prompt-stream position of each prompt (None: not known)
    skipped: list[int] = field(default_factory=list)  # prompts a prompt rule passed over in this round
    skipped_positions: list[int] = field(default_factory=list)  # their stream positions


@dataclass
class Batch:
    prompts: list[int]  # [G] dataset index of each trained group's prompt
    rollouts: Rollouts  # G groups of n completions
    total: torch.Tensor  # [G, n] weighted reward sum
    per_fn: dict  # {name: [G, n]} each reward item
    correct: torch.Tensor  # [G, n] bool
    idx: torch.Tensor  # [G, k] the rollouts kept for the update
    rounds: int  # generation rounds run this step
    drawn: int  # prompts drawn (generated) this step: the data position advances by this
    drawn_informative: int  # of the drawn groups, how many passed the filter
    informative: int  # of the G trained groups, how many passed the filter
    short: bool  # dynamic sampling ran out of rounds before B informative groups
    # every round generated: (Round, idx [B, k] its selection, [B] each group's place among the G trained or -1)
    seen: list = field(default_factory=list)


def has_spread(values: torch.Tensor) -> torch.Tensor:
    """[G, k] -> [G] bool: not all k values equal (NaN never equals, so it counts as spread)."""
    return ~(values == values[:, :1]).all(dim=1)


def informative(round_: Round, idx: torch.Tensor, metric: str = "accuracy") -> torch.Tensor:
    """[B] bool: the kept rollouts idx [B, k] of each group differ in `metric` (FILTER_METRICS)."""
    if metric not in FILTER_METRICS:
        raise ValueError(f"unknown filter metric {metric!r}; valid: {', '.join(FILTER_METRICS)}")
    values = round_.correct.float() if metric == "accuracy" else round_.total  # [B, n]
    return has_spread(values.gather(1, idx))


def choose_groups(flags: list[torch.Tensor], B: int, short: str = "partial") -> list[tuple[int, int]]:
    """(round, group) of the groups to train on, in drawing order, from [B] informative flags per round (pure).

    The first B informative groups; if fewer: `partial` keeps them (none: the last round's groups),
    `top_up` adds flat groups of the latest rounds up to B, `error` keeps them (collect raises).
    """
    order = [(r, g) for r, f in enumerate(flags) for g in range(len(f))]
    good = [rg for rg in order if bool(flags[rg[0]][rg[1]])][:B]
    if len(good) < B and short == "top_up":
        good += [rg for rg in reversed(order) if not bool(flags[rg[0]][rg[1]])][:B - len(good)]
    elif not good:
        good = [(len(flags) - 1, g) for g in range(len(flags[-1]))]
    return sorted(good)


def collect(sample_round: Callable[[int], Round], B: int, keep: Callable, *, dynamic: bool = False,
            metric: str = "accuracy", max_rounds: int = 1, short: str = "partial",
            stop: Callable[[], bool] = lambda: False) -> Batch:
    """Run generation rounds until the step's groups are chosen (one round without `dynamic`)."""
    if short not in SHORT_BATCH:
        raise ValueError(f"unknown short-batch behaviour {short!r}; valid: {', '.join(SHORT_BATCH)}")
    rounds, idxs, flags = [], [], []
    for r in range(max_rounds if dynamic else 1):
        if r and stop():
            raise RoundsStopped(f"stopped before generation round {r + 1}")
        rounds.append(sample_round(r))
        idxs.append(keep(rounds[-1].total))  # [B, k]
        flags.append(informative(rounds[-1], idxs[-1], metric))  # [B]
        if not dynamic or sum(int(f.sum()) for f in flags) >= B:
            break
    found = sum(int(f.sum()) for f in flags)
    is_short = dynamic and found < B
    if is_short and short == "error":
        raise ShortBatchError(
            f"dynamic sampling found {found} of {B} groups whose kept rollouts differ in {metric} after "
            f"{len(rounds)} generation rounds ({sum(len(f) for f in flags)} prompts drawn), and rl.short_batch=error "
            f"stops here (as verl's max_num_gen_batches): raise rl.max_generation_rounds (at most {MAX_ROUNDS}), "
            "or set rl.short_batch=partial to train on the groups found (top_up: fill with flat groups)")
    chosen = choose_groups(flags, B, short) if dynamic else [(0, g) for g in range(len(flags[0]))]
    place = {rg: i for i, rg in enumerate(chosen)}
    seen = [(rounds[r], idxs[r], [place.get((r, g), -1) for g in range(len(flags[r]))]) for r in range(len(rounds))]
    counts = dict(rounds=len(rounds), drawn=sum(len(f) for f in flags), drawn_informative=found,
                  informative=sum(bool(flags[r][g]) for r, g in chosen), short=is_short, seen=seen)
    if chosen == [(0, g) for g in range(len(flags[0]))]:  # the first round as it is
        one = rounds[0]
        return Batch(list(one.prompts), one.rollouts, one.total, one.per_fn, one.correct, idxs[0], **counts)
    take = lambda pick: torch.stack([pick(r)[g] for r, g in chosen])  # noqa: E731  [G, ...]
    return Batch(
        prompts=[rounds[r].prompts[g] for r, g in chosen],
        rollouts=Rollouts.concat([rounds[r].rollouts.groups([g]) for r, g in chosen]),
        total=take(lambda r: rounds[r].total),
        per_fn={k: take(lambda r, k=k: rounds[r].per_fn[k]) for k in rounds[0].per_fn},
        correct=take(lambda r: rounds[r].correct),
        idx=take(lambda r: idxs[r]), **counts,
    )


def subset(batch: Batch, keep: torch.Tensor) -> Batch:
    """The batch with only the groups `keep` [G] bool marks (a prompt rule's group filter); the others count as
    dropped in `seen`. Keeping every group returns `batch` itself."""
    if bool(keep.all()):
        return batch
    kept = keep.nonzero().flatten().tolist()
    new_place = {g: i for i, g in enumerate(kept)}
    seen = [(rnd, idx, [new_place.get(g, -1) for g in places]) for rnd, idx, places in batch.seen]
    return Batch(prompts=[batch.prompts[g] for g in kept], rollouts=batch.rollouts.groups(kept),
                 total=batch.total[keep], per_fn={k: v[keep] for k, v in batch.per_fn.items()},
                 correct=batch.correct[keep], idx=batch.idx[keep], rounds=batch.rounds, drawn=batch.drawn,
                 drawn_informative=batch.drawn_informative, informative=batch.informative, short=batch.short, seen=seen)
