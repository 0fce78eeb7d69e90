"""Answer extraction: the final-answer rule, <answer> blocks, nested \\boxed{}, degenerate repetition.

Run: uv run pytest tests/pods/rewards/test_extract.py
"""

import pytest

from pods.rewards.extract import Final, answer_block, collapse_repetition, final, final_answer, last_boxed, last_number

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


LOOP = "</think>\n" * 60  # a model degenerating into one closing tag until the token limit

FINAL_CASES = [
    # a boxed answer inside the answer block wins
    pytest.param(r"<think>\boxed{1}</think><answer>\boxed{2}</answer>", "number", ("2", "boxed"), id="boxed-in-block"),
    # the block content when it has no box
    pytest.param("<think>x</think><answer> 42 </answer>", "number", ("42", "block"), id="block"),
    # without a block: the last box in the text
    pytest.param(r"so \boxed{9}", "number", ("9", "boxed"), id="boxed-only"),
    # an answer block cut off by the token limit runs to the end
    pytest.param("<think>x</think><answer> 17", "number", ("17", "block"), id="unclosed-block"),
    # ... also when the cut fell inside the closing tag
    pytest.param("<answer>\n17\n</", "number", ("17", "block"), id="cut-closing-tag"),
    # an opening tag that lost its `>` still opens the block
    pytest.param("<answer\n$\\frac{7}{2}$\n>", "math", ("$\\frac{7}{2}$", "block"), id="opening-tag-without-bracket"),
    # the last of two answer blocks
    pytest.param("<answer>1</answer><answer>2</answer>", "number", ("2", "block"), id="two-blocks"),
    # an empty last block (opened just before the cut) is no block: the one before it counts
    pytest.param("<answer>6</answer>\n<answer>\n", "number", ("6", "block"), id="empty-last-block"),
    # the prompt template's placeholder is no answer: the final stated answer counts instead
    pytest.param("It takes 5 bolts.\n<answer>Answer here.</answer>", "number", ("It takes 5 bolts.", "stated"),
                 id="placeholder-block"),
    # a block cut right after it opened, holding only a backslash, is empty too
    pytest.param("So it is $\\frac{7}{2}$.\n<answer>\n\\", "math", ("So it is $\\frac{7}{2}$.", "stated"),
                 id="backslash-only-block"),
    # two different boxes in the final block conflict: no answer
    pytest.param(r"<answer>\boxed{4} or \boxed{5}</answer>", "number", None, id="conflicting-boxes"),
    # the same box twice is one answer
    pytest.param(r"<answer>\boxed{4}, i.e. \boxed{ 4 }</answer>", "number", ("4", "boxed"), id="repeated-box"),
    # no block, no box: the last statement with a number, skipping the tag loop after it
    pytest.param("Work.\nSo the answer is \\(64\\).\n" + LOOP, "number", ("So the answer is \\(64\\).", "stated"),
                 id="stated-before-tag-loop"),
    # a later sentence without a number does not hide the stated one
    pytest.param("They meet 42 km from P. Let us check this.", "number", ("They meet 42 km from P.", "stated"),
                 id="stated-then-prose"),
    # an unclosed inline formula is still a statement ...
    pytest.param("Therefore the sum is \\(64\n</think>", "number", ("Therefore the sum is \\(64", "stated"),
                 id="unclosed-inline"),
    # ... but at the very end the completion broke off inside it (the number may go on): no answer
    pytest.param("Therefore the sum is \\(64", "number", None, id="cut-inside-a-formula"),
    # "math" statements need maths; "text" ones any word
    pytest.param("Hence $(3, \\pi)$.\nDone", "math", ("Hence $(3, \\pi)$.", "stated"), id="stated-math"),
    pytest.param("Work 7.\nThe answer is B", "text", ("The answer is B", "stated"), id="stated-text"),
    # cut off while still computing: an unconcluded earlier number is no answer ...
    pytest.param("We know 4y^2 = 36.\nSince both are equal, \\( y =", "number", None, id="cut-while-computing"),
    # ... and so is a concluded one when the completion stops mid-sentence after it (docs/verifiers.md) ...
    pytest.param("Hence x + y = 36.\nThe answer is \\(", "number", None, id="cut-after-conclusion"),
    # ... but before a closing tag a concluded one counts
    pytest.param("Hence x + y = 36.\nThe answer is \\(\n</think>", "number", ("Hence x + y = 36.", "stated"),
                 id="closed-after-conclusion"),
    # stops mid-sentence: the broken-off statement states nothing, so nothing said before it is final
    pytest.param("x + y = 27 + 9 = 36\nWe need to determine which case is correct", "number", None,
                 id="cut-mid-sentence"),
    pytest.param("So 196 has 9 divisors.\nThe correct answer is", "number", None, id="cut-before-the-answer"),
    pytest.param("The sum is 36.\nGiven the problem constraints", "math", None, id="cut-mid-sentence-math"),
    # ... unless that statement states the answer (only its full stop is missing)
    pytest.param("We found it.\nThus, 196 has 9 positive whole-number divisors", "number",
                 ("Thus, 196 has 9 positive whole-number divisors", "stated"), id="cut-after-the-answer"),
    # a short closing line without a full stop is no broken-off sentence
    pytest.param("The answer is 9.\nanswer\n9", "number", ("9", "stated"), id="bare-answer-line"),
    pytest.param("It is 18.\nDone", "number", ("It is 18.", "stated"), id="short-last-line"),
    # a sentence before a closing tag or filler was finished, full stop or not
    pytest.param("They meet 27 miles from City A\n</think>\n</think", "number",
                 ("They meet 27 miles from City A", "stated"), id="closed-by-a-tag"),
    # nothing to grade
    pytest.param("", "number", None, id="empty"),
    pytest.param("I do not know.", "number", None, id="no-number"),
]


