"""Start-up checks of the backend settings (pods.backends.checks), through pods.config.checks.validate."""

import importlib.util

import pytest

from pods.config import checks
from pods.errors import ConfigError

from helpers import compose, skip_reward_check


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
    ok = compose(["experiment=gsm8k_main"])  # 1024 = 512 + 512
    checks.validate(ok, cuda=True)
    bad = compose(["experiment=gsm8k_main", "rl.max_completion_tokens=786"])
    msg = errors(bad, cuda=True)
    assert "backend.max_seq_length=1024 < rl.max_prompt_tokens + rl.max_completion_tokens = 512 + 786 = 1298" in msg
    assert "set backend.max_seq_length=1298" in msg
    checks.validate(compose(["experiment=gsm8k_main", "rl.max_completion_tokens=786",
                             "backend.max_seq_length=1298"]), cuda=True)


def test_vllm_max_model_len_when_set_must_hold_prompt_and_completion(monkeypatch):
    installed(monkeypatch, "vllm", "vllm_bnb_plugin")
    checks.validate(compose(["backend=vllm"]), cuda=True)  # null: the budget itself
    msg = errors(compose(["backend=vllm", "backend.max_model_len=1000"]), cuda=True)
    assert "backend.max_model_len=1000 < rl.max_prompt_tokens + rl.max_completion_tokens = 512 + 512 = 1024" in msg
    checks.validate(compose(["backend=vllm", "backend.max_model_len=2048"]), cuda=True)


def test_vllm_with_4bit_needs_the_bnb_plugin_and_names_the_alternatives(monkeypatch):
    installed(monkeypatch, "vllm")  # vLLM without vllm-bnb-plugin
    msg = errors(compose(["backend=vllm"]), cuda=True)  # qwen2.5-3b: load_in_4bit true
    assert "vllm-bnb-plugin" in msg and "uv sync --extra gpu" in msg
    assert "model.load_in_4bit=false" in msg and "backend=unsloth" in msg
    checks.validate(compose(["backend=vllm", "model.load_in_4bit=false"]), cuda=True)
    installed(monkeypatch, "vllm", "vllm_bnb_plugin")
    checks.validate(compose(["backend=vllm"]), cuda=True)  # served as 4-bit by vLLM


def test_4bit_full_parameter_training_is_refused_where_4bit_applies():
    cfg = compose(["model.lora.rank=0"])  # qwen2.5-3b with load_in_4bit: true
    msg = errors(cfg, cuda=True)
    assert "model.load_in_4bit=true with model.lora.rank=0" in msg and "model.load_in_4bit=false" in msg
    checks.validate(cfg, cuda=False)  # on CPU load_in_4bit does not apply
    checks.validate(compose(["model.lora.rank=0", "model.load_in_4bit=false"]), cuda=True)


def test_a_backend_section_missing_its_keys_names_each_and_where_its_default_is():
    from omegaconf import OmegaConf

    cfg = compose([])
    OmegaConf.set_struct(cfg, False)
    cfg.backend = {"name": "unsloth"}
    with pytest.raises(ConfigError) as err:
        checks.validate(cfg, cuda=True)
    assert "missing key backend.max_seq_length: add it back (its default is in config/ and " \
           "pods/backends/unsloth.py)" in str(err.value) and "backend.adapter_dir" in str(err.value)


@pytest.mark.parametrize("available, driver, torch_cuda, expected", [
    (True, "580.65.06", "13.0", None),
    (False, "535.129.03", "13.0", "the NVIDIA driver 535.129.03 is too old for this torch, a CUDA 13.0 build that "
                                  "needs driver R580 or newer: update the driver"),
    (False, "570.86.10", "13.0", "needs driver R580 or newer"),
    (False, "535.129.03", "12.6", "CUDA is not usable although driver 535.129.03 is loaded"),
    (False, None, "13.0", "no NVIDIA driver is loaded (no CUDA GPU here)"),
    (False, None, None, "this torch is a CPU-only build"),
])
def test_an_old_driver_is_named_instead_of_no_gpu(available, driver, torch_cuda, expected):
    from pods.backends.checks import cuda_problem

    found = cuda_problem(available, driver, torch_cuda)
    assert found is None if expected is None else expected in found


def test_the_driver_version_is_read_from_the_kernel_module(tmp_path):
    from pods.backends.checks import driver_version

    proprietary = tmp_path / "a"
    proprietary.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023\n"
                           "GCC version:  gcc version 12.2.0\n")
    open_module = tmp_path / "b"
    open_module.write_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  "
                           "(dvs-builder@U16-I3-B13-4-3)  Mon Jul 14 2025\n")
    assert driver_version(proprietary) == "535.129.03" and driver_version(open_module) == "580.65.06"
    assert driver_version(tmp_path / "missing") is None


def test_a_gpu_backend_without_cuda_says_why(monkeypatch):
    from pods.backends import checks as backend_checks

    monkeypatch.setattr(backend_checks, "driver_version", lambda: "535.129.03")
    monkeypatch.setattr("torch.version.cuda", "13.0")
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)  # what torch says with a driver too old
    installed(monkeypatch)  # no vLLM here
    msg = errors(compose(["experiment=gsm8k_main"]), cuda=False)
    assert "backend 'unsloth' needs a CUDA GPU, and the NVIDIA driver 535.129.03 is too old for this torch" in msg


def test_offline_a_hub_id_not_in_the_local_cache_is_one_message(monkeypatch):
    from pods.backends.checks import check_offline

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError) as err:
        check_offline("pods-test/never-downloaded")
    assert "model.name pods-test/never-downloaded: offline (HF_HUB_OFFLINE) and not in the local cache" in str(err.value)
    check_offline("tiny")  # built in code: nothing to look up
