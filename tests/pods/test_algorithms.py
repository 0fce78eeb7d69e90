"""plan_updates: which rollouts and advantages each optimizer step of PODS / GRPO / GRPO-GA uses."""

import pytest
import torch

from pods.advantages import group_advantages
from pods.algorithms import plan_updates
from pods.downsample import select


def rewards(G=3, n=8, seed=0):
    return torch.randint(0, 3, (G, n), generator=torch.Generator().manual_seed(seed)).float()


def test_pods_is_select_then_advantages_over_the_kept_m():
    r = rewards()
    [(idx, adv)] = plan_updates(r, "pods", 4, "max_variance")
    assert torch.equal(idx, select(r, 4, "max_variance"))
    assert torch.allclose(adv, group_advantages(r.gather(1, idx)))
    assert idx.shape == adv.shape == (3, 4)


def test_grpo_keeps_all_n():
    r = rewards()
    [(idx, adv)] = plan_updates(r, "grpo", 8, "none")
    assert torch.equal(idx, torch.arange(8).expand(3, 8))
    assert torch.allclose(adv, group_advantages(r))


def test_grpo_ga_uses_every_rollout_once_with_advantages_over_all_n():
    r = rewards(n=12)
    plan = plan_updates(r, "grpo_ga", 4, scale="none")
    assert len(plan) == 3
    used = torch.cat([idx for idx, _ in plan], 1)
    assert all(sorted(row) == list(range(12)) for row in used.tolist())
    full = group_advantages(r, scale="none")
    for idx, adv in plan:
        assert torch.allclose(adv, full.gather(1, idx))  # not re-centred per chunk


def test_random_rule_follows_the_generator():
    r = rewards()
    a = plan_updates(r, "pods", 3, "random", generator=torch.Generator().manual_seed(5))[0][0]
    b = plan_updates(r, "pods", 3, "random", generator=torch.Generator().manual_seed(5))[0][0]
    assert torch.equal(a, b)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="valid: pods, grpo, grpo_ga"):
        plan_updates(rewards(), "ppo", 4)
    with pytest.raises(ValueError, match="multiple of m"):
        plan_updates(rewards(n=10), "grpo_ga", 4)
