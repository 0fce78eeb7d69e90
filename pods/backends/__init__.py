"""Backends: who samples rollouts (`Generator`) and who holds the trainable model (`Policy`).

    policy, generator = pods.backends.build(cfg)   # cfg: the resolved run config (cfg.backend.name)

`pods.backends.base` defines the two small interfaces. Implementations live in one module each
(`hf`, `vllm`, `unsloth`), imported only when chosen, so GPU-only libraries are never imported
on other paths. Each module exposes `build(cfg) -> (Policy, Generator)`.
"""

from __future__ import annotations

import importlib

BACKENDS = {
    "hf": "pods.backends.hf",  # transformers + PEFT for training and sampling (CPU or GPU)
    "vllm": "pods.backends.vllm",  # vLLM engine samples, transformers + PEFT trains
    "unsloth": "pods.backends.unsloth",  # Unsloth 4-bit model + its vLLM (GPU only)
}
GPU_ONLY = ("unsloth", "vllm")  # vllm also runs on CPU where a CPU build of vLLM is installed


def build(cfg):
    """Build (policy, generator) for `cfg.backend.name`."""
    name = cfg.backend.name
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; valid backends: {', '.join(BACKENDS)}")
    return importlib.import_module(BACKENDS[name]).build(cfg)
