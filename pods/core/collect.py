"""A training step's rollouts: generation rounds, dynamic sampling (DAPO's filter of uninformative groups), and an
allocation rule's rounds of more rollouts for the same prompts.

    batch = collect(sampler, B=16, dynamic=True, metric="accuracy", max_rounds=30)
    batch.rollouts, batch.total, batch.per_fn, batch.idx   # G groups: Rollouts, [G, n], {name: [G, n]}, [G, k]
    batch = collect(sampler, 16, budget=256)   # sampler.allocation(...) a plan: rows of unequal n, batch.counts [G]

Contract: `sampler` (a `Sampler`) generates and scores: `round(call)` B new prompts, n rollouts each (`round(call,
n=k)`: k each), `keep(round) -> idx [B, k]` selects once per round. Without `dynamic`: one round, every group trained.
With it, rounds run until B groups whose KEPT rollouts differ in `metric` (FILTER_METRICS) are found (the first B
drawn) or `max_rounds` are spent; then `short` (SHORT_BATCH): `partial` trains those found (none: the last round's),
`top_up` adds flat ones up to B, `error` raises ShortBatchError. `stopping()` is asked between rounds (True raises
RoundsStopped). `allocation(budget left)` -> a pods.core.allocation plan per round (None: no allocation rule):
`more(call, prompts, k)` draws k more for each of those prompts until the plan is done; groups it does not train are
dropped. docs/workbench.md, docs/rules.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


class Sampler:
    """What a step's generation needs, as one object: collect's only source of rollouts (subclass it).

    train.py's is pods.run.sampler.StepSampler, PODSTrainer's pods.integrations.trl.rounds.TRLSampler; `call`
    numbers the step's generation calls from 0 (a sampling seed may depend on it)."""

    def round(self, call: int, n: int | None = None) -> "Round":
        """B new prompts (a prompt rule's pick), n rollouts each (None: the run's n), scored."""
        raise NotImplementedError

    def more(self, call: int, prompts: list[int], k: int) -> "Round":
        """k more rollouts for each of `prompts` (an allocation rule's further rounds), scored: [len(prompts), k]."""
        raise NotImplementedError(f"{type(self).__name__} cannot draw more rollouts for an allocation rule")

    def keep(self, rnd: "Round") -> torch.Tensor:
        """idx [B, k]: the update's selection of the round's groups (made once per round)."""
        raise NotImplementedError

    def allocation(self, budget: int | None):
        """A fresh pods.core.allocation plan for a round of new prompts (budget: rollouts left this step; None: no
        cap), or None without an allocation rule."""
        return None

    def stopping(self) -> bool:
        """A stop was requested (asked between rounds only)."""
        return False


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
    counts: torch.Tensor | None = None  # [B] rollouts drawn per prompt (allocation rules; the rest is padding)

    def drawn(self) -> torch.Tensor:
        """[B, n] bool: the entries that hold a generated rollout (all of them without an allocation rule)."""
        return padding_mask(self.total.shape, self.counts)

    def rows(self, gs: list[int]) -> "Round":
        """The round with only groups `gs`, in that order (skipped prompts not carried)."""
        at = torch.tensor(gs, dtype=torch.long)
        return Round([self.prompts[g] for g in gs], self.rollouts.groups(gs), self.total[at],
                     {k: v[at] for k, v in self.per_fn.items()}, self.correct[at],
                     None if self.positions is None else [self.positions[g] for g in gs],
                     counts=None if self.counts is None else self.counts[at])


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
    # every round generated: (Round, idx [B, k] its selection (-1 rows: not selected), [B] place among the G or -1)
    seen: list = field(default_factory=list)
    counts: torch.Tensor | None = None  # [G] rollouts drawn per group (allocation rules; entries past it pad)


def padding_mask(shape, counts: torch.Tensor | None) -> torch.Tensor:
    """[G, n] bool: entry j of row g holds a rollout (j < counts[g]; all True for counts None)."""
    if counts is None:
        return torch.ones(shape, dtype=torch.bool)
    return torch.arange(shape[1]).unsqueeze(0) < counts.unsqueeze(1)


def generated(batch: Batch) -> tuple[list[int], torch.Tensor]:
    """Every group generated this step (trained or not): prompts [R], accuracy float [R, n] (NaN: not drawn)."""
    prompts = [p for rnd, _, _ in batch.seen for p in rnd.prompts]
    correct = torch.cat([rnd.correct.float().masked_fill(~rnd.drawn(), float("nan")) for rnd, _, _ in batch.seen])
    return prompts, correct


def has_spread(values: torch.Tensor) -> torch.Tensor:
    """[G, k] -> [G] bool: not all k values equal (NaN never equals, so it counts as spread)."""
    return ~(values == values[:, :1]).all(dim=1)


