"""The memory estimate (pods.backends.memory) against hand counts on CPU, and the source review's examples.

Parameters, LoRA parameters, gradients and AdamW state are counted with torch on the tiny model; the
activations a block saves are counted with autograd's saved-tensor hooks under CPU bf16 autocast (SDPA,
as on CUDA); the loss's logits by the peak of their forward and backward (torch's MemTracker).
"""

import pytest
import torch
from omegaconf import OmegaConf

from pods.backends import memory
from pods.backends.tiny import byte_tokenizer, tiny_causal_lm
from pods.core.losses import token_logprobs
from pods.errors import ConfigError

from helpers import compose

torch.set_num_threads(1)
L40S, H100 = memory.GPUS["L40S"], memory.GPUS["H100"]
# full-parameter vLLM without the authors' reference pass (rl.reference_pass=always would add a reference copy)
FULL_VLLM = ["experiment=gsm8k_main", "backend=vllm", "model.lora.rank=0", "model.load_in_4bit=false",
             "rl.reference_pass=auto"]


def tiny(arch="qwen2", hidden=64, layers=2, heads=4, kv_heads=2):
    model_cfg = OmegaConf.create({"name": "tiny", "tiny": {"arch": arch, "hidden": hidden, "layers": layers,
                                                           "heads": heads, "kv_heads": kv_heads}})
    model = tiny_causal_lm(byte_tokenizer(), arch, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads)
    return memory.architecture(model_cfg), model


def lora(model, rank=8):
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=list(memory.LINEARS),
                                            task_type="CAUSAL_LM"))


def row(est, start):
    return next(r for r in est.rows if r.item.startswith(start)).gib * memory.GIB


@pytest.mark.parametrize("preset", ["qwen2.5-3b-instruct", "llama3.2-3b-instruct"])
def test_a_presets_numbers_add_up_to_its_parameter_count(preset):
    model = compose([f"model={preset}"]).model
    assert memory.architecture(model).params() == model.architecture.params  # the model card's 3.09 B / 3.21 B


@pytest.mark.parametrize("arch_name", ["qwen2", "llama"])
def test_parameters_gradients_and_adamw_state_of_the_tiny_model_are_what_torch_allocates(arch_name):
    arch, model = tiny(arch_name)
    assert arch.params() == sum(p.numel() for p in model.parameters())  # tied lm_head counted once
    blocks = [m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and n != "lm_head"]
    assert arch.linear_params() == sum(m.weight.numel() for m in blocks)  # what 4-bit quantizes
    full = memory.estimate(arch, memory.Workload(lora_rank=0, compute_bytes=4, optimizer="adamw"), total_gib=1)
    assert row(full, "fp32 master weights") == sum(p.numel() * p.element_size() for p in model.parameters())

    peft = lora(model)
    params = [p for p in peft.parameters() if p.requires_grad]
    w = memory.Workload(lora_rank=8, four_bit=False, compute_bytes=4, optimizer="adamw")
    est = memory.estimate(arch, w, total_gib=1)
    assert arch.lora_params(8, memory.LINEARS) == sum(p.numel() for p in params)
    assert row(est, "LoRA rank 8") == sum(p.numel() * p.element_size() for p in params)
    opt = torch.optim.AdamW(params, lr=1e-3)
    peft(input_ids=torch.randint(0, 250, (2, 8))).logits.sum().backward()
    assert row(est, "gradients") == sum(p.grad.numel() * p.grad.element_size() for p in params)
    opt.step()
    state = sum(t.numel() * t.element_size() for s in opt.state.values() for k, t in s.items() if k != "step")
    assert row(est, "optimizer (adamw)") == state  # exp_avg and exp_avg_sq in fp32


def saved(arch_name: str, full: bool, batch: int, hidden=256, layers=2) -> int:
    """Bytes autograd saves in a forward of `batch` x 32 tokens under bf16 autocast (the weights excluded)."""
    _, model = tiny(arch_name, hidden=hidden, layers=layers)
    model = model if full else lora(model.to(torch.bfloat16))  # LoRA: a bf16 base, fp32 adapters
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    found = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in weights:
            found[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), torch.autocast("cpu", dtype=torch.bfloat16):
        model(input_ids=torch.randint(0, 250, (batch, 32)), logits_to_keep=1)
    return sum(found.values())


