"""train.py's generation for pods.core.collect: the step's prompts, rollouts, rewards and selection as one object.

    sampler = StepSampler(ready, lab, timers, signals)          # once per run
    sampler.begin(step=run.step, position=run.position, m=m)    # each step
    batch = collect(sampler, B, dynamic=..., budget=...)        # pods.core.collect
    advance = sampler.position - run.position                   # stream positions the step used
    sampler.batches                                             # the step's decoded batches (cost ledger)

Contract: `round` draws the prompt rule's pick of B prompts from the epoch-shuffled stream (pods.core.prompts) and
advances `position`; every generation call samples with `sampling_seed(seed, step, call)`, so a resumed step draws
what the uninterrupted one drew; `keep` is the rollout rule's selection (the run's selection generator);
`allocation` the lab's plan for m (None without a rule); `stopping` reads the run's stop signals; `batches` holds
pods.core.cost.decoded_batches of every generation call since `begin`.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from pods.backends.base import Sampling, sampling_seed
from pods.core.algorithms import keep
from pods.core.collect import Round, Sampler
from pods.core.cost import Decoded, decoded_batches
from pods.core.prompts import PromptStream
from pods.errors import ConfigError


def score(texts, answers, cols, reward) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(total [N], {name: [N]}) from `reward` = pods.rewards.combined(cfg.dataset.rewards): the total training
    optimises, every function's output checked there (pods.errors.RewardError)."""
    total, per_fn = reward(texts, answers, **cols)
    as_tensor = lambda xs: torch.tensor(xs, dtype=torch.float32)  # noqa: E731
    return as_tensor(total), {k: as_tensor(v) for k, v in per_fn.items()}


def score_groups(texts, batch, answers, cols, reward, n) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Score the n completions of each prompt in `batch` (dataset indices [G]): (total [G, n], {name: [G, n]})."""
    rep = lambda xs: [xs[i] for i in batch for _ in range(n)]  # noqa: E731  [G * n]
    total, per_fn = score(texts, rep(answers), {k: rep(v) for k, v in cols.items()}, reward)
    G = len(batch)
    return total.view(G, n), {k: v.view(G, n) for k, v in per_fn.items()}


class StepSampler(Sampler):
    """The run's prompt stream, generator, rewards and rollout rule (see the module docstring)."""

    def __init__(self, ready, lab, timers, signals):
        rl = ready.cfg.rl
        self.ready, self.lab, self.timers, self.signals = ready, lab, timers, signals
        self.stream = PromptStream(len(ready.prompts), ready.cfg.seed)
        self.sampling = Sampling(max_tokens=rl.max_completion_tokens, temperature=rl.temperature, top_p=rl.top_p)
        self.step, self.position, self.m = 0, 0, rl.m
        self.batches: list[Decoded] = []

    def begin(self, *, step: int, position: int, m: int) -> None:
        """A new step: `step` steps done, the stream at `position`, m kept per prompt."""
        self.step, self.position, self.m = step, position, m
        self.batches = []

    def round(self, call: int, n: int | None = None) -> Round:
        rl, B = self.ready.cfg.rl, self.ready.cfg.rl.prompts_per_step
        picked = self.lab.pick(self.stream, self.position, B)
        self.position += picked.consumed
        if not picked.prompts:
            raise ConfigError(f"rl.prompt_rule={rl.prompt_rule} skipped all {picked.consumed} prompts it was offered "
                              f"(a whole epoch) at step {self.step + 1}: its history rules every prompt out; loosen "
                              "rl.prompt_rule_options or use another rl.prompt_rule")
        return replace(self.more(call, picked.prompts, rl.n if n is None else n), positions=picked.positions,
                       skipped=picked.skipped, skipped_positions=picked.skipped_positions)

    def more(self, call: int, prompts: list[int], k: int) -> Round:
        ready = self.ready
        with self.timers("generation"):  # the sampling seed depends on (seed, step, call) only: resumable
            seeded = replace(self.sampling, seed=sampling_seed(ready.cfg.seed, self.step, call))
            ro = ready.generator.generate([ready.prompts[i] for i in prompts], k, seeded)  # G * k
        self.batches += decoded_batches([len(p) for p in ro.flat_prompt_ids()], [len(c) for c in ro.completion_ids],
                                        getattr(ready.generator, "batch_size", None))  # HF decodes in chunks
        with self.timers("scoring"):
            total, per_fn = score_groups(ro.texts, prompts, ready.answers, ready.cols, ready.reward, k)  # [G, k]
        return Round(list(prompts), ro, total, per_fn, per_fn[ready.accuracy] > 0)

    def keep(self, rnd: Round) -> torch.Tensor:
        ready = self.ready
        with self.timers("selection"):
            return keep(rnd.total, ready.algorithm, self.m, ready.cfg.rl.rule, generator=ready.gens["select"],
                        lengths=rnd.rollouts.completion_lengths(), counts=rnd.counts, scope=ready.cfg.rl.rule_scope)

    def allocation(self, budget: int | None):
        return self.lab.allocation(self.m, budget)

    def stopping(self) -> bool:
        return self.signals.requested
