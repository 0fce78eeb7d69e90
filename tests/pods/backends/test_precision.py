"""Dtype handling of the policy (pods.backends.precision), checked on CPU.

    uv run pytest tests/pods/backends/test_precision.py

CPU autocast supports bfloat16, so the precision that CUDA resolves to (float32 master weights,
bfloat16 compute) runs here on the tiny model: a step at lr 5e-6 must move the weights as a
float32 step does, while bfloat16-stored weights (the old GPU behaviour) lose most of the update.
"""

import json

import pytest
import torch
from omegaconf import OmegaConf

from pods.backends import hf
from pods.backends.precision import FP32, Precision, compute_dtype, resolve

from helpers import compose

torch.set_num_threads(1)
CUDA, CPU = torch.device("cuda"), torch.device("cpu")  # a device object needs no GPU


def cfg(*extra):
    """A bf16 tiny model (model.dtype=bfloat16) on CPU, plain AdamW at lr 5e-6."""
    return compose(["model=tiny", "model.dtype=bfloat16", "backend.device=cpu", "optim.name=adamw",
                        "optim.lr=5e-6", "optim.warmup_ratio=0", "optim.weight_decay=0", *extra])


def test_cpu_is_float32_whatever_model_dtype_says():
    for full in (True, False):
        assert resolve(cfg().model, CPU, full_parameter=full) == FP32


def test_cuda_keeps_float32_master_weights_for_full_parameter_and_computes_in_model_dtype():
    model = cfg().model
    assert resolve(model, CUDA, full_parameter=True) == Precision(torch.float32, torch.bfloat16)
    assert resolve(model, CUDA, full_parameter=False) == Precision(torch.bfloat16, torch.bfloat16)
    assert resolve(cfg("model.dtype=float32").model, CUDA, full_parameter=True) == FP32


def test_auto_dtype_is_the_checkpoint_dtype(tiny_model_dir, tmp_path):
    config = json.loads((tiny_model_dir / "config.json").read_text())
    config["dtype"] = "bfloat16"
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert compute_dtype(cfg(f"model.name={tmp_path}", "model.dtype=auto").model, CUDA) == torch.bfloat16
    assert compute_dtype(cfg("model.dtype=auto").model, CUDA) == torch.float32  # tiny: built in float32


def test_autocast_is_requested_with_the_compute_dtype():
    with Precision(compute=torch.bfloat16).autocast(CPU):
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    with FP32.autocast(CPU):
        assert not torch.is_autocast_enabled("cpu")


def linear_output_dtypes(policy, run):
    """dtypes of every nn.Linear output while `run()` executes."""
    seen, hooks = set(), []
    for module in policy.model.modules():
        if isinstance(module, torch.nn.Linear):
            hooks.append(module.register_forward_hook(lambda m, i, o: seen.add(o.dtype)))
    try:
        run()
    finally:
        for h in hooks:
            h.remove()
    return seen


@pytest.mark.parametrize("rank", [0, 8])
def test_policy_passes_run_under_the_configured_autocast(rank):
    c = cfg(f"model.lora.rank={rank}", "model.lora.alpha=16")
    tok_ids = [[5, 6, 7]], [[8, 9]]
    mixed = hf.load_policy(c, precision=resolve(c.model, CUDA, full_parameter=rank == 0))
    assert linear_output_dtypes(mixed, lambda: mixed.token_logprobs(*tok_ids)) == {torch.bfloat16}
    gen = hf.HFGenerator(mixed)
    from pods.backends.base import Sampling

    assert linear_output_dtypes(mixed, lambda: gen.generate(tok_ids[0], 1, Sampling(max_tokens=2, temperature=0))) \
        == {torch.bfloat16}
    logp, _ = mixed.token_logprobs(*tok_ids)
    assert logp.dtype == torch.float32  # log-softmax in float32 whatever the compute dtype
    plain = hf.load_policy(c)  # CPU default: float32, no autocast
    assert linear_output_dtypes(plain, lambda: plain.token_logprobs(*tok_ids)) == {torch.float32}


def test_lora_base_stays_in_compute_dtype_and_adapter_in_float32():
    c = cfg("model.lora.rank=8", "model.lora.alpha=16")
    policy = hf.load_policy(c, precision=resolve(c.model, CUDA, full_parameter=False))
    dtypes = {n: p.dtype for n, p in policy.model.named_parameters()}
    assert all(d == torch.float32 for n, d in dtypes.items() if "lora_" in n)
    assert all(d == torch.bfloat16 for n, d in dtypes.items() if "lora_" not in n)  # norms not upcast


