"""Checkpoints: when to save (pure), atomic save, load of the latest complete one, resume state.

    schedule = SaveSchedule("time", interval=1800, steps=100)
    schedule.due(step=12, elapsed=1805.0, last_step=0, last_elapsed=0.0)   # -> True
    save(run_dir, step, state, policy, optimizer, scheduler)                 # checkpoint-<step>/
    ckpt = latest(run_dir)                                                   # Path | None
    state = load(ckpt, policy, optimizer, scheduler)                         # restores RNGs too

Layout of `checkpoints/<run_name>/checkpoint-<step>/` (a contract for evaluation and plots):
    state.json     {"step", "elapsed_seconds", "data_position", "saved_at", ...}; written last
    policy/        Policy.save: PEFT adapter dir (adapter_config.json, adapter_model.safetensors)
                   or the full model when LoRA rank is 0; plus the tokenizer
    trainer.pt     optimizer and scheduler state dicts
    rng.pt         python, numpy, torch (CPU and CUDA) RNG states and the trainer's own generators
A checkpoint is written into `.tmp-checkpoint-<step>` and renamed when complete, so a crash never
leaves a directory named `checkpoint-<step>` that is incomplete; leftover temp dirs are ignored
and removed by the next save. `elapsed_seconds` is training time (model loading and checkpoint
writing excluded), so time-based saving continues seamlessly after a resume.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

_NAME = re.compile(r"^checkpoint-(\d+)$")


@dataclass(frozen=True)
class SaveSchedule:
    """When to save: every `interval` seconds of training time, or every `steps` steps."""

    strategy: str = "time"  # time | steps
    interval: float = 1800.0
    steps: int = 100

    def due(self, step: int, elapsed: float, last_step: int, last_elapsed: float) -> bool:
        """True when a save boundary was crossed since the last save (at last_step / last_elapsed).

        Time boundaries are multiples of `interval` (1800, 3600, ...), so a resumed run saves at
        the same training times as an uninterrupted one.
        """
        if self.strategy == "steps":
            return step // self.steps > last_step // self.steps
        if self.strategy == "time":
            return math.floor(elapsed / self.interval) > math.floor(last_elapsed / self.interval)
        raise ValueError(f"unknown save strategy {self.strategy!r}; valid: time, steps")


def should_stop(step: int, elapsed: float, max_steps: int | None, max_time: float | None) -> bool:
    return (max_steps is not None and step >= max_steps) or (max_time is not None and elapsed >= max_time)


def checkpoints(run_dir: Path) -> list[Path]:
    """Complete checkpoints of a run, ordered by step."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in run_dir.iterdir()
             if (m := _NAME.match(p.name)) and (p / "state.json").is_file()]
    return [p for _, p in sorted(found)]


def latest(run_dir: Path) -> Path | None:
    found = checkpoints(run_dir)
    return found[-1] if found else None


def rng_state(extra: dict[str, torch.Generator] | None = None) -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
             "extra": {k: g.get_state() for k, g in (extra or {}).items()}}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict, extra: dict[str, torch.Generator] | None = None) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    for k, g in (extra or {}).items():
        if k in state["extra"]:
            g.set_state(state["extra"][k])


def save(run_dir: Path, step: int, state: dict, policy, optimizer=None, scheduler=None,
         generators: dict[str, torch.Generator] | None = None) -> Path:
    """Write checkpoint-<step> atomically; `state` must hold elapsed_seconds (+ anything JSON-able)."""
    run_dir = Path(run_dir)
    final = run_dir / f"checkpoint-{step}"
    tmp = run_dir / f".tmp-checkpoint-{step}"
    for stale in run_dir.glob(".tmp-checkpoint-*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp.mkdir(parents=True)
    policy.save(tmp / "policy")
    torch.save({"optimizer": optimizer.state_dict() if optimizer is not None else None,
                "scheduler": scheduler.state_dict() if scheduler is not None else None}, tmp / "trainer.pt")
    torch.save(rng_state(generators), tmp / "rng.pt")
    meta = {"step": step, **state, "saved_at": time.time()}
    (tmp / "state.json").write_text(json.dumps(meta, indent=1))
    if final.exists():  # re-saving the same step (e.g. a resumed run's final save): replace it
        old = run_dir / f".old-checkpoint-{step}"
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)
    return final


def read_state(checkpoint: Path) -> dict:
    return json.loads((Path(checkpoint) / "state.json").read_text())


def load(checkpoint: Path, policy, optimizer=None, scheduler=None,
         generators: dict[str, torch.Generator] | None = None, restore_rng: bool = True) -> dict:
    """Restore policy weights, optimizer, scheduler and RNG states; return state.json."""
    checkpoint = Path(checkpoint)
    policy.load(checkpoint / "policy")
    trainer = torch.load(checkpoint / "trainer.pt", map_location="cpu", weights_only=False)
    if optimizer is not None and trainer["optimizer"] is not None:
        optimizer.load_state_dict(trainer["optimizer"])
    if scheduler is not None and trainer["scheduler"] is not None:
        scheduler.load_state_dict(trainer["scheduler"])
    if restore_rng:
        set_rng_state(torch.load(checkpoint / "rng.pt", map_location="cpu", weights_only=False), generators)
    return read_state(checkpoint)
