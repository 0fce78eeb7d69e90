"""Generation rounds and dynamic sampling (pods.core.collect): spread, the chosen groups, refill, edge cases."""

import pytest
import torch

from pods.core.collect import choose_groups, collect, has_spread
from pods.core.rollouts import Rollouts


def test_has_spread_per_group():
    total = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.5], [float("nan")] * 3])
    assert has_spread(total).tolist() == [False, True, False, True]  # NaN: kept, so the step gets skipped


@pytest.mark.parametrize("flags, B, want", [
    # enough spread in round 0: the first B in drawing order
    ([[True, False, True, True]], 2, [(0, 0), (0, 2)]),
    # refill from round 1; the surplus of round 1 is dropped
    ([[False, True], [True, True]], 2, [(0, 1), (1, 0)]),
    # rounds exhausted with 1 of 3: topped up with flat groups of the latest rounds
    ([[False, True, False], [False, False, False]], 3, [(0, 1), (1, 1), (1, 2)]),
    # every group flat: the latest round's groups
    ([[False, False], [False, False]], 2, [(1, 0), (1, 1)]),
])
def test_choose_groups(flags, B, want):
    assert choose_groups([torch.tensor(f) for f in flags], B) == want


def fake_round(rewards_per_round, n=2):
    """sample_round over fixed rewards: prompt ids count up; completion text names (round, group, j)."""
    def sample_round(r):
        rows = rewards_per_round[r]
        B = len(rows)
        idx = list(range(r * B, (r + 1) * B))
        texts = [f"r{r}g{g}c{j}" for g in range(B) for j in range(n)]
        ro = Rollouts(prompt_ids=[[i] for i in idx], completion_ids=[[1]] * (B * n), texts=texts, n=n)
        total = torch.tensor(rows, dtype=torch.float32)
        return idx, ro, total, {"acc": total * 2}
    return sample_round


def test_without_dynamic_sampling_one_round_trains_every_group():
    b = collect(fake_round([[[1, 1], [0, 1]], [[0, 1], [0, 1]]]), B=2)
    assert (b.rounds, b.drawn, b.drawn_with_spread, b.prompts) == (1, 2, 1, [0, 1])
    assert b.total.tolist() == [[1, 1], [0, 1]]


def test_dynamic_sampling_refills_until_B_groups_have_spread():
    rounds = [[[1, 1], [0, 1]], [[0, 0], [1, 0]], [[0, 1], [0, 1]]]
    b = collect(fake_round(rounds), B=2, dynamic=True, max_rounds=4)
    assert (b.rounds, b.drawn, b.drawn_with_spread) == (2, 4, 2)
    assert b.prompts == [1, 3] and b.total.tolist() == [[0, 1], [1, 0]]
    assert b.per_fn["acc"].tolist() == [[0, 2], [2, 0]]
    assert b.rollouts.texts == ["r0g1c0", "r0g1c1", "r1g1c0", "r1g1c1"]  # the rollouts follow the groups
    assert b.rollouts.prompt_ids == [[1], [3]] and has_spread(b.total).all()


def test_rounds_exhausted_and_every_group_flat():
    flat = [[[1, 1], [0, 0]]] * 3
    b = collect(fake_round(flat), B=2, dynamic=True, max_rounds=3)
    assert (b.rounds, b.drawn, b.drawn_with_spread) == (3, 6, 0)
    assert b.prompts == [4, 5] and not has_spread(b.total).any()  # the last round's flat groups


def test_rollouts_groups_and_concat():
    ro = Rollouts(prompt_ids=[[1], [2], [3]], completion_ids=[[i] for i in range(6)],
                  texts=[str(i) for i in range(6)], n=2, finish_reasons=["stop", "length"] * 3)
    part = ro.groups([2, 0])
    assert part.prompt_ids == [[3], [1]] and part.texts == ["4", "5", "0", "1"]
    both = Rollouts.concat([part, ro.groups([1])])
    assert both.num_groups == 3 and both.texts == ["4", "5", "0", "1", "2", "3"]
    with pytest.raises(ValueError, match="same n"):
        Rollouts.concat([ro, ro.select(torch.zeros(3, 1, dtype=torch.long))])
