"""The rollout rules beyond the paper's: cppo, gfpo_length, gfpo_efficiency, balanced, select_ragged.

cppo and balanced are checked against independent re-implementations of the authors' code, written from
reading it (docs/rules.md names the repository, file and commit), on 10,000+ random groups each.
"""

import pytest
import torch

import pods
from pods.core.algorithms import plan_update
from pods.core.downsample import BALANCED_THRESHOLD, NEEDS, RULES, select, select_batch, select_ragged


def random_groups(seed, G, n, kind):
    g = torch.Generator().manual_seed(seed)
    if kind == "continuous":
        return torch.rand(G, n, generator=g)
    if kind == "binary":
        return torch.randint(0, 2, (G, n), generator=g).float()
    return torch.randint(0, 4, (G, n), generator=g).float() / 3  # heavily tied, some above 0.7


# --- CPPO (lzhxmu/CPPO cppo_verl/recipe/cppo/src/cppo_ray_trainer.py, metric=smallest as in its scripts) ---
def cppo_reference(rewards, keep):
    """Their step on a batch that is one group: verl's GRPO advantage (score - mean) / (std + 1e-6), one-sample
    groups get mean 0 and std 1; then keep = int(len * (1 - pruning_rate)) largest |advantage| by torch.topk,
    indices sorted. Applied to G such batches at once along dim 1."""
    n = rewards.shape[1]
    if n == 1:
        mean, std = torch.zeros_like(rewards[:, :1]), torch.ones_like(rewards[:, :1])
    else:
        mean, std = rewards.mean(dim=1, keepdim=True), rewards.std(dim=1, keepdim=True)
    adv = (rewards - mean) / (std + 1e-6)
    return torch.topk(adv.abs(), k=keep, dim=1, largest=True).indices.sort(dim=1).values, adv


@pytest.mark.parametrize("kind", ["continuous", "binary", "tied"])
def test_cppo_equals_the_authors_pruning_on_10000_groups(kind):
    cases = 0
    for n, m in [(16, 8), (8, 2), (64, 16), (5, 4)]:  # their runs: n=16, pruning 0.5 -> 8 kept
        rewards = random_groups(n * 31 + m, 2500, n, kind)
        ours = select(rewards, m, "cppo")
        theirs, adv = cppo_reference(rewards, m)
        if kind == "continuous":  # no ties: the very same rollouts
            assert torch.equal(ours.sort(dim=1).values, theirs)
        # with ties topk may pick either of equal |A|: the kept |A| multiset is what must agree
        mine = adv.abs().gather(1, ours).sort(dim=1).values
        assert torch.allclose(mine, adv.abs().gather(1, theirs).sort(dim=1).values, atol=0, rtol=0)
        cases += rewards.shape[0]
    assert cases >= 10_000


def test_cppo_differs_from_pods_on_binary_rewards():
    row = torch.tensor([1.0] * 6 + [0.0] * 10)  # FIELD.md: 6 of 16 correct, m = 8
    kept = row[select(row, 8, "cppo")]
    assert kept.var(unbiased=False) == pytest.approx(0.1875)  # six 1s (|A| larger) and two 0s
    assert row[select(row, 8, "max_variance")].var(unbiased=False) == pytest.approx(0.25)


# --- CPPO's recipe (lzhxmu/CPPO @ 9c9da9e src/open_r1/grpo_trainer_gsm.py, the TRL fork of the paper's GSM8K runs:
# scripts/CPPO.sh --num_generations=16 --metric=smallest --pruning=0.5 --allocation) ---
def cppo_batch_reference(rewards, pruning):
    """Their step on one process's batch of B' prompts x G completions (group-major), written from reading:
    advantages (r - group mean) / (group std + 1e-4) over the G, then k = int(len x pruning) of the smallest |A|
    (torch.topk largest=False) pruned from the whole batch. Returns (kept mask [B', G], advantages [B', G])."""
    B, G = rewards.shape
    flat = rewards.flatten()
    mean = flat.view(-1, G).mean(dim=1).repeat_interleave(G)
    std = flat.view(-1, G).std(dim=1).repeat_interleave(G)
    adv = (flat - mean) / (std + 1e-4)
    k = int(adv.shape[0] * pruning)
    _, pruned = torch.topk(adv.abs(), k=k, largest=False)
    mask = torch.ones_like(adv, dtype=torch.bool)
    mask[pruned] = False
    return mask.view(B, G), adv.view(B, G)


