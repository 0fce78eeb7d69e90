r"""String normaliser and exact fast path of the math verifier (no sympy here).

    normalize(r"\left( 3, \dfrac{\pi}{2} \right)") == r"(3,\frac{\pi}{2})"
    exact_value(normalize(r"(1,\frac{1}{2}]")) == ("(", "]", (Fraction(1), Fraction(1, 2)))
    for_sympy(r"2\pi r"); is_prose("27 miles from A") is True; is_arithmetic("40+24") is True

`normalize`: the canonical string (what it drops and rewrites: its docstring). `exact_value`: the exact
value of a plain number or a tuple, interval or set of them (`\infty` allowed, a set's order ignored), else
None: sympy decides. `for_sympy`: the lighter clean-up handed to math-verify (spaces kept). `is_prose`: words
outside `\text{}`, read as a sentence. `is_arithmetic`: unevaluated sums/products, never a numeric answer.
"""

from __future__ import annotations

import re
from fractions import Fraction

from pods.rewards.numbers import to_fraction

_UNICODE = [("π", "\\pi "), ("√", "\\sqrt"), ("∞", "\\infty "), ("×", "\\times "), ("·", "\\cdot "), ("−", "-"),
            ("–", "-"), ("÷", "\\div "), ("≤", "\\le "), ("≥", "\\ge "), ("\u00a0", " ")]
_DELIMITERS = [("**", ""), ("\\$", ""), ("\\(", ""), ("\\)", ""), ("\\[", ""), ("\\]", ""), ("$", ""), ("\\dfrac", "\\frac"),
               ("\\tfrac", "\\frac"), ("\\displaystyle", "")]
_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
_SPACING = re.compile(r"\\[,;:! ]|\\q?quad(?![A-Za-z])|~")
_SIZING = re.compile(r"\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])")
_SHORT_FRAC = re.compile(r"\\frac\s*(\d)\s*(\d)")
_SHORT_SQRT = re.compile(r"\\sqrt\s*(\d+|\\pi)")
_SLASH_FRAC = re.compile(r"(?<![\w}\\^_])(-?)(\d+|\\pi|[a-zA-Z])/(\d+|\\pi|[a-zA-Z])(?![\w{])")
_ASSIGNMENT = re.compile(r"^[a-zA-Z]\w*\s*=\s*(?=\S)")
_THOUSANDS = re.compile(r"(?<![\d.])(\d{1,3}(?:,\d{3})+)(?![\d,])")
_PLAIN_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:/\d+)?")
_FRAC_NUMBER = re.compile(r"(-?)\\frac\{(-?\d+(?:\.\d+)?)\}\{(\d+(?:\.\d+)?)\}")
# `\\frac{3\\pi}{2}`, `-\\frac{\\pi}{4}`, `\\frac{-\\pi}{4}`, or `2\\pi`, `-\\pi`.
_PI_MULTIPLE = re.compile(r"(-?)\\frac\{(-?)(\d*)\\pi\}\{(\d+)\}|(-?)(\d*)\\pi")
_ARITHMETIC = re.compile(r"\(?-?\d+(?:\.\d+)?\)?(?:(?:[-+*/]|\\times|\\cdot|\\div)\(?-?\d+(?:\.\d+)?\)?)+")
_WORDS = re.compile(r"[A-Za-z]{3,}|\b(?:or|is|of|to|in|at|on|by|so|we|it)\b")
_COMMAND = re.compile(r"\\[A-Za-z]+")


def _light(answer: str) -> str:
    s = answer.strip()
    for old, new in _UNICODE + _DELIMITERS:
        s = s.replace(old, new)
    s = _SIZING.sub("", s)
    s = _SHORT_FRAC.sub(r"\\frac{\1}{\2}", s)
    s = _SHORT_SQRT.sub(r"\\sqrt{\1}", s)
    return re.sub(r"(?:\\\s*)+$", "", s.strip()).strip()  # a stray trailing backslash


def for_sympy(answer: str, prose: bool = False) -> str:
    """Answer text for math-verify, spaces kept: a formula with delimiters, unicode and stray
    characters cleaned; a sentence (`prose`) keeps its `$`/`\\(` delimiters, which math-verify reads."""
    if prose:
        for old, new in _UNICODE:
            answer = answer.replace(old, new)
        return answer.strip()
    return _light(answer).rstrip(".").strip()


