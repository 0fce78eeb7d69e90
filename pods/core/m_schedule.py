"""m schedules: rollouts kept per prompt as a function of the training step (D3S's relaxing down-sampling).

    m = m_at("linear", step, m=8, n=32, horizon=1000)          # 8 at step 0 -> 32 from step 1000 on
    m = m_at("cosine", step, m=8, n=32, horizon=1000, m_end=16)

Contract: an integer between m and m_end (default n) inclusive; pure in the step, so a resumed run continues
the curve from its step counter with no state of its own. `constant` is today's fixed rl.m. docs/rules.md.
"""

from __future__ import annotations

import math
from typing import Callable

from pods.core.registry import lookup

M_SCHEDULES: dict[str, Callable[[float], float]] = {  # progress t in [0, 1] -> fraction of the way to m_end
    "constant": lambda t: 0.0,
    "linear": lambda t: t,
    "cosine": lambda t: (1 - math.cos(math.pi * t)) / 2,  # slow start and end, as the LR warm-up curves
    "step": lambda t: 1.0 if t >= 1 else 0.0,  # aggressive until the horizon, then m_end
}


def m_at(name: str, step: int, *, m: int, n: int, horizon: int | None = None, m_end: int | None = None) -> int:
    """Rollouts kept per prompt at training step `step` (0-based)."""
    curve = lookup("m schedule", name, M_SCHEDULES)
    end = n if m_end is None else m_end
    if not 1 <= m <= n or not 1 <= end <= n:
        raise ValueError(f"m schedule needs 1 <= m, m_end <= n={n}, got m={m}, m_end={end}")
    if name == "constant":
        return m
    if horizon is None or horizon < 1:
        raise ValueError(f"m schedule {name!r} needs a horizon (steps to reach m_end) >= 1, got {horizon!r}")
    t = min(max(step, 0) / horizon, 1.0)
    return int(math.floor(m + (end - m) * curve(t) + 0.5))
