"""Learning-rate schedules: a pure factor of the run's progress, sized by rl.max_steps or by the time budget.

    lr_factor("cosine", progress=0.5, warmup=0.0)             # 0.5: the multiplier of optim.lr
    sched = LRSchedule(optimizer, lr=5e-6, name="cosine", warmup_ratio=0.1, max_steps=None, max_time=21600)
    lr = sched.apply(elapsed)   # before each optimizer step: sets (and returns) the lr it uses
    sched.step()                # after it: counts optimizer steps

`SCHEDULERS` have HF transformers' meaning (`constant`: no warm-up). Progress is k / rl.max_steps
before step k+1, else elapsed training seconds / rl.max_time; `load_state_dict` raises ConfigError
when a resume would resize a decaying curve. Why, and the authors' settings: docs/algorithms.md.
"""

from __future__ import annotations

import math

from pods.errors import ConfigError

SCHEDULERS = ("constant", "constant_with_warmup", "linear", "cosine")


def lr_factor(name: str, progress: float, warmup: float) -> float:
    """Multiplier of the peak lr at `progress` in [0, 1] of the run; `warmup`: its first fraction."""
    if name not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {name!r}; valid: {', '.join(SCHEDULERS)}")
    if name == "constant":  # HF's constant ignores warm-up, so the authors' runs had none (docs/algorithms.md)
        return 1.0
    if progress < warmup:
        return progress / warmup
    if name == "constant_with_warmup":
        return 1.0
    rest = min(1.0, (progress - warmup) / max(1.0 - warmup, 1e-12))  # [0, 1] of the decay
    if name == "linear":
        return max(0.0, 1.0 - rest)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * rest)))


class LRSchedule:
    """Sets lr x lr_factor(progress) on every param group of `optimizer` before each optimizer step."""

    def __init__(self, optimizer, *, lr: float, name: str, warmup_ratio: float,
                 max_steps: int | None, max_time: float | None):
        if name not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {name!r}; valid: {', '.join(SCHEDULERS)}")
        self.optimizer, self.lr, self.name, self.warmup_ratio = optimizer, lr, name, warmup_ratio
        self.by = "steps" if max_steps is not None else "time"
        self.total = max_steps if max_steps is not None else max_time
        if name != "constant" and not self.total:
            raise ValueError(f"scheduler {name!r} needs rl.max_steps or rl.max_time to size it")
        self.optimizer_steps = 0
        self.last_lr = lr

    def sizing(self) -> dict | None:
        """What the curve is stretched over (None: constant, nothing to size)."""
        return None if self.name == "constant" else {"by": self.by, "total": self.total, "name": self.name,
                                                     "warmup_ratio": self.warmup_ratio}

    def factor(self, elapsed: float) -> float:
        """lr multiplier of the next optimizer step, given the training seconds elapsed so far."""
        if self.name == "constant":
            return 1.0
        if self.by == "steps":  # HF: warm-up of ceil(ratio x total) steps, progress k / total
            warmup = math.ceil(self.warmup_ratio * self.total) / self.total
            return lr_factor(self.name, self.optimizer_steps / self.total, warmup)
        return lr_factor(self.name, elapsed / self.total, self.warmup_ratio)

    def apply(self, elapsed: float) -> float:
        """Set the lr of the coming optimizer step on the optimizer; return it."""
        self.last_lr = self.lr * self.factor(elapsed)
        for group in self.optimizer.param_groups:
            group["lr"] = self.last_lr
        return self.last_lr

    def step(self) -> None:
        self.optimizer_steps += 1

    def state_dict(self) -> dict:
        return {"optimizer_steps": self.optimizer_steps, "sizing": self.sizing()}

    def load_state_dict(self, state: dict) -> None:
        saved = state.get("sizing")
        if saved is not None and self.sizing() is not None and saved != self.sizing():
            raise ConfigError(f"this run's learning-rate schedule was sized as {saved}, the config now gives "
                             f"{self.sizing()}: a decaying schedule cannot be resized mid-run. Restore the "
                             "run's rl.max_steps / rl.max_time / optim settings, or start a new run (run_name=NAME)")
        self.optimizer_steps = int(state.get("optimizer_steps", state.get("last_epoch", 0)))
