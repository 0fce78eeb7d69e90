"""Allocation rules driven round by round as the loop drives them, against the authors' procedures."""

import pytest
import torch

from pods.core.allocation import ALLOCATIONS, make_allocation
from pods.core.downsample import select_ragged


def drive(plan, outcomes):
    """The loop's use of a plan: outcomes [B, n] is what the j-th rollout of prompt b would score (0/1).
    Returns (counts [B], trained [B], rounds, correct [B, n] with the undrawn entries 0)."""
    B, n = outcomes.shape
    counts = plan.first(B)
    r = 1
    while True:
        seen = torch.arange(n).unsqueeze(0) < counts.unsqueeze(1)
        correct = torch.where(seen, outcomes, torch.zeros_like(outcomes))
        more = plan.more(correct, counts, r)
        if not more.any():
            return counts, plan.trained(correct, counts), r, correct
        counts, r = counts + more, r + 1


def test_none_is_one_round_of_n_all_trained():
    counts, trained, rounds, _ = drive(make_allocation("none", n=8, m=4), torch.ones(3, 8))
    assert counts.tolist() == [8, 8, 8] and trained.all() and rounds == 1


# --- SPEED-RL (Zanette-Labs/speed-rl @ 80e47b5 verl/trainer/ppo/data_controller.py update_prompts) ---
def test_speed_continues_and_trains_only_prompts_of_intermediate_screening_pass_rate():
    g = torch.Generator().manual_seed(0)
    outcomes = (torch.rand(4000, 24, generator=g) < torch.rand(4000, 1, generator=g) ** 2).float()
    counts, trained, rounds, _ = drive(make_allocation("speed", n=24, m=8, screen=4), outcomes)  # their 4 + 20
    screen = outcomes[:, :4]
    qualified = screen.std(dim=1) > 0  # theirs: np.std of the first-phase metric values > 0
    assert torch.equal(trained, qualified) and 0.2 < qualified.float().mean() < 0.8
    assert counts.tolist() == [24 if q else 4 for q in qualified.tolist()] and rounds == 2


# --- Reinforce-Ada (RLHFlow/Reinforce-Ada @ 05be605 verl/trainer/ppo/ray_trainer.py multi-round generation) ---
def reinforce_ada_reference(row, m=4, round_repeat=8, max_rounds=4, balanced=True):
    """One prompt: rounds of round_repeat while not finished; finished (balanced) at >= m // 2 positive and
    >= m - m // 2 negative cached; the pick: first target of each cache, topped up (fallback likewise)."""
    pos, neg, drawn = [], [], 0
    for _ in range(max_rounds):
        for j in range(drawn, drawn + round_repeat):
            (pos if row[j] > 0.7 else neg).append(j)
        drawn += round_repeat
        if (len(pos) >= m // 2 and len(neg) >= m - m // 2) if balanced else len(pos) >= 1:
            break
    tp = min(m // 2, len(pos))
    tn = min(m - tp, len(neg))
    if tp + tn < m and len(pos) > tp:
        tp += min(len(pos) - tp, m - tp - tn)
    return drawn, sorted(pos[:tp] + neg[:tn])


def test_ada_then_balanced_equals_reinforce_ada_on_10000_prompts():
    g = torch.Generator().manual_seed(1)
    B = 10_000
    outcomes = (torch.rand(B, 32, generator=g) < torch.rand(B, 1, generator=g) ** 3).float()
    counts, trained, rounds, correct = drive(make_allocation("ada", n=32, m=4, round_n=8), outcomes)
    kept = select_ragged(correct, counts, 4, "balanced")
    assert trained.all() and rounds <= 4 + 1
    for b in range(B):
        drawn, pick = reinforce_ada_reference(outcomes[b].tolist())
        assert (int(counts[b]), sorted(kept[b].tolist())) == (drawn, pick), f"prompt {b}"
    assert len(set(counts.tolist())) == 4  # every number of rounds happened


def test_ada_positive_stops_at_the_first_correct_round():
    outcomes = torch.zeros(3, 16)
    outcomes[0, 2] = outcomes[1, 12] = 1.0
    counts, *_ = drive(make_allocation("ada_positive", n=16, m=4, round_n=4), outcomes)
    assert counts.tolist() == [4, 16, 16]


def test_budget_caps_the_step_in_prompt_order():
    outcomes = torch.zeros(4, 32)  # never solved: ada would draw all 32 for each
    counts, *_ = drive(make_allocation("ada", n=32, m=4, budget=70, round_n=8), outcomes)
    assert counts.tolist() == [22, 16, 16, 16]  # 32 + 32, then the 6 left go to the first prompt
    with pytest.raises(ValueError, match="over the step's budget of 20"):
        make_allocation("speed", n=24, m=4, budget=20).first(8)


def test_registry_and_bad_parameters():
    assert {"none", "speed", "ada", "ada_positive"} <= set(ALLOCATIONS)
    with pytest.raises(ValueError, match="did you mean 'speed'"):
        make_allocation("sped", n=8, m=4)
    with pytest.raises(ValueError, match="m=4 <= round_n <= n=32"):
        make_allocation("ada", n=32, m=4, round_n=2)
    with pytest.raises(ValueError, match="2 <= screen < n=8"):
        make_allocation("speed", n=8, m=4, screen=8)
    with pytest.raises(ValueError, match="1 <= m <= n"):
        make_allocation("none", n=4, m=8)
    with pytest.raises(ValueError, match="budget must be a whole number"):
        make_allocation("none", n=4, m=2, budget=0)
