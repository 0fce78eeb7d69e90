"""Backends: who samples rollouts (`Generator`) and who holds the trainable model (`Policy`).

    policy, generator = pods.backends.build(cfg)   # cfg: the resolved run config (cfg.backend.name)
    pods.backends.facts("vllm").length_key          # "max_model_len": what a backend declares (base.Facts)
    pods.backends.settings("vllm")                  # VLLMSettings: the keys of its `backend` section

`pods.backends.base` defines the two small interfaces. Implementations live in one module each
(`hf`, `vllm`, `unsloth`), imported only when chosen, so GPU-only libraries are never imported
on other paths. Each module exposes `build(cfg) -> (Policy, Generator)` and `build_4bit(cfg, model_dir) ->
Generator` (a whole model loaded in 4-bit NF4, for evaluation: pods.backends.merged), and `FACTS`: its memory
terms, length key, first-contact variants and its settings (pods.backends.base.Facts). A backend is its module,
one line in BACKENDS and its config/backend/*.yaml.
"""

from __future__ import annotations

import importlib

BACKENDS = {
    "hf": "pods.backends.hf",  # transformers + PEFT for training and sampling (CPU or GPU)
    "vllm": "pods.backends.vllm",  # vLLM engine samples, transformers + PEFT trains
    "unsloth": "pods.backends.unsloth",  # Unsloth 4-bit model + its vLLM (GPU only)
}


def _module(cfg):
    return _named(cfg.backend.name)


def _named(name: str):
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; valid backends: {', '.join(BACKENDS)}")
    return importlib.import_module(BACKENDS[name])


def facts(name: str):
    """What backend `name` declares about itself: its module's FACTS (pods.backends.base.Facts); ValueError
    for an unknown name. Importing a backend module never imports its GPU library."""
    return _named(name).FACTS


def settings(name: str) -> type:
    """The settings dataclass of backend `name` (pods.backends.base.BackendSettings): the keys of its `backend`
    section, checked by pods.config.fields; ValueError for an unknown name."""
    return facts(name).settings


def build(cfg):
    """Build (policy, generator) for `cfg.backend.name`."""
    return _module(cfg).build(cfg)


def build_4bit(cfg, model_dir):
    """A generator sampling the whole model in `model_dir` loaded in 4-bit NF4 by `cfg.backend.name`'s engine
    (evaluation's weights=merged_4bit, pods.backends.merged)."""
    return _module(cfg).build_4bit(cfg, model_dir)
