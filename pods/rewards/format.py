"""Format rewards for the paper's output format `<think> ... </think><answer> ... </answer>`.

    format_reward(["<think>x</think><answer>4</answer>"], ["4"]) == [1.0]    # registered as `format`
    tags_reward(["<think>x</think>"], [""]) == [0.5]                          # registered as `tags`

Contract: `strict_format(text)` (evaluation's `for_acc`; `format` scores it 1.0 / 0.0) is True iff, ignoring
surrounding whitespace, the text is `<think>R</think>`, optional whitespace, `<answer>A</answer>` with A not blank,
each of the four TAGS once. `tags`: 0.25 per tag present exactly once, in [0, 1]. Linear time (`str.count` / `find`).
"""

from __future__ import annotations

TAGS = ("<think>", "</think>", "<answer>", "</answer>")


def strict_format(text: str) -> bool:
    """True iff text is exactly `<think>...</think>` + whitespace + `<answer>non-blank</answer>`."""
    if not isinstance(text, str):
        return False
    s = text.strip()
    if not (s.startswith("<think>") and s.endswith("</answer>")):
        return False
    if any(s.count(tag) != 1 for tag in TAGS):
        return False
    think_end = s.find("</think>")
    answer_start = s.find("<answer>")
    if answer_start < think_end:
        return False
    between = s[think_end + len("</think>") : answer_start]
    answer = s[answer_start + len("<answer>") : -len("</answer>")]
    return between.strip() == "" and answer.strip() != ""


def format_reward(completions: list[str], answers: list[str], **columns) -> list[float]:
    """1.0 per completion in the strict think/answer format, else 0.0."""
    return [1.0 if strict_format(c) else 0.0 for c in completions]


def tags_reward(completions: list[str], answers: list[str], **columns) -> list[float]:
    """0.25 per think/answer tag that occurs exactly once (tag-count reward), in [0, 1]."""
    out = []
    for c in completions:
        text = c if isinstance(c, str) else ""
        out.append(sum(0.25 for tag in TAGS if text.count(tag) == 1))
    return out
