"""When a training step runs the reference model's forward pass (rl.reference_pass).

    runs_reference(beta=0.04)                      # True: the KL term needs reference log-probs
    runs_reference(beta=0.0, reference_pass="always")   # True: the pass runs anyway (the authors' trainer did)

Contract: beta > 0 needs the pass; `always` runs it at beta = 0 too (a cost in time, not in the loss); an unknown
reference_pass is a ValueError. Torch-free, so the time model and the preflight can ask it before anything loads.
"""

from __future__ import annotations

REFERENCE_PASSES = ("auto", "always")  # rl.reference_pass


def runs_reference(beta: float, reference_pass: str = "auto") -> bool:
    """Whether a step computes reference log-probs."""
    if reference_pass not in REFERENCE_PASSES:
        raise ValueError(f"unknown reference pass {reference_pass!r}; valid: {', '.join(REFERENCE_PASSES)}")
    return beta > 0 or reference_pass == "always"
