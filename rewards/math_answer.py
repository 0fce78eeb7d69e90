"""MATH / MATH-500 / AMC23 correctness reward: 1.0 if the final answer is equivalent to the gold.

Pipeline per completion (never raises, bounded time):
1. Extract the graded answer (`rewards.extract.final_answer`: boxed in `<answer>` > `<answer>`
   block > last `\\boxed{}`); with none, the last `TAIL_CHARS` of the completion go to math-verify,
   which looks for "final answer is ..." / the last LaTeX expression there; an unboxed answer
   block with inline math (`The answer is $\\frac{1}{2}$`) also goes to it as prose.
2. Fast path, `normalize(pred) == normalize(gold)`: strips `$`, `\\left`/`\\right`, spacing
   commands, `\\dfrac`/`\\tfrac` -> `\\frac`, `\\frac12` -> `\\frac{1}{2}`, degrees (`^\\circ`, `°`),
   percent (`\\%`), `\\text{}`/`\\mathrm{}`/`\\textbf{}` wrappers, a leading `x =`, trailing `.`, and
   spaces. If both sides are then plain numbers (`0.5`, `1,000`, `-3`, `1/2`), they are compared
   exactly as rationals and that decides.
3. Otherwise math-verify (`parse` + `verify`) decides symbolic equivalence: fractions vs decimals,
   intervals `(1,2]`, tuples/sets, `\\sqrt{}`, `\\pi`, equations. It runs with its signal-based
   timeouts off and under `rewards.timeout.call_with_limit(TIME_LIMIT_S)` instead (any thread).
   Gold answers are parsed once and verdicts per (gold, prediction) are cached (the n completions
   of a group repeat the gold and often the final answer).
4. Safety screen before sympy sees a prediction: at most `MAX_PRED_CHARS` characters and brace
   depth `MAX_DEPTH`; after parsing, at most `MAX_NODES` expression nodes and an estimated size of
   every sub-expression below `MAX_BITS` bits (so `9^{9^{9}}`, `100000!` or `(x+1)^{10^5}`, which
   would hang inside one uninterruptible bigint operation, score 0 immediately).

Gold answers: a bare answer (`\\frac{1}{2}`, `27`, `27.0`) or a full MATH solution; with a
`\\boxed{}` in the gold, its (nested-brace-aware) content is used.
Usage: `math_reward(["<answer>\\boxed{\\dfrac12}</answer>"], ["\\frac{1}{2}"]) == [1.0]`.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from fractions import Fraction

from rewards.extract import final_answer, last_boxed
from rewards.gsm8k import to_fraction
from rewards.timeout import call_with_limit

# Hard wall-clock limit for the math-verify part of one completion, in seconds.
TIME_LIMIT_S = 1.0
# Longest extracted prediction handed to sympy; longer ones only get the string fast path.
MAX_PRED_CHARS = 512
# Deepest brace nesting handed to sympy.
MAX_DEPTH = 24
# Most sympy nodes in a parsed prediction that `verify` is allowed to work on.
MAX_NODES = 400
# Largest estimated magnitude (log2) of any sub-expression that `verify` may evaluate.
MAX_BITS = 20_000
# Characters from the end of a completion without an extractable answer handed to math-verify.
TAIL_CHARS = 300

# (gold, prediction) pairs exercising sympy's lazily loaded parts: radicals, intervals, pi,
# sets, tuples, equations, matrices, percent/units text.
_WARMUP = [(r"\sqrt{8}", r"2\sqrt{2}"), (r"(1, 2]", r"[1,2)"), (r"\frac{2\pi}{6}", "3"), (r"\{1,2\}", r"\{2,1\}"),
           (r"(1,2)", r"(1,2)"), (r"y=2x+1", r"2x+1"),
           (r"\begin{pmatrix}1\\2\end{pmatrix}", r"\begin{pmatrix}1\\2\end{pmatrix}"),
           (r"5\text{ cm}", r"50\%"), (r"x^2-1", r"(x-1)(x+1)"), (r"\log_2 8", r"e^{i\pi}")]

logging.getLogger("math_verify").setLevel(logging.ERROR)  # its no-timeout warning is expected

_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
_SPACING = re.compile(r"\\[,;:! ]|\\q?quad|~")
_SHORT_FRAC = re.compile(r"\\frac(\d)(\d)")
_SHORT_SQRT = re.compile(r"\\sqrt(\d)")
_ASSIGNMENT = re.compile(r"^[a-zA-Z]\w*\s*=\s*(?=\S)")
_THOUSANDS = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_PLAIN_NUMBER = re.compile(r"^-?(?:\d+(?:\.\d*)?|\.\d+)(?:/\d+)?$")


def normalize(answer: str) -> str:
    """Canonical string form of a LaTeX answer (see the module docstring, step 2)."""
    s = answer.strip().strip("$").strip()
    s = s.replace("\\(", "").replace("\\)", "").replace("\\[", "").replace("\\]", "")
    s = s.replace("\\left", "").replace("\\right", "").replace("\\displaystyle", "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    for degree in ("^{\\circ}", "^\\circ", "°", "\\degree", "\\circ"):
        s = s.replace(degree, "")
    s = s.replace("\\%", "").replace("%", "").replace("\\$", "")
    s = _SPACING.sub("", s)
    for _ in range(3):  # unwrap nested \text{\textbf{...}} a few levels
        s = _TEXT_WRAPPERS.sub(r"\1", s)
    s = _SHORT_FRAC.sub(r"\\frac{\1}{\2}", s)
    s = _SHORT_SQRT.sub(r"\\sqrt{\1}", s)
    s = _ASSIGNMENT.sub("", s)
    s = s.replace(" ", "").rstrip(".")
    if _THOUSANDS.match(s):
        s = s.replace(",", "")
    return s


def _as_number(s: str) -> Fraction | None:
    """Exact value of a plain number string (`-3`, `0.50`, `1/2`, `\\frac{1}{2}`), else None."""
    m = re.fullmatch(r"(-?)\\frac\{(\d+)\}\{(\d+)\}", s)
    if m:
        s = f"{m.group(1)}{m.group(2)}/{m.group(3)}"
    return to_fraction(s) if _PLAIN_NUMBER.match(s) else None


def _brace_depth(s: str) -> int:
    depth = best = 0
    for c in s:
        if c == "{":
            depth += 1
            best = max(best, depth)
        elif c == "}":
            depth -= 1
    return best


class _Unsafe(Exception):
    """A parsed prediction that sympy might not finish evaluating."""


def _bits(expr, budget: list[int]) -> float:
    """Upper bound on log2 |value| of a sympy expression; symbols count as 8 bits."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _Unsafe("too many nodes")
    if getattr(expr, "is_Integer", False):
        return max(int(expr).bit_length(), 1)
    if getattr(expr, "is_Rational", False):
        return max(abs(expr.p).bit_length(), expr.q.bit_length(), 1)
    if getattr(expr, "is_Float", False) or getattr(expr, "is_Atom", False):
        return 64.0  # fixed-precision floats, symbols, pi, E, I, strings
    args = getattr(expr, "args", None)
    if args is None:  # a Matrix (not a Basic): check each entry
        entries = list(expr) if hasattr(expr, "__iter__") else []
        return max((_bits(e, budget) for e in entries), default=1.0)
    if getattr(expr, "is_Pow", False):
        base_bits, exp_bits = _bits(args[0], budget), _bits(args[1], budget)
        exponent = abs(int(args[1])) if args[1].is_Integer else 2.0**min(exp_bits, 64)
        return base_bits * max(exponent, 1)
    name = type(expr).__name__
    if name in ("factorial", "factorial2", "gamma", "binomial", "subfactorial", "RisingFactorial"):
        arg_bits = _bits(args[0], budget)
        return math.inf if arg_bits > 16 else (2.0**arg_bits) * arg_bits
    parts = [_bits(a, budget) for a in args]
    if not parts:
        return 1.0
    if getattr(expr, "is_Mul", False):
        return sum(parts)
    return max(parts) + math.log2(len(parts)) + 1


