"""Format rewards for the paper's output format `<think> ... </think><answer> ... </answer>`.

- `strict_format(text) -> bool`: the check behind evaluation's `for_acc`. True iff, ignoring
  surrounding whitespace, the text is exactly `<think>R</think>` then optional whitespace then
  `<answer>A</answer>`, each of the four tags appears exactly once, and A is not blank.
  Nothing may precede `<think>` or follow `</answer>`.
- `format_reward` (registered as `format`): 1.0 if `strict_format`, else 0.0.
- `tags_reward` (registered as `tags`, the paper's tag-count reward): 0.25 for each of the four
  tags `<think>`, `</think>`, `<answer>`, `</answer>` that appears exactly once, so partial credit
  in [0, 1] that guides a model towards the format before it gets it fully right.
The paper's runs weighted tags 0.1 with their own format term (rewards.paper `paper_format_score`),
both for wrong answers only (config/dataset/gsm8k_paper.yaml); `dataset=gsm8k` uses these two, ungated.

Implemented with `str.count` / `str.find` only: linear time on megabyte-long completions.
Usage: `format_reward(["<think>x</think><answer>4</answer>"], ["4"]) == [1.0]`.
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
