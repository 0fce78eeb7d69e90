"""Rollouts: group-major layout and per-group selection."""

import pytest
import torch

from pods.core.rollouts import Rollouts


def make(G=2, n=3):
    return Rollouts(
        prompt_ids=[[g] for g in range(G)],
        completion_ids=[[g, j] * (j + 1) for g in range(G) for j in range(n)],
        texts=[f"p{g}c{j}" for g in range(G) for j in range(n)],
        n=n,
    )


def test_layout_and_lengths():
    r = make()
    assert len(r) == 6 and r.num_groups == 2
    assert r.group_ids() == [0, 0, 0, 1, 1, 1]
    assert r.completion_lengths().tolist() == [[2, 4, 6], [2, 4, 6]]
    assert r.finish_reasons == [""] * 6
    assert r.flat_prompt_ids()[4] == [1]


def test_select_keeps_per_group_indices():
    kept = make().select(torch.tensor([[2, 0], [1, 2]]))
    assert kept.n == 2 and kept.texts == ["p0c2", "p0c0", "p1c1", "p1c2"]
    assert kept.group_ids() == [0, 0, 1, 1]


def test_select_with_minus_one_keeps_unequal_numbers_as_groups_of_one():
    kept = make(G=3).select(torch.tensor([[2, -1], [-1, -1], [0, 1]]))  # a batch-level rule's rows
    assert kept.n == 1 and kept.texts == ["p0c2", "p2c0", "p2c1"] and kept.flat_prompt_ids() == [[0], [2], [2]]
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 3\) or be -1"):
        make().select(torch.tensor([[-2, 0], [0, 1]]))


def test_invalid_shapes_raise():
    with pytest.raises(ValueError, match="completions"):
        Rollouts(prompt_ids=[[1]], completion_ids=[[1]], texts=["a"], n=2)
    with pytest.raises(ValueError, match="indices must lie"):
        make().select(torch.tensor([[0, 3], [0, 1]]))
    with pytest.raises(ValueError, match="G=2"):
        make().select(torch.tensor([[0, 1]]))