def _safe_prediction(parsed: list) -> list:
    """The parsed prediction if every sympy part is small enough to verify, else []."""
    for item in parsed:
        if isinstance(item, str):
            continue
        budget = [MAX_NODES]
        try:
            if _bits(item, budget) > MAX_BITS:
                return []
        except (_Unsafe, RecursionError, TypeError, ValueError, OverflowError):
            return []
    return parsed


@functools.lru_cache(maxsize=1)
def _math_verify_module():
    """Import math-verify and build its parser once, OUTSIDE any time limit (takes ~1-2 s cold;
    interrupting an import half-way would leave broken module state behind)."""
    import math_verify

    # Warm-up: sympy loads parts of itself lazily on first use (up to ~1 s each); do that here,
    # not inside a time-limited call where it would be cut off half-way.
    for gold, pred in _WARMUP:
        g = math_verify.parse(f"${gold}$", parsing_timeout=None)
        math_verify.verify(g, math_verify.parse(f"${pred}$", parsing_timeout=None), timeout_seconds=None)
    return math_verify


@functools.lru_cache(maxsize=4096)
def _parse_gold(gold: str) -> tuple:
    parse = _math_verify_module().parse
    parsed = call_with_limit(lambda: parse(f"$\\boxed{{{gold}}}$", parsing_timeout=None), 5.0, [])
    return tuple(parsed)


