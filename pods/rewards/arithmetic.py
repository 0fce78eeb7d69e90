"""Exact-match reward for the embedded arithmetic task (`pods.data.arithmetic`, e.g. "123+456=" -> "0579").

Extraction from a raw completion of the tiny character-level demo model (no tags, no chat
template): leading whitespace is skipped, then the maximal run of ASCII digits is the answer; it
ends at the first non-digit character or the end of the text (generation stops at EOS, which the
decoder drops). The reward is 1.0 iff that digit run equals the gold string exactly, zero padding
included, else 0.0 (binary, no partial credit: partial credit gives almost every group reward
spread and hides the effect of down-sampling; docs/demo.md).

  gold "0579": "0579" -> 1, " 0579\\n..." -> 1, "0579+1" -> 1 (stops at '+'), "579" -> 0 (padding
  is part of the answer), "05790" -> 0 (extra digit), "" -> 0, "x0579" -> 0 (must lead).

For completions with an `<answer>` block (an instruct model on this task) the block is used instead.
Usage: `arithmetic_reward(["0579"], ["0579"]) == [1.0]`.
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
