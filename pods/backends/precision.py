"""The dtypes of a policy, decided in one place: what the weights are stored in, what passes compute in.

    prec = resolve(cfg.model, device, full_parameter=cfg.model.lora.rank == 0)
    model = load_base_model(cfg.model, tok, device, prec)     # weights stored in prec.weights
    with prec.autocast(device):                               # every forward pass of the policy
        logits = model(...).logits

CPU: passes compute in `model.cpu_dtype` (float32, or bfloat16 where the CPU has AMX / avx512_bf16). CUDA: in
`model.dtype` under torch.autocast ("auto": the checkpoint's `config.dtype`). Stored in float32: a full-parameter run's master weights and PEFT's adapter; in the compute dtype:
a LoRA's frozen base, a 4-bit base's non-NF4 weights (nothing upcast) and the reference copy. docs/gpu.md "Dtypes".
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from pods.backends.gguf import local_model

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
CPU_DTYPES = ("float32", "bfloat16")  # model.cpu_dtype: float16 matmuls on CPU are slow or missing


@dataclass(frozen=True)
class Precision:
    """weights: dtype the model is loaded in (= the trainable weights when full-parameter);
    compute: dtype forward passes run in (float32 = autocast off)."""

    weights: torch.dtype = torch.float32
    compute: torch.dtype = torch.float32

    @property
    def frozen(self) -> torch.dtype:
        """dtype of weights that are never updated (a full-parameter run's reference copy)."""
        return self.compute

    def autocast(self, device: torch.device | str):
        """Context for a forward pass: torch.autocast to `compute`, or nothing when that is float32.

        Over fp32 master weights the cast cache is off: it would keep a `compute` copy of every weight
        for the whole pass (2 B per parameter: 5.75 GiB at 3B) where each layer's copy is needed only
        for its own op (and, for the backward, what autograd saves anyway)."""
        device_type = torch.device(device).type
        if self.compute == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(device_type=device_type, dtype=self.compute, cache_enabled=self.weights != torch.float32)


FP32 = Precision()


def dtype_name(dtype: torch.dtype) -> str:
    """torch.bfloat16 -> "bfloat16" (the spelling of config files and vLLM's `dtype`)."""
    return str(dtype).removeprefix("torch.")


def checkpoint_dtype(model_cfg) -> torch.dtype:
    """The dtype a checkpoint declares in its config (`model.dtype: auto`); float32 when it says none."""
    if model_cfg.name == "tiny":
        return torch.float32  # built in code in float32
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(local_model(model_cfg.name))
    declared = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    if isinstance(declared, str):
        declared = DTYPES.get(declared)
    return declared if isinstance(declared, torch.dtype) else torch.float32


def compute_dtype(model_cfg, device: torch.device) -> torch.dtype:
    """The dtype forward passes run in: `model.dtype` on CUDA, `model.cpu_dtype` (float32 when unset) elsewhere."""
    if torch.device(device).type != "cuda":
        return DTYPES[str(model_cfg.get("cpu_dtype") or "float32")]
    name = str(model_cfg.dtype)
    if name == "auto":
        return checkpoint_dtype(model_cfg)
    if name not in DTYPES:
        raise ValueError(f"unknown model.dtype {name!r}; valid: auto, {', '.join(DTYPES)}")
    return DTYPES[name]


def nf4_config(compute: torch.dtype):
    """transformers' BitsAndBytesConfig for 4-bit NF4 with double quantization, computing in `compute`: what
    Unsloth's `load_in_4bit` passes (the authors' loader) and what vLLM's bitsandbytes loader quantizes with."""
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=compute)


def resolve(model_cfg, device: torch.device, *, full_parameter: bool) -> Precision:
    """The `Precision` of a policy per the rules in this module's docstring."""
    compute = compute_dtype(model_cfg, device)
    return Precision(weights=torch.float32 if full_parameter else compute, compute=compute)
