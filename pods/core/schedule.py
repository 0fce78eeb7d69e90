"""Learning-rate schedules: a pure factor of the run's progress, sized by rl.max_steps or by the time budget.

    lr_factor("cosine", progress=0.5, warmup=0.0)             # 0.5: the multiplier of optim.lr
    sched = LRSchedule(optimizer, lr=5e-6, name="cosine", warmup_ratio=0.1, max_steps=None, max_time=21600)
    lr = sched.apply(elapsed)   # before each optimizer step: sets (and returns) the lr it uses
    sched.step()                # after it: counts optimizer steps

Names (optim.scheduler), with HF transformers' meaning (transformers/optimization.py, get_scheduler):
- constant: optim.lr from the first step, no warm-up. HF's `constant` ignores warm-up too
  (get_scheduler returns get_constant_schedule(optimizer) before reading num_warmup_steps), so the
  authors' single-GPU runs (lr_scheduler_type constant, warmup_ratio 0.01: config/train.yaml:37,43
  of YixuanEvenXu/pods at 3fc107e) had none; optim.warmup_ratio > 0 with constant is rejected at start-up.
- constant_with_warmup: linear ramp from 0 over the warm-up, then optim.lr.
- linear / cosine: warm-up ramp, then decay to 0 at the end of the run (cosine: half a cosine wave).

Progress runs from 0 to 1 over the run. With rl.max_steps set it counts optimizer steps:
progress = k / max_steps before the (k+1)-th step and the warm-up lasts ceil(warmup_ratio x
max_steps) steps, exactly HF's get_*_schedule_with_warmup. With rl.max_steps null (the paper's
time-limited runs) it is elapsed training seconds / rl.max_time, read before each step, and the
warm-up is the first warmup_ratio of the time budget. Elapsed training time is restored from the
checkpoint, so a resumed run continues the same curve; the sizing is saved with the state and a
resume with another budget is refused rather than bending the curve.
"""

from __future__ import annotations

import math

from pods.errors import ConfigError

SCHEDULERS = ("constant", "constant_with_warmup", "linear", "cosine")


def lr_factor(name: str, progress: float, warmup: float) -> float:
    """Multiplier of the peak lr at `progress` in [0, 1] of the run; `warmup`: its first fraction."""
    if name not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {name!r}; valid: {', '.join(SCHEDULERS)}")
    if name == "constant":
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
