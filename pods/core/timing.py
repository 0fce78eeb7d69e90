"""Seconds per training step on a machine: a fixed part, generation by batches and lengths, the update by tokens.

    prof = pods.core.profiles.load("l40s-unsloth")
    step_seconds(step_counts(row), prof, reference=True)     # one metrics row's step, modelled
    seconds_spent(row, prof, reference=True)                 # the run's modelled seconds up to the row (its totals)
    Meter(constants=prof.constants, reference=True)(row)     # the same as a callable (Meter(weight=w): tokens)
    counts = planned_counts(prompts=1, n=64, m=16, prompt_tokens=150, completion_tokens=230, max_tokens=512)
    fit(points, free=("fixed", "decode_step", "token"), held={"prompt_token": 0.0})   # constants by least squares

Contract: a step costs fixed + sum over TERMS of constant x the cost ledger's count (pods.core.cost): linear in
the counts, so a run's modelled seconds follow from its running totals and its step count. A batch decoded
together costs its decoding steps (its longest completion) whatever its size, plus a share per sequence token
(`token` where finished sequences leave the batch, vLLM; `padded_token` where they keep their place, HF generate),
so a batch's cost is not proportional to its size. The reference pass is priced only where the run makes one.
docs/leaderboard.md "Time, not tokens".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from pods.core.cost import ledger_totals, spent

FIXED = "fixed"  # seconds per step whatever its size: hand-over, optimizer step, bookkeeping
TERMS = {  # constant -> the cost ledger count it prices (seconds per unit)
    "batch": "generation_batches",  # a batch's set-up (one generate call, or one chunk of it)
    "decode_step": "decode_steps",  # one decoding step of a batch: the weights read once, whatever its size
    "token": "tokens_generated",  # a sequence's share of a decoding step (finished sequences leave the batch)
    "padded_token": "tokens_padded",  # the same where finished sequences keep their place (HF generate)
    "prompt_token": "prompt_tokens",  # prefill
    "context_token": "context_tokens",  # the KV cache a decoding step reads, per token of context
    "update_token": "tokens_updated",  # forward and backward of a trained token (prompt + completion)
    "reference_token": "tokens_updated",  # the reference model's forward, where the run makes one
}
CONSTANTS = (FIXED, *TERMS)
BUDGET_COSTS = ("tokens", "seconds")  # rl.budget_cost
SPREAD = 0.25  # completion lengths' coefficient of variation within a batch, for the longest of a planned batch


def step_seconds(counts: dict[str, float], constants: dict[str, float], *, reference: bool) -> float:
    """Modelled seconds of one step from its counts ({COST key: count}, pods.core.cost.step_counts)."""
    return constants[FIXED] + sum(constants[c] * float(counts.get(key, 0.0)) for c, key in TERMS.items()
                                  if reference or c != "reference_token")


def seconds_spent(row: dict | None, constants: dict[str, float], *, reference: bool) -> float:
    """Modelled seconds of a run up to and including `row`'s step (0 before any step): fixed x steps + the
    constants x the cost ledger's running totals (estimated for rows that predate a total)."""
    if not row:
        return 0.0
    totals = ledger_totals(row)
    return float(row.get("step", 0)) * constants[FIXED] + sum(
        constants[c] * totals[key] for c, key in TERMS.items() if reference or c != "reference_token")


@dataclass(frozen=True)
class Meter:
    """A run's cost up to a metrics row: tokens generated + weight x trained (constants None), or its modelled
    seconds on `constants` (a profile's), the reference pass priced where the run makes one."""

    weight: float = 1.0
    constants: dict | None = None
    reference: bool = False

    def __call__(self, row: dict | None) -> float:
        if self.constants is None:
            return spent(row, self.weight)
        return seconds_spent(row, self.constants, reference=self.reference)

    def with_fixed(self, fixed: float) -> Meter:
        """The same meter with another fixed part per step (seconds)."""
        return replace(self, constants={**self.constants, FIXED: float(fixed)})