def gsm8k_rewards(g, B, G):
    """Their GSM8K reward: accuracy (0/1) + format (0/1), weights 1 and 1 (recipes/gsm8k/*.yaml)."""
    p = torch.rand(B, 1, generator=g)
    return (torch.rand(B, G, generator=g) < p).float() + (torch.rand(B, G, generator=g) < 0.8).float()


SETTINGS = [(16, 0.5), (16, 0.75), (16, 0.875), (16, 0.9375), (8, 0.5), (8, 0.75), (4, 0.5)]  # their table: G 16


@pytest.mark.parametrize("kind", ["gsm8k", "continuous", "tied"])
def test_cppo_batch_scope_equals_the_authors_pruning_and_advantages_on_1500_batches(kind):
    g = torch.Generator().manual_seed(len(kind))
    for case in range(500):
        G, pruning = SETTINGS[case % len(SETTINGS)]
        B = int(torch.randint(1, 17, (1,), generator=g)) * 2  # their allocation: B / (1 - P) prompts
        rewards = {"gsm8k": gsm8k_rewards(g, B, G), "continuous": torch.rand(B, G, generator=g),
                   "tied": torch.randint(0, 3, (B, G), generator=g).float()}[kind]
        m = int(G * (1 - pruning))
        idx, adv = plan_update(rewards, "pods", m, "cppo", scope="batch", over="drawn")
        mask, their_adv = cppo_batch_reference(rewards, pruning)
        assert int((idx >= 0).sum()) == int(mask.sum()) == B * m
        ours = torch.zeros_like(mask)
        ours[torch.arange(B).unsqueeze(1).expand_as(idx)[idx >= 0], idx[idx >= 0]] = True  # [B', G] kept
        if kind == "continuous":  # no ties: the very same rollouts, with their advantages, in their order
            assert torch.equal(ours, mask), f"case {case}"
            assert torch.allclose(adv[idx >= 0], their_adv[mask], atol=1e-5)
        else:  # ties at the cut: either of equal |A| may go; the kept |A| multiset is what must agree
            assert torch.equal(their_adv.abs()[ours].sort().values, their_adv.abs()[mask].sort().values), f"case {case}"
            assert torch.allclose(adv[idx >= 0], their_adv[ours], atol=1e-5)


def test_cppo_batch_scope_keeps_unequal_numbers_per_group():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0]])
    idx = select_batch(rewards, 2, "cppo")  # 6 of 12: the flat group keeps none, the mixed ones 2 and 4
    assert idx.tolist() == [[0, 1, -1, -1], [-1, -1, -1, -1], [0, 1, 2, 3]]
    assert select_batch(rewards, 4, "cppo").shape == (3, 4)  # m = n keeps every rollout
    with pytest.raises(ValueError, match="ranks within each group only; batch scope: cppo"):
        select_batch(rewards, 2, "max_variance")


