"""pods.data.wordproblems: generated word problems, their answers recomputed from the sentences."""

import re

import pytest

from pods import data
from pods.data import wordproblems
from pods.errors import ConfigError

NUMBER_WORDS = {"twice": 2, "three times": 3, "four times": 4, "five times": 5}


def solve(question: str) -> int:
    """Recompute the answer by reading each sentence (what a careful reader of the problem does)."""
    sentences = re.split(r"(?<=[.?])\s+", question)
    value = int(re.match(r"\w+ has (\d+) ", sentences[0]).group(1))
    for s in sentences[1:-1]:
        if m := re.search(r"(buys|finds) (\d+) more", s) or re.search(r"gives \w+ (\d+) ", s):
            value += int(m.groups()[-1])
        elif m := re.search(r"(gives|loses|uses) (\d+) ", s):
            value -= int(m.group(2))
        elif m := re.search(r"has (twice|three times|four times|five times) as many", s):
            value += NUMBER_WORDS[m.group(1)] * value
        elif m := re.search(r"into (\d+) equal piles", s):
            assert value % int(m.group(1)) == 0, s
            value //= int(m.group(1))
        else:
            raise AssertionError(f"unknown sentence {s!r}")
    assert sentences[-1].startswith("How many")
    return value


def test_answers_follow_from_the_sentences():
    for steps in (0, 1, 2, 3):
        for q, a in wordproblems.problems("test", size=200, steps=steps):
            assert int(a) == solve(q), q
            assert 0 <= int(a) <= wordproblems.MAX_VALUE
            if steps:
                assert len(re.split(r"(?<=[.?])\s+", q)) == steps + 2, q


def test_splits_are_fixed_and_disjoint():
    test = wordproblems.problems("test", size=50)
    assert test == wordproblems.problems("test", size=50, seed=7)  # the run seed never moves the test split
    assert wordproblems.problems("train", size=30, seed=1) == wordproblems.problems("train", size=30, seed=1)
    assert wordproblems.problems("train", size=30, seed=1) != wordproblems.problems("train", size=30, seed=2)
    held = {q for q, _ in wordproblems.problems("test")}
    assert not held & {q for q, _ in wordproblems.problems("train", size=3000)}
    counts = {len(re.split(r"(?<=[.?])\s+", q)) - 2 for q, _ in wordproblems.problems("train", size=300)}
    assert counts == {1, 2, 3}  # steps=0 mixes one to three operations


def test_dataset_options_and_reward():
    examples = data.load_dataset("word_problems", split="test", size=5, steps=1)
    assert [(e.prompt, e.answer) for e in examples] == wordproblems.problems("test", size=5, steps=1)
    assert data.DATASETS["word_problems"].reward == "gsm8k"
    with pytest.raises(ConfigError, match="unknown option.*digits"):
        data.load_dataset("word_problems", digits=3)
    with pytest.raises(ConfigError, match="steps must be 0"):
        data.load_dataset("word_problems", steps=4)
    with pytest.raises(ConfigError, match="test size 10 > test_size 5"):
        data.load_dataset("word_problems", split="test", size=10, test_size=5)
