"""The CPU-checkable parts of the Unsloth backend (the backend itself needs a CUDA GPU).

    uv run pytest tests/pods/backends/test_unsloth.py

Checks that importing the GPU backends imports neither unsloth nor vllm, that `build` fails early
and clearly without CUDA (before `import unsloth`), the config checks, the adapter hand-over
bookkeeping of `UnslothGenerator`, and that the backend YAML files document every key.
"""

import importlib
import sys
from pathlib import Path

import pytest
import torch
import yaml
from omegaconf import OmegaConf

from pods.backends import unsloth

ROOT = Path(__file__).resolve().parents[3]


def make_cfg(**model):
    base = {"name": "Qwen/Qwen2.5-3B-Instruct", "load_in_4bit": True, "gradient_checkpointing": True,
            "lora": {"rank": 64, "alpha": 64, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}}
    base.update(model)
    backend = OmegaConf.load(ROOT / "config/backend/unsloth.yaml")
    return OmegaConf.create({"seed": 0, "model": base, "backend": backend})


def test_importing_gpu_backends_imports_no_gpu_library():
    before = {m for m in ("unsloth", "unsloth_zoo", "vllm") if m in sys.modules}
    importlib.reload(unsloth)
    importlib.reload(importlib.import_module("pods.backends.vllm"))
    after = {m for m in ("unsloth", "unsloth_zoo", "vllm") if m in sys.modules}
    assert after == before  # nothing new imported (in the uv env neither library is installed)


def test_build_without_cuda_raises_before_importing_unsloth(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs a CUDA GPU.*backend=hf"):
        unsloth.build(make_cfg())
    assert "unsloth" not in sys.modules


@pytest.mark.parametrize("model, message", [
    ({"name": "tiny"}, "model=tiny"),
    ({"lora": {"rank": 0, "alpha": 0, "dropout": 0.0, "target_modules": []}}, "lora.rank > 0"),
    ({"lora": {"rank": 128, "alpha": 128, "dropout": 0.0, "target_modules": []}}, "max_lora_rank"),
])
def test_config_checks_come_first(model, message):
    with pytest.raises(ValueError, match=message):
        unsloth.build(make_cfg(**model))


class RecordingModel:
    """Records the Unsloth adapter calls UnslothGenerator makes (no GPU needed)."""

    def __init__(self):
        self.calls, self.next_id = [], 1

    def save_lora(self, path):
        Path(path).mkdir(parents=True)
        (Path(path) / "adapter_model.safetensors").write_bytes(b"x")
        self.calls.append(("save_lora", Path(path).name))

    def load_lora(self, path, load_tensors=False):
        self.calls.append(("load_lora", Path(path).name, load_tensors))
        self.next_id += 1
        return ("request", self.next_id - 1)


def test_update_weights_serves_a_new_request_each_step(tmp_path):
    model = RecordingModel()
    gen = unsloth.UnslothGenerator(model, tokenizer=None, lora_from_memory=True, adapter_dir=tmp_path)
    assert gen.lora_request is None  # base model until the first hand-over
    gen.update_weights(policy=None)
    gen.update_weights(policy=None)
    assert gen.lora_request == ("request", 2)
    assert model.calls == [("load_lora", "live", True)] * 2


def test_update_weights_from_disk_alternates_two_slots(tmp_path):
    model = RecordingModel()
    gen = unsloth.UnslothGenerator(model, tokenizer=None, lora_from_memory=False, adapter_dir=tmp_path)
    for _ in range(5):
        gen.update_weights(policy=None)
    saved = [c[1] for c in model.calls if c[0] == "save_lora"]
    assert saved == ["slot1", "slot0", "slot1", "slot0", "slot1"]
    assert sorted(p.name for p in gen.adapter_root.iterdir()) == ["slot0", "slot1"]  # bounded on disk
    assert gen.lora_request == ("request", 5)


@pytest.mark.parametrize("name", ["unsloth", "vllm"])
def test_backend_yaml_documents_every_key(name):
    path = ROOT / "config/backend" / f"{name}.yaml"
    lines = path.read_text().splitlines()
    data = yaml.safe_load(path.read_text())
    assert data["name"] == name
    from pods.backends import BACKENDS

    assert name in BACKENDS
    for i, line in enumerate(lines):
        if line and not line.startswith((" ", "#")):  # a top-level key
            assert i > 0 and lines[i - 1].startswith("#"), f"{path.name}: no comment above {line!r}"
