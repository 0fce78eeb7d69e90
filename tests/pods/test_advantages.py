"""Group-relative advantages: known values, zero-variance rows, no NaN."""

import pytest
import torch

from pods.advantages import group_advantages


def test_known_values():
    adv = group_advantages(torch.tensor([[1.0, 0.0, 1.0, 0.0]]), eps=0.0)
    assert adv.tolist() == [[1.0, -1.0, 1.0, -1.0]]  # mean 0.5, population std 0.5
    adv = group_advantages(torch.tensor([[3.0, 1.0]]), eps=0.0)
    assert adv.tolist() == [[1.0, -1.0]]


def test_eps_and_unscaled():
    r = torch.tensor([[2.0, 0.0]])
    assert group_advantages(r, eps=1.0).tolist() == [[0.5, -0.5]]
    assert group_advantages(r, scale_std=False).tolist() == [[1.0, -1.0]]


def test_rows_are_independent_and_zero_variance_rows_are_zero():
    r = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.5, 1.0], [0.0, 0.0, 0.0]])
    adv = group_advantages(r, eps=0.0)
    assert adv[0].tolist() == [0.0, 0.0, 0.0]
    assert adv[2].tolist() == [0.0, 0.0, 0.0]
    assert adv[1].sum().item() == pytest.approx(0.0, abs=1e-6)
    assert torch.isfinite(adv).all()


def test_single_rollout_groups_give_zero_not_nan():
    adv = group_advantages(torch.tensor([[1.0], [0.0]]), eps=0.0)
    assert adv.tolist() == [[0.0], [0.0]]


def test_shape_check():
    with pytest.raises(ValueError, match="\\[G, m\\]"):
        group_advantages(torch.rand(4))
