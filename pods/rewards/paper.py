r"""Paper-compatible graders: the verdicts of the authors' evaluation, for numbers comparable with theirs.

    paper_answer_reward(["...so the answer is 18.</think><answer>$18</answer>"], ["18"])   # [1.0]

Registered rewards (each `(completions, answers, **columns) -> list[float]` of 1.0 / 0.0):
- `paper_answer`          last number `\d+`: the Qwen runs and the paper's main figures
                          (YixuanEvenXu/pods utils/data.py line 47 at commit 3fc107e, "release");
- `paper_answer_decimal`  last number `[\d.,]+`: the later Llama runs (utils/data.py line 60 from
                          commit 0c453d2, "llama experiments");
- `paper_format`          the authors' strict format flag (utils/data.py `format_correct`, line 79):
                          optionally one space or newline, `<think>`, anything, `</think>`, optionally
                          one space or newline, `<answer>`, anything, `</answer>`, optionally one space
                          or newline (and, as Python's `$` allows, one final newline).
A completion is correct (`answer_correct`, utils/data.py line 65) when ANY of three strings is the
same answer as the reference after the two string normalisations of pods/rewards/paper_normalize.py:
1. the whole completion;
2. the text after the last `<answer>` up to the next `</answer>`, stripped (the whole text when
   there is no tag);
3. the last number found by the pattern (`-1` when there is none).
There is no symbolic equivalence (the authors switched sympy off), so these graders differ from a
correct one: `$70,000` has last number `000` under `\d+`; `(3, π/2)` never matches
`\left( 3, \frac{\pi}{2} \right)`; a completion cut off after several candidate numbers can be
marked correct by its last one. Use them to compare with the paper, never as a training signal
you trust. tests/pods/rewards/test_paper.py checks every verdict of
the authors' published completions (scripts/paper_data.py).
"""

from __future__ import annotations

import re

from pods.rewards.paper_normalize import same_answer

NUMBER_PATTERNS = {"paper_answer": re.compile(r"\d+"), "paper_answer_decimal": re.compile(r"[\d.,]+")}
_THINK_ANSWER = re.compile(r"</think>[ \n]?<answer>")
_FORMAT_ENDINGS = ("", "\n", " ", " \n", "\n\n")  # what may follow the last `</answer>`


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
    """The authors' verdict: any of (last number, answer block, whole text) is the same answer."""
    if not isinstance(text, str) or not isinstance(reference, str):
        return False
    candidates = dict.fromkeys((last_number(text, pattern), answer_block(text), text))  # the block is often the text
    return any(same_answer(candidate, reference) for candidate in candidates)


def paper_format_ok(text: str) -> bool:
    """The authors' strict format flag, in linear time (their regex backtracks on long texts)."""
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
