"""The start-up step (pods.run.prepare): each plug-in runs once, the warm start returns the model to load and
leaves the caller's config as asked, config.yaml records both."""

import json
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from pods import rewards
from pods.core import ledger as fmt
from pods.core.ledger_writer import Ledger
from pods.errors import CheckpointError, ConfigError
from pods.run import prepare, trainer
from pods.run.metrics import read_metrics

from helpers import digits_reward, tiny_cfg

COUNTING = '''
from pathlib import Path

def data(split):
    with open(Path(__file__).with_name("calls.txt"), "a") as f:
        f.write(f"data {split}\\n")
    return [{"prompt": f"{i}+{i}=", "answer": str(2 * i)} for i in range(12)]

def reward(completions, answers, **columns):
    with open(Path(__file__).with_name("calls.txt"), "a") as f:
        f.write(f"reward {len(completions)}\\n")
    return [float(c.strip() == a) for c, a in zip(completions, answers)]
'''


@pytest.fixture
def counting(tmp_path):
    (tmp_path / "counting.py").write_text(COUNTING)
    return tmp_path / "counting.py", tmp_path / "calls.txt"


def test_a_plugin_dataset_runs_once_and_each_plugin_reward_is_probed_once(tmp_path, monkeypatch, counting):
    plugin, calls = counting
    monkeypatch.setitem(rewards.REGISTRY, "digits", digits_reward)
    cfg = tiny_cfg(tmp_path, "rl.max_steps=1", f"dataset.name={plugin}:data", "dataset.options={}",
                   "dataset.prompt_style=base", f"dataset.rewards=[{{name: digits, weight: 1.0}}, "
                   f"{{name: '{plugin}:reward', weight: 0.5}}]")
    run_dir = trainer.train(cfg)
    lines = calls.read_text().splitlines()
    assert lines[:2] == ["data train", "reward 2"]  # the data read once; the start-up probe on plugins.PROBE
    assert lines[2:] == ["reward 16"]  # then one step's 2 prompts x n=8 completions: no second read, no second probe
    assert len(read_metrics(run_dir)) == 1


def test_a_plugin_problem_is_reported_before_the_run_directory_is_made(tmp_path, monkeypatch, counting):
    plugin, _ = counting
    monkeypatch.setitem(rewards.REGISTRY, "digits", digits_reward)
    cfg = tiny_cfg(tmp_path, f"dataset.name={plugin}:missing", "dataset.options={}")
    with pytest.raises(ConfigError, match=r"invalid config:\n  - dataset.name: dataset .*has no attribute 'missing'"):
        with prepare.prepare(cfg):
            pass
    assert not (tmp_path / "t").exists()


def test_the_warm_start_returns_the_model_to_load_and_config_yaml_keeps_what_was_asked(tmp_path, monkeypatch,
                                                                                       tiny_model_dir):
    monkeypatch.setitem(rewards.REGISTRY, "digits", digits_reward)
    monkeypatch.setattr(prepare, "ensure_warmstart", lambda ws: Path(tiny_model_dir))
    cfg = tiny_cfg(tmp_path, "rl.max_steps=1", "+warmstart.target_greedy=0.1", "dataset.limit=64")
    assert prepare.warm_start(cfg) == str(tiny_model_dir) and cfg.model.name == "tiny"
    with prepare.prepare(cfg) as ready:
        assert ready.cfg.model.name == str(tiny_model_dir) and ready.resumed is None
        assert type(ready.policy.model.get_base_model()).__name__ == "Qwen2ForCausalLM"
    assert cfg.model.name == "tiny"  # the caller's config is not rewritten
    saved = OmegaConf.load(tmp_path / "t" / "config.yaml")
    assert saved.model.name == str(tiny_model_dir) and saved.asked == {"model": {"name": "tiny"}}
    assert saved.warmstart == {"target_greedy": 0.1}
    with prepare.prepare(cfg) as again:  # the same run: config.yaml with `asked` compares equal
        assert again.run_dir == tmp_path / "t"


def test_a_resume_onto_a_damaged_ledger_stops_before_the_model_loads(tmp_path, monkeypatch):
    cfg = tiny_cfg(tmp_path)
    led = Ledger(tmp_path / "t", prepare.ledger_meta(cfg, "pods", "digits"))  # steps 1-3, then checkpoint-3
    for step in (1, 2, 3):
        r = torch.ones(2, 8)
        led.record(step, fmt.concat_rows([fmt.group_rows(step=step, round_=0, prompts=[0, 1], status=["trained"] * 2,
                                                         total=r, per_fn={"digits": r}, accuracy=r,
                                                         lengths=r.long(), kept=torch.arange(4).expand(2, 4))]))
    led.close()
    (tmp_path / "t" / "checkpoint-3").mkdir()
    (tmp_path / "t" / "checkpoint-3" / "state.json").write_text(json.dumps({"step": 3, "ledger_id": led.id}))
    (tmp_path / "t" / "ledger" / "steps-00000001-00000003.parquet").unlink()
    monkeypatch.setattr(prepare.ckpt, "check_resumable", lambda rdir: {rdir / "checkpoint-3": []})
    monkeypatch.setattr(prepare.backends, "build", lambda cfg: pytest.fail("the model loaded"))
    with pytest.raises(CheckpointError, match="cannot continue from checkpoint-3: .*steps 1-3 are missing"):
        prepare.start(cfg, cfg, tmp_path / "t", examples=None)  # inside prepare's lock, after the data files
