"""Which prompts a step generates for: the epoch-shuffled prompt stream and a prompt rule's pick from it (pure).

    stream = PromptStream(size=P, seed=0)          # stream(position, count) -> dataset indices, resumable
    picked = pick(rule, stream, position, B, pool=4, num_prompts=P, generator=g)
    picked.prompts, picked.positions, picked.skipped, picked.consumed

Contract: without a rule (None) the next B prompts. With one, candidates are offered pool x B at a time from
`position` (rule.choose: pods.core.prompt_rules) until B are picked or one epoch (P candidates) was offered; a pick
of all it was asked for ends at its last prompt, so the stream resumes right after it. Same rule history and
generator state give the same pick (the trainer, and offline replay, call exactly this).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

PROMPT_SEED = 7919  # a prompt rule's generator is seeded with the run's seed + this (apart from the selection's)


class PromptStream:
    """Epoch-wise shuffled prompt order that depends only on (seed, position): resumable."""

    def __init__(self, size: int, seed: int):
        self.size, self.seed = size, seed
        self._epoch, self._perm = None, None

    def __call__(self, position: int, count: int) -> list[int]:
        out = []
        for p in range(position, position + count):
            epoch = p // self.size
            if epoch != self._epoch:
                g = torch.Generator().manual_seed(self.seed * 100003 + epoch)
                self._epoch, self._perm = epoch, torch.randperm(self.size, generator=g).tolist()
            out.append(self._perm[p % self.size])
        return out


@dataclass
class Picked:
    prompts: list[int]  # [K] dataset indices to generate for, K <= B, in stream order
    positions: list[int]  # [K] their stream positions
    skipped: list[int]  # dataset indices the rule passed over, in stream order
    skipped_positions: list[int]  # their stream positions
    consumed: int  # stream positions used: the data position advances by this


def pick(rule, stream, position: int, B: int, *, pool: int = 1, num_prompts: int,
         generator: torch.Generator | None = None) -> Picked:
    """The next B prompts `rule` picks from `stream` at `position` (see the module docstring)."""
    if rule is None:
        return Picked(stream(position, B), list(range(position, position + B)), [], [], B)
    out = Picked([], [], [], [], 0)
    size = max(B, pool * B)
    while len(out.prompts) < B and out.consumed < num_prompts:
        start, cands = position + out.consumed, stream(position + out.consumed, size)
        want = B - len(out.prompts)
        pos = rule.choose(torch.tensor(cands), want, generator).tolist()  # ascending positions into cands
        take = pos[-1] + 1 if len(pos) == want else size
        chosen = set(pos)
        out.prompts += [cands[p] for p in pos]
        out.positions += [start + p for p in pos]
        out.skipped += [cands[p] for p in range(take) if p not in chosen]
        out.skipped_positions += [start + p for p in range(take) if p not in chosen]
        out.consumed += take
    return out