def informative(round_: Round, idx: torch.Tensor, metric: str = "accuracy") -> torch.Tensor:
    """[B] bool: the kept rollouts idx [B, k] of each group differ in `metric` (FILTER_METRICS); -1 entries (a
    batch-level rule's) keep nothing."""
    if metric not in FILTER_METRICS:
        raise ValueError(f"unknown filter metric {metric!r}; valid: {', '.join(FILTER_METRICS)}")
    values = round_.correct.float() if metric == "accuracy" else round_.total  # [B, n]
    if bool((idx >= 0).all()):
        return has_spread(values.gather(1, idx))
    kept = values.gather(1, idx.clamp(min=0))  # [B, k]
    hi = torch.where(idx >= 0, kept, -torch.inf).max(dim=1).values
    return hi > torch.where(idx >= 0, kept, torch.inf).min(dim=1).values


def choose_groups(flags: list[torch.Tensor], B: int, short: str = "partial",
                  eligible: list[torch.Tensor] | None = None) -> list[tuple[int, int]]:
    """(round, group) of the groups to train on, in drawing order, from [B] informative flags per round (pure).

    The first B informative groups; if fewer: `partial` keeps them (none: the last round's groups),
    `top_up` adds flat groups of the latest rounds up to B, `error` keeps them (collect raises).
    eligible: [B] bool per round, the groups that may be trained at all (an allocation rule's); None: all.
    """
    order = [(r, g) for r, f in enumerate(flags) for g in range(len(f)) if eligible is None or bool(eligible[r][g])]
    good = [rg for rg in order if bool(flags[rg[0]][rg[1]])][:B]
    if len(good) < B and short == "top_up":
        good += [rg for rg in reversed(order) if not bool(flags[rg[0]][rg[1]])][:B - len(good)]
    elif not good:
        good = [rg for rg in order if rg[0] == len(flags) - 1]
    return sorted(good)


def allocate(sampler: Sampler, plan, B: int, *, call: int = 0, done: int = 0) -> tuple[Round, torch.Tensor, int, int]:
    """B new prompts under an allocation plan (pods.core.allocation): their first rollouts, then rounds of more for
    the same prompts until the plan asks for none. Returns (Round [B', plan.n] with `counts`, trained [B'] bool,
    the next generation call's index, the rounds run). `done`: generation rounds already run this step."""
    k0 = int(plan.first(B).max())
    first = sampler.round(call, n=k0)
    counts = plan.first(len(first.prompts))  # [B'] (a prompt rule may offer fewer than B)
    if bool((counts != k0).any()):
        raise ValueError(f"allocation {plan.name!r}: a first round draws one n for every prompt, got {counts.tolist()}")
    G, N = len(first.prompts), plan.n
    pad = lambda x, fill: torch.cat([x, x.new_full((G, N - k0), fill)], dim=1)  # noqa: E731  [G, k0] -> [G, N]
    total, correct = pad(first.total, float("nan")), pad(first.correct, False)
    per_fn = {k: pad(v, float("nan")) for k, v in first.per_fn.items()}
    ro = first.rollouts
    rows = [[(ro.completion_ids[g * k0 + j], ro.texts[g * k0 + j], ro.finish_reasons[g * k0 + j])
             for j in range(k0)] for g in range(G)]  # [G] lists of (ids, text, finish reason), drawing order
    call, rounds = call + 1, 1
    while bool((more := plan.more(correct.float(), counts, round=rounds)).any()):
        if sampler.stopping():
            raise RoundsStopped(f"stopped before generation round {done + rounds + 1}")
        for k in sorted(set(more[more > 0].tolist())):  # one generation call per distinct number of rollouts
            gs = (more == k).nonzero().flatten().tolist()
            piece = sampler.more(call, [first.prompts[g] for g in gs], k)  # [len(gs), k]
            call += 1
            for i, g in enumerate(gs):
                c = int(counts[g])
                total[g, c:c + k], correct[g, c:c + k] = piece.total[i], piece.correct[i]
                for name in per_fn:
                    per_fn[name][g, c:c + k] = piece.per_fn[name][i]
                p = piece.rollouts
                rows[g] += [(p.completion_ids[i * k + j], p.texts[i * k + j], p.finish_reasons[i * k + j])
                            for j in range(k)]
        counts, rounds = counts + more, rounds + 1
    flat = [c for row in rows for c in row + [([], "", "")] * (N - len(row))]  # padding: empty completions
    padded = Rollouts(prompt_ids=ro.prompt_ids, completion_ids=[c[0] for c in flat], texts=[c[1] for c in flat],
                      n=N, finish_reasons=[c[2] for c in flat])
    out = Round(first.prompts, padded, total, per_fn, correct, first.positions, first.skipped,
                first.skipped_positions, counts=counts)
    return out, plan.trained(correct.float(), counts), call, rounds


