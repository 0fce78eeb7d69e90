"""Generation rounds and dynamic sampling (pods.core.collect): the filter on the kept rollouts, the chosen
groups, refill, short batches, a stop between rounds; allocation rules' rounds (counts per prompt, the budget)."""

import pytest
import torch

from pods.core.algorithms import keep
from pods.core.collect import (
    MAX_ROUNDS,
    Round,
    RoundsStopped,
    Sampler,
    ShortBatchError,
    choose_groups,
    collect,
    generated,
    has_spread,
    informative,
)
from pods.core.rollouts import Rollouts
from pods.errors import PodsError

ALL = lambda total: torch.arange(total.shape[1]).expand(total.shape[0], -1)  # noqa: E731  keep all n: GRPO
KEEP_ALL = lambda rnd: ALL(rnd.total)  # noqa: E731  collect's keep takes the round


class Scripted(Sampler):
    """A sampler of scripted rounds: round(call[, n]) -> rounds(call[, n=n]), keep, more, an allocation plan maker
    (budget -> plan) and a stop test, each a plain function."""

    def __init__(self, rounds, keep=KEEP_ALL, more=None, plan=None, stop=lambda: False):
        self.rounds, self.keep, self.plan, self.stopping = rounds, keep, plan, stop
        if more is not None:
            self.more = more

    def round(self, call, n=None):
        return self.rounds(call) if n is None else self.rounds(call, n=n)

    def allocation(self, budget):
        return None if self.plan is None else self.plan(budget)


def test_has_spread_per_group():
    total = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.5], [float("nan")] * 3])
    assert has_spread(total).tolist() == [False, True, False, True]


def make_round(total, correct=None, r=0):
    """A Round of B groups with rewards `total` [B, n]; correct defaults to total > 0."""
    total = torch.tensor(total, dtype=torch.float32)
    B, n = total.shape
    texts = [f"r{r}g{g}c{j}" for g in range(B) for j in range(n)]
    ro = Rollouts(prompt_ids=[[r * B + g] for g in range(B)], completion_ids=[[1]] * (B * n), texts=texts, n=n)
    correct = total > 0 if correct is None else torch.tensor(correct)
    return Round(list(range(r * B, (r + 1) * B)), ro, total, {"acc": total * 2}, correct)


def test_the_filter_judges_accuracy_of_the_kept_rollouts_not_the_total():
    # group 0: right answers with different format credit; group 1: one right, one wrong; group 2: all wrong
    rnd = make_round([[1.0, 1.1, 1.2, 1.0], [1.0, 0.1, 0.0, 0.05], [0.0, 0.1, 0.2, 0.0]],
                     correct=[[True] * 4, [True, False, False, False], [False] * 4])
    assert informative(rnd, ALL(rnd.total), "accuracy").tolist() == [False, True, False]  # DAPO: acc
    assert informative(rnd, ALL(rnd.total), "total").tolist() == [True, True, True]  # verl's seq_reward
    top2 = keep(rnd.total, "pods", 2, "max_reward")  # group 1 keeps 1.0 and 0.1: still right and wrong
    assert informative(rnd, top2, "accuracy").tolist() == [False, True, False]
    two_wrong = torch.tensor([[2, 3]] * 3)  # e.g. a random pick of group 1's two wrong answers
    assert informative(rnd, two_wrong, "accuracy").tolist() == [False, False, False]  # kept m flat, the n are not
    with pytest.raises(ValueError, match="valid: accuracy, total"):
        informative(rnd, top2, "reward")
    ragged = torch.tensor([[0, 1, -1], [0, 1, 2], [-1, -1, -1]])  # a batch-level rule: -1 keeps nothing
    assert informative(rnd, ragged, "accuracy").tolist() == [False, True, False]


@pytest.mark.parametrize("flags, B, short, want", [
    # enough informative groups in round 0: the first B in drawing order
    ([[True, False, True, True]], 2, "partial", [(0, 0), (0, 2)]),
    # refill from round 1; the surplus of round 1 is dropped
    ([[False, True], [True, True]], 2, "partial", [(0, 1), (1, 0)]),
    # rounds exhausted with 1 of 3: partial trains the one found, top_up adds flat groups of the latest rounds
    ([[False, True, False], [False, False, False]], 3, "partial", [(0, 1)]),
    ([[False, True, False], [False, False, False]], 3, "top_up", [(0, 1), (1, 1), (1, 2)]),
    # every group flat: the latest round's groups (a zero-advantage step, as GRPO takes)
    ([[False, False], [False, False]], 2, "partial", [(1, 0), (1, 1)]),
    ([[False, False], [False, False]], 2, "top_up", [(1, 0), (1, 1)]),
])
def test_choose_groups(flags, B, short, want):
    assert choose_groups([torch.tensor(f) for f in flags], B, short) == want


