"""Start-up checks of the backend settings (pods.backends.checks), through pods.config.checks.validate."""

import importlib.util

import pytest

from pods.config import checks
from pods.errors import ConfigError
from helpers import compose_cfg, skip_reward_check


@pytest.fixture(autouse=True)
def _skip_rewards(monkeypatch):
    skip_reward_check(monkeypatch)  # the reward registry is not under test here


def errors(cfg, *, cuda: bool) -> str:
    """The ConfigError message validate raises for `cfg`."""
    try:
        checks.validate(cfg, cuda=cuda)
    except ConfigError as err:
        return str(err)
    raise AssertionError("validate accepted the config")


def installed(monkeypatch, *modules):
    """Pretend exactly `modules` are installed (find_spec is all the checks look at)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name in modules else (None if name in (
                            "vllm", "vllm_bnb_plugin", "unsloth") else real(name, *a)))


def test_unsloth_sequence_length_must_hold_prompt_and_completion():
    ok = compose_cfg(["experiment=gsm8k_main"])  # 1024 = 512 + 512
    checks.validate(ok, cuda=True)
    bad = compose_cfg(["experiment=gsm8k_main", "rl.max_completion_tokens=786"])
    msg = errors(bad, cuda=True)
    assert "backend.max_seq_length=1024 < rl.max_prompt_tokens + rl.max_completion_tokens = 512 + 786 = 1298" in msg
    assert "set backend.max_seq_length=1298" in msg
    checks.validate(compose_cfg(["experiment=gsm8k_main", "rl.max_completion_tokens=786",
                             "backend.max_seq_length=1298"]), cuda=True)


def test_vllm_max_model_len_when_set_must_hold_prompt_and_completion(monkeypatch):
    installed(monkeypatch, "vllm", "vllm_bnb_plugin")
    checks.validate(compose_cfg(["backend=vllm"]), cuda=True)  # null: the budget itself
    msg = errors(compose_cfg(["backend=vllm", "backend.max_model_len=1000"]), cuda=True)
    assert "backend.max_model_len=1000 < rl.max_prompt_tokens + rl.max_completion_tokens = 512 + 512 = 1024" in msg
    checks.validate(compose_cfg(["backend=vllm", "backend.max_model_len=2048"]), cuda=True)


def test_vllm_with_4bit_needs_the_bnb_plugin_and_names_the_alternatives(monkeypatch):
    installed(monkeypatch, "vllm")  # vLLM without vllm-bnb-plugin
    msg = errors(compose_cfg(["backend=vllm"]), cuda=True)  # qwen2.5-3b: load_in_4bit true
    assert "vllm-bnb-plugin" in msg and "uv sync --extra gpu" in msg
    assert "model.load_in_4bit=false" in msg and "backend=unsloth" in msg
    checks.validate(compose_cfg(["backend=vllm", "model.load_in_4bit=false"]), cuda=True)
    installed(monkeypatch, "vllm", "vllm_bnb_plugin")
    checks.validate(compose_cfg(["backend=vllm"]), cuda=True)  # served as 4-bit by vLLM


def test_4bit_full_parameter_training_is_refused_where_4bit_applies():
    cfg = compose_cfg(["model.lora.rank=0"])  # qwen2.5-3b with load_in_4bit: true
    msg = errors(cfg, cuda=True)
    assert "model.load_in_4bit=true with model.lora.rank=0" in msg and "model.load_in_4bit=false" in msg
    checks.validate(cfg, cuda=False)  # on CPU load_in_4bit does not apply
    checks.validate(compose_cfg(["model.lora.rank=0", "model.load_in_4bit=false"]), cuda=True)


def test_backend_with_only_a_name_is_checked_without_error():
    from omegaconf import OmegaConf

    cfg = compose_cfg([])
    OmegaConf.set_struct(cfg, False)
    cfg.backend = {"name": "unsloth"}
    checks.validate(cfg, cuda=True)
