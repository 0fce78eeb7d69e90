"""GSM8K correctness reward: 1.0 if the completion's final number equals the gold number, else 0.0.

What is graded: the `<answer>...</answer>` block if the completion has one (a `\\boxed{}` inside it
wins), else the last `\\boxed{}`, else the whole completion; from that text the LAST number is
taken (`rewards.extract.last_number`). So "<answer>The total is $1,080.00 per week</answer>" gives
1080.
Normalisation: thousands commas, `$`, units and trailing words/periods are ignored (they are not
part of the number), `72.0` == `72`, `0.50` == `.5`, `3/4` == `0.75`. Comparison is exact on
rationals (no float tolerance), so 72.001 != 72.
Gold answers: either a bare number ("72", "1,080") or a full GSM8K solution ending in `#### 72`
(the part after the last `####` is used), so raw dataset rows work too.

Usage: `gsm8k_reward(["<answer>72</answer>"], ["72"]) == [1.0]`.
"""

from __future__ import annotations

from fractions import Fraction

from rewards.extract import answer_block, last_boxed, last_number

# Longest digit string turned into a number (guards int() on a megabyte of digits).
MAX_DIGITS = 64


def to_fraction(number: str | None) -> Fraction | None:
    """'1,234.50' / '-3/4' / '1e3' / '$5' -> exact Fraction; None if not a (reasonable) number."""
    if number is None:
        return None
    s = number.replace(",", "").replace("$", "").replace(" ", "").strip().rstrip(".")
    if not s or len(s) > MAX_DIGITS:
        return None
    try:
        if "/" in s:
            num, den = s.split("/", 1)
            value = Fraction(num) / Fraction(den)
        else:
            value = Fraction(s)
    except (ValueError, ZeroDivisionError):
        return None
    return value


def gold_number(answer: str) -> Fraction | None:
    """The gold value: the part after the last '####' if present, then its last number."""
    text = answer.rsplit("####", 1)[-1] if "####" in answer else answer
    return to_fraction(last_number(text))


def predicted_number(completion: str) -> Fraction | None:
    """The completion's final number: answer block (boxed inside wins) > last boxed > whole text."""
    if not isinstance(completion, str):
        return None
    region = answer_block(completion)
    if region is not None:
        boxed = last_boxed(region)
        region = boxed if boxed is not None else region
    else:
        region = last_boxed(completion)
        if region is None:
            region = completion
    return to_fraction(last_number(region))


def gsm8k_reward(completions: list[str], answers: list[str], **columns) -> list[float]:
    """1.0 where the completion's final number equals the gold number, else 0.0."""
    out = []
    for completion, answer in zip(completions, answers, strict=True):
        gold = gold_number(str(answer))
        pred = predicted_number(completion)
        out.append(1.0 if gold is not None and pred is not None and pred == gold else 0.0)
    return out
