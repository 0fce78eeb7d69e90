"""Start-up checks of the backend settings, run by `pods.config.validate` before any model loads.

    problems = pods.backends.checks.backend_problems(cfg, cuda=torch.cuda.is_available())

Each problem is one sentence saying what to change. (Whether a GPU-only backend can run here at
all is checked in pods.config.validate itself.) Nothing here imports vLLM or Unsloth:
installed packages are looked up with importlib.util.find_spec.
"""

from __future__ import annotations

import importlib.util


def backend_problems(cfg, *, cuda: bool) -> list[str]:
    """Problems of cfg.backend with cfg.model and cfg.rl on this machine (cuda: a CUDA GPU is here)."""
    backend, model, rl = cfg.backend or {}, cfg.model, cfg.rl
    name = backend.get("name")
    problems = []
    budget = _int(rl.get("max_prompt_tokens")) + _int(rl.get("max_completion_tokens"))
    length_key = {"unsloth": "max_seq_length", "vllm": "max_model_len"}.get(name)
    length = backend.get(length_key) if length_key else None
    if length is not None and _int(length) < budget:
        problems.append(
            f"backend.{length_key}={length} < rl.max_prompt_tokens + rl.max_completion_tokens = "
            f"{rl.max_prompt_tokens} + {rl.max_completion_tokens} = {budget}: longer sequences would be "
            f"truncated and their log-probs misaligned; set backend.{length_key}={budget} (or more), "
            f"or lower the token limits")
    four_bit = cuda and bool(model.get("load_in_4bit"))  # 4-bit applies only on a CUDA GPU
    if four_bit and _int(model.lora.get("rank")) == 0:
        problems.append("model.load_in_4bit=true with model.lora.rank=0: 4-bit weights cannot be trained; "
                        "set model.load_in_4bit=false for full-parameter training, or model.lora.rank > 0 "
                        "(QLoRA)")
    if four_bit and name == "vllm" and _installed("vllm") and not _installed("vllm_bnb_plugin"):
        problems.append("backend=vllm with model.load_in_4bit=true serves the trainee's 4-bit weights "
                        "through vllm-bnb-plugin, which is not installed: install it (`uv sync --extra gpu`), "
                        "or set model.load_in_4bit=false (16-bit trainee and sampler), or use "
                        "backend=unsloth (4-bit model shared with its vLLM)")
    return problems


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