def saved_per_token(arch_name: str, full: bool) -> float:
    return (saved(arch_name, full, 4) - saved(arch_name, full, 2)) / (2 * 32)


@pytest.mark.parametrize("arch_name", ["qwen2", "llama"])
@pytest.mark.parametrize("full", [False, True], ids=["lora", "full"])
def test_a_blocks_activations_are_the_tensors_autograd_saves(arch_name, full):
    arch, _ = tiny(arch_name, hidden=256)
    h = arch.hidden
    per_layer = memory.layer_bytes_per_token(arch, memory.Workload(lora_rank=0 if full else 8, compute_bytes=2))
    if full:  # + the final norm (weight trained), the token ids, lm_head's input for the one kept position
        expected = arch.layers * per_layer + (8 * h + 4) + 8 + 2 * h / 32
    else:  # + the final norm, - the first block's input norm: the frozen embedding's output needs no gradient
        expected = arch.layers * per_layer
    assert saved_per_token(arch_name, full) == pytest.approx(expected, rel=0.01)


def test_without_checkpointing_the_backward_keeps_autocasts_copy_of_every_fp32_master_weight():
    arch, _ = tiny("llama", hidden=256)
    w = memory.Workload(lora_rank=0, compute_bytes=2, gradient_checkpointing=False, micro_batch=2,
                        prompt_tokens=16, completion_tokens=16)
    per_token = saved_per_token("llama", True)
    copies = saved("llama", True, 2) - 2 * 32 * per_token  # the part that does not grow with the batch
    assert row(memory.estimate(arch, w, total_gib=1), "weight copies") == pytest.approx(copies, rel=0.01)


@pytest.mark.parametrize("dtype, temperature", [(torch.bfloat16, 1.0), (torch.bfloat16, 0.9), (torch.float32, 1.0),
                                                (torch.float32, 0.9)])
def test_the_logits_of_the_loss_peak_at_the_counted_bytes(dtype, temperature):
    """The peak of token_logprobs' forward and backward over [1, 64, 50k] logits, by torch's MemTracker."""
    from torch.distributed._tools.mem_tracker import MemTracker

    logits = torch.zeros(1, 64, 50_000, dtype=dtype, requires_grad=True)
    ids = torch.randint(0, 50_000, (1, 64))
    tracker = MemTracker()
    tracker.track_external(logits, ids)
    with tracker:
        token_logprobs(logits, ids, temperature).sum().backward()
    peak = tracker.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]
    arch = memory.Architecture(1, 64, 128, 4, 2, 50_000, True, False)
    w = memory.Workload(micro_batch=1, completion_tokens=63, compute_bytes=logits.element_size(),
                        divide_logits=temperature != 1.0)
    assert row(memory.estimate(arch, w, total_gib=1), "logits") == pytest.approx(peak, rel=1e-3)


def test_the_full_parameter_vllm_run_does_not_fit_an_l40s_but_fits_an_h100():
    cfg = compose(FULL_VLLM)
    arch, w = memory.architecture(cfg.model), memory.workload(cfg)
    fits, line = memory.verdict(arch, w, total_gib=L40S, available_gib=L40S)
    assert not fits and line.startswith("does not fit: ") and "GiB needed, 45.0 GiB available; try " in line
    assert "model.lora.rank=64 model.load_in_4bit=true (LoRA)" in line and "a GPU with" in line
    for knob in line.split("try ")[1].split("; or ")[:-1]:  # each suggestion does fit
        changed = compose(FULL_VLLM + knob.split(" (")[0].split())
        assert memory.estimate(arch, memory.workload(changed), total_gib=L40S).total_gib <= L40S, knob
    assert memory.verdict(arch, w, total_gib=H100, available_gib=H100)[0]
    est = memory.estimate(arch, w, total_gib=L40S)
    assert row(est, "fp32 master weights") == row(est, "gradients") == 4 * arch.params()
    assert row(est, "optimizer (adamw_8bit)") == pytest.approx(2 * arch.params(), rel=0.01)


