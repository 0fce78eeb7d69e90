r"""The paper's answer comparison: two string normalisations, no symbolic maths.

    same_answer("$18", "18")                                  # True  (PRM800K normalisation)
    same_answer(r"\(\frac{14}{3}\)", r"\frac{14}{3}")         # True  (LaTeX to text: 14/3 == 14/3)
    same_answer("(3, π/2)", r"\left( 3, \frac{\pi}{2} \right)")  # False: no symbolic comparison

`same_answer(given, reference)` is the authors' `grade_answer` re-implemented: True when the `mathd` or
the `prm` normalisations agree, or both are tuples/intervals of identical fractions `a/b`. Every quirk is
kept on purpose: these functions decide what counts as the paper's accuracy, not what is right
(pods/rewards/authors/paper.py builds the rewards on them). LaTeX becomes text with pylatexenc 2.10, called as
the authors call it. The rules, quirks and sources: docs/evaluation.md.
"""

from __future__ import annotations

import functools
import logging
import re

_TEXT_WRAPPED = re.compile(r"^\\text\{(?P<text>.+?)\}$")
_PROPER_COMMAS = re.compile(r"(\d)(,)(\d\d\d)($|\D)")
_UNITS = ("degree", "cm", "centimeter", "meter", "mile", "second", "minute", "hour", "day", "week", "month", "year",
          "foot", "feet", "inch", "yard")
_UNIT_RES = [re.compile(unit + r"(es)?(s)? *(\^[0-9]+)?") for unit in _UNITS]
_FRACTION = re.compile(r"^-?[0-9]+.?/0*[1-9][0-9]*.?$")
_BRACKETS = "()[]"
# longer strings skip pylatexenc and are kept as they are (as where it fails): it takes ~0.1 s per 1,000
# characters, and the authors' published completions are at most 3,232 characters long
MAX_LATEX_CHARS = 10_000


# ----------------------------------------------------------------------------- Hendrycks MATH


def mathd(answer: str | None) -> str | None:
    r"""The Hendrycks-MATH normalisation: unwrap `\text{..}`, then `_strip`; on an internal error
    (e.g. two `\text{ ` units, `\sqrt` at the end) the unwrapped string unchanged."""
    if answer is None:
        return None
    answer = answer.strip()
    m = _TEXT_WRAPPED.search(answer)
    if m:
        answer = m.group("text").strip()
    try:
        return _strip(answer)
    except (IndexError, ValueError):
        return answer


