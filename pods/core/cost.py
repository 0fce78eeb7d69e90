"""The cost model of a compute-matched comparison: tokens generated plus w x tokens trained.

    spent(row, weight=2.0)        # a metrics.jsonl row's running totals (the cost ledger) -> the run's cost so far
    spent(None, 2.0) == 0.0       # before the first step
    row |= cost_metrics(generated=[lengths, ...], trained_tokens=812, rollouts_trained=64, prompts_skipped=3,
                        rounds=2, previous=last_row)   # a step's cost/* counts and running totals
    measure_weight([rows, ...])   # w from runs' metrics rows {step: row}: seconds per trained / generated token

Contract: GENERATED and TRAINED are the cost ledger's running totals (COST_TOTAL, written by cost_metrics);
w (rl.token_budget_weight) is what one trained token costs in generated tokens, measured per tier
(docs/leaderboard.md). The same function stops a run at its budget (pods.run.budget) and places its
checkpoints on the budget axis (pods.analysis.leaderboard).
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

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


COST = ("tokens_generated", "tokens_trained", "rollouts_generated", "rollouts_trained", "prompts_skipped", "rounds")
COST_TOTAL = {k: f"cost/{k}_total" for k in ("tokens_generated", "tokens_trained", "prompts_skipped")}
# GENERATED, TRAINED above are COST_TOTAL["tokens_generated"], COST_TOTAL["tokens_trained"]


def cost_metrics(*, generated: list[torch.Tensor], trained_tokens: float, rollouts_trained: int,
                 prompts_skipped: int, rounds: int, previous: dict | None = None) -> dict:
    """The step's cost: cost/<COST key>, plus running totals (COST_TOTAL) carried on from `previous`, the
    last step's row (a resumed run's from its checkpoint). generated: completion lengths of every rollout
    generated this step, one tensor per generation round; trained_tokens: tokens carrying the policy gradient."""
    row = {"cost/tokens_generated": float(sum(float(g.sum()) for g in generated)),
           "cost/tokens_trained": float(trained_tokens), "cost/rollouts_generated": sum(g.numel() for g in generated),
           "cost/rollouts_trained": int(rollouts_trained), "cost/prompts_skipped": int(prompts_skipped),
           "cost/rounds": int(rounds)}
    for key, total in COST_TOTAL.items():
        row[total] = (previous or {}).get(total, 0) + row[f"cost/{key}"]
    return row