def rounds_of(totals):
    return lambda r: make_round(totals[r], r=r)


def test_without_dynamic_sampling_one_round_trains_every_group():
    b = collect(Scripted(rounds_of([[[1, 1], [0, 1]], [[0, 1], [0, 1]]])), 2)
    assert (b.rounds, b.drawn, b.drawn_informative, b.informative, b.short, b.prompts) == (1, 2, 1, 1, False, [0, 1])
    assert b.total.tolist() == [[1, 1], [0, 1]] and b.idx.tolist() == [[0, 1], [0, 1]]


def test_dynamic_sampling_refills_until_B_groups_are_informative():
    totals = [[[1, 1], [0, 1]], [[0, 0], [1, 0]], [[0, 1], [0, 1]]]
    b = collect(Scripted(rounds_of(totals)), 2, dynamic=True, max_rounds=4)
    assert (b.rounds, b.drawn, b.drawn_informative, b.informative, b.short) == (2, 4, 2, 2, False)
    assert b.prompts == [1, 3] and b.total.tolist() == [[0, 1], [1, 0]]
    assert b.per_fn["acc"].tolist() == [[0, 2], [2, 0]] and b.correct.tolist() == [[False, True], [True, False]]
    assert b.rollouts.texts == ["r0g1c0", "r0g1c1", "r1g1c0", "r1g1c1"]  # the rollouts follow the groups
    assert b.rollouts.prompt_ids == [[1], [3]] and has_spread(b.total).all()


def test_the_selection_is_made_once_per_round_and_carried_to_the_update():
    calls = []

    def keep_first(rnd):  # [B, n] -> [B, 1]... here [B, 2]: the first two rollouts, counted
        calls.append(rnd.total.shape)
        return torch.tensor([[0, 1]] * rnd.total.shape[0])

    totals = [[[1, 1, 0], [0, 1, 1]], [[0, 1, 0], [1, 1, 1]]]  # kept [0, 1]: round 0 group 1, round 1 group 0
    b = collect(Scripted(rounds_of(totals), keep_first), 2, dynamic=True, max_rounds=4)
    assert calls == [(2, 3), (2, 3)] and b.prompts == [1, 2] and b.idx.tolist() == [[0, 1], [0, 1]]


@pytest.mark.parametrize("short, prompts, informative_groups", [("partial", [4, 5], 0), ("top_up", [4, 5], 0)])
def test_rounds_exhausted_with_every_group_flat(short, prompts, informative_groups):
    flat = [[[1, 1], [0, 0]]] * 3
    b = collect(Scripted(rounds_of(flat)), 2, dynamic=True, max_rounds=3, short=short)
    assert (b.rounds, b.drawn, b.drawn_informative, b.informative, b.short) == (3, 6, 0, informative_groups, True)
    assert b.prompts == prompts and not has_spread(b.total).any()  # the last round's flat groups


def test_a_short_batch_trains_fewer_groups_tops_up_or_stops():
    totals = [[[1, 0], [1, 1]], [[0, 0], [1, 1]]]
    part = collect(Scripted(rounds_of(totals)), 2, dynamic=True, max_rounds=2, short="partial")
    assert (part.prompts, part.short, part.informative, part.total.shape) == ([0], True, 1, (1, 2))
    full = collect(Scripted(rounds_of(totals)), 2, dynamic=True, max_rounds=2, short="top_up")
    assert (full.prompts, full.short, full.informative) == ([0, 3], True, 1)
    with pytest.raises(ShortBatchError, match=r"found 1 of 2 groups whose kept rollouts differ in accuracy after "
                                              r"2 generation rounds \(4 prompts drawn\).*raise rl.max_generation_"
                                              rf"rounds \(at most {MAX_ROUNDS}\)") as err:
        collect(Scripted(rounds_of(totals)), 2, dynamic=True, max_rounds=2, short="error")
    assert isinstance(err.value, PodsError)


def test_a_stop_between_rounds_ends_the_step_and_an_always_flat_reward_cannot_hold_it():
    drawn, stop_after = [], 3

    def always_flat(r):
        drawn.append(r)
        return make_round([[1, 1], [0, 0]], r=r)

    with pytest.raises(RoundsStopped, match="before generation round 4"):
        collect(Scripted(always_flat, stop=lambda: len(drawn) >= stop_after), 2, dynamic=True,
                max_rounds=MAX_ROUNDS)
    assert drawn == [0, 1, 2]  # the signal is seen between rounds, never during one
    drawn.clear()
    b = collect(Scripted(always_flat), 2, dynamic=True, max_rounds=MAX_ROUNDS)  # no signal: the bound ends it
    assert len(drawn) == MAX_ROUNDS and b.short