def test_full_parameter_reference_copy_is_stored_in_compute_dtype():
    c = cfg("model.lora.rank=0", "rl.beta=0.1")
    policy = hf.load_policy(c, precision=resolve(c.model, CUDA, full_parameter=True))
    assert {p.dtype for p in policy.model.parameters()} == {torch.float32}
    assert {p.dtype for p in policy.reference.parameters()} == {torch.bfloat16}


def one_step(precision):
    """One AdamW step at lr 5e-6 (pods.run.optim.build_optimizer) on a full-parameter tiny policy.

    Returns (weights before, weights after) as float32 vectors.
    """
    from pods.run.optim import build_optimizer

    c = cfg("model.lora.rank=0")
    policy = hf.load_policy(c, precision=precision)
    params = policy.trainable_parameters()
    before = torch.cat([p.detach().float().flatten() for p in params])
    optimizer, scheduler = build_optimizer(policy.named_trainable_parameters(), c)
    prompts = [[ord(ch) for ch in text] for text in ("12+34=", "7+8=", "100+1=")]
    completions = [[ord(ch) for ch in text] for text in ("46", "15", "101")]
    logp, mask = policy.token_logprobs(prompts, completions)
    (-(logp * mask).sum() / mask.sum()).backward()
    assert scheduler.apply(0.0) == 5e-6  # as the trainer does before each optimizer step
    optimizer.step()
    scheduler.step()
    return before, torch.cat([p.detach().float().flatten() for p in params])


def test_master_weights_take_a_small_step_as_float32_does():
    ref_before, ref_after = one_step(FP32)
    mixed_before, mixed_after = one_step(Precision(torch.float32, torch.bfloat16))  # what CUDA resolves to
    old_before, old_after = one_step(Precision(torch.bfloat16, torch.bfloat16))  # bf16 weights (old GPU path)
    assert torch.equal(ref_before, mixed_before)  # same initial weights
    moved = lambda before, after: (after != before).float().mean().item()  # noqa: E731
    ref, mixed, old = moved(ref_before, ref_after), moved(mixed_before, mixed_after), moved(old_before, old_after)
    assert ref > 0.9  # nearly every weight has a gradient, so Adam moves it by about lr
    assert mixed >= 0.99 * ref
    ref_delta, mixed_delta = ref_after - ref_before, mixed_after - mixed_before
    assert torch.nn.functional.cosine_similarity(ref_delta, mixed_delta, dim=0) > 0.9
    assert old < 0.25  # bf16 storage rounds most 5e-6 updates away: the bug the master weights fix


def test_a_forward_over_fp32_master_weights_keeps_no_bf16_copy_of_them():
    """torch.autocast caches a bf16 copy of every fp32 leaf weight until the context exits (+2 B per parameter,
    5.75 GiB at 3B); the policy's autocast turns that cache off when its weights are fp32 masters."""
    from torch.distributed._tools.mem_tracker import MemTracker

    c = cfg("model.lora.rank=0", "model.tiny.hidden=256", "model.tiny.layers=4", "model.tiny.heads=4")
    policy = hf.load_policy(c, precision=resolve(c.model, CUDA, full_parameter=True))  # fp32 masters, bf16 passes
    copies = sum(p.numel() * 2 for p in policy.model.parameters())  # what a bf16 copy of every weight takes
    tracker = MemTracker()
    tracker.track_external(policy.model)
    with tracker, torch.no_grad():
        policy.token_logprobs([[5, 6, 7]], [[8, 9]])
    peak = tracker.get_tracker_snapshot("peak")[CPU]
    assert peak["Temp"] + peak.get("Activation", 0) < 0.25 * copies  # one layer's copy at a time, not all of them


def test_cpu_computes_in_model_cpu_dtype():
    model = cfg("model.cpu_dtype=bfloat16").model
    assert resolve(model, CPU, full_parameter=False) == Precision(torch.bfloat16, torch.bfloat16)
    assert resolve(model, CPU, full_parameter=True) == Precision(torch.float32, torch.bfloat16)  # float32 masters
    old = OmegaConf.create({k: v for k, v in OmegaConf.to_container(model).items() if k != "cpu_dtype"})
    OmegaConf.set_struct(old, True)
    assert compute_dtype(old, CPU) == torch.float32  # a run config written before the key existed


def test_a_bfloat16_cpu_lora_policy_keeps_a_float32_adapter():
    policy = hf.load_policy(cfg("model.cpu_dtype=bfloat16", "model.lora.rank=8", "model.lora.alpha=16"))
    dtypes = {name: p.dtype for name, p in policy.model.named_parameters()}
    assert {d for n, d in dtypes.items() if "lora_" in n} == {torch.float32}
    assert {d for n, d in dtypes.items() if "lora_" not in n} == {torch.bfloat16}
    assert linear_output_dtypes(policy, lambda: policy.token_logprobs([[5, 6, 7]], [[8, 9]])) == {torch.bfloat16}