def normalize(answer: str) -> str:
    r"""Canonical string form of a LaTeX answer.

    Dropped: `$`, `\(`/`\[` and markdown `**` anywhere (so `(5, $\frac{\pi}{3}$)` reads as
    `(5,\frac{\pi}{3})`), `\left`/`\right`, spacing commands, degrees, `\%`, `\$`, `\text{}`-style wrappers,
    a leading `x =`, a trailing `.` or backslash (`\frac{11}{4}\`), an unmatched bracket at either end
    (`\frac{14}{3}\right)`), thousands commas, all spaces. Rewritten: `\dfrac`/`\tfrac` -> `\frac`,
    `\frac12` -> `\frac{1}{2}`, `\sqrt2` -> `\sqrt{2}`, `π` -> `\pi` (also `√`, `∞`, `×`, `−`), and `a/b`
    of plain atoms (`\pi/2`, `3/4`) -> `\frac{a}{b}`.
    """
    s = _light(answer)
    for degree in ("^{\\circ}", "^\\circ", "°", "\\degree", "\\circ"):
        s = s.replace(degree, "")
    s = s.replace("\\%", "").replace("%", "").replace("\\$", "")
    s = _SPACING.sub("", s)
    for _ in range(3):  # unwrap nested \text{\textbf{...}} a few levels
        s = _TEXT_WRAPPERS.sub(r"\1", s)
    s = _ASSIGNMENT.sub("", s.strip())
    s = s.replace(" ", "").rstrip(".")
    s = _unmatched_brackets_removed(re.sub(r"\\+$", "", s))
    s = _THOUSANDS.sub(lambda m: m[1].replace(",", ""), s) if "," in s and s[:1] not in "([{\\" else s
    return _SLASH_FRAC.sub(r"\1\\frac{\2}{\3}", s)


def _unmatched_brackets_removed(s: str) -> str:
    """`\\frac{14}{3})` (a stray `\\right)`) -> `\\frac{14}{3}`; `(3` -> `3`; `(1,2]` stays."""
    opened, closed = s.count("(") + s.count("["), s.count(")") + s.count("]")
    while closed > opened and s[-1:] in (")", "]"):
        s, closed = s[:-1], closed - 1
    while opened > closed and s[:1] in ("(", "["):
        s, opened = s[1:], opened - 1
    return s


def _number(s: str) -> Fraction | tuple | str | None:
    """Exact value of one normalized element: a number, a `\\frac` of numbers, +-infinity, or a
    rational multiple of pi (`\\frac{3\\pi}{2}`, `-2\\pi`, `\\frac{\\pi}{4}`) as ("pi", Fraction)."""
    if s in ("\\infty", "+\\infty", "-\\infty"):
        return "-inf" if s.startswith("-") else "inf"
    if "\\pi" in s:
        m = _PI_MULTIPLE.fullmatch(s)
        if m is None:
            return None
        negative = (m[1] + m[2]).count("-") % 2 if m[4] else m[5] == "-"
        factor = Fraction(int(m[3] or 1), int(m[4])) if m[4] else Fraction(int(m[6] or 1))
        return ("pi", -factor if negative else factor)
    m = _FRAC_NUMBER.fullmatch(s)
    if m:
        sign = -1 if m[1] else 1
        num, den = to_fraction(m[2]), to_fraction(m[3])
        return sign * num / den if num is not None and den else None
    return to_fraction(s) if _PLAIN_NUMBER.fullmatch(s) else None


def _split_top(s: str) -> list[str] | None:
    """s split at commas outside braces/brackets; None when brackets do not balance."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(s):
        if c in "{([":
            depth += 1
        elif c in "})]":
            depth -= 1
            if depth < 0:
                return None
        elif c == "," and depth == 0:
            parts.append(s[start:i])
            start = i + 1
    parts.append(s[start:])
    return parts if depth == 0 else None


def exact_value(norm: str):
    """Exact comparable value of a normalized plain number / tuple / interval / set, else None."""
    if not norm or len(norm) > 256:
        return None
    value = _number(norm)
    if value is not None:
        return value
    if norm.startswith("\\{") and norm.endswith("\\}"):
        parts = _split_top(norm[2:-2])
        values = [_number(p) for p in parts] if parts else None
        return ("set", frozenset(values)) if values and None not in values else None
    if len(norm) >= 2 and norm[0] in "([" and norm[-1] in ")]":
        parts = _split_top(norm[1:-1])
        if not parts or len(parts) < 2:
            return None
        values = [_number(p) for p in parts]
        return (norm[0], norm[-1], tuple(values)) if None not in values else None
    return None


def is_arithmetic(norm: str) -> bool:
    """An unevaluated arithmetic expression of plain numbers (`40+24`, `3\\times60`)."""
    return len(norm) < 256 and bool(_ARITHMETIC.fullmatch(norm))


def is_prose(answer: str) -> bool:
    """Words outside LaTeX commands and `\\text{}` wrappers: a sentence, not a formula."""
    s = _TEXT_WRAPPERS.sub(" ", answer[:1024])
    return bool(_WORDS.search(_COMMAND.sub(" ", s)))
