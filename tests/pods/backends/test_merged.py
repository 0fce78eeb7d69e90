"""pods.backends.merged: the authors' evaluation weights on the tiny model, on CPU.

The merge is tested for real: merged weights == W + (alpha / r) B A, and the merged model's logits equal the
adapter model's. The 4-bit load runs where bitsandbytes is installed (its CPU backend does NF4:
`uv run --with bitsandbytes pytest tests/pods/backends/test_merged.py`); without it the step is refused with
a message naming what to install.
"""

import importlib.util

import pytest
import torch
from transformers import AutoModelForCausalLM

from pods.backends import build_4bit, hf, merged
from pods.backends.base import Sampling
from pods.errors import MissingExtra

from helpers import compose

torch.set_num_threads(1)
HAS_BNB = importlib.util.find_spec("bitsandbytes") is not None
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def cfg(*extra):
    return compose(["model=tiny", "backend.device=cpu", "model.lora.rank=4", "model.lora.alpha=8", *extra])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A LoRA policy whose B is not zero (a trained adapter), saved as a checkpoint's policy/."""
    c = cfg()
    policy = hf.load_policy(c)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    path = tmp_path_factory.mktemp("ckpt") / "policy"
    policy.save(path)
    return c, policy, path


def base_and_delta(policy, module: str, layer: int = 0):
    """(W, (alpha / r) B A) of one adapted linear layer of the PEFT model."""
    lin = dict(policy.model.named_modules())[f"base_model.model.model.layers.{layer}." + module]
    scale = lin.scaling["default"]
    delta = scale * lin.lora_B["default"].weight @ lin.lora_A["default"].weight
    return lin.base_layer.weight.detach(), delta.detach()


def test_merged_weights_are_w_plus_scaled_ba_and_logits_equal_the_adapters(trained, tmp_path):
    c, policy, path = trained
    out = merged.merge_lora(c.model, path, tmp_path / "m32", dtype=torch.float32)
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    layers = dict(model.named_modules())
    for module in ("self_attn.q_proj", "mlp.down_proj"):
        w, delta = base_and_delta(policy, module)
        assert delta.abs().max() > 1e-3  # a real update
        assert torch.allclose(layers[f"model.layers.0.{module}"].weight, w + delta, atol=1e-6)
    ids = torch.tensor([policy.tokenizer.encode("12+34=46", add_special_tokens=False)])
    with torch.no_grad():
        want = policy.model(input_ids=ids).logits
        got = model(input_ids=ids).logits
    assert torch.allclose(got, want, atol=1e-5)


def test_the_default_merge_is_float16_as_the_authors_merged(trained, tmp_path):
    c, policy, path = trained
    out = merged.merge_lora(c.model, path, tmp_path / "m16")
    model = AutoModelForCausalLM.from_pretrained(out, dtype="auto")
    assert merged.MERGE_DTYPE == torch.float16 and model.dtype == torch.float16
    w, delta = base_and_delta(policy, "self_attn.q_proj")
    got = dict(model.named_modules())["model.layers.0.self_attn.q_proj"].weight.float()
    assert torch.allclose(got, w + delta, atol=2e-3)  # float16 rounding of W + dW
    assert (out / "tokenizer.json").is_file()


def test_merged_model_of_the_base_and_of_a_full_parameter_checkpoint(tmp_path):
    c = cfg()
    base = merged.merged_model(c, None, tmp_path / "base")  # the tiny model is built in code: written out
    assert (base / "config.json").is_file()
    assert merged.merged_model(cfg("model.lora.rank=0"), tmp_path / "policy", tmp_path / "w") == tmp_path / "policy"
    hub = compose(["model=qwen2.5-3b-instruct"])
    assert merged.merged_model(hub, None, tmp_path / "x") == hub.model.name  # loaded in 4-bit from its source


@pytest.mark.skipif(HAS_BNB, reason="bitsandbytes is installed")
def test_without_bitsandbytes_the_4bit_step_is_refused_with_what_to_do():
    with pytest.raises(MissingExtra, match="uv sync --extra gpu.*uv pip install bitsandbytes.*weights=adapter"):
        merged.require_bitsandbytes()


@pytest.mark.skipif(not HAS_BNB, reason="bitsandbytes is not installed (its CPU backend runs NF4)")
def test_the_merged_model_loads_in_nf4_on_cpu_and_samples(trained, tmp_path):
    import bitsandbytes.functional as F
    import numpy as np

    from pods.analysis.nf4 import nf4_roundtrip

    c, policy, path = trained
    out = merged.merge_lora(c.model, path, tmp_path / "m")
    generator = build_4bit(c, out)
    model = generator.policy.model
    assert hf.is_4bit(model) and generator.policy.precision.compute == torch.float32  # CPU computes in float32
    q = dict(model.named_modules())["model.layers.0.self_attn.q_proj"]
    state = q.weight.quant_state
    assert state.quant_type == "nf4" and state.blocksize == 64 and state.nested  # double quantisation
    w16 = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).model.layers[0].self_attn.q_proj.weight
    dequant = F.dequantize_4bit(q.weight.data, state).float()
    simulated = torch.from_numpy(nf4_roundtrip(w16.detach().numpy()))  # pods.analysis.nf4, no double quantisation
    assert torch.allclose(dequant, simulated, atol=0.02 * float(w16.abs().max()))
    assert not torch.allclose(dequant, w16, atol=1e-4)  # really quantised
    ro = generator.generate([policy.tokenizer.encode("12+34=", add_special_tokens=False)], 2,
                            Sampling(max_tokens=4, temperature=1.0, seed=0))
    assert len(ro.texts) == 2 and np.isfinite(sum(len(c) for c in ro.completion_ids))
    merged.release(generator)
