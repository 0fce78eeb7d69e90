"""The selection lab's hooks in the loop: prompt rule, token mask and m schedule from the config, with their state.

    lab = Lab(cfg.rl, num_prompts=P, seed=cfg.seed)   # rl: train.py's rl section, or any object with its key names
    picked = lab.pick(stream, position, B)       # before generation: pods.core.prompts.Picked
    lab.observe(prompts, correct)                # after scoring: every group generated this step ([G], [G, n])
    m = lab.m(step)                              # rl.m_schedule at this step (0-based)
    plan = lab.allocation(m, budget)             # a fresh pods.core.allocation plan (None: no rule)
    keep = lab.token_keep(mask, entropy, adv)    # [B, T] bool: the tokens that carry the gradient
    state = lab.state_dict(); lab.load_state_dict(state)   # lab.pt in each checkpoint

Contract: the prompt rule's randomness comes from its own generator (seeded from the run's seed), saved with its
history, so a resumed run picks what the uninterrupted one picked; offline replay (pods.analysis.replay) walks the
recorded stream with the same `pods.core.prompts.pick`.
"""

from __future__ import annotations

import torch

from pods.core.allocation import make_allocation
from pods.core.m_schedule import m_at
from pods.core.prompt_rules import make_prompt_rule
from pods.core.prompts import PROMPT_SEED, Picked, pick
from pods.core.token_masks import token_mask

LAB_FILE = "lab.pt"  # in each checkpoint: the prompt rule's history and generator state


class Lab:
    """Prompt rule, token mask and m schedule of one run (see the module docstring)."""

    def __init__(self, rl, num_prompts: int, seed: int):
        self.rl, self.num_prompts = rl, num_prompts
        self.rule = None if rl.prompt_rule == "none" else make_prompt_rule(
            rl.prompt_rule, num_prompts=num_prompts, **dict(rl.prompt_rule_options or {}))
        self.generator = torch.Generator().manual_seed(seed + PROMPT_SEED)

    def pick(self, stream, position: int, B: int) -> Picked:
        """The next B prompts the rule picks from the stream at `position` (the next B without a rule)."""
        return pick(self.rule, stream, position, B, pool=self.rl.prompt_pool, num_prompts=self.num_prompts,
                    generator=self.generator)

    def observe(self, prompts: list[int], correct: torch.Tensor, rewards: torch.Tensor | None = None) -> None:
        """Record every group generated this step: prompts [G], correct [G, n] (accuracy 0/1)."""
        if self.rule is not None and prompts:
            self.rule.update(torch.tensor(prompts), correct.float())

    def keep_groups(self, rewards: torch.Tensor) -> torch.Tensor:
        """[G, n] -> [G] bool: the groups the prompt rule's filter trains on (all without one)."""
        if self.rule is None:
            return torch.ones(rewards.shape[0], dtype=torch.bool)
        return self.rule.keep(rewards)

    def m(self, step: int) -> int:
        """rl.m at training step `step` (0-based) under rl.m_schedule."""
        rl = self.rl
        if rl.m_schedule == "constant":
            return rl.m
        return m_at(rl.m_schedule, step, m=rl.m, n=rl.n, m_end=rl.m_end,
                    horizon=rl.m_horizon if rl.m_horizon is not None else rl.max_steps)

    def allocation(self, m: int, budget: int | None):
        """A fresh rl.allocation plan for a round that keeps m, `budget` rollouts left (None: no cap); None for none."""
        rl = self.rl
        if rl.allocation == "none":
            return None
        return make_allocation(rl.allocation, n=rl.n, m=m, budget=budget, **dict(rl.allocation_options or {}))

    def token_keep(self, mask: torch.Tensor, entropy: torch.Tensor | None, advantages: torch.Tensor | None):
        """[B, T] bool: of the completion tokens `mask`, those rl.token_mask lets carry the gradient."""
        if self.rl.token_mask == "none":
            return mask.bool()
        return token_mask(self.rl.token_mask, mask.bool(), entropy=entropy, advantages=advantages,
                          quantile=self.rl.token_mask_quantile)

    @property
    def needs_entropy(self) -> bool:
        return self.rl.token_mask != "none"

    def state_dict(self) -> dict:
        """The prompt rule's history and generator state (plain tensors and numbers)."""
        if self.rule is None:
            return {}
        return {"rule": _clone(self.rule.state_dict()), "generator": self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        if self.rule is not None and state:
            self.rule.load_state_dict(state["rule"])
            self.generator.set_state(state["generator"])


def _clone(state: dict) -> dict:
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in state.items()}
