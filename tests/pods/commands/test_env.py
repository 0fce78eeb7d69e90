"""`pods env` (pods/commands/env.py, pods.firstcontact.environment): the versions, devices and paths of a bug report."""

import json

from pods.commands import env


def test_the_report_names_versions_devices_and_paths(capsys, monkeypatch, tmp_path):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("PODS_CACHE_DIR", str(tmp_path / "file"))  # a cache that cannot be one: said so
    assert env.main([], prog="pods env") == 0
    text = capsys.readouterr().out
    for line in ("- Python: 3.", "- pods: ", "- torch: ", "- trl: ", "- transformers: ", "- CPU: ", "- pods: /",
                 f"- model cache (PODS_CACHE_DIR): {tmp_path / 'file' / 'models'} (cannot be created: "
                 f"{tmp_path / 'file'} is a file)", f"- PODS_CACHE_DIR={tmp_path / 'file'}"):
        assert line in text, line
    assert ("- GPU 0: " in text) or ("- CUDA: not usable: " in text)
    assert env.main(["--json"], prog="pods env") == 0
    facts = json.loads(capsys.readouterr().out)
    assert set(facts) == {"python", "versions", "devices", "paths", "settings"} and facts["versions"]["pods"]
