r"""Paper-compatible graders: the authors' rewards and verdicts, for runs and numbers comparable with theirs.

    paper_answer_reward(["...so the answer is 18.</think><answer>$18</answer>"], ["18"])   # [1.0]

Registered (each `(completions, answers, **columns) -> list[float]`): `paper_answer` / `paper_answer_decimal`, 1.0
when ANY of the whole text, the last `<answer>` block or the last number (`\d+`: the Qwen runs and main figures;
`[\d.,]+`: the Llama runs) equals the reference after pods/rewards/authors/normalize.py's normalisations;
`paper_format`, the authors' strict format flag (1.0 / 0.0); `paper_format_score`, their training format term in
[0, 1]. Not correct verifiers (no symbolic equivalence): they reproduce the authors' verdicts, checked on their
published completions by tests/pods/rewards/authors/test_paper.py. docs/evaluation.md, docs/algorithms.md.
"""

from __future__ import annotations

import re

from pods.rewards.authors.normalize import same_answer

# `extract_last_integer`: utils/data.py:45-50 of YixuanEvenXu/pods at 3fc107e (Qwen), :58-63 at 0c453d2 (Llama)
NUMBER_PATTERNS = {"paper_answer": re.compile(r"\d+"), "paper_answer_decimal": re.compile(r"[\d.,]+")}
_THINK_ANSWER = re.compile(r"</think>[ \n]?<answer>")
# what may follow the last `</answer>`: `[ \n]?`, then one final newline, as their pattern's `$` allows
_FORMAT_ENDINGS = ("", "\n", " ", " \n", "\n\n")


def answer_block(text: str) -> str:
    """Text after the last `<answer>` up to the next `</answer>`, stripped; the whole text without tags."""
    return text.split("<answer>")[-1].split("</answer>")[0].strip()


def last_number(text: str, pattern: re.Pattern = NUMBER_PATTERNS["paper_answer"]) -> str:
    """The last match of `pattern` in text, or "-1" when there is none (as the authors wrote it)."""
    last = None
    for last in pattern.finditer(text):
        pass
    return last.group() if last else "-1"


def paper_correct(text: str, reference: str, pattern: re.Pattern = NUMBER_PATTERNS["paper_answer"]) -> bool:
    """The authors' verdict: any of (last number, answer block, whole text) is the same answer (`answer_correct`,
    utils/data.py:52-55 at 3fc107e; `correctness_reward_func`, :239-242, scores it 1.0 / 0.0)."""
    if not isinstance(text, str) or not isinstance(reference, str):
        return False
    candidates = dict.fromkeys((last_number(text, pattern), answer_block(text), text))  # the block is often the text
    return any(same_answer(candidate, reference) for candidate in candidates)


def paper_format_ok(text: str) -> bool:
    """The authors' strict format flag (`format_correct`, utils/data.py:64-68 at 3fc107e), in linear time (their
    regex backtracks on long texts)."""
    if not isinstance(text, str):
        return False
    start = 0 if text.startswith("<think>") else 1 if text[:1] in (" ", "\n") and text.startswith("<think>", 1) else None
    if start is None:
        return False
    for ending in _FORMAT_ENDINGS:  # the last `</answer>` as late as possible: shortest ending first
        end = len(text) - len(ending) - len("</answer>")
        if text.endswith("</answer>" + ending) and end >= start + len("<think>"):
            tags = _THINK_ANSWER.search(text, start + len("<think>"))
            return tags is not None and tags.end() <= end
    return False


def format_score(text: str) -> float:
    """The authors' training format term (`format_score`, utils/data.py:57-62 at 3fc107e) x 10, in [0, 1]: 1 - 0.01
    per character outside the span their regex matches, floored at 0; 0 without a match. In linear time."""
    if not isinstance(text, str):
        return 0.0
    start, end = text.find("<think>"), text.rfind("</answer>")
    # their regex matches from the first `<think>` (a later one has fewer continuations) to the last `</answer>`,
    # iff some `</think>[ \n]?<answer>` after that `<think>` ends before that `</answer>` begins
    tags = _THINK_ANSWER.search(text, start + len("<think>")) if 0 <= start < end else None
    if tags is None or tags.end() > end:
        return 0.0
    outside = len(text) - (end + len("</answer>") - start)
    return max(0.0, 1.0 - 0.01 * outside)


def _answer_reward(name: str):
    pattern = NUMBER_PATTERNS[name]

    def reward(completions: list[str], answers: list[str], **columns) -> list[float]:
        return [1.0 if paper_correct(c, str(a), pattern) else 0.0 for c, a in zip(completions, answers, strict=True)]

    reward.__name__ = f"{name}_reward"
    reward.__doc__ = f"1.0 where the authors' grader (last number {pattern.pattern}) accepts the completion, else 0.0."
    return reward


paper_answer_reward = _answer_reward("paper_answer")
paper_answer_decimal_reward = _answer_reward("paper_answer_decimal")


def paper_format_reward(completions: list[str], answers: list[str], **columns) -> list[float]:
    """1.0 where the authors' strict format flag is set, else 0.0."""
    return [1.0 if paper_format_ok(c) else 0.0 for c in completions]


def paper_format_score_reward(completions: list[str], answers: list[str], **columns) -> list[float]:
    """The authors' training format term per completion, in [0, 1] (`format_score`)."""
    return [format_score(c) for c in completions]
