"""The rollout batch: n completions for each of G prompts, in one backend-neutral container.

    rollouts = generator.generate(prompt_ids, n=8, sampling=sampling)   # every backend returns one
    kept = rollouts.select(select(rewards, m=4))     # rewards [G, n] -> idx [G, m] -> the G x m kept
    kept.completion_lengths()                        # [G, m] completion tokens

Completions are stored group-major: row `g * n + j` is completion j of prompt g. The constructor
raises ValueError when the counts do not add up; `select`, `groups` and `concat` return new Rollouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Rollouts:
    """n completions per prompt for G prompts, as unpadded token-id lists plus decoded text."""

    prompt_ids: list[list[int]]  # [G] token ids of each prompt (no padding)
    completion_ids: list[list[int]]  # [G * n] token ids of each completion (no padding, EOS kept)
    texts: list[str]  # [G * n] decoded completions (special tokens skipped)
    n: int  # completions per prompt (the group size)
    finish_reasons: list[str] = field(default_factory=list)  # [G * n] "stop" | "length" ("" if unknown)

    def __post_init__(self):
        g, total = len(self.prompt_ids), len(self.completion_ids)
        if self.n < 1 or total != g * self.n or len(self.texts) != total:
            raise ValueError(
                f"Rollouts: expected {g} prompts x n={self.n} = {g * self.n} completions and texts, "
                f"got {total} completions and {len(self.texts)} texts"
            )
        if not self.finish_reasons:
            self.finish_reasons = [""] * total
        if len(self.finish_reasons) != total:
            raise ValueError(f"Rollouts: {len(self.finish_reasons)} finish reasons for {total} completions")

    @property
    def num_groups(self) -> int:
        return len(self.prompt_ids)

    def __len__(self) -> int:
        return len(self.completion_ids)

    def group_ids(self) -> list[int]:
        """[G * n] index of the prompt each completion belongs to."""
        return [g for g in range(self.num_groups) for _ in range(self.n)]

    def flat_prompt_ids(self) -> list[list[int]]:
        """[G * n] the prompt of each completion (shared lists, not copies)."""
        return [self.prompt_ids[g] for g in self.group_ids()]

    def completion_lengths(self) -> torch.Tensor:
        """[G, n] number of completion tokens."""
        lengths = torch.tensor([len(c) for c in self.completion_ids], dtype=torch.float32)
        return lengths.view(self.num_groups, self.n)

    def select(self, idx: torch.Tensor) -> "Rollouts":
        """Keep, per group, the completions at `idx` [G, m] (indices into each group's n). Entries -1 keep nothing
        (a batch-level rule's rows of unequal length): then each kept completion is its own group (n = 1), in order."""
        if idx.dim() != 2 or idx.shape[0] != self.num_groups:
            raise ValueError(f"select: idx must be [G={self.num_groups}, m], got {tuple(idx.shape)}")
        if idx.numel() and (int(idx.min()) < -1 or int(idx.max()) >= self.n):
            raise ValueError(f"select: indices must lie in [0, {self.n}) or be -1, got {idx.min()}..{idx.max()}")
        m, ragged = idx.shape[1], bool((idx < 0).any())
        flat = (idx + torch.arange(self.num_groups).unsqueeze(1) * self.n)[idx >= 0].tolist()  # row-major
        return Rollouts(
            prompt_ids=[self.prompt_ids[i // self.n] for i in flat] if ragged else self.prompt_ids,
            completion_ids=[self.completion_ids[i] for i in flat],
            texts=[self.texts[i] for i in flat],
            n=1 if ragged else m,
            finish_reasons=[self.finish_reasons[i] for i in flat],
        )

    def groups(self, gs: list[int]) -> "Rollouts":
        """Keep whole groups `gs` (indices into the G prompts), in that order."""
        rows = [g * self.n + j for g in gs for j in range(self.n)]
        return Rollouts(prompt_ids=[self.prompt_ids[g] for g in gs],
                        completion_ids=[self.completion_ids[i] for i in rows], texts=[self.texts[i] for i in rows],
                        n=self.n, finish_reasons=[self.finish_reasons[i] for i in rows])

    @staticmethod
    def concat(parts: list["Rollouts"]) -> "Rollouts":
        """The groups of several batches with the same n, in order."""
        if len({p.n for p in parts}) != 1:
            raise ValueError(f"concat: every part needs the same n, got {sorted({p.n for p in parts})}")
        return Rollouts(prompt_ids=[p for r in parts for p in r.prompt_ids],
                        completion_ids=[c for r in parts for c in r.completion_ids],
                        texts=[t for r in parts for t in r.texts], n=parts[0].n,
                        finish_reasons=[f for r in parts for f in r.finish_reasons])
