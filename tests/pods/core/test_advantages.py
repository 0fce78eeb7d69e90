"""Group-relative advantages: known values, sample vs population std, batch scaling, no NaN."""

import pytest
import torch

from pods.core.advantages import group_advantages, kept_advantages
from pods.core.downsample import select_ragged


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


# --- Reinforce-Ada's global statistics (RLHFlow/Reinforce-Ada @ 05be605 = 1197333 for verl/trainer/ppo/:
# core_algos.py compute_grpo_outcome_advantage, _compute_with_global_stats; ray_trainer.py uid_full_stats) ---
def reinforce_ada_advantage(drawn, kept, threshold=0.7, norm=False, eps=1e-6):
    """Their advantage of one prompt's kept rollouts, written from reading: every rollout drawn over the rounds is
    counted positive (reward > 0.7) or negative; mean = positives / drawn (0 and std 1 with <= 1 drawn), std of the
    reconstructed 1/0 samples clamped at eps; score - mean, divided by std + eps when norm_adv_by_std_in_grpo
    (their script sets global_stat_est=True, norm_adv_by_std_in_grpo=False)."""
    pos = sum(r > threshold for r in drawn)
    total = len(drawn)
    if total <= 1:
        mean, std = 0.0, 1.0
    else:
        samples = torch.cat([torch.ones(pos), torch.zeros(total - pos)])
        mean, std = float(samples.mean()), float(torch.clamp(samples.std(), min=eps))
    return [(r - mean) / (std + eps) if norm else r - mean for r in kept]


def ada_batches(seed, prompts=2500, n=64, round_n=16, m=16):
    """Rows as the ada allocation leaves them: counts of 16..64 drawn binary rewards (NaN past them), `balanced`
    keeping m of each row's own."""
    g = torch.Generator().manual_seed(seed)
    counts = torch.randint(1, n // round_n + 1, (prompts,), generator=g) * round_n  # [G] 16, 32, 48 or 64
    p = torch.rand(prompts, 1, generator=g)
    rewards = (torch.rand(prompts, n, generator=g) < p).float()
    rewards[torch.arange(n).unsqueeze(0) >= counts.unsqueeze(1)] = float("nan")  # not drawn
    return rewards, select_ragged(rewards, counts, m, "balanced")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_drawn_statistics_without_std_equal_reinforce_adas_advantage_on_10000_prompts(seed):
    rewards, idx = ada_batches(seed)  # 4 x 2,500 prompts
    ours = kept_advantages(rewards, idx, over="drawn", scale="none")
    for row, keep, got in zip(rewards.tolist(), idx.tolist(), ours.tolist()):
        drawn = [r for r in row if r == r]
        assert got == pytest.approx(reinforce_ada_advantage(drawn, [row[j] for j in keep]), abs=1e-6)
    kept_only = kept_advantages(rewards, idx, over="kept", scale="none")  # pods' default: the kept m, balanced
    assert not torch.allclose(ours, kept_only)  # ... whose mean is 1/2 wherever balanced found both kinds


def test_drawn_statistics_with_their_std_and_a_batch_scale():
    rewards, idx = ada_batches(7, prompts=300)
    ours = kept_advantages(rewards, idx, over="drawn", scale="group", eps=1e-6)
    for row, keep, got in zip(rewards.tolist(), idx.tolist(), ours.tolist()):
        drawn = [r for r in row if r == r]
        if 0 < sum(drawn) < len(drawn):  # theirs divides a zero-spread group by eps; pods gives it 0, as the kept
            assert got == pytest.approx(reinforce_ada_advantage(drawn, [row[j] for j in keep], norm=True), rel=1e-5)
    full = torch.tensor([[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, float("nan")]])
    batch = kept_advantages(full, torch.tensor([[0, 1], [1, 2]]), over="drawn", scale="batch", eps=0.0)
    drawn = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    sd = torch.tensor(drawn).std().item()
    assert batch.flatten().tolist() == pytest.approx([0.25 / sd, -0.75 / sd, -1 / 3 / sd, 2 / 3 / sd])
    none = kept_advantages(full, torch.tensor([[0, -1], [2, -1]]), over="drawn", scale="none")
    assert none.flatten().tolist() == pytest.approx([0.25, 0.0, 2 / 3, 0.0])  # -1: nothing kept there, advantage 0
    assert torch.equal(kept_advantages(full[:, :3], torch.tensor([[0, 2], [1, 2]])),
                       group_advantages(torch.tensor([[1.0, 1.0], [0.0, 1.0]])))  # over="kept": the paper's
    with pytest.raises(ValueError, match="unknown advantage statistics 'all'"):
        kept_advantages(full, torch.tensor([[0, 1], [1, 2]]), over="all")
