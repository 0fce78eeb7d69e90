"""Chemistry reward: letters, numbers with units, formulas, text. Run: uv run pytest tests/pods/rewards/test_chemistry.py"""

import pytest

from pods import data
from pods.rewards.chemistry import chemistry_reward

CASES = [
    # numeric within 1 % relative tolerance, same unit
    pytest.param("<answer>4.52 g</answer>", "4.5 g", 1.0, id="number-within-tol"),
    # outside the tolerance
    pytest.param("<answer>4.6 g</answer>", "4.5 g", 0.0, id="number-outside-tol"),
    # a different unit is wrong (no conversion)
    pytest.param("<answer>4.5 kg</answer>", "4.5 g", 0.0, id="unit-mismatch"),
    # a missing unit on the prediction is accepted
    pytest.param("<answer>4.5</answer>", "4.5 g", 1.0, id="unit-missing"),
    # only the first token after the number is the unit
    pytest.param("<answer>4.5 g of NaCl</answer>", "4.5 g", 1.0, id="unit-then-words"),
    # LaTeX scientific notation vs e-notation
    pytest.param("<answer>6.02e23</answer>", r"6.02 \times 10^{23}", 1.0, id="scientific"),
    # \mathrm units and unicode minus
    pytest.param(r"<answer>-285.8 \mathrm{kJ/mol}</answer>", "−285.8 kJ/mol", 1.0, id="mathrm-unicode-minus"),
    # percent vs the word
    pytest.param("<answer>25 percent</answer>", "25%", 1.0, id="percent"),
    # thousands separator is not a decimal comma
    pytest.param("<answer>1,000 mL</answer>", "1000 mL", 1.0, id="thousands"),
    # option letter in parentheses, lower case
    pytest.param("<answer>(b)</answer>", "B", 1.0, id="letter-paren"),
    # option letter in a sentence prefix
    pytest.param("<answer>The answer is B.</answer>", "(B)", 1.0, id="letter-sentence"),
    # a bare lower-case 'a' is an article, not option A
    pytest.param("<answer>a gas</answer>", "A", 0.0, id="article-not-letter"),
    # another option
    pytest.param("<answer>C</answer>", "B", 0.0, id="wrong-letter"),
    # formula with LaTeX subscripts
    pytest.param("<answer>H_2O</answer>", "H2O", 1.0, id="formula-subscript"),
    # parentheses expanded: Ca(OH)2 == CaO2H2
    pytest.param(r"<answer>\mathrm{Ca(OH)_2}</answer>", "CaO2H2", 1.0, id="formula-parens"),
    # charge must match
    pytest.param("<answer>SO4</answer>", "SO_4^{2-}", 0.0, id="formula-charge"),
    # a formula as the last word of a sentence
    pytest.param("<answer>The gas is CO2</answer>", "CO_2", 1.0, id="formula-in-sentence"),
    # different formula
    pytest.param("<answer>CO</answer>", "CO2", 0.0, id="formula-wrong"),
    # free text, case and trailing period ignored
    pytest.param("<answer>Endothermic.</answer>", "endothermic", 1.0, id="text"),
    # no tags: the last line is graded
    pytest.param("Reasoning...\nFinal: 7.0", "7", 1.0, id="last-line"),
    # nothing numeric where a number is expected
    pytest.param("<answer>unknown</answer>", "4.5 g", 0.0, id="no-number"),
]


@pytest.mark.parametrize("completion, gold, expected", CASES)
def test_chemistry_reward(completion, gold, expected):
    assert chemistry_reward([completion], [gold]) == [expected]


def test_tolerance_column():
    # a per-example tolerance column widens (or narrows) the numeric check
    assert chemistry_reward(["<answer>3.1</answer>"] * 2, ["3", "3"], tolerance=[0.05, None]) == [1.0, 0.0]


def test_loaded_fixture_answers_verify():
    examples = data.load_dataset("chemistry", split="test", path="tests/fixtures/chemistry")
    completions = [f"<answer>{ex.answer}</answer>" for ex in examples]
    cols = {"tolerance": [ex.meta.get("tolerance") for ex in examples]}
    assert chemistry_reward(completions, [ex.answer for ex in examples], **cols) == [1.0] * len(examples)
