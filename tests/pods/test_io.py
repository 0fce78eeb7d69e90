"""Atomic writes: new content appears whole; a failed write leaves the old file and no temp file."""

import json

import pytest

from pods.io import atomic_write_json, atomic_write_text


def test_writes_and_replaces(tmp_path):
    path = tmp_path / "sub" / "results.json"
    atomic_write_json(path, {"a": [1, 2]})
    assert json.loads(path.read_text()) == {"a": [1, 2]}
    atomic_write_text(path, "replaced\n")
    assert path.read_text() == "replaced\n"
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "results.json"
    atomic_write_text(path, "old")
    with pytest.raises(TypeError):
        atomic_write_json(path, {"not serialisable": object()})
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
