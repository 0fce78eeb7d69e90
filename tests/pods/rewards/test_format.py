"""Format rewards and the strict check for for_acc. Run: uv run pytest tests/pods/rewards/test_format.py"""

import pytest

from pods import rewards
from pods.rewards.format import format_reward, strict_format, tags_reward

GOOD = "<think>2+2=4</think><answer>4</answer>"

CASES = [
    # strict: (text, strict_format, tags reward)
    # the canonical format
    pytest.param(GOOD, True, 1.0, id="canonical"),
    # whitespace/newlines around and between the blocks are fine
    pytest.param("\n<think>\nx\n</think>\n\n<answer>\n4\n</answer>\n", True, 1.0, id="whitespace"),
    # text before <think> breaks strictness, tags still all once
    pytest.param("Sure! " + GOOD, False, 1.0, id="preamble"),
    # text after </answer>
    pytest.param(GOOD + " Hope this helps", False, 1.0, id="trailing-text"),
    # text between </think> and <answer>
    pytest.param("<think>x</think> so <answer>4</answer>", False, 1.0, id="text-between"),
    # answer before think
    pytest.param("<answer>4</answer><think>x</think>", False, 1.0, id="wrong-order"),
    # a blank answer
    pytest.param("<think>x</think><answer>  </answer>", False, 1.0, id="blank-answer"),
    # a duplicated answer block: two tags fail the count
    pytest.param("<think>x</think><answer>4</answer><answer>5</answer>", False, 0.5, id="two-answers"),
    # the think block only
    pytest.param("<think>x</think>", False, 0.5, id="think-only"),
    # no tags at all
    pytest.param("4", False, 0.0, id="no-tags"),
    # answer cut off by the length limit (no closing tag)
    pytest.param("<think>x</think><answer>4", False, 0.75, id="truncated"),
]


@pytest.mark.parametrize("text, strict, tags", CASES)
def test_strict_and_tags(text, strict, tags):
    assert strict_format(text) is strict
    assert format_reward([text], ["4"]) == [1.0 if strict else 0.0]
    assert tags_reward([text], ["4"]) == [tags]


def test_exported_from_package():
    # evaluation's for_acc imports it from the package root
    assert rewards.strict_format is strict_format
    assert rewards.get("format") is format_reward and rewards.get("tags") is tags_reward


def test_non_string_is_not_formatted():
    assert strict_format(None) is False and tags_reward([None], [""]) == [0.0]
