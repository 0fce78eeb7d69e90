"""train.py with an `evaluation` section prints held-out accuracy before and after RL on the same problems
(pods.evaluation.heldout), cached in the run directory."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pods.evaluation.heldout import HELDOUT_FILE, final_heldout

ROOT = Path(__file__).resolve().parents[3]
LINE = (r"held-out accuracy on the same 16 arithmetic test problems, before RL \(the base model\) -> after RL "
        r"\(checkpoint-2\): sampled pass@1 ([0-9.]+) -> ([0-9.]+) \(T=1.0, mean of 2 draws\), greedy ([0-9.]+) -> "
        r"([0-9.]+)")


@pytest.mark.slow
def test_train_prints_before_and_after_on_the_same_problems_and_caches_them(tmp_path):
    cmd = [sys.executable, "train.py", "model=tiny", "dataset=arithmetic", "backend.device=cpu",
           f"output_root={tmp_path}", "run_name=h", "rl.n=4", "rl.m=2", "rl.prompts_per_step=2",
           "rl.max_completion_tokens=5", "rl.max_steps=2", "rl.max_time=null", "rl.save_strategy=steps",
           "rl.save_steps=1", "optim.name=adamw", "optim.lr=1e-2", "logging.progress=false",
           "+evaluation={size: 16, draws: 2, temperature: 1.0, max_tokens: 5, seed: 1, batch_size: 8, greedy: true}"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = re.search(LINE, out.stdout)
    assert line, out.stdout[-2000:]
    before_s, after_s, before_g, after_g = map(float, line.groups())
    assert all(0.0 <= v <= 1.0 for v in line.groups() for v in [float(v)])
    assert "held-out evaluation of h/base (before RL)" in out.stdout and "held-out evaluation of h/checkpoint-2" in out.stdout
    saved = json.loads((tmp_path / "h" / HELDOUT_FILE).read_text())
    assert saved["results"]["base"]["sampled_acc"] == pytest.approx(before_s, abs=1e-4)
    assert saved["results"]["checkpoint-2"]["greedy_acc"] == pytest.approx(after_g, abs=1e-4)

    # a rerun measures nothing again: the same numbers from heldout.json, no evaluation lines
    logged = []
    again = final_heldout(tmp_path / "h", log=logged.append)
    assert again == {"base": saved["results"]["base"], "checkpoint-2": saved["results"]["checkpoint-2"]}
    assert len(logged) == 1 and re.search(LINE, logged[0])
    assert not (tmp_path / "h" / ".lock").exists()

    # other evaluation settings: measured again (base and checkpoint), the same way as train.py did
    cfg = OmegaConf.load(tmp_path / "h" / "config.yaml")
    cfg.evaluation.draws = 1
    OmegaConf.save(cfg, tmp_path / "h" / "config.yaml")
    logged = []
    final_heldout(tmp_path / "h", log=logged.append)
    assert [x.split(" ...")[0] for x in logged[:2]] == ["held-out evaluation of h/base (before RL)",
                                                       "held-out evaluation of h/checkpoint-2"]
    assert "mean of 1 draws" in logged[2]
    cfg.evaluation = None
    OmegaConf.save(cfg, tmp_path / "h" / "config.yaml")
    assert final_heldout(tmp_path / "h") is None
