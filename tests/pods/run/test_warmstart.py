"""pods.run.warmstart: settings validation, early stop at the target, the cache (hash, reuse, atomic)."""

import json
import os
import stat
from pathlib import Path

import pytest

import pods.run.warmstart as ws
from pods.config.checks import warmstart_problems
from pods.errors import ConfigError

from helpers import compose


def easy_task(s, tok):
    """A trivial task the tiny model learns in a few steps: every prompt is answered with "7"."""
    enc = lambda t: tok.encode(t, add_special_tokens=False)  # noqa: E731
    prompts = [enc(f"q{i}:") for i in range(32)]
    targets = [enc("7") + [tok.eos_token_id] for _ in prompts]
    verifier = lambda texts, answers: [1.0 if t.strip() == a else 0.0 for t, a in zip(texts, answers)]  # noqa: E731
    return prompts, targets, prompts[:8], ["7"] * 8, verifier


FAST = {"batch_size": 16, "lr": 1e-2, "eval_every": 5, "eval_size": 8, "max_new_tokens": 2, "hidden": 32,
        "layers": 1, "heads": 2, "kv_heads": 1, "max_steps": 200}


def test_settings_validation():
    s, cache = ws.settings_from({"lr": 1e-3, "cache_dir": "/tmp/x"})
    assert s.lr == 1e-3 and str(cache) == "/tmp/x"
    with pytest.raises(ValueError, match="unknown key.*lrr"):
        ws.settings_from({"lrr": 1})
    assert warmstart_problems({"target_greedy": 0}) == ["warmstart.target_greedy must be a number in (0, 1], got 0"]
    with pytest.raises(ConfigError, match="target_greedy"):
        ws.ensure_warmstart({"target_greedy": 0})
    assert ws.WarmStartSettings().key() != ws.WarmStartSettings(lr=2e-3).key()
    assert ws.WarmStartSettings().key() == ws.WarmStartSettings().key()


def test_the_default_cache_is_the_users_for_every_checkout(tmp_path, monkeypatch):
    monkeypatch.setenv("PODS_CACHE_DIR", str(tmp_path / "c"))
    assert ws.settings_from({})[1] == ws.settings_from({"cache_dir": None})[1] == tmp_path / "c" / "warmstart"
    assert ws.settings_from(compose(["experiment=demo"]).warmstart)[1] == tmp_path / "c" / "warmstart"  # the demo's
    monkeypatch.delenv("PODS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert ws.settings_from({})[1] == tmp_path / "x" / "pods" / "warmstart"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert ws.settings_from({})[1] == Path.home() / ".cache" / "pods" / "warmstart"


def test_warmstart_trains_to_target_and_caches(tmp_path, monkeypatch):
    monkeypatch.setattr(ws, "task_data", easy_task)
    cfg = dict(FAST, target_greedy=1.0, cache_dir=str(tmp_path))
    path = ws.ensure_warmstart(cfg, log=lambda *a: None)
    info = json.loads((path / "warmstart.json").read_text())
    assert path.parent == tmp_path and path.name == ws.settings_from(cfg)[0].key()
    assert info["greedy_acc"] == 1.0 and info["steps"] % 5 == 0 and info["steps"] < 200
    assert info["history"][-1]["greedy_acc"] == 1.0
    assert all(h["greedy_acc"] < 1.0 for h in info["history"][:-1])  # stopped at the first hit
    assert (path / "config.json").is_file() and (path / "tokenizer.json").is_file()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary dirs left
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o777 & ~umask  # shareable, not mkdtemp's 0700
    private = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in path.rglob("*")  # safetensors writes 0600 itself
               if p.name != ".lock" and stat.S_IMODE(p.stat().st_mode) != (0o777 if p.is_dir() else 0o666) & ~umask}
    assert private == {} and any(p.name.endswith(".safetensors") for p in path.iterdir())

    monkeypatch.setattr(ws, "train", lambda *a, **k: pytest.fail("cached warm start was retrained"))
    assert ws.ensure_warmstart(cfg, log=lambda *a: None) == path
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tok = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    prompts, _, test_p, test_a, verifier = easy_task(None, tok)
    assert ws.accuracy(model, tok, test_p, test_a, verifier, max_new_tokens=2) == 1.0


def test_unreached_target_raises_and_leaves_no_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(ws, "task_data", easy_task)
    cfg = dict(FAST, lr=1e-9, max_steps=10, cache_dir=str(tmp_path))
    with pytest.raises(ConfigError, match=r"the warm start did not reach warmstart.target_greedy=.* in "
                                          r"warmstart.max_steps=10 steps \(greedy accuracy .* at step 10\); nothing "
                                          r"was cached. Raise warmstart.max_steps or warmstart.lr, or lower "
                                          r"warmstart.target_greedy"):
        ws.ensure_warmstart(cfg, log=lambda *a: None)
    assert not any(tmp_path.iterdir())


def test_a_damaged_cache_is_said_so_and_rebuilt(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ws, "task_data", easy_task)
    cfg = dict(FAST, target_greedy=1.0, cache_dir=str(tmp_path))
    path = ws.ensure_warmstart(cfg, log=lambda *a: None)
    info = json.loads((path / "warmstart.json").read_text())
    assert set(info["files"]) == {p.name for p in path.iterdir()} - {"warmstart.json"}
    assert ws.cache_problem(path) is None
    weights = path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated, as by a full disk or a killed copy
    assert ws.cache_problem(path) == "model.safetensors does not match its checksum (1000 bytes; truncated or changed)"
    assert ws.ensure_warmstart(cfg, log=lambda *a: None) == path
    assert (f"warning: the cached warm start {path} is damaged (model.safetensors does not match its checksum (1000 "
            "bytes; truncated or changed)); rebuilding it\n") in capsys.readouterr().err
    assert ws.cache_problem(path) is None and [p.name for p in tmp_path.iterdir()] == [path.name]

    (path / "tokenizer.json").unlink()
    assert ws.cache_problem(path) == "tokenizer.json is missing"
    info.pop("files")  # a cache written before checksums were: rebuilt once
    (path / "warmstart.json").write_text(json.dumps(info))
    assert "without checksums" in ws.cache_problem(path)
    ws.ensure_warmstart(cfg, log=lambda *a: None)
    assert "rebuilding it" in capsys.readouterr().err and ws.cache_problem(path) is None
