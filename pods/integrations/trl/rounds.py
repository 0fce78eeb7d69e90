"""The lab's generation in TRL: pods.core.collect's Sampler over GRPOTrainer's own generation step.

    sampler = TRLSampler(trainer, lab, accuracy="gsm8k")     # once, in PODSTrainer's set-up
    sampler.begin(step=state.global_step, m=m)
    batch = collect(sampler, B, dynamic=..., budget=...)     # prompt rule, allocation rounds, dynamic sampling
    output = sampler.output(batch, idx, adv)                  # this process's share of the kept rows, TRL's format

Contract: every process runs the same calls in the same order (their decisions come from gathered rewards and the
same lab state). A generation call lays its prompts' rows out prompt-major over the processes (whole groups added,
then ignored, until they divide evenly), runs TRL's `_generate_and_score_completions` on this process's rows with
num_generations = k, and gathers every row-aligned output to all processes. `round` draws the prompt rule's pick
from pods' prompt stream (pods.core.prompts: train.py's order for the same seed), `keep` selects with the run's
selection generator (train.py's `random` draws). Completion texts are left empty (decoded for the logs only).
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from pods.core.algorithms import keep
from pods.core.collect import Batch, Round, Sampler
from pods.core.prompts import PromptStream
from pods.core.rollouts import Rollouts
from pods.errors import ConfigError

LEFT_PADDED = ("prompt_ids", "prompt_mask")  # the prompt side is left padded, everything else right padded


class Completion(list):
    """A completion's token ids that remember where its row lives: (generation call, row of its gathered output)."""

    __slots__ = ("source",)


