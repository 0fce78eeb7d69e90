"""samples.jsonl: what the model writes, every `logging.samples_every` steps.

    log = SampleLog(run_dir, every=10, prompts=2, print_samples=False, resume_step=0)
    if log.due(step):
        log.log(step, prompt_texts, answers, rollouts, total, per_fn, kept_idx)   # [G, n] / [G, k]

One JSON line per logged prompt (the first `prompts` groups of the step), with all n completions:
    {"step", "prompt", "answer", "completions": [{"text", "rewards": {fn: value}, "total", "kept"}, ...]}
`kept`: down-sampling chose it. Rows of steps > resume_step are dropped, as in metrics.jsonl; a failed
write raises pods.io.WriteError. The console's best/worst lines and the wandb table: docs/workbench.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from pods.io import atomic_write_text, writing

SAMPLES_FILE = "samples.jsonl"


def sample_rows(step, prompt_texts, answers, rollouts, total, per_fn, kept_idx, prompts: int,
                counts=None) -> list[dict]:
    """Rows of the first `prompts` groups: total [G, n], per_fn {name: [G, n]}, kept_idx [G, k]; counts [G]: the
    rollouts of each group when an allocation rule made them unequal (the padding past them is not logged)."""
    n, rows = rollouts.n, []
    for g in range(min(prompts, rollouts.num_groups)):
        kept = set(kept_idx[g].tolist())
        comps = [{"text": rollouts.texts[g * n + j], "rewards": {k: float(v[g, j]) for k, v in per_fn.items()},
                  "total": float(total[g, j]), "kept": j in kept} for j in range(n if counts is None else counts[g])]
        rows.append({"step": step, "prompt": prompt_texts[g], "answer": answers[g], "completions": comps})
    return rows


def best_and_worst(rows: list[dict]) -> list[tuple[str, dict]]:
    """The highest- and lowest-total kept completion over the logged prompts."""
    kept = [c for r in rows for c in r["completions"] if c["kept"]]
    if not kept:
        return []
    best = max(kept, key=lambda c: c["total"])
    worst = min(kept, key=lambda c: c["total"])
    return [("best", best), ("worst", worst)]


class SampleLog:
    """Appends sample rows to <run_dir>/samples.jsonl every `every` steps (0: never)."""

    def __init__(self, run_dir: Path, every: int = 10, prompts: int = 2, print_samples: bool = False,
                 resume_step: int = 0, wandb=None, write=None):
        self.path = Path(run_dir) / SAMPLES_FILE
        self.every, self.prompts, self.print_samples, self.wandb = every, prompts, print_samples, wandb
        if write is None:
            from tqdm.auto import tqdm

            write = tqdm.write
        self.write = write
        if self.path.exists():  # rows written after the checkpoint we resume from are trained again
            kept = [line for line in self.path.read_text().splitlines() if _step(line) <= resume_step]
            with writing(self.path):
                atomic_write_text(self.path, "".join(line + "\n" for line in kept))

    def due(self, step: int) -> bool:
        return self.every > 0 and step % self.every == 0

    def log(self, step, prompt_texts, answers, rollouts, total: torch.Tensor, per_fn: dict, kept_idx,
            counts=None) -> None:
        rows = sample_rows(step, prompt_texts, answers, rollouts, total, per_fn, kept_idx, self.prompts, counts)
        with writing(self.path):
            with open(self.path, "a") as f:
                f.write("".join(json.dumps(r) + "\n" for r in rows))
        if self.print_samples:
            for which, c in best_and_worst(rows):
                text = c["text"].replace("\n", "\\n")
                self.write(f"step {step} kept-{which} (total {c['total']:.3f}): {text[:300]}")
        if self.wandb is not None:
            table = self.wandb.Table(columns=["step", "prompt", "answer", "completion", "total", "kept"])
            for r in rows:
                for c in r["completions"]:
                    table.add_data(step, r["prompt"], r["answer"], c["text"], c["total"], c["kept"])
            self.wandb.log({"samples": table}, step=step)


def _step(line: str) -> int:
    try:
        return int(json.loads(line).get("step", 0))
    except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
        return 1 << 62  # a line cut short by a crash: dropped