def expected_longest(mean: float, sequences: int, cap: float, spread: float = SPREAD) -> float:
    """The expected longest of `sequences` completions of mean length `mean` (normal, coefficient of variation
    `spread`; Blom's approximation of the largest of n normals), at most `cap`."""
    if sequences <= 1:
        return min(mean, cap)
    z = NormalDist().inv_cdf((sequences - 0.375) / (sequences + 0.25))
    return min(cap, mean * (1.0 + spread * z))


def planned_counts(*, prompts: int, n: int, m: int, prompt_tokens: float, completion_tokens: float,
                   max_tokens: float, batch_size: int | None = None, spread: float = SPREAD) -> dict[str, float]:
    """A step's cost-ledger counts before it runs: `prompts` x n sequences in one generation call (chunks of
    `batch_size`), completions of mean `completion_tokens` (their longest per batch: expected_longest), m kept."""
    seqs = prompts * n
    size = min(batch_size or seqs, seqs)
    chunks = [size] * (seqs // size) + ([seqs % size] if seqs % size else [])
    longest = [expected_longest(completion_tokens, c, max_tokens, spread) for c in chunks]
    L, P = completion_tokens, prompt_tokens
    return {"generation_batches": len(chunks), "decode_steps": sum(longest),
            "tokens_generated": seqs * L, "tokens_padded": sum(c * x for c, x in zip(chunks, longest)),
            "prompt_tokens": seqs * P, "context_tokens": seqs * (P * L + L * L / 2),
            "tokens_updated": prompts * m * (P + L), "tokens_trained": prompts * m * L,
            "rollouts_generated": seqs, "rollouts_trained": prompts * m}


def design(counts: list[dict[str, float]], names: tuple[str, ...], *, reference: bool = True) -> np.ndarray:
    """[P, len(names)] the count each constant multiplies, per point (the fixed part: 1 per step)."""
    col = lambda c, k: 1.0 if c == FIXED else (0.0 if c == "reference_token" and not reference  # noqa: E731
                                                else float(k.get(TERMS[c], 0.0)))
    return np.array([[col(c, k) for c in names] for k in counts], dtype=float)


def nnls(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Non-negative least squares, min |A x - b| with x >= 0 (Lawson and Hanson's active set)."""
    n = A.shape[1]
    x, free = np.zeros(n), np.zeros(n, dtype=bool)
    for _ in range(3 * n + 10):
        w = A.T @ (b - A @ x)
        if free.all() or (w[~free] <= 1e-12 * max(1.0, float(np.abs(w).max()))).all():
            break
        free[np.argmax(np.where(free, -np.inf, w))] = True
        while True:
            z = np.zeros(n)
            z[free] = np.linalg.lstsq(A[:, free], b, rcond=None)[0]
            if (z[free] > 0).all():
                x = z
                break
            neg = free & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            free &= x > 1e-15
            x[~free] = 0.0
    return x


def fit(points: list[tuple[dict[str, float], float]], free: tuple[str, ...], held: dict[str, float] | None = None,
        *, reference: bool = True) -> dict[str, float]:
    """Constants for `points` [(counts, measured seconds per step)]: the `free` ones by non-negative least squares
    of the relative error, the `held` ones as given, every other constant 0."""
    held = dict(held or {})
    counts, y = [c for c, _ in points], np.array([t for _, t in points], dtype=float)
    if not len(points) or not (y > 0).all():
        raise ValueError("fit: need at least one point, every measured time positive")
    rest = y - design(counts, tuple(held), reference=reference) @ np.array(list(held.values()), dtype=float)
    A = design(counts, free, reference=reference)
    x = nnls(A / y[:, None], rest / y)
    out = {c: 0.0 for c in CONSTANTS}
    out.update(held)
    out.update(zip(free, (float(v) for v in x)))
    return out


def harmonic_step_seconds(seconds: list[float]) -> float:
    """Mean seconds per step over equal stretches of wall time with these per-step times (total time / steps)."""
    return len(seconds) / sum(1.0 / s for s in seconds) if seconds and all(s > 0 for s in seconds) else math.nan
