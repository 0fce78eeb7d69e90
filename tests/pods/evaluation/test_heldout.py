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
    cmd = [sys.executable, "train.py", "model=tiny", "dataset=arithmetic", "+dataset.options.size=256",
           "backend.device=cpu",
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


class Scripted:
    """A generator answering prompt i with TEXTS[temperature > 0][i] (no model)."""

    TEXTS = {False: ["<think>\n2 + 2 = 4\n</think>\n<answer>\n4\n</answer>", "It is 7.", "<answer>9</answer>",
                     "<think>x</think><answer>1</answer>"],
             True: ["4", "<think>\n3 + 4 = 7\n</think>\n<answer>\n7\n</answer>", "9", "no idea"]}

    def generate(self, prompts, n, sampling):
        from pods.core.rollouts import Rollouts

        texts = [self.TEXTS[sampling.temperature > 0][p[0]] for p in prompts for _ in range(n)]
        return Rollouts(prompt_ids=prompts, completion_ids=[[1]] * len(texts), texts=texts, n=n)


def problems(format_reward):
    from pods import rewards

    fmt = rewards.get(format_reward) if format_reward else None
    return [[0], [1], [2], [3]], ["4", "7", "9", "2"], {}, rewards.get("paper_answer"), fmt, ["q"] * 4


def test_heldout_reports_the_format_rate_of_the_paper_format_reward():
    from pods.config.schema import HeldoutConfig
    from pods.evaluation.heldout import heldout_accuracy

    ev = HeldoutConfig(size=4, draws=1, batch_size=3, format_reward="paper_format")
    got = heldout_accuracy(Scripted(), problems("paper_format"), ev, max_tokens=8)
    # sampled: 4, 7 (formatted), 9 correct, "no idea" not; greedy: 4, 7, 9 correct, only the first two formatted
    assert got == {"sampled_acc": 0.75, "sampled_format": 0.25, "greedy_acc": 0.75, "greedy_format": 0.5,
                   "problems": 4}
    plain = heldout_accuracy(Scripted(), problems(None), HeldoutConfig(size=4, draws=1, greedy=False), max_tokens=8)
    assert plain == {"sampled_acc": 0.75, "problems": 4}  # no format_reward: accuracy only, as before


def test_the_before_after_line_names_the_format_rates():
    from pods.config.schema import HeldoutConfig
    from pods.evaluation.heldout import before_after_line

    run = OmegaConf.create({"dataset": {"name": "word_problems"}})
    ev = HeldoutConfig(draws=1, temperature=0.9, format_reward="paper_format")
    before = {"sampled_acc": 0.02, "greedy_acc": 0.1, "sampled_format": 0.25, "greedy_format": 0.5, "problems": 100}
    after = {"sampled_acc": 0.05, "greedy_acc": 0.12, "sampled_format": 0.6, "greedy_format": 0.75, "problems": 100}
    line = before_after_line(run, ev, before, after, "checkpoint-30")
    assert line.endswith("greedy 0.1000 -> 0.1200; format rate (paper_format) sampled 0.2500 -> 0.6000, "
                         "greedy 0.5000 -> 0.7500")


def test_an_unknown_format_reward_is_refused():
    from pods.config.checks import heldout_problems

    found = heldout_problems(OmegaConf.create({"format_reward": "paper_fromat"}))
    assert len(found) == 1 and "unknown evaluation.format_reward 'paper_fromat'; valid: " in found[0]
    assert heldout_problems(OmegaConf.create({"format_reward": None, "size": 5})) == []


def test_cached_results_are_keyed_by_the_shots_too():
    from pods.config.schema import HeldoutConfig
    from pods.evaluation.heldout import _settings

    run = OmegaConf.create({"model": {"name": "m"}, "rl": {"max_completion_tokens": 8},
                            "dataset": {"name": "word_problems", "options": {}, "prompt_style": "instruct", "shots": []}})
    plain = _settings(run, HeldoutConfig())
    run.dataset.shots = [{"question": "Q", "completion": "A"}]
    assert _settings(run, HeldoutConfig()) != plain  # other prompts: measured again, not read from heldout.json
