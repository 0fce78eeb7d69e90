r"""The three rewards of the authors' 8-GPU runs (open-r1 fork), written from their semantics.

    openr1_accuracy(["<answer>\n$72$\n</answer>", "<answer>\n72\n</answer>"], ["72", "72"])  # [1.0, 0.0]

`openr1_accuracy`: 1.0 if math-verify finds the answer, read only from anchored LaTeX (a `\boxed{}`, or `$..$`
within 50 characters after "answer"), equal to the gold; NaN when the gold does not parse; 0 past TIME_LIMIT_S
or MAX_CHARS. `openr1_format`: 1.0 iff the text is "<think>\n" .. "\n</think>\n<answer>\n" .. "\n</answer>"
and then a line break or its end. `openr1_tags`: 0.25 per string of TAG_STRINGS found exactly once.
The rules in full, the authors' sources and weights, and where this differs: docs/multi-gpu.md.
"""

from __future__ import annotations

import functools
import logging
import math

from pods.rewards.math_symbolic import _safe_prediction
from pods.rewards.math_symbolic import math_verify_module as _math_verify_module
from pods.rewards.timeout import call_with_limit

# Wall-clock limit for math-verify on one completion, in seconds.
TIME_LIMIT_S = 1.0
# Longer completions score 0 without parsing (one regex search over a megabyte cannot be interrupted);
# 1024 completion tokens are a few thousand characters.
MAX_CHARS = 20_000
# latex2sympy2 warns on every parse that `equations` is deprecated (it still splits `a = b = 72`).
logging.getLogger("latex2sympy2_extended.math_normalization").setLevel(logging.ERROR)

_MIDDLE, _END = "\n</think>\n<answer>\n", "\n</answer>"
TAG_STRINGS = ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>")


@functools.lru_cache(maxsize=1)
def _answer_config() -> list:
    """math-verify extraction for completions: anchored LaTeX only, boxed first."""
    from latex2sympy2_extended import NormalizationConfig
    from math_verify import LatexExtractionConfig

    norm = NormalizationConfig(nits=False, malformed_operators=False, basic_latex=True, equations=True,
                               boxed="all", units=True)
    return [LatexExtractionConfig(normalization_config=norm, boxed_match_priority=0,
                                  try_extract_without_anchor=False)]


@functools.lru_cache(maxsize=4096)
def _gold(answer: str) -> tuple:
    mv = _math_verify_module()
    return tuple(call_with_limit(lambda: mv.parse(answer, extraction_mode="first_match", parsing_timeout=None),
                                 5.0, []))


def _verdict(gold: tuple, completion: str) -> bool:
    mv = _math_verify_module()
    parsed = _safe_prediction(mv.parse(completion, extraction_config=_answer_config(),
                                       extraction_mode="first_match", parsing_timeout=None))
    return bool(parsed) and bool(mv.verify(list(gold), parsed, timeout_seconds=None))


def accuracy_score(completion, answer) -> float:
    """1.0 / 0.0 for one completion (NaN when the gold cannot be parsed); never raises."""
    gold = _gold(str(answer))
    if not gold:
        return math.nan
    if not isinstance(completion, str) or len(completion) > MAX_CHARS:
        return 0.0
    try:
        return 1.0 if call_with_limit(lambda: _verdict(gold, completion), TIME_LIMIT_S, default=False) else 0.0
    except Exception:  # untrusted input must never crash training
        logging.getLogger(__name__).debug("openr1_accuracy failed", exc_info=True)
        return 0.0


def strict_openr1_format(text) -> bool:
    """True iff `text` has the open-r1 think/answer layout (see the module docstring)."""
    if not isinstance(text, str) or not text.startswith("<think>\n"):
        return False
    middle = text.find(_MIDDLE, len("<think>\n"))  # the earliest one leaves the most room after it
    if middle < 0:
        return False
    end = text.find(_END, middle + len(_MIDDLE))
    while end >= 0:
        after = end + len(_END)
        if after == len(text) or text[after] == "\n":
            return True
        end = text.find(_END, end + 1)
    return False


def openr1_accuracy(completions: list[str], answers: list[str], **columns) -> list[float]:
    """1.0 where math-verify finds the completion's anchored LaTeX answer equal to the gold."""
    return [accuracy_score(c, a) for c, a in zip(completions, answers, strict=True)]


def openr1_format(completions: list[str], answers: list[str], **columns) -> list[float]:
    """1.0 per completion in the open-r1 `<think>\\n..\\n</think>\\n<answer>\\n..\\n</answer>` layout."""
    return [1.0 if strict_openr1_format(c) else 0.0 for c in completions]


def openr1_tags(completions: list[str], answers: list[str], **columns) -> list[float]:
    """0.25 per open-r1 tag string (with its line breaks) that occurs exactly once."""
    return [sum(0.25 for tag in TAG_STRINGS if isinstance(c, str) and c.count(tag) == 1) for c in completions]
