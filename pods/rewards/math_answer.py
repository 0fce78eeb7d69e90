r"""MATH / MATH-500 / AMC23 correctness reward: 1.0 if the final answer equals the gold answer, else 0.0.

    math_reward(["<answer>\boxed{\dfrac12}</answer>"], ["\frac{1}{2}"]) == [1.0]

Contract (never raises, bounded time): the final answer is `rewards.extract.final(text, "math")`; none, conflicting
boxes or one left side given two values (`two_values`) score 0.0. A formula (no words) is compared whole: `normalize`
string equality, exact values (numbers, fractions, tuples, intervals, sets), then math-verify
(`rewards.math_symbolic.verified`, cached); a dangling `=` or, for a numeric gold, unevaluated arithmetic is no
answer. Prose: for a numeric gold the number it states (`rewards.numbers.stated_number`; none but maths: math-verify),
else math-verify. The gold: a bare answer or a MATH solution (its last `\boxed{}`). docs/verifiers.md, `math`.
"""

from __future__ import annotations

import functools
import logging
import re
from fractions import Fraction

from pods.rewards import math_symbolic
from pods.rewards.extract import final, last_boxed
from pods.rewards.math_normalize import exact_value, for_sympy, is_arithmetic, is_prose, normalize
from pods.rewards.numbers import stated_number

# Hard wall-clock limit for the math-verify part of one completion, in seconds.
TIME_LIMIT_S = 1.0
# Longest answer text compared at all (the extraction caps answers at 4096 characters).
MAX_PRED_CHARS = 4096
# Words that join alternative answers, read as a comma by `two_values`.
_JOINERS = re.compile(r"\\text\s*\{\s*(?:or|and)\s*\}|\b(?:or|and)\b", re.I)
# Characters that end an unfinished formula (`40 + 24 =`, `5100 - 320 +`).
_DANGLING = ("=", "+", "-", "*", "/", "^", "\\times", "\\cdot", "\\div", "(", "{", "_")

_math_verify_module = math_symbolic.math_verify_module  # import + warm up math-verify (benchmarks, tests)


def clear_caches() -> None:
    """Forget cached gold parses, gold readings and symbolic verdicts (benchmarks only)."""
    math_symbolic.clear_caches()
    _gold.cache_clear()


def gold_answer(answer: str) -> str:
    """The gold answer string: the content of its last \\boxed{} if it has one, else itself."""
    boxed = last_boxed(answer) if "\\boxed" in answer or "\\fbox" in answer else None
    return (boxed if boxed is not None else answer).strip()


@functools.lru_cache(maxsize=4096)
def _gold(answer: str) -> tuple[str, str, object]:
    """(gold string, its normal form, its exact value or None), cached: a group shares its gold."""
    gold = gold_answer(answer)
    norm = normalize(gold)
    return gold, norm, exact_value(norm)


def _pieces(text: str) -> list[str]:
    """text split at `,` / `;` outside brackets and at the words `or` / `and` (also `\\text{ or }`)."""
    text = _JOINERS.sub(",", text)
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c in ",;" and depth == 0:
            out.append(text[start:i])
            start = i + 1
    return out + [text[start:]]


def two_values(text: str) -> bool:
    """Whether the answer gives one left side two different values (`x + y = 0 or x + y = 36`)."""
    if text.count("=") < 2:
        return False
    values: dict[str, set] = {}
    for piece in _pieces(text):
        if "=" in piece:
            left, right = piece.split("=", 1)[0], piece.rsplit("=", 1)[1]
            norm = normalize(right)
            value = exact_value(norm)
            values.setdefault("".join(left.split()).strip("$\\()"), set()).add(norm if value is None else value)
    return any(len(v) > 1 for v in values.values())


def _formula(pred: str, gold: str, gold_norm: str, gold_exact, limit: float) -> bool:
    """Verdict on a formula answer (the module docstring's formula rule; docs/verifiers.md, `math`)."""
    norm = normalize(pred)
    if not norm:
        return False
    if norm == gold_norm:
        return True
    if norm.endswith(_DANGLING):
        return False
    if "=" in norm and "=" not in gold_norm:
        norm = norm.rsplit("=", 1)[1]
        pred = pred.rsplit("=", 1)[1] if "=" in pred else norm
        if norm == gold_norm:
            return True
    value = exact_value(norm)
    if value is not None and gold_exact is not None:
        return value == gold_exact
    if isinstance(gold_exact, Fraction) and is_arithmetic(norm):
        return False
    return math_symbolic.verified(gold, for_sympy(pred), prose=False, limit=limit)


def score_one(completion: str, answer: str, time_limit_s: float | None = None) -> float:
    """1.0 / 0.0 for one completion; never raises."""
    try:
        if not isinstance(completion, str):
            return 0.0
        gold, gold_norm, gold_exact = _gold(str(answer))
        if not gold:
            return 0.0
        numeric = isinstance(gold_exact, Fraction)
        found = final(completion, "number" if numeric else "math")
        if found is None or len(found.text) > MAX_PRED_CHARS or two_values(found.text):
            return 0.0
        limit = TIME_LIMIT_S if time_limit_s is None else time_limit_s
        text, prose = found.text, is_prose(found.text)
        if numeric and (prose or found.source == "stated"):
            stated = stated_number(text)
            if stated.value is not None:
                return 1.0 if stated.value == gold_exact else 0.0
            if stated.why != "none":  # unfinished, conflicting, rambling: not answered
                return 0.0
        elif not prose:
            return 1.0 if _formula(text, gold, gold_norm, gold_exact, limit) else 0.0
        elif normalize(text) == gold_norm:  # a word answer: `Evelyn` == `\text{Evelyn}`
            return 1.0
        return 1.0 if math_symbolic.verified(gold, for_sympy(text, prose=True), prose=True, limit=limit) else 0.0
    except Exception:  # untrusted input must never crash training
        logging.getLogger(__name__).debug("math reward failed", exc_info=True)
        return 0.0


def math_reward(completions: list[str], answers: list[str], **columns) -> list[float]:
    """1.0 where the completion's final answer is equivalent to the gold answer, else 0.0."""
    return [score_one(c, a) for c, a in zip(completions, answers, strict=True)]
