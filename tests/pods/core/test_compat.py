"""Combinations of hook kinds that make no sense are refused with the reason; the rest pass."""

import pytest

from pods.core.compat import combination_problems


@pytest.mark.parametrize("kw, message", [
    (dict(allocation="speed", algorithm="grpo_ga", m=16, n=16), "splits every prompt's n into equal repeats"),
    (dict(allocation="ada", rule="none", m=8, n=16), "balanced is Reinforce-Ada's pick"),
    (dict(allocation="ada", m=8, n=8, round_n=8), "nothing is left to allocate"),
    (dict(m_schedule="linear", rule="none", m=16, n=16), "rl.rule=none needs m = n"),
    (dict(m_schedule="cosine", algorithm="grpo", m=16, n=16), "rl.algorithm=grpo trains on all n"),
    (dict(m_schedule="linear", allocation="ada", round_n=8, m=4, n=32), "keep rl.m_schedule=constant"),
    (dict(allocation="ada_positive", round_n=8, m=12, n=32), "rl.m=12 must be <= round_n"),
    (dict(rule_scope="batch", m=8, n=16), "rl.rule_scope=batch ranks rollouts across the whole batch, which "
                                          "rl.rule=max_variance does not"),
    (dict(rule_scope="batch", rule="cppo", m=16, n=16), "rl.m = rl.n = 16 keeps every rollout"),
    (dict(rule_scope="batch", rule="cppo", allocation="ada", round_n=8, m=8, n=16), "rl.rule_scope=batch ranks rows "
                                                                                     "of one n"),
], ids=["speed-grpo-ga", "ada-none", "ada-m-n", "schedule-none", "schedule-grpo", "schedule-ada", "ada-round",
        "batch-scope-rule", "batch-scope-m-n", "batch-scope-ada"])
def test_nonsense_is_refused_with_the_reason(kw, message):
    kw = {"rule": "max_variance", **kw}
    problems = combination_problems(**kw)
    assert len(problems) == 1 and message in problems[0]


def test_sensible_combinations_pass():
    for kw in [dict(rule="balanced", allocation="ada", round_n=8, m=4, n=32),
               dict(rule="max_variance", prompt_rule="greso", allocation="speed", token_mask="entropy_top", m=8, n=24),
               dict(rule="cppo", m_schedule="linear", prompt_rule="mopps", m=4, n=16),
               dict(rule="none", m=16, n=16, prompt_rule="snr_top_p"),
               dict(rule="none", m=16, n=16, allocation="speed"),
               dict(rule="cppo", rule_scope="batch", m=8, n=16, allocation="speed")]:  # speed trains all n of the prompts it finishes
        assert combination_problems(**kw) == []
