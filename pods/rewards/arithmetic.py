r"""Exact-match reward for the embedded arithmetic task (`pods.data.arithmetic`, e.g. "123+456=" -> "0579").

    arithmetic_reward(["0579", " 0579\n...", "0579+1"], ["0579"] * 3) == [1.0, 1.0, 1.0]
    arithmetic_reward(["579", "05790", "x0579", ""], ["0579"] * 4) == [0.0, 0.0, 0.0, 0.0]

The answer is the leading run of ASCII digits after optional whitespace, read from the raw completion of
the tiny demo model (no tags, no chat template) or from an `<answer>` block when there is one; 1.0 iff it
equals the gold string exactly, zero padding included, else 0.0. Binary on purpose: docs/demo.md.
"""

from __future__ import annotations

from pods.rewards.extract import answer_block

# Longest digit run read from a completion (a run longer than any answer scores 0 anyway).
MAX_DIGITS = 64


def extract_digits(completion: str) -> str:
    """The leading run of ASCII digits after optional whitespace ('' if none)."""
    if not isinstance(completion, str):
        return ""
    block = answer_block(completion) if "<answer>" in completion else None
    text = (block if block is not None else completion).lstrip()
    end = 0
    while end < len(text) and end <= MAX_DIGITS and "0" <= text[end] <= "9":
        end += 1
    return text[:end]


def arithmetic_reward(completions: list[str], answers: list[str], **columns) -> list[float]:
    """1.0 where the completion's leading digits equal the gold answer exactly, else 0.0."""
    return [
        1.0 if extract_digits(c) == str(a).strip() and str(a).strip() else 0.0
        for c, a in zip(completions, answers, strict=True)
    ]
