"""The token budget: a run's cost from the cost ledger, when it is spent, and the budget points it passes.

    exhausted(row, rl)                      # True once rl.token_budget is spent (False without a budget)
    crossed(before, after, rl)              # this step passed a multiple of rl.save_tokens: checkpoint it

Contract: the cost is pods.core.cost.spent of the cost ledger's running totals (carried across resumes), so it
is the same number whichever backend or machine ran the step. A step is never cut: the run stops after
the first step that reaches the budget, and a budget point is checkpointed after the step that passes it
(the overshoot is at most one step's cost; docs/leaderboard.md).
"""

from __future__ import annotations

import math

from pods.core.cost import spent


def exhausted(row: dict | None, rl) -> bool:
    """rl.token_budget is set and the run's cost has reached it."""
    return rl.token_budget is not None and spent(row, rl.token_budget_weight) >= rl.token_budget


def crossed(before: dict | None, after: dict, rl) -> bool:
    """The step from `before` (the previous row) to `after` passed a multiple of rl.save_tokens."""
    if rl.save_tokens is None:
        return False
    w, every = rl.token_budget_weight, rl.save_tokens
    return math.floor(spent(after, w) / every) > math.floor(spent(before, w) / every)