def test_the_papers_unsloth_run_fits_an_l40s_with_vllms_share_counted_once():
    cfg = compose(["experiment=gsm8k_main"])
    arch, w = memory.architecture(cfg.model), memory.workload(cfg)
    est = memory.estimate(arch, w, total_gib=L40S)
    assert memory.verdict(arch, w, total_gib=L40S, available_gib=L40S) == (True, f"fits: {est.total_gib:.1f} GiB of "
                                                                                  "45.0 GiB")
    # Unsloth's share is of the memory free once the CUDA context is (unsloth-zoo: utilization x mem_get_info free)
    share = 0.5 * (L40S - memory.CONTEXT_GIB)
    assert row(est, "base weights") == 0 and row(est, "Unsloth's vLLM") == pytest.approx(share * memory.GIB)
    assert 25 < est.total_gib < 35 and est.generation == "vLLM holds 64 of 64 sequences at once: 1 wave"
    # it keeps a bf16 copy of the rank-64 adapter for its vLLM, and autocast caches a bf16 copy while training
    lora = arch.lora_params(64, memory.LINEARS)
    assert row(est, "Unsloth's copy of the adapter") == row(est, "autocast's copies") == 2 * lora
    assert 2 * lora / memory.GIB == pytest.approx(0.22, abs=0.005)


@pytest.mark.parametrize("n, gpu, waves", [(64, "L40S", 1), (128, "L40S", 2), (256, "L40S", 4), (128, "H100", 2),
                                           (256, "H100", 3)])
def test_unsloth_runs_at_most_its_cap_of_sequences_at_once(n, gpu, waves):
    # unsloth-zoo caps vLLM's max_num_seqs by its KV cache: 80 sequences on an L40S, 96 on an H100 at util 0.5
    cfg = compose(["experiment=gsm8k_main", f"rl.n={n}"])
    arch, w = memory.architecture(cfg.model), memory.workload(cfg)
    est = memory.estimate(arch, w, total_gib=memory.GPUS[gpu])
    cap = 80 if gpu == "L40S" else 96
    assert est.generation == f"vLLM holds {min(cap, n)} of {n} sequences at once: {waves} wave" + "s" * (waves > 1)


def test_unsloths_sequence_cap_follows_its_kv_cache_tiers():
    from pods.backends.unsloth import max_num_seqs

    assert [max_num_seqs(g) for g in (1, 3, 16, 16.5, 24, 30, 45, 79, 81)] == [8, 16, 64, 80, 80, 96, 112, 128, 256]


def test_without_checkpointing_every_block_keeps_its_activations():
    arch = memory.architecture(compose(["model=qwen2.5-3b-instruct"]).model)
    on, off = (memory.estimate(arch, memory.Workload(gradient_checkpointing=g), total_gib=L40S) for g in (True, False))
    per_token = memory.layer_bytes_per_token(arch, memory.Workload())
    tokens = 4 * 1024
    assert row(off, "activations") - row(on, "activations") == pytest.approx(
        (arch.layers - 1) * per_token * tokens - arch.layers * 2 * arch.hidden * tokens)


def test_a_small_engine_share_generates_in_waves_and_the_hf_backend_counts_its_kv_cache():
    arch = memory.architecture(compose(["model=qwen2.5-3b-instruct"]).model)
    w = memory.Workload(backend="vllm", sequences=256, gpu_memory_utilization=0.2)
    assert memory.estimate(arch, w, total_gib=L40S).generation.endswith("waves")
    hf = memory.Workload(backend="hf", sequences=64, generation_batch=16)
    est = memory.estimate(arch, hf, total_gib=L40S)
    assert est.generation == "64 sequences in 4 model.generate calls"
    assert row(est, "generation") > 16 * 1024 * arch.kv_bytes_per_token(2)


