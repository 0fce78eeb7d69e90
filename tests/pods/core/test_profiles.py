"""pods.core.profiles: the shipped machine profiles, measured ones by name, and every bad profile as one message."""

import json
from dataclasses import asdict

import pytest

from pods.core import profiles
from pods.core.timing import CONSTANTS
from pods.errors import ConfigError


@pytest.fixture
def saved(tmp_path, monkeypatch):
    monkeypatch.setenv("PODS_PROFILE_DIR", str(tmp_path / "measured"))
    return tmp_path


def test_the_shipped_profiles_load_with_every_constant_and_say_where_each_came_from():
    assert {"cpu", "l40s-unsloth", "h100-hf"} <= set(profiles.known())
    for name, backend, device in (("cpu", "hf", "cpu"), ("l40s-unsloth", "unsloth", "cuda"), ("h100-hf", "hf", "cuda")):
        p = profiles.load(name)
        assert (p.name, p.backend, p.device) == (name, backend, device)
        assert set(p.constants) == set(CONSTANTS) and min(p.constants.values()) >= 0
        assert set(p.origin) == set(CONSTANTS) and p.source and set(p.fitted_range) == set(profiles.RANGE_KEYS)


def test_a_saved_profile_is_found_by_name_and_by_path(saved):
    p = profiles.load("h100-hf")
    mine = profiles.Profile(**{**asdict(p), "name": "my-gpu"})
    path = profiles.save(mine)
    assert path == saved / "measured" / "my-gpu.json" and "my-gpu" in profiles.known()
    assert profiles.load("my-gpu") == mine == profiles.load(str(path))


def test_for_machine_picks_the_gpus_profile_of_the_backend():
    assert profiles.for_machine("L40S", "unsloth").name == "l40s-unsloth"
    assert profiles.for_machine(None, "hf").name == "cpu"
    with pytest.raises(ConfigError, match=r"no profile measured on L40S with backend=hf; known: .*l40s-unsloth"):
        profiles.for_machine("L40S", "hf")


def test_outside_names_what_lies_beyond_the_fitted_range_and_scaling_follows_sizes():
    p = profiles.load("l40s-unsloth")
    assert p.outside(sequences=64, completion_tokens=230, kept=16) == []
    assert p.outside(sequences=1024, kept=16) == ["sequences 1024 outside the fitted 8-256"]
    big = p.scaled(2 * p.model_params, 3 * p.kv_bytes_per_token)
    assert big.constants["fixed"] == p.constants["fixed"] and big.constants["token"] == 2 * p.constants["token"]
    assert big.constants["context_token"] == pytest.approx(3 * p.constants["context_token"])


def write(tmp_path, **change):
    data = asdict(profiles.load("h100-hf"))
    data.update(change)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("case, change, message", [
    ("missing", lambda c: {k: v for k, v in c.items() if k != "decode_step"}, r"missing constant\(s\) decode_step"),
    ("negative", lambda c: {**c, "token": -1e-4}, r"not a finite number >= 0: token=-0.0001"),
    ("not a number", lambda c: {**c, "fixed": "fast"}, r"not a finite number >= 0: fixed='fast'"),
    ("unknown", lambda c: {**c, "warp": 1.0}, "unknown constant"),
])
def test_a_profile_file_with_bad_constants_is_one_message(tmp_path, case, change, message):
    consts = asdict(profiles.load("h100-hf"))["constants"]
    with pytest.raises(ConfigError, match=message):
        profiles.load(write(tmp_path, constants=change(consts)))


def test_an_unknown_profile_names_the_known_ones(saved):
    with pytest.raises(ConfigError, match=r"unknown profile 'l40s'; known: cpu, h100-hf, l40s-unsloth"):
        profiles.load("l40s")


def test_a_missing_or_broken_profile_file_is_one_message(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        profiles.load(str(tmp_path / "none.json"))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="cannot be read as JSON"):
        profiles.load(str(tmp_path / "bad.json"))
    with pytest.raises(ConfigError, match="'backend' must be a non-empty string"):
        profiles.load(write(tmp_path, backend=""))


def test_a_profile_of_another_backend_is_refused():
    with pytest.raises(ConfigError, match=r"measured on backend=unsloth .* this run uses backend=hf"):
        profiles.load("l40s-unsloth").check_backend("hf")
