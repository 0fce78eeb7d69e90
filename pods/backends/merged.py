"""Evaluate a checkpoint as the authors did: merge its LoRA into the 16-bit base, reload the merged model in 4-bit.

    model_dir = merged_model(run_cfg, checkpoint_dir / "policy", work_dir)   # W + scale * B A, saved in float16
    generator = pods.backends.build_4bit(run_cfg, model_dir)                  # NF4 weights, the run's backend samples
    release(generator)                                                        # before the next checkpoint loads

Contract: `merge_lora` returns a directory holding the merged model in `MERGE_DTYPE` (linear weights
W + (alpha / r) B A) and the tokenizer; `merged_model` also takes the base model (no adapter) and full-parameter
checkpoints (whole models). The 4-bit load is NF4 with double quantization (`pods.backends.precision.nf4_config`);
`require_bitsandbytes` raises MissingExtra without bitsandbytes. NF4(W + dW), not NF4(W) + dW: docs/evaluation.md.
"""

from __future__ import annotations

import gc
import importlib.util
from pathlib import Path

import torch

from pods.backends.hf import load_base_model, load_tokenizer
from pods.backends.precision import Precision
from pods.errors import MissingExtra
from pods.io import honour_umask

# evaluate-run.py's `weights`: the trained policy as it ran (checkpoint loaded into the run's policy), or the
# authors' protocol (merged into the 16-bit base, reloaded in 4-bit NF4)
WEIGHTS = ("adapter", "merged_4bit")
# the authors' scripts/merge.py (3fc107e, unchanged to 187f43b) loads the base in float16 before merging
MERGE_DTYPE = torch.float16


def require_bitsandbytes() -> None:
    """MissingExtra (a PodsError) naming what to install when bitsandbytes cannot be imported."""
    if importlib.util.find_spec("bitsandbytes") is None:
        raise MissingExtra(
            "weights=merged_4bit (protocol=paper) loads each merged checkpoint in 4-bit with bitsandbytes, which "
            "is not installed: `uv sync --extra gpu` on a GPU machine, or `uv pip install bitsandbytes` (its CPU "
            "backend runs NF4, slowly); or evaluate the trained policy exactly with weights=adapter")


def merge_lora(model_cfg, adapter_dir: str | Path, out_dir: str | Path, dtype: torch.dtype = MERGE_DTYPE) -> Path:
    """Merge the PEFT adapter in `adapter_dir` into the base model of `model_cfg` (loaded on CPU in `dtype`,
    unquantized) and save the merged model and tokenizer to `out_dir`."""
    from peft import PeftModel

    tokenizer = load_tokenizer(model_cfg)
    base = load_base_model(model_cfg, tokenizer, torch.device("cpu"), Precision(weights=dtype, compute=dtype))
    merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    return _save(merged, tokenizer, out_dir)


def _save(model, tokenizer, out_dir: str | Path) -> Path:
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    honour_umask(out)  # safetensors writes 0600
    return out


def merged_model(run_cfg, policy_dir: str | Path | None, work_dir: str | Path) -> str | Path:
    """The whole model to load in 4-bit: the base (policy_dir None: its hub id or directory; the tiny model is
    written to work_dir), a full-parameter checkpoint's `policy/` as it is, or a LoRA merged into work_dir."""
    model_cfg = run_cfg.model
    if policy_dir is None:
        if model_cfg.name != "tiny":
            return str(model_cfg.name)
        tokenizer = load_tokenizer(model_cfg)
        base = load_base_model(model_cfg, tokenizer, torch.device("cpu"), Precision(MERGE_DTYPE, MERGE_DTYPE))
        return _save(base, tokenizer, work_dir)
    if int(model_cfg.lora.rank) == 0:
        return Path(policy_dir)
    return merge_lora(model_cfg, policy_dir, work_dir)


def release(generator) -> None:
    """Free a generator built by build_4bit (its engine, its model) before the next one loads."""
    close = getattr(generator, "close", None)
    if callable(close):
        close()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
