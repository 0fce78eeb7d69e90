"""The parts of the vLLM backend that need no vLLM: engine options and the adapter files it writes.

    uv run pytest tests/pods/backends/test_vllm_setup.py

The engine itself is tested in tests/pods/backends/test_vllm.py (the vLLM CPU tier).
"""

import json
from types import SimpleNamespace

import torch
from safetensors.torch import load_file

from pods.backends import hf
from pods.backends.precision import Precision
from pods.backends.vllm import engine_options, write_adapter

from helpers import compose


class Linear4bit(torch.nn.Module):
    """Stands in for bitsandbytes.nn.Linear4bit (the check looks at the class name only)."""


def fake_policy(*modules, compute=torch.float32, max_positions=32768):
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), *modules)
    model.config = SimpleNamespace(max_position_embeddings=max_positions)
    return SimpleNamespace(model=model, precision=Precision(compute, compute))


def test_engine_serves_in_the_trainee_compute_dtype_unless_set():
    cfg = compose(["backend=vllm"])
    assert engine_options(cfg, fake_policy(compute=torch.bfloat16))["dtype"] == "bfloat16"
    assert engine_options(cfg, fake_policy())["dtype"] == "float32"  # CPU
    assert engine_options(compose(["backend=vllm", "backend.dtype=float16"]),
                          fake_policy(compute=torch.bfloat16))["dtype"] == "float16"


def test_engine_length_defaults_to_the_token_budget_capped_by_the_model():
    cfg = compose(["backend=vllm", "rl.max_prompt_tokens=300", "rl.max_completion_tokens=200"])
    assert engine_options(cfg, fake_policy())["max_model_len"] == 500
    assert engine_options(cfg, fake_policy(max_positions=400))["max_model_len"] == 400


def test_a_4bit_trainee_is_served_quantized_by_bitsandbytes():
    cfg = compose(["backend=vllm"])
    assert engine_options(cfg, fake_policy(Linear4bit()))["quantization"] == "bitsandbytes"
    assert "quantization" not in engine_options(cfg, fake_policy())
    assert hf.is_4bit(torch.nn.Sequential(Linear4bit())) and not hf.is_4bit(torch.nn.Linear(1, 1))


def test_adapter_is_written_in_the_serving_dtype_with_peft_names(tmp_path):
    cfg = compose(["model=tiny", "backend.device=cpu", "model.lora.rank=8", "model.lora.alpha=16"])
    policy = hf.load_policy(cfg)
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.normal_()  # B starts at zero: give it values to compare
    policy.save(tmp_path / "peft")  # PEFT's own format, float32
    write_adapter(policy.model, tmp_path / "served", torch.bfloat16)
    peft_state = load_file(str(tmp_path / "peft" / "adapter_model.safetensors"))
    served = load_file(str(tmp_path / "served" / "adapter_model.safetensors"))
    assert served.keys() == peft_state.keys() and len(served) > 0
    assert all(v.dtype == torch.bfloat16 for v in served.values())
    assert all(torch.equal(served[k], peft_state[k].to(torch.bfloat16)) for k in served)
    config = json.loads((tmp_path / "served" / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"]) == (8, 16)
    assert sorted(p.name for p in (tmp_path / "served").iterdir()) == ["adapter_config.json",
                                                                     "adapter_model.safetensors"]
