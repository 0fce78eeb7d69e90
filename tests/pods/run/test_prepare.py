"""The start-up step (pods.run.prepare): each plug-in runs once, the warm start returns the model to load and
leaves the caller's config as asked, config.yaml records both."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pods import rewards
from pods.errors import ConfigError
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
    cfg = tiny_cfg(tmp_path, "rl.max_steps=1", "+warmstart.target_greedy=0.1")
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
