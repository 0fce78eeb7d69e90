"""Answer extraction: <answer> blocks, nested \\boxed{}, the last number.

Run: uv run pytest tests/rewards/test_extract.py
"""

import pytest

from rewards.extract import answer_block, final_answer, last_boxed, last_number

BOXED_CASES = [
    # a MATH label with nested braces: the authors' code cut at the first '}' and returned \frac{1
    pytest.param(r"so $\boxed{\frac{1}{2}}$.", r"\frac{1}{2}", id="nested-frac"),
    # deeper nesting keeps every level
    pytest.param(r"\boxed{\sqrt{\frac{a^{2}}{b}}}", r"\sqrt{\frac{a^{2}}{b}}", id="deep-nesting"),
    # the last box wins when a solution boxes intermediate results
    pytest.param(r"\boxed{1} then \boxed{2}", "2", id="last-of-two"),
    # escaped braces of a set do not count as nesting
    pytest.param(r"\boxed{\{1,2\}}", r"\{1,2\}", id="escaped-braces"),
    # \fbox is an alias some solutions use
    pytest.param(r"\fbox{7}", "7", id="fbox"),
    # `\boxed 5` without braces takes the next token
    pytest.param(r"answer: \boxed 5.", "5", id="boxed-space"),
    # an unclosed last box falls back to the previous well-formed one
    pytest.param(r"\boxed{3} and \boxed{\frac{1}{2}", "3", id="unclosed-falls-back"),
    # no box at all
    pytest.param("the answer is 3", None, id="none"),
    # a box nested deeper than the cap is malformed input, not an answer
    pytest.param(r"\boxed{" + "{" * 300 + "1" + "}" * 300 + "}", None, id="too-deep"),
]


@pytest.mark.parametrize("text, expected", BOXED_CASES)
def test_last_boxed(text, expected):
    assert last_boxed(text) == expected


NUMBER_CASES = [
    # thousands commas are removed
    pytest.param("total $1,080.", "1080", id="commas-dollar"),
    # the last number, not the first
    pytest.param("3 apples and 4 pears: 7", "7", id="last"),
    # negative and decimal
    pytest.param("change is -2.50 degrees", "-2.50", id="negative-decimal"),
    # a trailing period is not a decimal point
    pytest.param("It is 72.", "72", id="trailing-period"),
    # a simple fraction is one number
    pytest.param("ratio 3/4", "3/4", id="fraction"),
    # scientific notation
    pytest.param("about 6.02e23 atoms", "6.02e23", id="scientific"),
    # leading-dot decimals
    pytest.param("p = .5", ".5", id="leading-dot"),
    # no digits at all
    pytest.param("no idea", None, id="none"),
]


@pytest.mark.parametrize("text, expected", NUMBER_CASES)
def test_last_number(text, expected):
    assert last_number(text) == expected


FINAL_CASES = [
    # a boxed answer inside the answer block wins
    pytest.param(r"<think>\boxed{1}</think><answer>\boxed{2}</answer>", "2", id="boxed-in-block"),
    # the block content when it has no box
    pytest.param("<think>x</think><answer> 42 </answer>", "42", id="block"),
    # without a block: the last box in the text
    pytest.param(r"so \boxed{9}", "9", id="boxed-only"),
    # an answer block cut off by the token limit runs to the end
    pytest.param("<think>x</think><answer> 17", "17", id="unclosed-block"),
    # the last of two answer blocks
    pytest.param("<answer>1</answer><answer>2</answer>", "2", id="two-blocks"),
    # without block or box: the final stated answer, the last statement
    pytest.param("Work.\nI think it is 5", "I think it is 5", id="stated"),
    # nothing to grade
    pytest.param("", None, id="none"),
]


@pytest.mark.parametrize("text, expected", FINAL_CASES)
def test_final_answer(text, expected):
    assert final_answer(text) == expected


def test_non_strings_give_none():
    # untrusted input of the wrong type never raises
    assert answer_block(None) is None and last_boxed(123) is None and last_number(None) is None
