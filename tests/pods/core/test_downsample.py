"""Down-sampling rules against plain reference implementations and the paper's theorems."""

import itertools
import math

import pytest
import torch

from pods.core.downsample import RULES, select


def subset_variance(values, idx):
    chosen = [values[i] for i in idx]
    mean = sum(chosen) / len(chosen)
    return sum((c - mean) ** 2 for c in chosen) / len(chosen)


def exhaustive_max_variance(values, m):
    """Reference: the largest variance over all C(n, m) subsets."""
    return max(subset_variance(values, c) for c in itertools.combinations(range(len(values)), m))


def reward_rows(seed=0):
    """Random, binary, heavily tied, constant and two-level rows with n <= 12."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for n in range(1, 13):
        rows.append(torch.rand(n, generator=g))  # continuous
        rows.append(torch.randint(0, 2, (n,), generator=g).float())  # binary
        rows.append(torch.randint(0, 3, (n,), generator=g).float() / 2)  # heavily tied
        rows.append(torch.full((n,), 0.7))  # constant
        rows.append(torch.randint(0, 2, (n,), generator=g).float() * 1.1 + 0.1 * torch.randint(0, 2, (n,), generator=g))
    return rows


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_max_variance_matches_exhaustive_search(seed):
    for row in reward_rows(seed):
        n = row.numel()
        for m in range(1, n + 1):
            idx = select(row, m).tolist()
            assert len(set(idx)) == m, "indices must be distinct"
            best = exhaustive_max_variance(row.tolist(), m)
            assert subset_variance(row.tolist(), idx) == pytest.approx(best, abs=1e-9), (row, m)


@pytest.mark.parametrize("n,m,ones", [(16, 4, 5), (16, 8, 4), (64, 16, 8), (64, 16, 40), (10, 6, 3), (9, 4, 2)])
def test_binary_rewards_follow_theorem_2(n, m, ones):
    """Binary rewards: keep min(m/2, #class) of each class, i.e. k = m/2 when both classes are large."""
    row = torch.zeros(n)
    row[torch.randperm(n, generator=torch.Generator().manual_seed(n + ones))[:ones]] = 1.0
    kept = row[select(row, m)]
    k = int(kept.sum())
    zeros = n - ones
    if ones >= m // 2 and zeros >= m // 2:
        assert k in (m // 2, (m + 1) // 2)
    else:
        assert k == min(ones, m) or m - k == min(zeros, m)


def test_batch_equals_row_by_row_and_rows_are_independent():
    g = torch.Generator().manual_seed(0)
    for n in (20, 64):  # full sort and partial-selection paths
        rewards = torch.randint(0, 4, (32, n), generator=g).float()
        for rule in ["max_variance", "max_reward", "percentile"]:
            batched = select(rewards, 6, rule)
            assert batched.shape == (32, 6) and batched.dtype == torch.int64
            for i in range(32):
                assert torch.equal(batched[i], select(rewards[i], 6, rule))


def test_permuting_a_row_permutes_indices_but_keeps_the_reward_multiset():
    g = torch.Generator().manual_seed(1)
    for _ in range(50):
        row = torch.randint(0, 3, (15,), generator=g).float()
        perm = torch.randperm(15, generator=g)
        for rule in ["max_variance", "max_reward", "percentile"]:
            a = sorted(row[select(row, 5, rule)].tolist())
            b = sorted(row[perm][select(row[perm], 5, rule)].tolist())
            assert a == b


def test_max_reward_keeps_the_top_m():
    row = torch.tensor([0.1, 0.9, 0.5, 0.7, 0.3])
    assert sorted(select(row, 2, "max_reward").tolist()) == [1, 3]


def test_percentile_keeps_both_extremes_and_evenly_spaced_ranks():
    row = torch.tensor([5.0, 0.0, 9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0])  # ranks = values
    idx = select(row, 4, "percentile")
    assert row[idx].tolist() == [0.0, 3.0, 6.0, 9.0]
    for n in range(1, 30):
        for m in range(1, n + 1):
            assert len(set(select(torch.rand(n), m, "percentile").tolist())) == m


def test_random_is_reproducible_distinct_and_uniform():
    rewards = torch.zeros(4, 10)
    a = select(rewards, 3, "random", generator=torch.Generator().manual_seed(7))
    b = select(rewards, 3, "random", generator=torch.Generator().manual_seed(7))
    assert torch.equal(a, b)
    assert all(len(set(r)) == 3 for r in a.tolist())
    counts = torch.bincount(select(torch.zeros(20000, 10), 3, "random", generator=torch.Generator().manual_seed(0)).flatten(), minlength=10)
    expected = 20000 * 3 / 10
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 30  # 9 d.o.f.: p ~ 4e-4 for 30


def test_none_is_identity_and_requires_m_equals_n():
    rewards = torch.rand(3, 5)
    assert torch.equal(select(rewards, 5, "none"), torch.arange(5).expand(3, 5))
    with pytest.raises(ValueError, match="m must equal n"):
        select(rewards, 4, "none")


def test_ties_resolve_deterministically():
    row = torch.tensor([1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    lengths = torch.tensor([5.0, 5.0, 3.0, 3.0, 5.0, 3.0])
    for rule in RULES:
        if rule == "random":
            continue
        m = 6 if rule == "none" else 4
        assert torch.equal(select(row, m, rule, lengths=lengths), select(row.clone(), m, rule, lengths=lengths.clone()))


def test_partial_selection_path_with_ties_never_repeats_an_index():
    for n, m in [(64, 16), (40, 10), (100, 3)]:
        for row in [torch.zeros(n), torch.ones(n).index_fill(0, torch.tensor([5]), 0.0), torch.randint(0, 2, (n,)).float()]:
            idx = select(row, m)
            assert len(set(idx.tolist())) == m
            brute = sorted(row.tolist())
            best = max(subset_variance(brute, list(range(m - k)) + list(range(n - k, n))) for k in range(m + 1))
            assert subset_variance(row.tolist(), idx.tolist()) == pytest.approx(best, abs=1e-9)


def test_large_magnitude_rewards_keep_max_variance():
    row = torch.tensor([1e6, 1e6 + 1, 1e6 + 2, 1e6 + 3, 1e6 + 4], dtype=torch.float64)
    kept = sorted(row[select(row, 2)].tolist())
    assert kept == [1e6, 1e6 + 4]


@pytest.mark.parametrize(
    "rewards,m,rule,message",
    [
        (torch.rand(2, 4), 0, "max_variance", "m \\(rollouts kept"),
        (torch.rand(2, 4), 5, "max_variance", "1..n=4"),
        (torch.rand(2, 4), 2.0, "max_variance", "integer"),
        (torch.tensor([[0.0, 1.0], [math.nan, 1.0]]), 1, "max_variance", "group\\(s\\) \\[1\\]"),
        (torch.tensor([[0.0, math.inf]]), 1, "max_reward", "finite"),
        (torch.rand(2, 4), 2, "max_var", "did you mean 'max_variance'.*valid: max_variance, max_reward"),
        (torch.rand(2, 4), 2, "gfpo_length", "'gfpo_length' needs lengths"),
        (torch.rand(2, 2, 2), 1, "max_variance", "\\[G, n\\]"),
    ],
)
def test_bad_input_errors_say_what_is_wrong(rewards, m, rule, message):
    with pytest.raises(ValueError, match=message):
        select(rewards, m, rule)


def test_integer_rewards_are_accepted():
    assert select(torch.tensor([[0, 1, 1, 0]]), 2).shape == (1, 2)
