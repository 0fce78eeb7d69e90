"""The optimizer of a run: AdamW (or bitsandbytes' 8-bit AdamW) with weight decay on the weights only.

    optimizer, scheduler = build_optimizer(policy.named_trainable_parameters(), cfg)   # cfg.optim, cfg.rl
    decay_groups(named_params, 0.1)     # [{"params": weights, "weight_decay": 0.1}, {"params": biases, norms, 0.0}]

Contract: one optimizer step per training step (pods.run.trainer); the schedule (pods.core.schedule.LRSchedule)
is sized by rl.max_steps or rl.max_time. adamw_8bit without CUDA or bitsandbytes warns and uses torch's AdamW.
"""

from __future__ import annotations

import re
import warnings

import torch

from pods.core.schedule import LRSchedule

# parameter names weight decay skips: biases and norms (transformers Trainer.get_decay_parameter_names)
NO_DECAY = re.compile(r"bias|layernorm|rmsnorm|(?:^|\.)norm(?:$|\.)|_norm(?:$|\.)")


def decay_groups(named_params, weight_decay: float) -> list[dict]:
    """AdamW parameter groups: weight decay on the weights, none on biases, norms and LayerNorm modules'
    parameters (by lower-cased name, as HF's Trainer decides); an empty group is left out."""
    decay, no_decay = [], []
    for name, p in named_params:
        (no_decay if NO_DECAY.search(name.lower()) else decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


def build_optimizer(named_params, cfg):
    """(optimizer, pods.core.schedule.LRSchedule) per cfg.optim, the schedule sized by rl.max_steps or rl.max_time.

    named_params: [(name, parameter)] of the trainable parameters (biases and norms get no decay).
    """
    o = cfg.optim
    params = decay_groups(named_params, float(o.weight_decay))
    opt = None
    if o.name == "adamw_8bit":
        try:
            import bitsandbytes as bnb

            if torch.cuda.is_available():
                opt = bnb.optim.AdamW8bit(params, lr=o.lr, betas=tuple(o.betas), weight_decay=o.weight_decay)
        except ImportError:
            pass
        if opt is None:
            warnings.warn("optim.name=adamw_8bit needs CUDA and bitsandbytes; using torch AdamW")
    opt = opt or torch.optim.AdamW(params, lr=o.lr, betas=tuple(o.betas), weight_decay=o.weight_decay)
    sched = LRSchedule(opt, lr=o.lr, name=o.scheduler, warmup_ratio=o.warmup_ratio,
                       max_steps=cfg.rl.max_steps, max_time=cfg.rl.max_time)
    return opt, sched
