"""The cost model of a compute-matched comparison: tokens generated plus w x tokens trained.

    spent(row, weight=2.0)        # a metrics.jsonl row's running totals (the cost ledger) -> the run's cost so far
    spent(None, 2.0) == 0.0       # before the first step
    measure_weight([rows, ...])   # w from runs' metrics rows {step: row}: seconds per trained / generated token

Contract: GENERATED and TRAINED are the cost ledger's running totals (pods.run.metrics.COST_TOTAL writes them);
w (rl.token_budget_weight) is what one trained token costs in generated tokens, measured per tier
(docs/leaderboard.md). The same function stops a run at its budget (pods.run.budget) and places its
checkpoints on the budget axis (pods.analysis.leaderboard).
"""

from __future__ import annotations

import statistics

from pods.errors import ResultsError

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