def test_rollouts_groups_and_concat():
    ro = Rollouts(prompt_ids=[[1], [2], [3]], completion_ids=[[i] for i in range(6)],
                  texts=[str(i) for i in range(6)], n=2, finish_reasons=["stop", "length"] * 3)
    part = ro.groups([2, 0])
    assert part.prompt_ids == [[3], [1]] and part.texts == ["4", "5", "0", "1"]
    both = Rollouts.concat([part, ro.groups([1])])
    assert both.num_groups == 3 and both.texts == ["4", "5", "0", "1", "2", "3"]
    with pytest.raises(ValueError, match="same n"):
        Rollouts.concat([ro, ro.select(torch.zeros(3, 1, dtype=torch.long))])


def test_the_batch_lists_every_round_generated_with_each_groups_place_among_the_trained():
    rounds = [make_round([[0.0, 0.0], [0.0, 1.0]], r=0), make_round([[1.0, 0.0], [1.0, 1.0]], r=1)]
    batch = collect(Scripted(lambda r: rounds[r]), 2, dynamic=True, max_rounds=2)
    assert [rnd for rnd, _, _ in batch.seen] == rounds  # the rollout ledger records the dropped groups too
    assert [places for _, _, places in batch.seen] == [[-1, 0], [1, -1]]
    assert all(torch.equal(idx, ALL(rnd.total)) for rnd, idx, _ in batch.seen)
    one = collect(Scripted(lambda r: rounds[r]), 2)
    assert [places for _, _, places in one.seen] == [[0, 1]]


def test_a_group_filter_keeps_the_marked_groups_and_marks_the_others_dropped():
    from pods.core.collect import subset

    rounds = [make_round([[0.0, 1.0], [1.0, 0.0], [0.0, 0.5]])]
    batch = collect(Scripted(lambda r: rounds[r]), 3)
    assert subset(batch, torch.tensor([True, True, True])) is batch
    two = subset(batch, torch.tensor([True, False, True]))
    assert two.prompts == [0, 2] and two.rollouts.num_groups == 2 and two.total.tolist() == [[0.0, 1.0], [0.0, 0.5]]
    assert two.idx.shape == (2, 2) and [p for _, _, p in two.seen] == [[0, -1, 1]]


# ----------------------------------------------------------------------------- allocation rules' rounds


def world(pattern, B):
    """sample_round / sample_more over prompts 0, 1, 2, ...: rollout j drawn for prompt p is correct iff pattern(p, j);
    `calls` lists each generation call (call index, prompts, k)."""
    drawn, calls, nxt = {}, [], [0]

    def generate(call, prompts, k):
        calls.append((call, list(prompts), k))
        total = torch.tensor([[float(pattern(p, drawn.get(p, 0) + j)) for j in range(k)] for p in prompts])
        texts = [f"p{p}j{drawn.get(p, 0) + j}" for p in prompts for j in range(k)]
        for p in prompts:
            drawn[p] = drawn.get(p, 0) + k
        ro = Rollouts(prompt_ids=[[p] for p in prompts], completion_ids=[[1]] * len(texts), texts=texts, n=k)
        return Round(list(prompts), ro, total, {"acc": total}, total > 0)

    def sample_round(call, n=8):
        prompts = list(range(nxt[0], nxt[0] + B))
        nxt[0] += B
        return generate(call, prompts, n)

    return sample_round, generate, calls


def ragged_keep(m, rule="max_variance"):
    return lambda rnd: keep(rnd.total, "pods", m, rule, counts=rnd.counts)


SPEED_WORLD = {0: lambda j: 1, 1: lambda j: 0, 2: lambda j: j % 2, 3: lambda j: j == 1}  # prompt -> rollout j correct


def test_speed_screens_every_prompt_and_finishes_only_those_with_a_mixed_screen():
    from pods.core.allocation import make_allocation

    sample_round, generate, calls = world(lambda p, j: SPEED_WORLD[p % 4](j), B=4)
    b = collect(Scripted(sample_round, ragged_keep(4), generate,
                         plan=lambda budget: make_allocation("speed", 8, 4, budget, screen=2)), 4)
    assert calls == [(0, [0, 1, 2, 3], 2), (1, [2, 3], 6)]  # a screen of 2 each, then 6 more for the mixed two
    rnd, idx, places = b.seen[0]
    assert rnd.counts.tolist() == [2, 2, 8, 8] and places == [-1, -1, 0, 1]  # the screened-out: dropped groups
    assert (idx[:2] == -1).all() and (idx[2:] >= 0).all()
    assert b.prompts == [2, 3] and b.counts.tolist() == [8, 8] and b.total.shape == (2, 8) and b.rounds == 2
    assert b.rollouts.texts[:8] == [f"p2j{j}" for j in range(8)]  # drawing order within a prompt
    assert rnd.total[0].tolist()[:2] == [1.0, 1.0] and torch.isnan(rnd.total[0, 2:]).all()  # NaN pads
    assert rnd.rollouts.texts[2:8] == [""] * 6 and rnd.rollouts.completion_ids[2:8] == [[]] * 6
    prompts, correct = generated(b)
    assert prompts == [0, 1, 2, 3] and torch.isnan(correct[:2, 2:]).all() and correct[3].tolist() == [0, 1] + [0] * 6


