"""plan_update: which rollouts and advantages the one optimizer step of PODS / GRPO / GRPO-GA uses."""

import pytest
import torch

from pods.core.advantages import group_advantages
from pods.core.algorithms import plan_update
from pods.core.downsample import select


def rewards(G=3, n=8, seed=0):
    return torch.randint(0, 3, (G, n), generator=torch.Generator().manual_seed(seed)).float()


def test_pods_is_select_then_advantages_over_the_kept_m():
    r = rewards()
    idx, adv = plan_update(r, "pods", 4, "max_variance")
    assert torch.equal(idx, select(r, 4, "max_variance"))
    assert torch.allclose(adv, group_advantages(r.gather(1, idx)))
    assert idx.shape == adv.shape == (3, 4)


def test_grpo_keeps_all_n():
    r = rewards()
    idx, adv = plan_update(r, "grpo", 8, "none")
    assert torch.equal(idx, torch.arange(8).expand(3, 8))
    assert torch.allclose(adv, group_advantages(r))


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_grpo_ga_is_one_update_on_all_n_with_advantages_over_all_n(scale):
    r = rewards(n=12)
    idx, adv = plan_update(r, "grpo_ga", 12, scale=scale)  # one (idx, adv) pair: one optimizer step
    assert torch.equal(idx, torch.arange(12).expand(3, 12))
    assert torch.allclose(adv, group_advantages(r, scale=scale))  # not re-centred per chunk of m
    grpo_idx, grpo_adv = plan_update(r, "grpo", 12, "none", scale=scale)
    assert torch.equal(idx, grpo_idx) and torch.equal(adv, grpo_adv)


def test_random_rule_follows_the_generator():
    r = rewards()
    a = plan_update(r, "pods", 3, "random", generator=torch.Generator().manual_seed(5))[0]
    b = plan_update(r, "pods", 3, "random", generator=torch.Generator().manual_seed(5))[0]
    assert torch.equal(a, b)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="valid: pods, grpo, grpo_ga"):
        plan_update(rewards(), "ppo", 4)
    with pytest.raises(ValueError, match="grpo_ga trains on all n rollouts: m=4 must equal n=10"):
        plan_update(rewards(n=10), "grpo_ga", 4)
