"""Group-relative advantages: known values, sample vs population std, batch scaling, no NaN."""

import pytest
import torch

from pods.core.advantages import group_advantages


def reference(rows, scale="group", eps=1e-4, unbiased=True):
    """Plain-Python reference of the same formula (TRL 1.15's, with its unbiased nanstd)."""
    def std(xs):
        mu = sum(xs) / len(xs)
        d = len(xs) - 1 if unbiased else len(xs)
        return (sum((x - mu) ** 2 for x in xs) / d) ** 0.5 if d > 0 else 0.0
    flat = [x for row in rows for x in row]
    out = []
    for row in rows:
        mu = sum(row) / len(row)
        sd = std(row) if scale == "group" else std(flat)
        out.append([(x - mu) if scale == "none" else ((x - mu) / (sd + eps) if sd > 0 else 0.0) for x in row])
    return out


def test_known_values_use_the_sample_std_by_default():
    adv = group_advantages(torch.tensor([[1.0, 0.0, 1.0, 0.0]]), eps=0.0)
    s = (1 / 3) ** 0.5  # sample std of [1, 0, 1, 0]: sqrt(4 * 0.25 / 3)
    assert adv[0].tolist() == pytest.approx([0.5 / s, -0.5 / s, 0.5 / s, -0.5 / s])
    adv = group_advantages(torch.tensor([[3.0, 1.0]]), eps=0.0)
    assert adv[0].tolist() == pytest.approx([2 ** -0.5, -(2 ** -0.5)])


def test_population_std_is_an_explicit_option():
    adv = group_advantages(torch.tensor([[1.0, 0.0, 1.0, 0.0]]), eps=0.0, std="population")
    assert adv.tolist() == [[1.0, -1.0, 1.0, -1.0]]  # mean 0.5, population std 0.5


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
@pytest.mark.parametrize("std", ["sample", "population"])
def test_matches_the_plain_reference(scale, std):
    r = torch.randint(0, 4, (5, 6), generator=torch.Generator().manual_seed(1)).float() / 3
    r[2] = 0.5  # a flat row
    want = reference(r.tolist(), scale, unbiased=std == "sample")
    got = group_advantages(r, scale=scale, std=std)
    assert torch.allclose(got, torch.tensor(want), atol=1e-5)


def test_eps_and_unscaled():
    r = torch.tensor([[2.0, 0.0]])
    s = 2 ** 0.5  # sample std of [2, 0]
    assert group_advantages(r, eps=1.0)[0].tolist() == pytest.approx([1 / (s + 1), -1 / (s + 1)])
    assert group_advantages(r, scale="none").tolist() == [[1.0, -1.0]]


def test_batch_scale_uses_one_std_for_all_groups_but_group_means():
    r = torch.tensor([[1.0, 0.0], [5.0, 5.0], [2.0, 0.0]])
    adv = group_advantages(r, scale="batch", eps=0.0)
    sd = r.flatten().std().item()
    assert torch.allclose(adv, torch.tensor([[0.5 / sd, -0.5 / sd], [0.0, 0.0], [1 / sd, -1 / sd]]))


def test_rows_are_independent_and_zero_variance_rows_are_zero():
    r = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.5, 1.0], [0.0, 0.0, 0.0]])
    adv = group_advantages(r, eps=0.0)
    assert adv[0].tolist() == [0.0, 0.0, 0.0]
    assert adv[2].tolist() == [0.0, 0.0, 0.0]
    assert adv[1].sum().item() == pytest.approx(0.0, abs=1e-6)
    assert torch.isfinite(adv).all()


@pytest.mark.parametrize("scale", ["group", "batch"])
def test_single_rollout_groups_give_zero_not_nan(scale):
    adv = group_advantages(torch.tensor([[1.0]]), eps=0.0, scale=scale)
    assert adv.tolist() == [[0.0]]
    assert group_advantages(torch.tensor([[1.0], [0.0]]), eps=0.0).tolist() == [[0.0], [0.0]]


def test_errors_name_the_valid_values():
    with pytest.raises(ValueError, match="\\[G, m\\]"):
        group_advantages(torch.rand(4))
    with pytest.raises(ValueError, match="valid: group, batch, none"):
        group_advantages(torch.rand(2, 2), scale="rows")
    with pytest.raises(ValueError, match="valid: sample, population"):
        group_advantages(torch.rand(2, 2), std="biased")


def trl_advantages(rows, scale):
    """TRL 1.15's formula (grpo_trainer.py, sum_then_normalize): nanmean, nanstd, unscorable -> 0."""
    from trl.trainer.utils import nanstd

    r = torch.tensor(rows)
    mean = torch.nanmean(r, dim=1, keepdim=True)
    sd = nanstd(r, dim=1, keepdim=True) if scale == "group" else nanstd(r).expand(r.shape[0], 1)
    adv = r - mean if scale == "none" else (r - mean) / (sd + 1e-4)
    return torch.nan_to_num(adv, nan=0.0)


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_nan_rewards_are_left_out_as_trl_leaves_them_out(scale):
    nan = float("nan")
    rows = [[1.0, nan, 0.0, 1.0], [nan, 0.5, 0.5, 0.0], [2.0, 0.0, 1.0, 3.0]]
    got = group_advantages(torch.tensor(rows), scale=scale)
    assert torch.isfinite(got).all() and got[0, 1] == 0 and got[1, 0] == 0
    assert torch.allclose(got, trl_advantages(rows, scale), atol=1e-6)
    if scale == "group":  # the NaN filled with the group's mean (the TRL path's old way) shrank the std
        filled = group_advantages(torch.tensor([[1.0, 2 / 3, 0.0, 1.0]]))
        assert got[0, 0] == pytest.approx(1 / 3 / (0.5773503 + 1e-4), rel=1e-5) and filled[0, 0] > got[0, 0] + 0.05


def test_nan_rows_and_single_scored_rollouts_give_zero():
    nan = float("nan")
    adv = group_advantages(torch.tensor([[nan, nan], [1.0, nan]]))
    assert adv.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert group_advantages(torch.tensor([[nan, 3.0]]), std="population").tolist() == [[0.0, 0.0]]
