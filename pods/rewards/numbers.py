"""The number a final answer states, for numeric references (GSM8K; MATH/AMC answers that are numbers).

    stated_number("The total is $18.").value == Fraction(18)
    stated_number("x = 5100 - 320 + 7").why == "unfinished"        # arithmetic is never evaluated

Contract: `stated_number(text) -> Stated(value, why)` reads the answer text `rewards.extract.final` found, `clean`ed:
the last number after `=` or a cue word; else a leading number, or the one number of a short phrase
(MAX_PHRASE_WORDS) or of a long sentence's last clause. No answer (value None) when an `=` is left unfinished, when
the answer is joined to another (`0 and 36`, `x + y = 0 or x + y = 36`) or otherwise: why is "unfinished",
"conflict", "ambiguous", "none" or "expression". `value` is an exact Fraction; never raises. docs/verifiers.md.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import NamedTuple

# Longest digit string turned into a number (guards int() on a megabyte of digits).
MAX_DIGITS = 64
# Longest phrase (words) whose single number counts as stated without a cue word.
MAX_PHRASE_WORDS = 16
# Longest answer text read (the end of it); the extraction already caps answers at 4096 chars.
MAX_TEXT_CHARS = 4096


_DECIMAL = re.compile(r"(-?\d+)(?:\.(\d+))?")


class Stated(NamedTuple):
    """The stated value (None when there is no answer) and why: "number", "none", "expression",
    "unfinished", "conflict" or "ambiguous"."""

    value: Fraction | None
    why: str


def to_fraction(number: str | None) -> Fraction | None:
    """'1,234.50' / '-3/4' / '1e3' / '$5' -> exact Fraction; None if not a (reasonable) number."""
    if number is None:
        return None
    s = number.replace(",", "").replace("$", "").replace(" ", "").replace("−", "-").strip().rstrip(".")
    if not s or len(s) > MAX_DIGITS:
        return None
    decimal = _DECIMAL.fullmatch(s)
    if decimal:  # fast exact path for `-12.50`: Fraction(str) parses much more slowly
        whole, digits = decimal[1], decimal[2] or ""
        return Fraction(int(whole + digits), 10 ** len(digits)) if digits else Fraction(int(whole))
    try:
        if "/" in s:
            num, den = s.split("/", 1)
            value = Fraction(num) / Fraction(den)
        else:
            value = Fraction(s)
    except (ValueError, ZeroDivisionError):
        return None
    return value


_REPLACEMENTS = [
    ("\\left", ""), ("\\right", ""), ("\\displaystyle", ""),
    ("\\$", " "), ("$", " "), ("\\(", " "), ("\\)", " "), ("\\[", " "), ("\\]", " "),
    ("^{\\circ}", " "), ("^\\circ", " "), ("\\circ", " "), ("°", " "), ("\\degree", " "), ("\\%", " "), ("%", " "),
    ("\\times", " * "), ("\\cdot", " * "), ("×", " * "), ("·", " * "), ("∗", " * "), ("\\div", " / "), ("÷", " / "),
    ("\\approx", " = "), ("≈", " = "), ("\\simeq", " = "), ("−", "-"), ("–", "-"),
    ("**", " "), ("__", " "), ("`", " "),  # markdown emphasis and code around an answer
    ("²", "^2"), ("³", "^3"), ("¹", "^1"), ("⁴", "^4"),
    ("\\leq", " < "), ("\\geq", " < "), ("\\neq", " < "), ("\\le", " < "), ("\\ge", " < "), ("\\ne", " < "),
    ("≤", " < "), ("≥", " < "), ("≠", " < "), ("\\pm", " < "), ("±", " < "), (">", " < "),
]
_REPLACE = dict(_REPLACEMENTS)
_REPLACE_RE = re.compile("|".join(re.escape(k) for k in sorted(_REPLACE, key=len, reverse=True)))
_SHORT_FRAC = re.compile(r"\\frac\s*(\d)\s*(\d)")
_SIMPLE = re.compile(r"\s*(?:\\?\$)?\s*(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*\.?\s*")
_ANGLED = re.compile(r"<\s*(-?\d[\d,.]*)\s*>")  # `<20>`: a number written inside tag brackets
_PLAIN_FRAC = re.compile(r"(-?)\\frac\s*\{\s*(-?)(\d[\d,]*(?:\.\d+)?)\s*\}\s*\{\s*(\d[\d,]*(?:\.\d+)?)\s*\}")
_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname|boxed|fbox)\s*\{([^{}]*)\}")
_SPACING = re.compile(r"\\[,;:! ]|\\q?quad\b|~|\\(?![A-Za-z{}])")
_NUM = re.compile(
    r"(?<![\w.])(?:(?P<int>\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?P<dec>\.\d+)?|(?P<lead>\.\d+))(?:/(?P<den>\d+)(?![\d.]))?(?![\d_]|\.\d)"
)
_CUE = re.compile(
    r"(?:\b(?:is|are|was|were|be|been|equals?|equal\s+to|has|have|had|gets?|got|makes?|made|costs?|needs?"
    r"|takes?|earns?|pays?|spends?|totals?|becomes?|remains?|answer|result|total|solution)\b|:)\s*:?\s*"
    r"(?:(?:approximately|about|around|roughly|exactly|only|just|now|still|then|thus|therefore|indeed|also"
    r"|simply|precisely|a\s+total\s+of|total\s+of|equal\s+to|worth|of|a|an)\s+)*\(?\s*$",
    re.I,
)
_OPERATOR = "+-*/^<"
_SINGLE_UNITS = "mgshlL"  # one-letter units written onto a number (`540m`); other letters are variables
_LEADING_CLAUSE = re.compile(
    r"^[\s*#-]*(?:for|if|when|since|after|before|because|given|as|in|with|at|once|while|using)\b[^,;:]{0,80}[,;:]", re.I
)
_CLAUSE = re.compile(r"[,;:]\s+|\s(?:so|thus|hence|therefore)\s", re.I)
_CONNECTOR = re.compile(r"[\s,;]*(?:(?:,|\band\b|\bor\b|and/or)\s*)+$|[\s,;]*\bor\s+[A-Za-z]\w*\s*=\s*$", re.I)
# An `=` (and an opening bracket) ending the text before a value; what starts the clause of its left side.
_EQUALS_END = re.compile(r"\s*=\s*\(?\s*$")
_CLAUSE_START = re.compile(r"[,;:(=]|\b(?:or|and|so|then|thus|hence|therefore|if|gives|get)\b", re.I)
# What may join two values of one left side, spaces removed: `or`, `and`, `,`, closing `)` / `.` before them.
_JOINED_SIDE = re.compile(r"[.)]*(?:,|or|and|,or|,and|and/or)$", re.I)
_CONNECTOR_NEXT = re.compile(
    r"^[\s,;]*(?:[A-Za-z]+[\s,;]+){0,3}?(?:,|\band\b|\bor\b|and/or)[\s,;]*(?:(?:and|or)\s+)?(?:[A-Za-z]\w*\s*=\s*)?$", re.I
)


def clean(text: str) -> str:
    r"""Answer text with LaTeX and currency noise removed: `$` / `\(` / `\[` delimiters, markdown `**`, `\text{}`
    wrappers, `\%`, degrees and spacing go; `\frac{a}{b}` of plain numbers becomes `a/b`; `\times`, `\cdot` and
    `×` become `*`, `\approx` becomes `=`."""
    s = text[-MAX_TEXT_CHARS:]
    if "\\" in s:
        s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
        s = _SHORT_FRAC.sub(r"\\frac{\1}{\2}", s)
        s = _PLAIN_FRAC.sub(lambda m: f" {'-' if bool(m[1]) != bool(m[2]) else ''}{m[3]}/{m[4]} ", s)
        for _ in range(3):  # nested \text{\textbf{...}}
            s = _WRAPPERS.sub(r" \1 ", s)
    if "<" in s:
        s = _ANGLED.sub(r" \1 ", s)
    s = _REPLACE_RE.sub(lambda m: _REPLACE[m[0]], s)
    return _SPACING.sub(" ", s) if "\\" in s or "~" in s else s


class _Token(NamedTuple):
    start: int
    end: int
    value: Fraction
    operand: bool


def _unit_end(s: str, end: int) -> int:
    """End of a unit written onto a number (`540m`, `18th`, `2km`); -1 for algebra (`3x`, `2n`)."""
    stop = end
    while stop < len(s) and stop - end <= 16 and s[stop].isalpha():
        stop += 1
    return stop if stop - end != 1 or s[end] in _SINGLE_UNITS else -1


def _is_operand(s: str, start: int, end: int) -> bool:
    """Whether the number at s[start:end] is part of an expression rather than a value."""
    before = s[max(0, start - 32) : start].rstrip()
    p = before[-1:] if before else ""
    if p in ("^", "_", "{", "!"):
        return True  # exponent, subscript, argument of \sqrt{...} or another command
    if p and p in _OPERATOR:
        rest = before[:-1].rstrip()
        if rest and (rest[-1].isalnum() or rest[-1] in ")}]"):
            return True  # x + 5, 40 - 5, 3 * 60
    after = s[end : end + 32].lstrip()
    q = after[:1]
    if q in ("=", "(", "!", "{") or (q in "^_" and after[1:].strip()) or (q == "\\" and after[1:2].isalpha()):
        return True  # left side of an equation, 3(x+1), 5!, 2^3, 2\sqrt{2}, 2\pi
    if q and q in "+-*/<" or (q == "x" and after[1:2] in (" ", "")):
        nxt = after[1:].lstrip()[:2]
        if not nxt or nxt[0].isdigit() or nxt[0] in "(\\." or (nxt[0].isalpha() and not nxt[1:].isalpha()):
            return True  # 3 * 60, 180 x 3, 5 - (2), 2 + x, `5100 -` cut off; not `18/day`
    return False


def _tokens(s: str) -> list[_Token]:
    out = []
    for m in _NUM.finditer(s):
        start, end = m.start(), _unit_end(s, m.end())
        if end < 0:
            continue
        negative = start > 0 and s[start - 1] == "-" and (start < 2 or not (s[start - 2].isalnum() or s[start - 2] in ")}]"))
        text = (m["int"] or "0") + (m["dec"] or m["lead"] or "") + (f"/{m['den']}" if m["den"] else "")
        value = to_fraction(("-" if negative else "") + text)
        if value is None:
            continue
        start = start - 1 if negative else start
        out.append(_Token(start, end, value, _is_operand(s, start, end)))
    return out


def _after_equals(s: str, eq: int, by_start: dict[int, _Token]) -> tuple[str, _Token | None]:
    """What follows the `=` at eq: ("value", token), ("expression", operand), ("dangling", None)
    or ("other", None) for letters/LaTeX (`= x + 1`)."""
    rest = s[eq + 1 :]
    stripped = rest.lstrip(" (")
    if not stripped.strip(" .,;:)"):
        return "dangling", None
    token = by_start.get(eq + 1 + len(rest) - len(stripped))
    if token is None:
        return "other", None
    return ("expression", token) if token.operand else ("value", token)


def _left_side(s: str, value: _Token) -> str | None:
    """The left side of the `=` right before a value (`x + y` of `... so x + y = 36`), spaces removed; else None."""
    head = _EQUALS_END.split(s[max(0, value.start - 48) : value.start])
    if len(head) != 2 or head[1]:
        return None
    side = "".join(_CLAUSE_START.split(head[0])[-1].split())
    return side or None


def _same_side_conflict(s: str, earlier: _Token, chosen: _Token) -> bool:
    """`x + y = 0 or x + y = 36`: two values of one left side joined by `or` / `and` / `,` (a few chars between)."""
    side = _left_side(s, chosen)
    if not side or _left_side(s, earlier) != side:
        return False
    gap = "".join(s[earlier.end : chosen.start].split())  # e.g. `orx+y=`
    return len(gap) <= len(side) + 12 and bool(_JOINED_SIDE.match(gap[: len(gap) - len(side) - 1])) \
        and gap.endswith(side + "=")


def _conflicts(s: str, chosen: _Token, tokens: list[_Token], candidates: list[_Token]) -> bool:
    """Whether the chosen number is one of a list of different answers (`0 and 36`, `y = 0 or y = 9`,
    `x + y = 0 or x + y = 36`)."""
    i = tokens.index(chosen)
    if i + 1 < len(tokens):
        nxt = tokens[i + 1]
        gap = s[chosen.end : nxt.start]
        if not nxt.operand and nxt.value != chosen.value and len(gap) < 48 and _CONNECTOR_NEXT.match(gap):
            return True
    earlier = [c for c in candidates if c.end <= chosen.start]
    if earlier and earlier[-1].value != chosen.value:
        gap = s[earlier[-1].end : chosen.start]
        return (len(gap) < 24 and bool(_CONNECTOR.match(gap))) or _same_side_conflict(s, earlier[-1], chosen)
    return False


def stated_number(text: str) -> Stated:
    """The number the answer text states (the rules: docs/verifiers.md, `gsm8k`)."""
    if not isinstance(text, str):
        return Stated(None, "none")
    simple = _SIMPLE.fullmatch(text)
    if simple:  # the common case, `18`, `$1,080.00`, `-3.5.`: no parsing needed
        value = to_fraction(simple[1])
        return Stated(value, "number") if value is not None else Stated(None, "none")
    s = clean(text)
    tokens = _tokens(s)
    if not tokens:
        return Stated(None, "none")
    by_start = {t.start: t for t in tokens}
    candidates: list[_Token] = []
    unfinished_at = -1  # position of the last `=` whose right side is missing or unevaluated
    eq = s.find("=")
    while eq >= 0:
        kind, token = _after_equals(s, eq, by_start)
        if kind == "value":
            candidates.append(token)
        elif kind in ("dangling", "expression"):
            unfinished_at = eq
        eq = s.find("=", eq + 1)
    taken = {t.start for t in candidates}
    for token in tokens:
        if not token.operand and token.start not in taken and _CUE.search(s, max(0, token.start - 48), token.start):
            candidates.append(token)
    candidates.sort()
    if candidates:
        chosen = candidates[-1]
        if unfinished_at > chosen.start:
            return Stated(None, "unfinished")
        if _conflicts(s, chosen, tokens, candidates):
            return Stated(None, "conflict")
        return Stated(chosen.value, "number")
    if unfinished_at >= 0:
        return Stated(None, "unfinished")
    values = [t for t in tokens if not t.operand]
    if not values:
        return Stated(None, "expression")
    first = tokens[0]
    if not first.operand and not s[: first.start].strip(" (*#-:"):
        if _conflicts(s, first, tokens, []):
            return Stated(None, "conflict")
        return Stated(first.value, "number")
    # One number in a short phrase, outside a leading "For 20 chickens, ..." / "If ..., " clause.
    lead = _LEADING_CLAUSE.match(s)
    main = [t for t in values if not lead or t.start >= lead.end()]
    if len({t.value for t in main}) == 1 and len(s[lead.end() if lead else 0 :].split()) <= MAX_PHRASE_WORDS:
        return Stated(main[0].value, "number")
    # "Since they met after 1.5 hours, they meet 27 miles from A.": the last clause states it.
    body = s.rstrip(" .!;")
    cut = max((m.end() for m in _CLAUSE.finditer(body)), default=0)
    in_clause = {t.value for t in values if t.start >= cut}
    if len(in_clause) == 1 and len(body[cut:].split()) <= MAX_PHRASE_WORDS:
        return Stated(in_clause.pop(), "number")
    return Stated(None, "ambiguous")
