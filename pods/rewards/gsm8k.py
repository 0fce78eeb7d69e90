r"""GSM8K correctness reward: 1.0 if the number the final answer states equals the gold number, else 0.0.

    gsm8k_reward(["<answer>72</answer>"], ["72"]) == [1.0]
    gsm8k_reward(["<answer>The total is $1,080.00 per week.</answer>"], ["... #### 1080"]) == [1.0]

Contract: the final answer of `rewards.extract.final(completion, "number")`, read by `rewards.numbers.stated_number`
(an unfinished `5100 - 320 + 7 =`, a conflicting `20 or 25` or rambling states nothing: 0.0; arithmetic is never
evaluated), compared exactly as rationals (`72.0` == `72`, `3/4` == `\frac{3}{4}` == `0.75`, 72.001 != 72). The
gold: a bare number ("72", "1,080") or a full GSM8K solution (the part after its last `####`), so raw rows work too.
"""

from __future__ import annotations

import functools
from fractions import Fraction

from pods.rewards.extract import final, last_number
from pods.rewards.numbers import stated_number, to_fraction

__all__ = ["gold_number", "gsm8k_reward", "predicted_number", "to_fraction"]


@functools.lru_cache(maxsize=4096)
def gold_number(answer: str) -> Fraction | None:
    """The gold value: the part after the last '####' if present, then its last number."""
    text = answer.rsplit("####", 1)[-1] if "####" in answer else answer
    return to_fraction(last_number(text))


def predicted_number(completion: str) -> Fraction | None:
    """The number the completion's final answer states, or None (no answer)."""
    found = final(completion, "number")
    return stated_number(found.text).value if found is not None else None


def gsm8k_reward(completions: list[str], answers: list[str], **columns) -> list[float]:
    """1.0 where the completion's final answer states the gold number, else 0.0."""
    out = []
    for completion, answer in zip(completions, answers, strict=True):
        gold = gold_number(str(answer))
        pred = predicted_number(completion) if gold is not None else None
        out.append(1.0 if pred is not None and pred == gold else 0.0)
    return out
