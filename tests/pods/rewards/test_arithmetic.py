"""Exact-match reward of the embedded arithmetic task. Run: uv run pytest tests/pods/rewards/test_arithmetic.py"""

import pytest

from pods import data
from pods.rewards.arithmetic import arithmetic_reward, extract_digits

CASES = [
    # the exact zero-padded answer
    pytest.param("0579", "0579", 1.0, id="exact"),
    # leading whitespace is skipped
    pytest.param(" 0579", "0579", 1.0, id="leading-space"),
    # the digit run ends at the first non-digit (the model kept going after the answer)
    pytest.param("0579\n123+4", "0579", 1.0, id="stops-at-newline"),
    pytest.param("0579+1", "0579", 1.0, id="stops-at-plus"),
    # padding is part of the answer
    pytest.param("579", "0579", 0.0, id="missing-padding"),
    # an extra digit makes it a different number
    pytest.param("05790", "0579", 0.0, id="extra-digit"),
    # the answer must lead the completion
    pytest.param("x0579", "0579", 0.0, id="not-leading"),
    # one wrong digit: no partial credit
    pytest.param("0578", "0579", 0.0, id="one-digit-off"),
    # empty completion (EOS right away)
    pytest.param("", "0579", 0.0, id="empty"),
    # an instruct-style answer block is read instead
    pytest.param("<think>carry</think><answer>0579</answer>", "0579", 1.0, id="answer-block"),
]


@pytest.mark.parametrize("completion, gold, expected", CASES)
def test_arithmetic_reward(completion, gold, expected):
    assert arithmetic_reward([completion], [gold]) == [expected]


def test_extract_caps_digit_runs():
    # a megabyte of digits is read only up to the cap
    assert len(extract_digits("1" * 1_000_000)) <= 65


def test_generated_answers_verify():
    # the loader's answers are accepted verbatim, and a shifted pairing is rejected
    test = data.load_dataset("arithmetic", split="test", size=50)
    answers = [ex.answer for ex in test]
    assert arithmetic_reward(answers, answers) == [1.0] * 50
    assert sum(arithmetic_reward(answers[1:] + answers[:1], answers)) < 5
