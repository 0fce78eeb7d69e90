"""The run's budget: its cost from the cost ledger (tokens, or modelled seconds), when it is spent, the points it passes.

    cost(row, rl)                           # tokens generated + w x trained, or seconds on rl.budget_profile
    meter(rl)                               # the same as a callable (pods.core.timing.Meter)
    exhausted(row, rl)                      # True once rl.token_budget is spent (False without a budget)
    crossed(before, after, rl)              # this step passed a multiple of rl.save_tokens: checkpoint it

Contract: the cost is pods.core.cost.spent (rl.budget_cost=tokens) or pods.core.timing.seconds_spent on the
profile (seconds) of the cost ledger's running totals (carried across resumes), so it is the same number whichever
machine ran the step. A step is never cut: the run stops after the first step that reaches the budget, and a budget
point is checkpointed after the step that passes it (the overshoot is at most one step's cost; docs/leaderboard.md).
"""

from __future__ import annotations

import functools
import math

from pods.core import profiles
from pods.core.reference import runs_reference
from pods.core.timing import Meter


@functools.lru_cache(maxsize=8)
def _constants(spec: str) -> dict[str, float]:
    return profiles.load(spec).constants


def meter(rl) -> Meter:
    """The run's cost function (a metrics row -> its cost so far) in rl.budget_cost's unit."""
    if rl.get("budget_cost", "tokens") == "seconds":
        return Meter(constants=_constants(str(rl.budget_profile)),
                     reference=runs_reference(rl.beta, rl.get("reference_pass", "auto")))
    return Meter(weight=rl.token_budget_weight)


def cost(row: dict | None, rl) -> float:
    """The run's cost up to `row`'s step in rl.budget_cost's unit (0 before any step)."""
    return meter(rl)(row)


def exhausted(row: dict | None, rl) -> bool:
    """rl.token_budget is set and the run's cost has reached it."""
    return rl.token_budget is not None and cost(row, rl) >= rl.token_budget


def crossed(before: dict | None, after: dict, rl) -> bool:
    """The step from `before` (the previous row) to `after` passed a multiple of rl.save_tokens."""
    if rl.save_tokens is None:
        return False
    every = rl.save_tokens
    return math.floor(cost(after, rl) / every) > math.floor(cost(before, rl) / every)