@pytest.mark.parametrize("text, kind, expected", FINAL_CASES)
def test_final(text, kind, expected):
    assert final(text, kind) == (Final(*expected) if expected else None)


COLLAPSE_CASES = [
    # one tag repeated on its own lines: kept once
    pytest.param("Answer is 9.\n" + LOOP, "Answer is 9.\n</think>", id="tag-lines"),
    # one tag repeated on a single line
    pytest.param("Answer is 9.\n" + "</think>" * 80, "Answer is 9.\n</think>", id="tag-run-in-a-line"),
    # a group of lines repeated, the last copy cut off mid-line by the token limit
    pytest.param("x\n" + "<think>\nThe answer is 9.\n</think>\n" * 20 + "<think>\nThe ans",
                 "x\n<think>\nThe answer is 9.\n</think>", id="group-cut-mid-line"),
    # blank lines and indentation inside the loop do not hide it
    pytest.param("y\n" + "  </think>\n\n</think> \n" * 20, "y\n</think>", id="blank-lines"),
    # nested loops: a pair repeated, then one of its lines repeated
    pytest.param("z\n" + "think\n</think>\n" * 10 + "</think>\n" * 10, "z\nthink\n</think>", id="nested"),
    # text without repetition is unchanged
    pytest.param("a\nb\nc", "a\nb\nc", id="no-loop"),
    # a last line that is merely a prefix of an earlier one is not a loop
    pytest.param("x = 3\nx", "x = 3\nx", id="prefix-without-loop"),
]


@pytest.mark.parametrize("text, expected", COLLAPSE_CASES)
def test_collapse_repetition(text, expected):
    # compared line by line: blank lines and indentation are not part of the contract
    lines = [line.strip() for line in collapse_repetition(text).split("\n") if line.strip()]
    assert lines == expected.split("\n")


def test_final_answer_is_the_text_of_final():
    # chemistry's entry point: the same rule, kind "text"
    assert final_answer("<answer>(B)</answer>") == "(B)" and final_answer("Thus B.\n</think>") == "Thus B."


def test_unknown_kind_is_an_error():
    with pytest.raises(ValueError, match="number, math, text"):
        final("x", "numbers")


def test_non_strings_give_none():
    # untrusted input of the wrong type never raises
    assert answer_block(None) is None and last_boxed(123) is None and last_number(None) is None
    assert final(None, "number") is None and final_answer(5) is None and collapse_repetition(None) == ""