def test_check_memory_refuses_on_a_gpu_too_small_and_warns_when_told_to_start(monkeypatch):
    from pods.backends import checks

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index=None: (int(44 * memory.GIB), int(L40S * memory.GIB)))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: "NVIDIA L40S")
    with pytest.raises(ConfigError) as err:
        checks.check_memory(compose(FULL_VLLM))
    text = str(err.value)
    assert "does not fit the GPU's memory (NVIDIA L40S, 44.0 of 45.0 GiB free" in text and "fp32 master weights" in text
    assert "does not fit: " in text and "check_memory=false starts it anyway" in text
    assert checks.check_memory(compose([*FULL_VLLM, "check_memory=false"])).startswith("warning: the run does")
    assert checks.check_memory(compose(["experiment=gsm8k_main"])).startswith("memory estimate: fits: ")
    assert checks.check_memory(compose(["experiment=demo"])) is None  # the demo trains on the CPU


def test_check_memory_counts_the_cuda_context_once(monkeypatch):
    """mem_get_info's free memory already lacks this process's CUDA context, which the estimate counts too."""
    from pods.backends import checks

    cfg = compose(["experiment=gsm8k_main"])
    need = memory.estimate(memory.architecture(cfg.model), memory.workload(cfg), total_gib=L40S).total_gib
    free = need - memory.CONTEXT_GIB + 0.05  # just enough once the context is counted once
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index=None: (int(free * memory.GIB), int(L40S * memory.GIB)))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: "NVIDIA L40S")
    assert checks.check_memory(cfg).startswith("memory estimate: fits: ")


def test_a_model_without_numbers_reads_its_config_json(tmp_path):
    from pods.backends.checks import model_architecture
    from pods.backends.tiny import save_tiny

    path = save_tiny(tmp_path / "m", "llama", hidden=64, layers=3, heads=4, kv_heads=2)
    arch = model_architecture(compose(["model=tiny", f"model.name={path}"]).model)
    assert arch == memory.Architecture(3, 64, 128, 4, 2, 260, True, False)
    with pytest.raises(ConfigError, match="its architecture is unknown for the memory estimate"):
        model_architecture(compose(["model=tiny", f"model.name={tmp_path / 'empty'}"]).model)


def test_each_backend_declares_the_terms_it_changes():
    """The estimate's backend-dependent rows come from each backend's declaration (pods.backends.facts)."""
    from pods.backends import BACKENDS, facts

    arch = memory.Architecture(layers=2, hidden=64, intermediate=128, heads=4, kv_heads=2, vocab=100, tied=True,
                               attention_bias=False)
    for name in BACKENDS:
        f = facts(name)
        w = memory.Workload(backend=name, gpu_memory_utilization=0.5 if f.engine else None)
        rows = {r.item: r for r in memory.estimate(arch, w, total_gib=10).rows}
        assert (f"{f.engine} (its share)" in rows) == (f.engine is not None), name
        assert ("generation (model.generate)" in rows) == (f.engine is None), name
        assert (rows.get("base weights (NF4)") is None) == f.engine_holds_base, name
        assert ("offloaded to CPU" in rows["activations (checkpointed)"].how) == f.offloads_activations, name


def test_the_authors_reference_pass_keeps_a_copy_of_a_full_parameter_model_at_beta_zero():
    arch = memory.architecture(compose(["model=qwen2.5-3b-instruct"]).model)
    full = memory.Workload(lora_rank=0, four_bit=False, beta=0.0, reference_pass=True)
    assert row(memory.estimate(arch, full, total_gib=L40S), "reference model") == 2 * arch.params()
    lora = memory.Workload(beta=0.0, reference_pass=True)  # the adapter disabled: no copy
    assert row(memory.estimate(arch, lora, total_gib=L40S), "reference model") == 0
    cfg = compose(["experiment=gsm8k_main", "rl.reference_pass=always"])
    assert memory.workload(cfg).reference_pass and not memory.workload(compose([])).reference_pass
