"""scripts/offline_gpu_check.sh: the wheels it carries match uv.lock, and its dry run goes end to end on the CPU."""

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "offline_gpu_check.sh"


def pins(name: str) -> dict[str, str]:
    block = re.search(rf"{name}=\(([^)]*)\)", SCRIPT.read_text()).group(1)
    return dict(p.split("==") for p in block.split())


def test_the_carried_wheels_are_the_locked_versions():
    lock = {p["name"]: p["version"] for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]}
    carried = pins("WHEELS_PINNED") | pins("SDISTS_PINNED")
    assert {k: lock.get(k) for k in carried} == carried
    # pods' own dependencies that a node with torch, transformers, peft and accelerate lacks are all carried
    for needed in ("hydra-core", "trl", "datasets", "math-verify", "pylatexenc", "bitsandbytes"):
        assert needed in carried


WEIRD = "a dir with 'an apostrophe', \"a quote\" and spaces"  # any path a file system accepts


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60, **kwargs)


@pytest.mark.parametrize("argv, message", [
    (["--frobnicate"], "unknown argument --frobnicate"),
    (["stray"], "unknown argument stray"),
    (["--wheels"], "--wheels needs a value"),  # it used to loop forever under set -u
    (["--out"], "--out needs a value"),
    (["--python"], "--python needs a value"),
    (["--steps"], "--steps needs a value"),
    (["--node-python"], "--node-python needs a value"),
    (["--out", "--dry-run"], "--out needs a value"),  # the next option is not its value
    (["--out="], "--out needs a value"),
    (["--steps", "1"], "--steps must be a whole number >= 2, got '1'"),
    (["--node-python", "3"], "--node-python must be X.Y (e.g. 3.12), got '3'"),
    (["--dry-run=yes"], "--dry-run takes no value"),
])
def test_an_option_without_its_value_or_an_unknown_one_is_one_line_and_exit_2(tmp_path, argv, message):
    proc = run(*argv, "--out", str(tmp_path / "o")) if argv[0] != "--out" else run(*argv)
    assert proc.returncode == 2 and proc.stderr == f"offline_gpu_check.sh: {message} (see --help)\n"
    assert not (tmp_path / "o").exists()


def test_a_path_with_spaces_and_quotes_reaches_the_script_whole(tmp_path):
    """--wheels and --out in both forms: the wheels folder named exactly in the message, nothing written; an --out
    that is a file refused."""
    wheels = tmp_path / WEIRD / "wheels"
    for form in (["--wheels", str(wheels)], [f"--wheels={wheels}"]):
        proc = run("--dry-run", *form, "--out", str(tmp_path / WEIRD / "out"))
        assert proc.returncode == 2 and f"no wheels in {wheels}: run" in proc.stderr, proc.stderr
    (tmp_path / "file").write_text("")
    proc = run("--dry-run", "--out", str(tmp_path / "file"))
    assert proc.returncode == 2 and "is a file; give a directory" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.slow
def test_the_dry_run_sizes_a_step_and_runs_trl_with_nothing_downloaded(tmp_path):
    """Through --dry-run with a Python and an output folder whose paths hold a space, a quote and an apostrophe:
    the paths travel as arguments and quoted overrides, never pasted into code (issue 43)."""
    env = {**os.environ, "PODS_THREADS": "1", "PODS_PROFILE_DIR": str(tmp_path / "profiles")}  # not ~/.config
    weird = tmp_path / WEIRD
    (weird / "bin").mkdir(parents=True)
    python = weird / "bin" / "python"  # this environment's Python, called by a path no code could hold unquoted
    python.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n")
    python.chmod(0o755)
    proc = subprocess.run(["bash", str(SCRIPT), "--dry-run", "--out", str(weird / "out"), "--steps", "2",
                           f"--python={python}"],
                          capture_output=True, text=True, cwd=ROOT, timeout=1200, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    tmp_path = weird / "out"
    summary = json.loads((tmp_path / "offline-gpu-check.json").read_text())
    assert summary["missing"] == []
    assert summary["stack"]["packages"]["torch"] and summary["stack"]["cuda_available"] is False
    assert summary["random_weights"]["steps"] == 2 and summary["random_weights"]["completion_tokens"] == 5
    assert summary["trl"]["steps"] == 2
