"""The number an answer text states (rewards.numbers). Run: uv run pytest tests/pods/rewards/test_numbers.py"""

from fractions import Fraction

import pytest

from pods.rewards.numbers import clean, stated_number, to_fraction

F = Fraction

STATED_CASES = [
    # --- plain numbers and the usual forms
    pytest.param("18", F(18), "number", id="bare"),
    # dollars (`$` and `\$`), thousands commas, cents
    pytest.param("$1,080.00", F(1080), "number", id="dollars-commas-cents"),
    pytest.param(r"\$18", F(18), "number", id="escaped-dollar"),
    # signs and leading-dot decimals
    pytest.param("-5", F(-5), "number", id="negative"),
    pytest.param(".5", F(1, 2), "number", id="leading-dot"),
    # a fraction, plain or in LaTeX (also \dfrac and \frac12)
    pytest.param("3/4", F(3, 4), "number", id="slash-fraction"),
    pytest.param(r"\dfrac{14}{3}", F(14, 3), "number", id="dfrac"),
    pytest.param(r"-\frac12", F(-1, 2), "number", id="short-frac"),
    # percent and degrees are units, not part of the number
    pytest.param(r"50\%", F(50), "number", id="percent"),
    pytest.param(r"45^\circ", F(45), "number", id="degrees"),
    # --- a number followed by a unit or a short phrase is that number
    pytest.param("42 kilometres from the station.", F(42), "number", id="unit-and-phrase"),
    pytest.param("The total is $18.", F(18), "number", id="cue-is"),
    pytest.param("540m", F(540), "number", id="unit-written-on"),
    pytest.param("9 eggs/day * $2/egg = $18/day.", F(18), "number", id="per-unit-slash"),
    pytest.param(r"18 \text{ dollars}", F(18), "number", id="text-unit"),
    pytest.param("<27>", F(27), "number", id="angle-brackets"),
    # --- a block that begins with a number answers that number, not a later one
    pytest.param("150 then the 15 boxes are put away", F(150), "number", id="begins-with-number"),
    # --- prose: one number in a short phrase; the main clause of a longer sentence
    pytest.param(r"The trains meet 42 kilometres from \(P\).", F(42), "number", id="prose-one-number"),
    pytest.param("Since they met after 1.5 hours, they meet 27 miles from A.", F(27), "number", id="last-clause"),
    # a number inside a leading "For ..., " clause is not the answer
    pytest.param("- For 20 chickens, the total feed needed per day", None, "ambiguous", id="leading-clause"),
    # an unclosed inline formula still states its number
    pytest.param(r"\(64", F(64), "number", id="unclosed-inline"),
    pytest.param(r"Thus, the value is \(36\\", F(36), "number", id="unclosed-with-backslash"),
    # --- cues and equation chains: the last stated value
    pytest.param("196 has 9 positive divisors.", F(9), "number", id="cue-has"),
    pytest.param(r"Therefore, \( x + y = 27 + 9 = 36 \).", F(36), "number", id="equation-chain"),
    pytest.param("Janet has 9 eggs, or 9 * 2 = 18 dollars. She makes $18 a day.", F(18), "number", id="last-candidate"),
    pytest.param(r"x \approx 267.33", F(26733, 100), "number", id="approx"),
    pytest.param("Answer: 27 miles", F(27), "number", id="cue-colon"),
    # markdown emphasis around the cue or the answer
    pytest.param("**Answer:** 27", F(27), "number", id="markdown-bold-cue"),
    pytest.param("The answer is **27**.", F(27), "number", id="markdown-bold-number"),
    pytest.param("20 chickens = 10 cups of feed.", F(10), "number", id="equation-after-leading-number"),
    # --- unfinished expressions are never evaluated
    pytest.param("a + b = 40 + 24 =", None, "unfinished", id="dangling-equals"),
    pytest.param("5100 - 320 + 7 =", None, "unfinished", id="dangling-expression"),
    pytest.param("x = 5100 - 320 + 7", None, "unfinished", id="unevaluated-right-side"),
    pytest.param("x = 27, y = 9, so x + y = 27 + 9", None, "unfinished", id="chain-cut-before-result"),
    # an operand alone is no answer
    pytest.param("40 + 24", None, "expression", id="bare-expression"),
    pytest.param(r"2\sqrt2", None, "expression", id="coefficient-of-root"),
    pytest.param(r"\frac{14}{", None, "expression", id="cut-fraction"),
    pytest.param("3x", None, "none", id="algebra-not-a-unit"),
    # --- several conflicting answers
    pytest.param(r"The possible values are \( 0 \) and \( 36 \).", None, "conflict", id="values-and"),
    pytest.param("y = 0 or y = 9", None, "conflict", id="equations-or"),
    pytest.param("20 or 25", None, "conflict", id="begins-with-two"),
    pytest.param("3 blue bolts and 1 white bolt.", None, "conflict", id="two-quantities"),
    # two different variables are not conflicting answers of one
    pytest.param("x = 27 and y = 9", F(9), "number", id="two-variables"),
    # --- rambling: several numbers and no cue, or no number at all
    pytest.param("the the boxes 15 apples so then 27 farmer market the 3 and eggs", None, "ambiguous", id="word-salad"),
    pytest.param("many", None, "none", id="no-number"),
]


@pytest.mark.parametrize("text, value, why", STATED_CASES)
def test_stated_number(text, value, why):
    assert stated_number(text) == (value, why)


@pytest.mark.parametrize("text", [None, 5, "", "9" * 100_000, "=" * 5000, "1 " * 3000 + "="])
def test_hostile_input_is_no_answer_quickly(text):
    # never raises; a huge digit string is not a number (int() of it is refused)
    assert stated_number(text).value is None


def test_clean_turns_latex_into_plain_arithmetic():
    assert clean(r"\left( \dfrac{3}{4} \right) \times 2 \approx 1.5\%").split() == ["(", "3/4", ")", "*", "2", "=", "1.5"]


def test_to_fraction_is_exact():
    assert to_fraction("1,234.50") == F(2469, 2) and to_fraction("0.1") + to_fraction("0.2") == F(3, 10)
    assert to_fraction("1e3") == 1000 and to_fraction("1/0") is None and to_fraction(None) is None