def test_ada_samples_each_prompt_until_it_has_enough_signal_within_the_budget():
    from pods.core.allocation import make_allocation

    pattern = {0: lambda j: j % 2, 1: lambda j: j >= 8, 2: lambda j: 0}  # done at 4; at 12; never (cap n = 16)
    for budget, want, rounds in ((None, [4, 12, 16], 4), (30, [4, 12, 14], 4), (20, [4, 8, 8], 2)):
        sample_round, generate, calls = world(lambda p, j: pattern[p](j), B=3)
        b = collect(Scripted(sample_round, ragged_keep(4, "balanced"), generate,
                             plan=lambda left: make_allocation("ada", 16, 4, left, round_n=4)), 3, budget=budget)
        assert b.counts.tolist() == want and b.rounds == rounds, budget
        assert sum(k * len(ps) for _, ps, k in calls) == sum(want) <= (budget or 48)
        assert [c for c, _, _ in calls] == list(range(len(calls)))  # each generation call its own seed index
        assert b.prompts == [0, 1, 2] and (b.idx < b.counts.unsqueeze(1)).all()  # m of each row's own rollouts
        right = b.correct.float().gather(1, b.idx).sum(1).tolist()  # balanced: 2 right and 2 wrong where it can
        assert right == ([2.0, 2.0, 0.0] if want[1] == 12 else [2.0, 0.0, 0.0])


def test_allocation_inside_dynamic_sampling_rounds_and_a_step_budget_across_them():
    from pods.core.allocation import make_allocation

    sample_round, generate, calls = world(lambda p, j: SPEED_WORLD[p % 4](j), B=4)
    alloc = lambda budget: make_allocation("speed", 8, 4, budget, screen=2)  # noqa: E731
    b = collect(Scripted(sample_round, ragged_keep(4), generate, alloc), 4, dynamic=True, max_rounds=5)
    assert b.prompts == [2, 3, 6, 7] and b.drawn == 8 and b.rounds == 4 and not b.short  # 2 batches x 2 rounds
    assert [p for _, _, p in b.seen] == [[-1, -1, 0, 1], [-1, -1, 2, 3]]
    sample_round, generate, calls = world(lambda p, j: SPEED_WORLD[p % 4](j), B=4)
    short = collect(Scripted(sample_round, ragged_keep(4), generate, alloc), 4, dynamic=True, max_rounds=5,
                    budget=30)  # 20 for the first batch, 8 + 2 for the second, then spent
    assert short.prompts == [2, 3] and short.short and short.drawn == 8 and sum(k * len(p) for _, p, k in calls) == 30
    assert short.seen[1][0].counts.tolist() == [2, 2, 4, 2] and short.seen[1][2] == [-1] * 4  # cut short: not trained


def test_a_rule_that_finishes_no_prompt_trains_no_group_and_a_stop_ends_the_allocation_rounds():
    from pods.core.allocation import make_allocation

    sample_round, generate, _ = world(lambda p, j: 1, B=3)  # all right: speed screens every prompt out
    b = collect(Scripted(sample_round, ragged_keep(2), generate,
                         plan=lambda budget: make_allocation("speed", 8, 2, budget, screen=2)), 3)
    assert b.prompts == [] and b.total.shape == (0, 8) and b.idx.shape == (0, 2) and len(b.seen[0][0].prompts) == 3
    sample_round, generate, _ = world(lambda p, j: 0, B=3)
    with pytest.raises(RoundsStopped, match="before generation round 2"):
        collect(Scripted(sample_round, ragged_keep(2), generate, stop=lambda: True,
                         plan=lambda budget: make_allocation("ada", 8, 2, budget, round_n=2)), 3)
    with pytest.raises(ValueError, match="over the step's budget of 5"):
        collect(Scripted(sample_round, ragged_keep(2), generate,
                         plan=lambda budget: make_allocation("ada", 8, 2, budget, round_n=2)), 3, budget=5)
