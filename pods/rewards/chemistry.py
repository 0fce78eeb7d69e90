"""Chemistry correctness reward: 1.0 if the final answer matches the gold, else 0.0.

    chemistry_reward(["<answer>4.52 g</answer>"], ["4.5 g"]) == [1.0]     # within REL_TOL (1 %)
    chemistry_reward(["The answer is (b)."], ["B"]) == [1.0]               # option letter

The graded text is `rewards.extract.final_answer`; the gold decides the mode: an option letter A-J; a
number with an optional unit (|pred - gold| <= REL_TOL * |gold|, a numeric column `tolerance` overrides;
units compared when both sides give one, no conversion); a chemical formula (element counts and charge);
else canonical string equality. Every rule, with examples: docs/verifiers.md.
"""

from __future__ import annotations

import re
from collections import Counter

from pods.rewards.extract import MAX_ANSWER_CHARS, final_answer

# Default relative tolerance for numeric answers (1 %: answers rounded to 2-3 significant figures).
REL_TOL = 0.01

_LETTER_GOLD = re.compile(r"^\(?([A-J])\)?\.?$")
# Optional "The correct answer is:" / "Option" prefix, then `(b)` / `(B)` or a bare capital `B`
# followed by the end or a separator (a bare lower-case letter is an English word, not an option).
_LETTER_PRED = re.compile(
    r"^(?i:(?:the\s+)?(?:correct\s+)?(?:answer|option|choice)?\s*(?:is)?\s*[:=]?)\s*"
    r"(?:\(([A-Ja-j])\)|([A-J])(?=$|[\s.):,]))"
)
_NUMBER = re.compile(
    r"(?P<mant>[-+−]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+))"
    r"(?:\s*(?:[eE](?P<e>[-+−]?\d+)|(?:\\times|\\cdot|×|x|\*)\s*10\s*\^\s*\{?\s*(?P<p>[-+−]?\d+)\s*\}?))?"
)
_WRAPPERS = re.compile(r"\\(?:text|mathrm|textrm|mathit|rm|ce)\s*\{([^{}]*)\}")
_ELEMENT = re.compile(r"([A-Z][a-z]?)(\d*)")
_FORMULA = re.compile(r"^(?:[A-Z][a-z]?\d*|\(|\)\d*)+(?:\^?[0-9]*[+-])?$")


def _unwrap(s: str) -> str:
    s = s.strip().strip("$").strip()
    for _ in range(3):
        s = _WRAPPERS.sub(r"\1", s)
    return s.replace("\\,", " ").replace("\\ ", " ").replace("~", " ")


def _canonical_text(s: str) -> str:
    return " ".join(_unwrap(s).casefold().split()).rstrip(".")


def _parse_quantity(s: str) -> tuple[float, str] | None:
    """(value, canonical unit) of the first number in s, or None. Unit may be ''."""
    m = _NUMBER.search(s)
    if m is None:
        return None
    mant = m.group("mant").replace("−", "-").replace(",", "")
    exp = m.group("e") or m.group("p")
    try:
        value = float(mant) * (10.0 ** int(exp.replace("−", "-")) if exp else 1.0)
    except (ValueError, OverflowError):
        return None
    # The unit is the first whitespace-separated token after the number ("4.5 g of NaCl" -> g).
    rest = s[m.end() :].split()
    unit = re.sub(r"[{}^·*\\]|mathrm|text", "", rest[0] if rest else "").casefold().rstrip(".,;")
    return value, unit


def _formula_counts(s: str) -> tuple[Counter, str] | None:
    """(element counts, charge) of a chemical formula string, or None if it is not one."""
    s = re.sub(r"[\s_{}$]", "", _unwrap(s)).replace("\\", "")
    if not s or len(s) > 64 or not _FORMULA.match(s):
        return None
    charge = ""
    m = re.search(r"\^?(\d*[+-])$", s)
    if m:
        charge, s = m.group(1), s[: m.start()]
        charge = charge if charge[:-1] not in ("", "1") else charge[-1]
    stack: list[Counter] = [Counter()]
    i = 0
    while i < len(s):
        if s[i] == "(":
            stack.append(Counter())
            i += 1
        elif s[i] == ")":
            j = i + 1
            while j < len(s) and s[j].isdigit():
                j += 1
            if len(stack) < 2:
                return None
            group, mult = stack.pop(), int(s[i + 1 : j] or 1)
            for el, n in group.items():
                stack[-1][el] += n * mult
            i = j
        else:
            m = _ELEMENT.match(s, i)
            if m is None:
                return None
            stack[-1][m.group(1)] += int(m.group(2) or 1)
            i = m.end()
    return (stack[0], charge) if len(stack) == 1 and stack[0] else None


def _numbers_match(pred: float, gold: float, tol: float) -> bool:
    return abs(pred - gold) <= tol * abs(gold) if gold != 0 else abs(pred) <= tol


def score_one(completion: str, answer: str, tolerance: float | None = None) -> float:
    """1.0 / 0.0 for one completion (modes in the module docstring); never raises."""
    try:
        if not isinstance(completion, str):
            return 0.0
        pred = final_answer(completion) or ""
        pred, gold = _unwrap(pred)[:MAX_ANSWER_CHARS], _unwrap(str(answer))
        tol = REL_TOL if tolerance is None else float(tolerance)
        letter = _LETTER_GOLD.match(gold)
        if letter:
            got = _LETTER_PRED.match(pred.strip())
            return 1.0 if got and (got.group(1) or got.group(2)).upper() == letter.group(1) else 0.0
        gold_formula = _formula_counts(gold)
        if gold_formula is not None:
            tokens = pred.split()
            candidates = [pred] + ([tokens[-1].rstrip(".")] if tokens else [])
            return 1.0 if any(_formula_counts(c) == gold_formula for c in candidates) else 0.0
        gold_q = _parse_quantity(gold)
        if gold_q is not None and re.match(r"^\s*[-+−.\d]", gold):
            pred_q = _parse_quantity(pred)
            if pred_q is None or not _numbers_match(pred_q[0], gold_q[0], tol):
                return 0.0
            units_ok = not pred_q[1] or not gold_q[1] or _fold_unit(pred_q[1]) == _fold_unit(gold_q[1])
            return 1.0 if units_ok else 0.0
        return 1.0 if _canonical_text(pred) == _canonical_text(gold) and gold.strip() else 0.0
    except Exception:  # noqa: BLE001 - untrusted input must never crash training
        return 0.0


def _fold_unit(unit: str) -> str:
    return unit.replace("litre", "l").replace("liter", "l").replace("%", "percent")


def chemistry_reward(completions: list[str], answers: list[str], **columns) -> list[float]:
    """1.0 where the completion's final answer matches the gold answer, else 0.0.

    Optional column `tolerance`: per-example relative tolerance for numeric answers.
    """
    tolerances = columns.get("tolerance") or [None] * len(completions)
    return [
        score_one(c, a, t) for c, a, t in zip(completions, answers, tolerances, strict=True)
    ]