def _math_verify(gold: str, pred: str | None, tail: str) -> bool:
    parse, verify = _math_verify_module().parse, _math_verify_module().verify
    gold_parsed = list(_parse_gold(gold))
    if not gold_parsed:
        return False
    if pred is None:
        text = tail
    elif "$" in pred or "\\(" in pred or "\\[" in pred:
        text = pred  # an answer block in prose with inline math: let math-verify find the math
    else:
        text = f"$\\boxed{{{pred}}}$"
    parsed = _safe_prediction(parse(text, parsing_timeout=None))
    return bool(parsed) and bool(verify(gold_parsed, parsed, timeout_seconds=None))


@functools.lru_cache(maxsize=16384)
def _verified(gold: str, pred: str | None, tail: str, limit: float) -> bool:
    """math-verify's verdict under the time limit, cached: the n completions of a group often
    share a final answer (a time-out is cached as False, so a bomb costs its limit once)."""
    _math_verify_module()
    _parse_gold(gold)  # cached; parsed under its own, longer limit
    return bool(call_with_limit(lambda: _math_verify(gold, pred, tail), limit, default=False))


def clear_caches() -> None:
    """Forget cached gold parses and verdicts (benchmarks; long runs never need it)."""
    _parse_gold.cache_clear()
    _verified.cache_clear()


def gold_answer(answer: str) -> str:
    """The gold answer string: the content of its last \\boxed{} if it has one, else itself."""
    boxed = last_boxed(answer) if "\\boxed" in answer or "\\fbox" in answer else None
    return (boxed if boxed is not None else answer).strip()


def score_one(completion: str, answer: str, time_limit_s: float | None = None) -> float:
    """1.0 / 0.0 for one completion; never raises."""
    try:
        gold = gold_answer(str(answer))
        if not isinstance(completion, str) or not gold:
            return 0.0
        pred = final_answer(completion)
        if pred is not None:
            norm_pred, norm_gold = normalize(pred), normalize(gold)
            if norm_pred and norm_pred == norm_gold:
                return 1.0
            num_pred, num_gold = _as_number(norm_pred), _as_number(norm_gold)
            if num_pred is not None and num_gold is not None:
                return 1.0 if num_pred == num_gold else 0.0
            if len(pred) > MAX_PRED_CHARS or _brace_depth(pred) > MAX_DEPTH:
                return 0.0
        tail = completion[-TAIL_CHARS:]
        if pred is None and _brace_depth(tail) > MAX_DEPTH:
            return 0.0
        limit = TIME_LIMIT_S if time_limit_s is None else time_limit_s
        return 1.0 if _verified(gold, pred, tail if pred is None else "", limit) else 0.0
    except Exception:  # untrusted input must never crash training
        logging.getLogger(__name__).debug("math reward failed", exc_info=True)
        return 0.0


def math_reward(completions: list[str], answers: list[str], **columns) -> list[float]:
    """1.0 where the completion's final answer is equivalent to the gold answer, else 0.0."""
    return [score_one(c, a) for c, a in zip(completions, answers, strict=True)]
