"""The cost model of a compute-matched comparison: tokens generated plus w x tokens trained; the cost ledger.

    spent(row, weight=2.0)        # a metrics.jsonl row's running totals (the cost ledger) -> the run's cost so far
    spent(None, 2.0) == 0.0       # before the first step
    batches = decoded_batches([[12, 30], ...], [[5, 9], ...], size=None)   # one generation call's decoded batches
    row |= cost_metrics(generated=[lengths, ...], trained_tokens=812, rollouts_trained=64, prompts_skipped=3,
                        rounds=2, batches=batches, tokens_updated=2048, previous=last_row)   # cost/* and totals
    ledger_totals(row)            # {key: running total} of every COST_TOTAL key, estimated for rows that predate it
    measure_weight([rows, ...])   # w from runs' metrics rows {step: row}: seconds per trained / generated token

Contract: GENERATED and TRAINED are the cost ledger's running totals (COST_TOTAL, written by cost_metrics);
w (rl.token_budget_weight) is what one trained token costs in generated tokens, measured per tier
(docs/leaderboard.md). The same function stops a run at its budget (pods.run.budget) and places its
checkpoints on the budget axis (pods.analysis.leaderboard). The batch counts (generation_batches, decode_steps,
tokens_padded, prompt_tokens, context_tokens, tokens_updated) are what a step-time model needs (docs/training.md).
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, NamedTuple

from pods.errors import ResultsError

if TYPE_CHECKING:
    import torch

GENERATED = "cost/tokens_generated_total"
TRAINED = "cost/tokens_trained_total"


def spent(row: dict | None, weight: float) -> float:
    """Tokens generated plus `weight` x tokens trained up to and including `row`'s step (0 before any step)."""
    row = row or {}
    return float(row.get(GENERATED, 0.0)) + weight * float(row.get(TRAINED, 0.0))


def measure_weight(runs: list[dict[int, dict]]) -> float:
    """w from runs' metrics rows ({step: row} each, steps of every run pooled): the median training seconds per
    trained token over the median generation seconds per generated token (`time/update` holds the reference pass,
    `time/reference`, where the run has one)."""
    gen, upd = [], []
    for rows in runs:
        for r in rows.values():
            if r.get("cost/tokens_generated") and r.get("cost/tokens_trained") and "time/update" in r:
                gen.append(r["time/generation"] / r["cost/tokens_generated"])
                upd.append(r["time/update"] / r["cost/tokens_trained"])
    if not gen:
        raise ResultsError("no metrics rows with time/generation, time/update and the cost ledger to measure w from")
    return statistics.median(upd) / statistics.median(gen)


COST = ("tokens_generated", "tokens_trained", "rollouts_generated", "rollouts_trained", "prompts_skipped", "rounds",
        "generation_batches", "decode_steps", "tokens_padded", "prompt_tokens", "context_tokens", "tokens_updated")
COST_TOTAL = {k: f"cost/{k}_total" for k in ("tokens_generated", "tokens_trained", "prompts_skipped",
                                             "rollouts_generated", "generation_batches", "decode_steps",
                                             "tokens_padded", "prompt_tokens", "context_tokens", "tokens_updated",
                                             "rounds")}
# GENERATED, TRAINED above are COST_TOTAL["tokens_generated"], COST_TOTAL["tokens_trained"]


class Decoded(NamedTuple):
    """One batch of sequences decoded together."""

    sequences: int
    longest: int  # its longest completion: the batch's decoding steps
    prompt_tokens: int  # prefill
    context_tokens: int  # sum over generated tokens of the tokens before each (prompt + completion so far)


def decoded_batches(prompt_lengths: list[int], completion_lengths: list[int], size: int | None = None) -> list[Decoded]:
    """The batches a generation call decodes together: the call's sequences in order ([N] prompt and completion
    lengths), in chunks of `size` (a backend's generation batch size; None: one batch)."""
    size = size or max(len(completion_lengths), 1)
    out = []
    for i in range(0, len(completion_lengths), size):
        p, c = prompt_lengths[i:i + size], completion_lengths[i:i + size]
        out.append(Decoded(len(c), max(c), sum(p), sum(a * b + b * (b - 1) // 2 for a, b in zip(p, c))))
    return out


def cost_metrics(*, generated: list[torch.Tensor], trained_tokens: float, rollouts_trained: int,
                 prompts_skipped: int, rounds: int, batches: list[Decoded] | None = None,
                 tokens_updated: float | None = None, previous: dict | None = None) -> dict:
    """The step's cost: cost/<COST key>, plus running totals (COST_TOTAL) carried on from `previous`, the
    last step's row (a resumed run's from its checkpoint; one that predates a total: ledger_totals' estimate).
    generated: completion lengths of every rollout generated this step, one tensor per generation round;
    trained_tokens: tokens carrying the policy gradient; batches: decoded_batches of every generation call
    (None: one batch per round, prompts and context not counted); tokens_updated: prompt + completion tokens of the
    rollouts trained (the update's forward and backward; None: trained_tokens)."""
    if batches is None:
        batches = [Decoded(g.numel(), int(g.max()), 0, 0) for g in generated if g.numel()]
    row = {"cost/tokens_generated": float(sum(float(g.sum()) for g in generated)),
           "cost/tokens_trained": float(trained_tokens), "cost/rollouts_generated": sum(g.numel() for g in generated),
           "cost/rollouts_trained": int(rollouts_trained), "cost/prompts_skipped": int(prompts_skipped),
           "cost/rounds": int(rounds), "cost/generation_batches": len(batches),
           "cost/decode_steps": sum(b.longest for b in batches),
           "cost/tokens_padded": sum(b.sequences * b.longest for b in batches),
           "cost/prompt_tokens": sum(b.prompt_tokens for b in batches),
           "cost/context_tokens": sum(b.context_tokens for b in batches),
           "cost/tokens_updated": float(trained_tokens if tokens_updated is None else tokens_updated)}
    before = ledger_totals(previous) if previous else {}
    for key, total in COST_TOTAL.items():
        row[total] = before.get(key, 0) + row[f"cost/{key}"]
    return row


def step_counts(row: dict) -> dict[str, float]:
    """{COST key: this step's count} of a metrics row; for a row written before a key existed, its estimate:
    one generation batch per round, the longest completion as the mean (decode_steps = rounds x tokens /
    rollouts), no padding (tokens_padded = tokens generated), prompts unpriced (0), context from the mean length
    (tokens x mean / 2), tokens_updated = trained."""
    get = lambda k, d=0.0: float(row.get(f"cost/{k}", d))  # noqa: E731
    out = {k: get(k) for k in COST if f"cost/{k}" in row}
    rounds = get("rounds", 1.0)
    mean = get("tokens_generated") / max(get("rollouts_generated"), 1.0)
    legacy = {"rounds": rounds, "generation_batches": rounds, "decode_steps": rounds * mean,
              "tokens_padded": get("tokens_generated"), "prompt_tokens": 0.0,
              "context_tokens": get("tokens_generated") * mean / 2, "tokens_updated": get("tokens_trained")}
    return {k: out.get(k, legacy.get(k, 0.0)) for k in COST}


def ledger_totals(row: dict | None) -> dict[str, float]:
    """{COST_TOTAL key: running total} up to and including `row`'s step (empty before any step); a total the row
    does not hold (a run that predates it) is estimated as its `step` x step_counts' value for that step."""
    if not row:
        return {}
    steps = float(row.get("step", 1))
    counts = step_counts(row)
    return {k: float(row[t]) if t in row else steps * counts[k] for k, t in COST_TOTAL.items()}
