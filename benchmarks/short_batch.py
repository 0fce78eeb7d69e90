#!/usr/bin/env python
"""How often dynamic sampling ends a step short, by generation budget (simulated, pods.core.collect itself).

    uv run python benchmarks/short_batch.py                 # B = 16, n = 16, rounds 4 and 30, 2,000 steps each
    uv run python benchmarks/short_batch.py --rounds 4 10 30 --B 16 --n 16 --steps 2000 --seed 0

Each prompt of a data mix has a chance p of a correct answer; a group's n answers are Bernoulli(p), the
update keeps all n (GRPO; max-variance keeps right and wrong together, so the filter sees the same), and
`collect` runs its rounds of B prompts under DAPO's accuracy filter. Printed: the share of steps that end
short (fewer than B informative groups) and the mean prompts drawn per step. Results: docs/workbench.md.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from pods.core.collect import Round, Sampler, collect
from pods.core.rollouts import Rollouts

# data mixes: per-prompt success chances p [k] drawn with a numpy Generator
MIXES = {
    "uniform": lambda k, g: g.random(k),
    # a hard set: most prompts are rarely solved (Beta(0.1, 3): mean 0.03, 18 % of groups of 16 informative)
    "hard": lambda k, g: g.beta(0.1, 3.0, k),
    # bimodal: 45 % never solved, 45 % always solved, 10 % in between (a model past its easy stretch)
    "bimodal": lambda k, g: np.where(g.random(k) < 0.9, (g.random(k) < 0.5).astype(float), g.random(k)),
    # very hard: 95 % never solved, the rest anywhere
    "very_hard": lambda k, g: np.where(g.random(k) < 0.95, 0.0, g.random(k)),
}


class Simulated(Sampler):
    """Rounds of B prompts of the mix, n Bernoulli(p) answers each; the update keeps all n."""

    def __init__(self, mix: str, B: int, n: int, g: np.random.Generator):
        self.mix, self.B, self.n, self.g = mix, B, n, g
        self.ro = Rollouts(prompt_ids=[[0]] * B, completion_ids=[[1]] * (B * n), texts=[""] * (B * n), n=n)

    def round(self, call: int, n: int | None = None) -> Round:
        p = MIXES[self.mix](self.B, self.g)  # [B]
        correct = torch.from_numpy(self.g.random((self.B, self.n)) < p[:, None])  # [B, n]
        return Round(list(range(self.B)), self.ro, correct.float(), {"acc": correct.float()}, correct)

    def keep(self, rnd: Round) -> torch.Tensor:
        return torch.arange(self.n).expand(rnd.total.shape[0], -1)  # [B, n]


def simulate(mix: str, rounds: int, B: int = 16, n: int = 16, steps: int = 2000, seed: int = 0) -> dict:
    """{short: share of steps ending short, drawn: mean prompts drawn per step} over `steps` simulated steps."""
    sampler = Simulated(mix, B, n, np.random.default_rng(seed))
    short = drawn = 0
    for _ in range(steps):
        batch = collect(sampler, B, dynamic=True, max_rounds=rounds, short="partial")
        short += batch.short
        drawn += batch.drawn
    return {"short": short / steps, "drawn": drawn / steps}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, nargs="+", default=[4, 30])
    ap.add_argument("--B", type=int, default=16)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print("| data mix | " + " | ".join(f"{r} rounds ({r * args.B} prompts): short, drawn/step" for r in args.rounds) + " |")
    print("|---|" + "---|" * len(args.rounds))
    for mix in MIXES:
        cells = [simulate(mix, r, args.B, args.n, args.steps, args.seed) for r in args.rounds]
        print(f"| {mix} | " + " | ".join(f"{c['short']:.1%}, {c['drawn']:.0f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
