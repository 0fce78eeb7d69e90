r"""The slow path of the math verifier: symbolic equivalence by math-verify (sympy), guarded and cached.

    verified(r"\sqrt{8}", r"2\sqrt{2}", prose=False, limit=1.0)                        # True
    verified(r"\frac{1}{2}", r"The answer is $\frac{1}{2}$.", prose=True, limit=1.0)   # True: its maths

`verified(gold, pred, prose, limit) -> bool`: pred is one formula (prose=False, parsed as `$\boxed{pred}$`)
or a sentence whose maths math-verify picks. It runs under `rewards.timeout.call_with_limit(limit)` (any
thread); gold parses and verdicts are cached, a time-out as False. False without sympy for predictions over
MAX_PRED_CHARS or MAX_DEPTH, with a \sum/\int/\lim the gold lacks, or parsed over MAX_NODES or MAX_BITS.
"""

from __future__ import annotations

import functools
import logging
import math
import re

from pods.rewards.timeout import call_with_limit

# Longest prediction handed to sympy; longer ones are not verified (the fast path had its chance).
MAX_PRED_CHARS = 512
# Deepest brace nesting handed to sympy.
MAX_DEPTH = 24
# Most sympy nodes in a parsed prediction that `verify` is allowed to work on.
MAX_NODES = 400
# Largest estimated magnitude (log2) of any sub-expression that `verify` may evaluate: `9^{9^{9}}`, `100000!` or
# `(x+1)^{10^5}` would hang inside one uninterruptible bigint operation, so they are refused at once.
MAX_BITS = 20_000
# Verdicts kept in the (gold, prediction) cache.
CACHE_SIZE = 65_536

# (gold, prediction) pairs exercising sympy's lazily loaded parts: radicals, intervals, pi,
# sets, tuples, equations, matrices, percent/units text.
_WARMUP = [(r"\sqrt{8}", r"2\sqrt{2}"), (r"(1, 2]", r"[1,2)"), (r"\frac{2\pi}{6}", "3"), (r"\{1,2\}", r"\{2,1\}"),
           (r"(1,2)", r"(1,2)"), (r"y=2x+1", r"2x+1"),
           (r"\begin{pmatrix}1\\2\end{pmatrix}", r"\begin{pmatrix}1\\2\end{pmatrix}"),
           (r"5\text{ cm}", r"50\%"), (r"x^2-1", r"(x-1)(x+1)"), (r"\log_2 8", r"e^{i\pi}")]

# Operators whose value sympy would have to work out (`\\sum_{k=1}^\\infty \\frac{1}{k^2}`).
_LIMITS = re.compile(r"\\(?:sum|prod|int|iint|oint|lim)(?![A-Za-z])")

logging.getLogger("math_verify").setLevel(logging.ERROR)  # its no-timeout warning is expected


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
def math_verify_module():
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
    parse = math_verify_module().parse
    parsed = call_with_limit(lambda: parse(f"$\\boxed{{{gold}}}$", parsing_timeout=None), 5.0, [])
    return tuple(parsed)


def _math_verify(gold: str, pred: str, prose: bool) -> bool:
    mv = math_verify_module()
    gold_parsed = list(_parse_gold(gold))
    if not gold_parsed:
        return False
    parsed = _safe_prediction(mv.parse(pred if prose else f"$\\boxed{{{pred}}}$", parsing_timeout=None))
    return bool(parsed) and bool(mv.verify(gold_parsed, parsed, timeout_seconds=None))


@functools.lru_cache(maxsize=CACHE_SIZE)  # a group's n completions repeat the gold and often the final answer
def _verified(gold: str, pred: str, prose: bool, limit: float) -> bool:
    math_verify_module()
    _parse_gold(gold)  # cached; parsed under its own, longer limit
    # a time-out is cached as False, so a bomb costs its limit once
    return bool(call_with_limit(lambda: _math_verify(gold, pred, prose), limit, default=False))


def verified(gold: str, pred: str, prose: bool, limit: float) -> bool:
    """math-verify's verdict (cached), False for predictions that fail the safety screen."""
    if not pred or len(pred) > MAX_PRED_CHARS or _brace_depth(pred) > MAX_DEPTH:
        return False
    if _LIMITS.search(pred) and not _LIMITS.search(gold):
        return False  # an unevaluated sum/integral/limit is not a final answer (and sympy may spin on it)
    return _verified(gold, pred, prose, limit)


def clear_caches() -> None:
    """Forget cached gold parses and verdicts (benchmarks; long runs never need it)."""
    _parse_gold.cache_clear()
    _verified.cache_clear()