class TRLSampler(Sampler):
    """A PODSTrainer's step generation for collect (see the module docstring)."""

    def __init__(self, trainer, lab, accuracy: str, seed: int):
        self.trainer, self.lab, self.accuracy = trainer, lab, accuracy
        self.stream = PromptStream(len(trainer.train_dataset), seed)
        self.generator = torch.Generator().manual_seed(seed)  # the selection's, as train.py's gens["select"]
        self.position, self.step, self.m = 0, 0, trainer.args.pods_m
        self.calls: list[dict] = []  # this step's generation calls: every row-aligned output, gathered

    @property
    def B(self) -> int:
        """Prompts per round: TRL's generation batch in groups of n."""
        return self.trainer.args.generation_batch_size // self.trainer.num_generations

    def begin(self, *, step: int, m: int) -> None:
        self.step, self.m, self.calls = step, m, []

    def round(self, call: int, n: int | None = None) -> Round:
        picked = self.lab.pick(self.stream, self.position, self.B)
        self.position += picked.consumed
        if not picked.prompts:
            rule = self.trainer.args.pods_prompt_rule
            raise ConfigError(f"pods_prompt_rule={rule} skipped all {picked.consumed} prompts it was offered (a whole "
                              f"epoch) at step {self.step + 1}: its history rules every prompt out; loosen "
                              "pods_prompt_rule_options or use another pods_prompt_rule")
        rnd = self.more(call, picked.prompts, self.trainer.num_generations if n is None else n)
        return replace(rnd, positions=picked.positions, skipped=picked.skipped,
                       skipped_positions=picked.skipped_positions)

    def more(self, call: int, prompts: list[int], k: int) -> Round:
        tr = self.trainer
        procs, rank = tr.accelerator.num_processes, tr.accelerator.process_index
        extra = next(e for e in range(procs) if (len(prompts) + e) * k % procs == 0)  # whole groups, then ignored
        rows = [p for p in [*prompts, *[prompts[-1]] * extra] for _ in range(k)]  # [R'] prompt-major
        share = len(rows) // procs
        mine = [tr.train_dataset[i] for i in rows[rank * share:(rank + 1) * share]]
        out = tr._pods_generate(mine, k)  # TRL's generation, scoring, reference log-probs: this process's rows
        rewards = tr._pods_rewards()  # [R'] weighted sum, gathered (NaN: unscorable)
        per_func = tr._pods_rewards_per_func.float().cpu()  # [R', F]
        gathered = tr._pods_take_gathered(out, torch.arange(len(rows)), share)  # every row, on every process
        self.calls.append(gathered)
        G, R = len(prompts), len(prompts) * k
        total = rewards[:R].view(G, k)
        per_fn = {name: per_func[:R, i].view(G, k) for i, name in enumerate(tr.reward_func_names)}
        return Round(list(prompts), self._rollouts(gathered, G, k, len(self.calls) - 1), total, per_fn,
                     per_fn[self.accuracy] > 0)

    @staticmethod
    def _rollouts(gathered: dict, G: int, k: int, call: int) -> Rollouts:
        """The call's first G x k rows as Rollouts whose completions know their row (`Completion.source`)."""
        ids, mask = gathered["completion_ids"].cpu(), gathered["completion_mask"].cpu().bool()
        if "tool_mask" in gathered:
            mask = mask & gathered["tool_mask"].cpu().bool()
        comps = []
        for r in range(G * k):
            c = Completion(ids[r][mask[r]].tolist())
            c.source = (call, r)
            comps.append(c)
        p_ids, p_mask = gathered["prompt_ids"].cpu(), gathered["prompt_mask"].cpu().bool()
        prompts = [p_ids[g * k][p_mask[g * k]].tolist() for g in range(G)]
        return Rollouts(prompt_ids=prompts, completion_ids=comps, texts=[""] * (G * k), n=k)

    def keep(self, rnd: Round) -> torch.Tensor:
        a = self.trainer.args
        total = rnd.total  # [B, n]; an unscorable rollout is seen at its group's mean (PODSTrainer's rule)
        filled = torch.where(torch.isnan(total), torch.nan_to_num(total.nanmean(dim=1, keepdim=True), nan=0.0), total)
        return keep(filled, "pods", self.m, a.pods_rule, generator=self.generator,
                    lengths=rnd.rollouts.completion_lengths(), counts=rnd.counts, scope=a.pods_rule_scope)

    def allocation(self, budget: int | None):
        return self.lab.allocation(self.m, budget)

    def output(self, batch: Batch, idx: torch.Tensor, adv: torch.Tensor) -> dict:
        """This process's share of the kept rows idx [G, k] (-1: none; advantages adv [G, k]) in TRL's format: padded
        with rows of no tokens (advantage 0) to procs x steps_per_generation equal micro-batches."""
        tr = self.trainer
        procs, rank, spg = tr.accelerator.num_processes, tr.accelerator.process_index, tr.args.steps_per_generation
        sources = [c.source for c in batch.rollouts.select(idx).completion_ids]  # [K] (call, row), group-major
        K, unit = len(sources), procs * spg
        size = max(math.ceil(K / unit), 1) * unit  # K plus padding rows
        out = {key: _take(self.calls, key, sources, size, pad=tr._tokenizer.pad_token_id if key.endswith("_ids")
                          else 0) for key in self.calls[0] if key not in ("advantages", "num_items_in_batch")}
        for key in ("completion_mask", "tool_mask"):  # the padding rows: no tokens
            if key in out:
                out[key][K:] = 0
        advantages = torch.zeros(size)
        advantages[:K] = adv[idx >= 0].float()  # [K] group-major, as `sources` (-1: nothing kept there)
        mine = slice(rank * size // procs, (rank + 1) * size // procs)
        new = {key: value[mine] for key, value in out.items()}
        new["advantages"] = advantages[mine].to(tr.accelerator.device)
        mask = new["completion_mask"] if "tool_mask" not in new else new["completion_mask"] * new["tool_mask"]
        new["num_items_in_batch"] = tr.accelerator.gather(mask.sum()).sum()  # tokens in the kept batch, all processes
        return new


def _take(calls: list[dict], key: str, sources: list[tuple[int, int]], size: int, pad):
    """Output `key` of rows `sources` [(call, row)] of the step's calls, in that order, then copies of the first
    (or of call 0's row 0 when there is none) up to `size` rows; tensors padded to one width (prompts on the left)."""
    first = calls[0][key]
    if not isinstance(first, torch.Tensor):  # a per-row list
        rows = [calls[c][key][r] for c, r in sources]
        return [*rows, *[(rows or [first[0]])[0]] * (size - len(rows))]
    used = sorted({c for c, _ in sources})
    places = {c: [i for i, (cc, _) in enumerate(sources) if cc == c] for c in used}
    pieces = [calls[c][key][torch.tensor([sources[i][1] for i in places[c]], device=first.device)] for c in used]
    stacked = _stack(pieces or [first[:0]], left=key in LEFT_PADDED, pad=pad)  # rows in call order
    rows = torch.empty_like(stacked)
    rows[torch.tensor([i for c in used for i in places[c]], dtype=torch.long, device=first.device)] = stacked
    filler = rows[:1] if len(sources) else first[:1]
    return torch.cat([rows, filler.expand(size - len(sources), *filler.shape[1:])])


def _stack(pieces: list[torch.Tensor], *, left: bool, pad) -> torch.Tensor:
    """Rows [K_i, T_i, ...] of several calls as one [sum K_i, max T, ...] tensor (left or right padded with `pad`)."""
    if pieces[0].dim() < 2:
        return torch.cat(pieces)
    width = max(p.shape[1] for p in pieces)
    out = []
    for p in pieces:
        fill = p.new_full((p.shape[0], width - p.shape[1], *p.shape[2:]), pad)
        out.append(torch.cat([fill, p] if left else [p, fill], dim=1))
    return torch.cat(out)
