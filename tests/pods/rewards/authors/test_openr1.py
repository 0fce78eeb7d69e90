"""The open-r1 rewards of the authors' 8-GPU runs. Run: uv run pytest tests/pods/rewards/authors/test_openr1.py

Accuracy cases follow math-verify's anchored-LaTeX extraction (see pods/rewards/authors/openr1.py); the format
check is also compared, on random strings built from its pieces, with the authors' own pattern
(open-r1/src/open_r1/rewards.py:143), used here only as the reference.
"""

import json
import math
import random
import re
import time
from pathlib import Path

import pytest

from pods import rewards
from pods.rewards.authors.openr1 import openr1_accuracy, openr1_format, openr1_tags

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
GOOD = "<think>\nadd them\n</think>\n<answer>\n$72$\n</answer>"


@pytest.mark.parametrize("completion, score", [
    (GOOD, 1.0),                                            # LaTeX right after the <answer> tag
    ("<answer>\n72\n</answer>", 0.0),                       # a bare number is never read
    ("The answer is \\boxed{72}.", 1.0),                    # boxed: the first anchor tried
    ("$5$ first, then \\boxed{72}", 1.0),                   # boxed wins over other LaTeX
    ("so $72$ clips", 0.0),                                 # LaTeX without an anchor
    ("The final answer is $\\frac{144}{2}$", 1.0),          # symbolic equivalence
    ("<answer>\n$71$\n</answer>", 0.0),                     # wrong value
    ("Answer: \\(72\\)", 1.0),                              # \\( \\) environment after "answer"
    ("", 0.0),                                              # empty
    (None, 0.0),                                            # not a string
])
def test_accuracy_cases(completion, score):
    assert openr1_accuracy([completion], ["72"]) == [score]


def test_accuracy_gold_unparseable_is_nan():
    assert math.isnan(openr1_accuracy([GOOD], [""])[0])  # the authors' None: TRL skips it


def test_gold_after_hashes_parses_like_the_full_solution():
    # the authors passed GSM8K's whole solution as gold; pods.data passes the number after ####
    from pods.rewards.authors.openr1 import _gold

    rows = [json.loads(x) for x in (FIXTURES / "gsm8k" / "train.jsonl").read_text().splitlines()]
    for row in rows:
        full, short = _gold(row["answer"]), _gold(row["answer"].split("####")[-1].strip().replace(",", ""))
        assert full and full[0] == short[0], row["answer"]


@pytest.mark.parametrize("text, ok", [
    (GOOD, True),
    (GOOD + "\n", True),                                    # a final line break
    (GOOD + "\nP.S. more", True),                           # anything after a line break (MULTILINE $)
    (GOOD + " more", False),                                # text on the </answer> line
    (" " + GOOD, False),                                    # nothing may precede <think>
    ("<think>\n\n</think>\n<answer>\n\n</answer>", True),   # empty bodies
    ("<think>\n</think>\n<answer>\n72\n</answer>", False),  # the think body needs its own line break
    ("<think>x</think><answer>72</answer>", False),         # line breaks are part of the layout
    ("<think>\na\n</think>\n<answer>\nb\n</answer>\n<answer>\nc\n</answer>", True),  # lazy, any split
])
def test_format_cases(text, ok):
    assert openr1_format([text], ["1"]) == [1.0 if ok else 0.0]


def test_format_equals_the_authors_pattern_on_random_layouts():
    pattern = re.compile(r"^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$", re.DOTALL | re.MULTILINE)
    pieces = ["<think>\n", "\n</think>\n<answer>\n", "\n</answer>", "\n", "x", " ", "<answer>", "</think>\n"]
    rng = random.Random(0)
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 10))) for _ in range(20000)]
    texts += ["<think>\n" + t for t in texts[:10000]]  # most random strings fail the first check
    agree = [bool(pattern.match(t)) == bool(openr1_format([t], ["1"])[0]) for t in texts]
    assert all(agree), [t for t, a in zip(texts, agree) if not a][:3]
    assert sum(bool(pattern.match(t)) for t in texts) > 50  # the comparison saw both verdicts


@pytest.mark.parametrize("text, score", [
    (GOOD, 1.0),
    ("<think>x</think><answer>72</answer>", 0.0),           # tags without their line breaks
    ("<think>\nx\n</think>\n", 0.5),                        # two of four
    (GOOD + GOOD, 0.0),                                     # every tag twice
    (None, 0.0),
])
def test_tags_cases(text, score):
    assert openr1_tags([text], ["1"]) == [score]


def test_registered():
    assert {"openr1_accuracy", "openr1_format", "openr1_tags"} <= set(rewards.names())
    assert rewards.get("openr1_tags") is openr1_tags


@pytest.mark.parametrize("completion", [
    "x" * 1_000_000,                                        # a megabyte without an answer
    "answer: $" + "{" * 10_000 + "1" + "}" * 10_000 + "$",  # deep nesting
    "\\boxed{" * 100_000,                                   # unclosed boxes
    "answer: \\boxed{9^{9^{9^{9}}}}",                       # a power tower sympy would never finish
    "<think>\n<answer>\n" * 50_000,                         # many tags
])
def test_adversarial_completions_score_quickly(completion):
    for fn in (openr1_accuracy, openr1_format, openr1_tags):
        start = time.perf_counter()
        scores = fn([completion], ["2"])
        assert len(scores) == 1 and 0.0 <= scores[0] <= 1.0
        assert time.perf_counter() - start < 60.0, fn.__name__  # no hang (a second or less idle; not a speed check)