def _strip(s: str) -> str:
    for old, new in (("\n", ""), ("\\!", ""), ("\\\\", "\\"), ("tfrac", "frac"), ("dfrac", "frac"), ("\\left", ""),
                     ("\\right", ""), ("^{\\circ}", ""), ("^\\circ", ""), ("\\$", "")):
        s = s.replace(old, new)
    if "\\text{ " in s:  # a unit on the right: keep what precedes it (exactly one allowed)
        before, *after = s.split("\\text{ ")
        if len(after) != 1:
            raise ValueError("more than one \\text{ unit")
        s = before
    s = s.replace("\\%", "").replace(" .", " 0.").replace("{.", "{0.")
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    parts = s.split("=")
    if len(parts) == 2 and len(parts[0]) <= 2:  # "k = 3" -> "3"
        s = parts[1]
    s = _braced_sqrt(s).replace(" ", "")
    s = _braced_fracs(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    return _slash_to_frac(s)


def _braced_sqrt(s: str) -> str:
    r"""`\sqrt3` -> `\sqrt{3}` (one character); IndexError when `\sqrt` ends the string."""
    head, *pieces = s.split("\\sqrt")
    return head + "".join("\\sqrt" + (p if p[0] == "{" else "{" + p[0] + "}" + p[1:]) for p in pieces)


def _braced_fracs(s: str) -> str:
    r"""`\frac12` -> `\frac{1}{2}`, `\frac1{2}` -> `\frac{1}{2}`; a `\frac` followed by fewer than
    two characters (not a brace) leaves the whole string as it was; IndexError at a final `\frac`."""
    head, *pieces = s.split("\\frac")
    out = [head]
    for p in pieces:
        if p[0] == "{":
            out.append("\\frac" + p)
        elif len(p) < 2:
            return s
        elif p[1] == "{":
            out.append("\\frac{" + p[0] + "}" + p[1:])
        else:
            out.append("\\frac{" + p[0] + "}{" + p[1] + "}" + p[2:])
    return "".join(out)


def _slash_to_frac(s: str) -> str:
    r"""`3/4` -> `\frac{3}{4}` when both sides are integers written plainly."""
    parts = s.split("/")
    if len(parts) != 2:
        return s
    try:
        a, b = int(parts[0]), int(parts[1])
    except ValueError:
        return s
    return "\\frac{" + str(a) + "}{" + str(b) + "}" if s == f"{a}/{b}" else s


# ----------------------------------------------------------------------------- PRM800K


def prm(expr: str | None) -> str | None:
    """The PRM800K normalisation: strip units, `$`, `%` and braces, LaTeX -> text, lower case,
    integers printed plainly (`1,000.0` -> `1000`)."""
    if expr is None:
        return None
    m = _TEXT_WRAPPED.search(expr)
    if m:
        expr = m.group("text")
    for old, new in (("\\%", "%"), ("\\$", "$"), ("$", ""), ("%", ""), (" or ", " , "), (" and ", " , "),
                     ("million", "*10^6"), ("billion", "*10^9"), ("trillion", "*10^12")):
        expr = expr.replace(old, new)
    for unit in _UNIT_RES:
        expr = unit.sub("", expr)
    expr = re.sub(r"\^ *\\circ", "", expr)
    if expr[:1] == "{" and expr[-1:] == "}":
        expr = expr[1:-1]
    expr = re.sub(r",\\! *", "", expr)
    number = _float(expr)
    if number is not None and _near_int(number):
        expr = str(int(round(number)))
    if "\\" in expr and len(expr) <= MAX_LATEX_CHARS:
        try:
            expr = _latex_text(expr)
        except Exception:  # noqa: BLE001 - the authors' bare `except: pass` (pylatexenc raises KeyError, ValueError,
            pass  # RecursionError, ...): keep the string
    expr = re.sub("- *", "-", expr)
    expr = re.sub("([0-9]) +([0-9])", r"\1+\2", expr)  # a mixed number "7 3/4" -> "7+3/4"
    expr = expr.replace(" ", "").replace("{", "").replace("}", "").lower()
    if _is_int_text(expr):
        expr = str(int(float(expr.replace(",", ""))))
    return expr


def _latex_text(expr: str) -> str:
    """The authors' `_parse_latex` (utils/grader.py:31-46 at 3fc107e): pylatexenc's text, their replacements."""
    expr = expr.replace("\\tfrac", "\\frac").replace("\\dfrac", "\\frac").replace("\\frac", " \\frac")
    text = _latex_converter().latex_to_text(expr)
    for old, new in (("√", "sqrt"), ("π", "pi"), ("∞", "inf"), ("∪", "U"), ("·", "*"), ("×", "*")):
        text = text.replace(old, new)
    return text.strip()


@functools.cache
def _latex_converter():
    """pylatexenc's LatexNodes2Text with its defaults, as the authors build it (one per call there; it keeps no
    state between calls). Imported on first use: 0.3 s that every `import pods.rewards` would otherwise pay.
    Its warnings are silenced: one per `\\frac` short of an argument (2 % of the paper's completions) would
    flood an evaluation's output, and the text (so the verdict) is the same either way."""
    from pylatexenc.latex2text import LatexNodes2Text

    logging.getLogger("pylatexenc.latex2text").setLevel(logging.ERROR)
    return LatexNodes2Text()


def _float(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def _near_int(x: float) -> bool:
    """Within 1e-7 of an integer (inf and nan are not)."""
    try:
        return abs(x - int(round(x))) <= 1e-7
    except (OverflowError, ValueError):
        return False


def _without_proper_commas(s: str) -> str:
    """Remove thousands commas (`1,000,000` -> `1000000`), never tuple commas (`1,2`)."""
    while True:
        new = _PROPER_COMMAS.sub(r"\1\3\4", s)
        if new == s:
            return s
        s = new


def _is_int_text(s: str) -> bool:
    number = _float(_without_proper_commas(s))
    return number is not None and _near_int(number)


# ----------------------------------------------------------------------------- comparison


def _elements(expr: str) -> list[str]:
    """A tuple or interval `(a,b)` / `[a,b)` -> its elements; anything else -> [expr]."""
    expr = _without_proper_commas(expr)
    if not expr:
        return []
    inner = expr[1:-1]
    if len(expr) > 2 and expr[0] in _BRACKETS and expr[-1] in _BRACKETS and not any(b in inner for b in _BRACKETS):
        return [e.strip() for e in inner.split(",")]
    return [expr]


def same_answer(given: str | None, reference: str) -> bool:
    """The authors' verdict on one candidate string against the reference (docs/evaluation.md)."""
    if given is None:
        return False
    if mathd(reference) == mathd(given):
        return True
    ref, got = prm(reference), prm(given)
    if ref is None:
        return False
    if ref == got:
        return True
    if not got or not ref:
        return False
    ref_elems, got_elems = _elements(ref), _elements(got)
    if len(ref_elems) > 1 and (ref[0] != got[0] or ref[-1] != got[-1]):
        return False
    if len(ref_elems) != len(got_elems):
        return False
    # element by element only identical fractions pass: an integer against a non-integer fails,
    # anything else would have needed sympy, which the authors switched off
    return all(_FRACTION.search(r) and _FRACTION.search(g) and r == g for r, g in zip(ref_elems, got_elems))
