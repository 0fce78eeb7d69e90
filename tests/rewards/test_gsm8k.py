"""GSM8K reward: final number vs the `####` gold. Run: uv run pytest tests/rewards/test_gsm8k.py"""

import pytest

from pods import data
from rewards.gsm8k import gsm8k_reward

FIXTURES = "tests/fixtures/gsm8k"

CASES = [
    # the paper's format with a bare number
    pytest.param("<think>3*12=36, 36-9=27</think><answer>27</answer>", "27", 1.0, id="tags"),
    # gold given as the raw dataset solution ending in '#### 27'
    pytest.param("<answer>27</answer>", "She has 36 - 9 = 27 left.\n#### 27", 1.0, id="raw-gold"),
    # dollars, thousands commas and cents in the prediction
    pytest.param("<answer>$1,080.00</answer>", "1080", 1.0, id="dollars-commas-cents"),
    # thousands comma in the gold
    pytest.param("<answer>1080</answer>", "#### 1,080", 1.0, id="gold-commas"),
    # units and trailing words after the number
    pytest.param("<answer>135 muffins.</answer>", "135", 1.0, id="units"),
    # '.0' is the same integer
    pytest.param("<answer>20.0</answer>", "20", 1.0, id="dot-zero"),
    # a boxed answer inside the block wins over other numbers
    pytest.param(r"<answer>\boxed{2.5} m for 3 pieces</answer>", "2.5", 1.0, id="boxed-in-block"),
    # a block that begins with a number answers that number (not its last number)
    pytest.param("<answer>3 pieces of 2.5</answer>", "2.5", 0.0, id="block-begins-with-number"),
    # without tags, the last number of the text
    pytest.param("So the answer is 27", "27", 1.0, id="no-tags-last-number"),
    # the answer block beats a later number outside it
    pytest.param("<answer>26</answer> (27 was wrong)", "27", 0.0, id="block-beats-tail"),
    # a wrong number
    pytest.param("<answer>28</answer>", "27", 0.0, id="wrong"),
    # exact, no float tolerance
    pytest.param("<answer>27.001</answer>", "27", 0.0, id="no-tolerance"),
    # negative answers keep their sign
    pytest.param("<answer>-5</answer>", "5", 0.0, id="sign"),
    # fractions are compared exactly
    pytest.param("<answer>5/2</answer>", "2.5", 1.0, id="fraction"),
    # no number at all
    pytest.param("<answer>many</answer>", "27", 0.0, id="no-number"),
    # empty completion
    pytest.param("", "27", 0.0, id="empty"),
]


@pytest.mark.parametrize("completion, gold, expected", CASES)
def test_gsm8k_reward(completion, gold, expected):
    assert gsm8k_reward([completion], [gold]) == [expected]


def test_loaded_fixture_answers_verify():
    # the loader's answers (after '####', commas removed) are what the reward accepts
    examples = data.load_dataset("gsm8k", split="train", path=FIXTURES)
    completions = [f"<think>...</think><answer>{ex.answer}</answer>" for ex in examples]
    assert gsm8k_reward(completions, [ex.answer for ex in examples]) == [1.0] * len(examples)
    assert gsm8k_reward(completions[1:] + completions[:1], [ex.answer for ex in examples]) == [0.0] * len(examples)


def test_length_mismatch_raises():
    # a caller bug (not model output) is reported, not scored
    with pytest.raises(ValueError):
        gsm8k_reward(["1", "2"], ["1"])
