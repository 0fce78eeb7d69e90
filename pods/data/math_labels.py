r"""MATH training labels: the whole last boxed answer of a solution, or the authors' cut of it.

    math_label(r"... = \boxed{\frac{1}{2}}.", "full")    # '\\frac{1}{2}'
    math_label(r"... = \boxed{\frac{1}{2}}.", "paper")   # '\\frac{1'  (the paper's MATH runs trained on this)
    answer_label(r"\frac{1}{2}", "paper")                # the same cut applied to an answer column

Contract: `LABELS` are the values of the math dataset's `labels` option. `full` is the content of the last
well-formed `\boxed{...}` (pods.rewards.extract.last_boxed); `paper` is the text after the last `\boxed{` up to
its first `}`, stripped, None without a `\boxed{`. What the cut does, and the share of labels it changes:
docs/datasets.md.
"""

from __future__ import annotations

from pods.rewards.extract import last_boxed

LABELS = ("full", "paper")  # dataset.options.labels of `math`


def math_label(solution: str, labels: str = "full") -> str | None:
    """The label of a MATH solution under `labels` (LABELS), None when the solution has no boxed answer."""
    if labels == "full":
        return last_boxed(solution)
    if labels != "paper":
        raise ValueError(f"unknown MATH labels {labels!r}; valid: {', '.join(LABELS)}")
    _, box, tail = solution.rpartition("\\boxed{")  # utils/data.py:134-140 at 3fc107e (extract_math_answer)
    return tail.partition("}")[0].strip() if box else None


def answer_label(answer: str, labels: str = "full") -> str:
    """An answer column's value (a whole boxed answer) under `labels`: as it is, or cut as if it were boxed."""
    return answer if labels == "full" else math_label("\\boxed{" + answer + "}", labels)


def labels_problem(name: str, labels: str) -> str | None:
    """Why dataset `name` cannot take `labels`, or None (only math has a cut)."""
    if labels in LABELS and (labels == "full" or name == "math"):
        return None
    why = (f"valid: {', '.join(LABELS)}" if labels not in LABELS else
           f"only the math dataset has a label cut (the authors' MATH loader); {name} takes labels=full")
    return f"dataset.labels={labels!r}: {why} (docs/datasets.md)"
