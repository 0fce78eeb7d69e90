"""Normaliser and exact fast path of the math verifier. Run: uv run pytest tests/pods/rewards/test_math_normalize.py"""

from fractions import Fraction

import pytest

from pods.rewards.math_normalize import exact_value, for_sympy, is_arithmetic, is_prose, normalize

NORMALIZE_CASES = [
    # \left/\right, \dfrac, spaces
    pytest.param(r"\left( \dfrac{1}{2}, 3 \right)", r"(\frac{1}{2},3)", id="left-dfrac"),
    # inline maths inside a tuple reads as the tuple
    pytest.param(r"(5, $\frac{\pi}{3}$)", r"(5,\frac{\pi}{3})", id="inline-math-in-tuple"),
    # unicode pi and a slash fraction of plain atoms
    pytest.param("(3, π/2)", r"(3,\frac{\pi}{2})", id="unicode-pi-slash"),
    # a stray trailing backslash
    pytest.param("\\frac{11}{4}\\", r"\frac{11}{4}", id="trailing-backslash"),
    # an unmatched bracket at either end (a stray `\right)`), but not an interval's
    pytest.param(r"\frac{14}{3}\right)", r"\frac{14}{3}", id="stray-right-paren"),
    pytest.param("(1, 2]", "(1,2]", id="interval-kept"),
    # degrees and trailing period
    pytest.param(r"30^{\circ}.", "30", id="degrees"),
    # \text{} unwrapped, $ stripped
    pytest.param(r"$\text{Monday}$", "Monday", id="text"),
    # \frac12 and \sqrt2 shorthands expanded
    pytest.param(r"\frac12", r"\frac{1}{2}", id="short-frac"),
    pytest.param(r"2\sqrt2", r"2\sqrt{2}", id="short-sqrt"),
    # a leading assignment, thousands commas, dollars
    pytest.param(r"x = 1,000", "1000", id="assignment-thousands"),
    pytest.param(r"\$18", "18", id="dollar"),
]


@pytest.mark.parametrize("raw, expected", NORMALIZE_CASES)
def test_normalize(raw, expected):
    assert normalize(raw) == expected


F = Fraction
EXACT_CASES = [
    # numbers and fractions are exact rationals: 0.5 = 1/2 = \frac{1}{2}
    pytest.param("0.50", F(1, 2), id="decimal"),
    pytest.param(r"\frac{1}{2}", F(1, 2), id="frac"),
    pytest.param(r"-\frac{3}{4}", F(-3, 4), id="negative-frac"),
    # rational multiples of pi
    pytest.param(r"\frac{2\pi}{6}", ("pi", F(1, 3)), id="pi-multiple"),
    pytest.param(r"-\pi", ("pi", F(-1)), id="minus-pi"),
    # tuples and intervals keep their brackets; infinity is allowed
    pytest.param(r"(3,\frac{\pi}{2})", ("(", ")", (F(3), ("pi", F(1, 2)))), id="tuple"),
    pytest.param(r"(-\infty,2]", ("(", "]", ("-inf", F(2))), id="interval"),
    # sets ignore order
    pytest.param(r"\{3,1\}", ("set", frozenset({F(1), F(3)})), id="set"),
    # anything else is for sympy
    pytest.param(r"\sqrt{8}", None, id="root"),
    pytest.param("x+1", None, id="expression"),
    pytest.param("(1)", None, id="parenthesised-number-is-not-a-tuple"),
]


@pytest.mark.parametrize("norm, expected", EXACT_CASES)
def test_exact_value(norm, expected):
    assert exact_value(norm) == expected


def test_sets_and_intervals_compare_as_such():
    assert exact_value(normalize(r"\{1, 2\}")) == exact_value(normalize(r"\{2,1\}"))
    assert exact_value(normalize("[1,2)")) != exact_value(normalize("(1,2]"))


@pytest.mark.parametrize("text, prose", [
    ("27 miles from City A.", True),  # words: read as a sentence
    (r"The answer is $\frac{1}{2}$", True),
    (r"5\text{ cm}", False),  # a unit in \text{} is not prose
    (r"\left( 3, \frac{\pi}{2} \right)", False),
    ("p - q", False),
    ("3 or 4", True),  # a connective makes it a sentence (two answers)
])
def test_is_prose(text, prose):
    assert is_prose(text) is prose


def test_is_arithmetic():
    assert is_arithmetic("40+24") and is_arithmetic(r"3\times60") and is_arithmetic("(5100-320)+7")
    assert not is_arithmetic("64") and not is_arithmetic(r"2\sqrt{2}") and not is_arithmetic("x+1")


def test_for_sympy_keeps_spaces_and_prose_delimiters():
    assert for_sympy(r"$2\pi r$.") == r"2\pi r"
    assert for_sympy(r"It is $π$", prose=True) == r"It is $\pi $"
