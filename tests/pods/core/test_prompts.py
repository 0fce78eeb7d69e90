"""The prompt stream and a prompt rule's pick from it (pods.core.prompts): positions, skips, resumability."""

import torch

from pods.core.prompts import PromptStream, pick


class SkipOdd:
    """A filter: skips odd dataset indices (choose returns the first k even ones' positions)."""

    def __init__(self):
        self.offered = []

    def choose(self, candidates, k, generator=None):
        self.offered.append(candidates.tolist())
        return torch.tensor([i for i, c in enumerate(candidates.tolist()) if c % 2 == 0][:k], dtype=torch.long)


def test_the_stream_is_an_epoch_wise_permutation_that_depends_only_on_seed_and_position():
    s = PromptStream(5, seed=3)
    first = s(0, 5)
    assert sorted(first) == list(range(5)) and sorted(s(5, 5)) == list(range(5))
    assert PromptStream(5, seed=3)(3, 4) == s(3, 4)  # a fresh stream (a resume) gives the same prompts


def test_without_a_rule_the_next_b_prompts():
    s = PromptStream(10, 0)
    got = pick(None, s, 4, 3, num_prompts=10)
    assert got.prompts == s(4, 3) and got.positions == [4, 5, 6] and got.consumed == 3 and not got.skipped


def test_a_filter_walks_the_stream_until_b_are_picked_and_stops_at_the_last():
    s, rule = PromptStream(20, 1), SkipOdd()
    got = pick(rule, s, 2, 3, pool=1, num_prompts=20)
    walked = s(2, got.consumed)
    assert got.prompts == [c for c in walked if c % 2 == 0] and len(got.prompts) == 3
    assert got.skipped == [c for c in walked if c % 2] and walked[-1] % 2 == 0  # ends at its last pick
    assert got.positions == [2 + i for i, c in enumerate(walked) if c % 2 == 0]
    assert got.skipped_positions == [2 + i for i, c in enumerate(walked) if c % 2]
    assert sorted(got.positions + got.skipped_positions) == list(range(2, 2 + got.consumed))


def test_a_pool_offers_pool_x_b_candidates_and_one_epoch_at_most():
    rule = SkipOdd()
    got = pick(rule, PromptStream(8, 0), 0, 2, pool=3, num_prompts=8)
    assert len(rule.offered[0]) == 6 and len(got.prompts) == 2
    nothing = pick(type("No", (), {"choose": lambda self, c, k, g=None: torch.zeros(0, dtype=torch.long)})(),
                   PromptStream(8, 0), 0, 2, pool=2, num_prompts=8)
    assert nothing.prompts == [] and nothing.consumed == 8 and len(nothing.skipped) == 8