def collect(sampler: Sampler, B: int, *, dynamic: bool = False, metric: str = "accuracy", max_rounds: int = 1,
            short: str = "partial", budget: int | None = None) -> Batch:
    """Run generation rounds until the step's groups are chosen (one round without `dynamic`); see the module."""
    if short not in SHORT_BATCH:
        raise ValueError(f"unknown short-batch behaviour {short!r}; valid: {', '.join(SHORT_BATCH)}")
    rounds, idxs, flags, eligible = [], [], [], []
    calls = spent = generation_rounds = 0
    for r in range(max_rounds if dynamic else 1):
        if r and sampler.stopping():
            raise RoundsStopped(f"stopped before generation round {generation_rounds + 1}")
        try:
            plan = sampler.allocation(None if budget is None else budget - spent)
            if plan is not None:
                plan.first(B)
        except ValueError:
            if not rounds:
                raise
            break  # the step's budget cannot pay another batch's first round: dynamic sampling ends short
        if plan is None:
            rnd, calls, ran = sampler.round(calls), calls + 1, 1
            ok = torch.ones(len(rnd.prompts), dtype=torch.bool)
        else:
            rnd, ok, calls, ran = allocate(sampler, plan, B, call=calls, done=generation_rounds)
            spent += int(rnd.counts.sum())
        generation_rounds += ran
        rounds.append(rnd)
        idx, flag = select_round(rnd, ok, sampler.keep, metric)
        idxs.append(idx)
        flags.append(flag)
        eligible.append(ok)
        if not dynamic or sum(int(f.sum()) for f in flags) >= B:
            break
    found = sum(int(f.sum()) for f in flags)
    is_short = dynamic and found < B
    if is_short and short == "error":
        raise ShortBatchError(
            f"dynamic sampling found {found} of {B} groups whose kept rollouts differ in {metric} after "
            f"{generation_rounds} generation rounds ({sum(len(f) for f in flags)} prompts drawn), and "
            f"rl.short_batch=error stops here (as verl's max_num_gen_batches): raise rl.max_generation_rounds (at "
            f"most {MAX_ROUNDS}){' or rl.allocation_budget' if budget is not None else ''}, or set "
            "rl.short_batch=partial to train on the groups found (top_up: fill with flat groups)")
    chosen = (choose_groups(flags, B, short, eligible) if dynamic else
              [(0, g) for g in range(len(flags[0])) if bool(eligible[0][g])])
    place = {rg: i for i, rg in enumerate(chosen)}
    seen = [(rounds[r], idxs[r], [place.get((r, g), -1) for g in range(len(flags[r]))]) for r in range(len(rounds))]
    stats = dict(rounds=generation_rounds, drawn=sum(len(f) for f in flags), drawn_informative=found,
                  informative=sum(bool(flags[r][g]) for r, g in chosen), short=is_short, seen=seen)
    if chosen == [(0, g) for g in range(len(flags[0]))]:  # the first round as it is
        one = rounds[0]
        return Batch(list(one.prompts), one.rollouts, one.total, one.per_fn, one.correct, idxs[0], **stats,
                     counts=one.counts)
    parts = [rounds[r].rows([g]) for r, g in chosen] or [rounds[-1].rows([])]  # [G] one-group rounds
    cat = lambda pick: torch.cat([pick(p) for p in parts])  # noqa: E731  [G, ...]
    return Batch(
        prompts=[p for part in parts for p in part.prompts],
        rollouts=Rollouts.concat([p.rollouts for p in parts]),
        total=cat(lambda p: p.total), per_fn={k: cat(lambda p, k=k: p.per_fn[k]) for k in rounds[0].per_fn},
        correct=cat(lambda p: p.correct),
        idx=torch.stack([idxs[r][g] for r, g in chosen]) if chosen else idxs[-1][:0], **stats,
        counts=None if rounds[0].counts is None else cat(lambda p: p.counts),
    )


def select_round(rnd: Round, ok: torch.Tensor, keep, metric: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The round's selection idx [B, k] (-1 rows for the groups `ok` [B] rules out: never selected) and its
    informative flags [B] (False for those)."""
    if bool(ok.all()):
        idx = keep(rnd)
        return idx, informative(rnd, idx, metric)
    gs = ok.nonzero().flatten().tolist()
    part = rnd.rows(gs)
    got = keep(part)  # [len(gs), k]
    idx = torch.full((len(ok), got.shape[1]), -1, dtype=torch.long)
    idx[ok] = got
    flag = torch.zeros(len(ok), dtype=torch.bool)
    flag[ok] = informative(part, got, metric)
    return idx, flag


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
                 drawn_informative=batch.drawn_informative, informative=batch.informative, short=batch.short, seen=seen,
                 counts=None if batch.counts is None else batch.counts[keep])