# --- Reinforce-Ada (RLHFlow/Reinforce-Ada verl/trainer/ppo/ray_trainer.py, downsample_cache and fallback) ---
def balanced_reference(row, m, threshold=0.7):
    """Their cache pick for one prompt: rollouts in arrival order go to a positive (reward > threshold) or
    negative cache; target_pos = min(m // 2, #pos), target_neg = min(m - target_pos, #neg), then more
    positives (else negatives) if still short; the first of each cache are taken."""
    pos = [i for i, r in enumerate(row) if r > threshold]
    neg = [i for i, r in enumerate(row) if not r > threshold]
    tp = min(m // 2, len(pos))
    tn = min(m - tp, len(neg))
    if tp + tn < m:
        if len(pos) > tp:
            tp += min(len(pos) - tp, m - (tp + tn))
        elif len(neg) > tn:
            tn += min(len(neg) - tn, m - (tp + tn))
    return sorted(pos[:tp] + neg[:tn])


@pytest.mark.parametrize("kind", ["binary", "tied", "continuous"])
def test_balanced_equals_reinforce_ada_on_10000_groups(kind):
    cases = 0
    for n, m in [(8, 4), (16, 4), (32, 8), (12, 7)]:  # their defaults: 8 per round, keep 4
        rewards = random_groups(n * 7 + m, 2500, n, kind)
        ours = select(rewards, m, "balanced").tolist()
        for row, got in zip(rewards.tolist(), ours):
            assert got == balanced_reference(row, m)
        cases += len(ours)
    assert cases >= 10_000


def test_balanced_picks_half_and_half_when_it_can():
    row = torch.tensor([0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    assert select(row, 4, "balanced").tolist() == [0, 1, 2, 3]
    assert select(torch.ones(6), 3, "balanced").tolist() == [0, 1, 2]  # all correct: the first drawn
    assert select(torch.tensor([1.0, 0.0, 0.0, 0.0]), 3, "balanced").tolist() == [0, 1, 2]  # m // 2 = 1 correct
    assert BALANCED_THRESHOLD == 0.7


# --- GFPO (arXiv 2508.09726; no official code) ---
def test_gfpo_length_keeps_the_shortest_with_ties_to_the_first():
    lengths = torch.tensor([[30.0, 10.0, 20.0, 10.0, 50.0]])
    assert select(torch.rand(1, 5), 3, "gfpo_length", lengths=lengths).tolist() == [[1, 3, 2]]
    assert NEEDS["gfpo_length"] == ("lengths",) and NEEDS["gfpo_efficiency"] == ("lengths",)


def test_gfpo_efficiency_keeps_the_highest_reward_per_token():
    g = torch.Generator().manual_seed(3)
    rewards = torch.rand(200, 12, generator=g)
    lengths = torch.randint(0, 40, (200, 12), generator=g).float()
    idx = select(rewards, 5, "gfpo_efficiency", lengths=lengths)
    ratio = rewards.double() / lengths.double().clamp(min=1)
    assert torch.equal(ratio.gather(1, idx), ratio.sort(dim=1, descending=True).values[:, :5])


def test_public_api_select_takes_lengths_and_refuses_a_missing_input():
    L = torch.tensor([[3, 1, 2, 9]])
    assert pods.select(torch.zeros(1, 4), 2, "gfpo_length", lengths=L).tolist() == [[1, 2]]
    with pytest.raises(ValueError, match="'gfpo_efficiency' needs lengths"):
        pods.select(torch.zeros(1, 4), 2, "gfpo_efficiency")
    with pytest.raises(ValueError, match="lengths must have the shape of rewards"):
        pods.select(torch.zeros(2, 4), 2, "gfpo_length", lengths=L)
    with pytest.raises(ValueError, match="did you mean 'gfpo_length'"):
        pods.select(torch.zeros(1, 4), 2, "gfpo_lenght")


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_rule_returns_m_distinct_indices_and_accepts_entropy(rule):
    g = torch.Generator().manual_seed(5)
    rewards = torch.randint(0, 2, (64, 10), generator=g).float()
    lengths, entropy = torch.randint(1, 30, (64, 10), generator=g), torch.rand(64, 10, generator=g)
    m = 10 if rule == "none" else 4
    idx = select(rewards, m, rule, generator=g, lengths=lengths, entropy=entropy)
    assert idx.shape == (64, m) and idx.dtype == torch.int64
    assert all(len(set(r)) == m for r in idx.tolist())


def test_select_ragged_selects_each_row_from_its_own_rollouts():
    g = torch.Generator().manual_seed(9)
    rewards = torch.randint(0, 2, (30, 32), generator=g).float()
    counts = torch.tensor([8, 16, 24, 32, 8] * 6)
    lengths = torch.randint(1, 50, (30, 32), generator=g)
    for rule in ["max_variance", "balanced", "gfpo_length"]:
        idx = select_ragged(rewards, counts, 4, rule, lengths=lengths)
        for r in range(30):
            c = int(counts[r])
            assert torch.equal(idx[r], select(rewards[r, :c], 4, rule, lengths=lengths[r, :c]))
    with pytest.raises(ValueError, match="at least m rollouts"):
        select_ragged(rewards, torch.full((30,), 3), 4)
