"""train.py with an `evaluation` section prints the final checkpoint's held-out accuracy (pods.evaluation.heldout)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pods.evaluation.heldout import final_heldout

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_train_prints_final_heldout_accuracy(tmp_path):
    cmd = [sys.executable, "train.py", "model=tiny", "dataset=arithmetic", "backend.device=cpu",
           f"output_root={tmp_path}", "run_name=h", "rl.n=4", "rl.m=2", "rl.prompts_per_step=2",
           "rl.max_completion_tokens=5", "rl.max_steps=2", "rl.max_time=null", "rl.save_strategy=steps",
           "rl.save_steps=1", "optim.name=adamw", "logging.progress=false",
           "+evaluation={size: 16, draws: 2, temperature: 1.0, max_tokens: 5, seed: 1, batch_size: 8, greedy: true}"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = re.search(r"held-out accuracy on 16 arithmetic test problems: sampled pass@1 ([0-9.]+) "
                     r"\(T=1.0, mean of 2 draws\), greedy ([0-9.]+)", out.stdout)
    assert line, out.stdout[-2000:]
    assert all(0.0 <= float(v) <= 1.0 for v in line.groups())
    assert "final evaluation of h/checkpoint-2" in out.stdout

    # the same numbers again from the saved run (same seeds), and None once the section is removed
    again = final_heldout(tmp_path / "h", log=lambda *_: None)
    assert again == {"sampled_acc": pytest.approx(float(line.group(1)), abs=1e-4),
                     "greedy_acc": pytest.approx(float(line.group(2)), abs=1e-4)}
    cfg = OmegaConf.load(tmp_path / "h" / "config.yaml")
    cfg.evaluation = None
    OmegaConf.save(cfg, tmp_path / "h" / "config.yaml")
    assert final_heldout(tmp_path / "h") is None
