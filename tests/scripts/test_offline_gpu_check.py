"""scripts/offline_gpu_check.sh: the wheels it carries match uv.lock, and its dry run goes end to end on the CPU."""

import json
import os
import re
import subprocess
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


def test_an_unknown_argument_is_refused():
    proc = subprocess.run(["bash", str(SCRIPT), "--frobnicate"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown argument --frobnicate" in proc.stderr


@pytest.mark.slow
def test_the_dry_run_sizes_a_step_and_runs_trl_with_nothing_downloaded(tmp_path):
    env = {**os.environ, "PODS_THREADS": "1"}
    proc = subprocess.run(["bash", str(SCRIPT), "--dry-run", "--out", str(tmp_path), "--steps", "2"],
                          capture_output=True, text=True, cwd=ROOT, timeout=1200, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((tmp_path / "offline-gpu-check.json").read_text())
    assert summary["missing"] == []
    assert summary["stack"]["packages"]["torch"] and summary["stack"]["cuda_available"] is False
    assert summary["random_weights"]["steps"] == 2 and summary["random_weights"]["completion_tokens"] == 5
    assert summary["trl"]["steps"] == 2
