"""Plug-ins by file path or import path (pods.plugins): your own rewards and datasets, checked before a model loads."""

import subprocess
import sys
from pathlib import Path

import pytest

from pods import plugins, rewards
from pods.data import load_dataset, plugin_examples

from helpers import compose

ROOT = Path(__file__).resolve().parents[2]

USER_MODULE = '''
from pods.data import Example

def good(completions, answers, **columns):
    return [float(c.strip() == a) for c, a in zip(completions, answers)]

def short(completions, answers, **columns):
    return [1.0]

def broken(completions, answers, **columns):
    raise KeyError("boom")

def words(completions, answers, **columns):
    return ["yes" for _ in completions]

NOT_A_FUNCTION = 3

def data(split):
    return [{"prompt": f"{i}+1=", "answer": str(i + 1), "level": i} for i in range(5 if split == "train" else 2)]

def objects(split):
    return [Example("1+1=", "2")]

def empty(split):
    return []

def bad_rows(split):
    return [{"question": "1+1="}]
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "mine.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)  # the working directory is searched, as for a user's own project
    yield "mine"
    sys.modules.pop("mine", None)


def test_a_reward_by_import_path_is_a_registry_reward(user_module):
    fn = rewards.get("mine:good")
    assert fn(["2", "3"], ["2", "2"]) == [1.0, 0.0]
    rewards.probe("mine:good")
    total, per_fn = rewards.combined([{"name": "mine:good", "weight": 2.0}])(["2"], ["2"])
    assert total == [2.0] and per_fn == {"mine:good": [1.0]}


@pytest.mark.parametrize("path, message", [
    ("nosuchmodule:f", "cannot import 'nosuchmodule'"),
    ("mine:missing", "has no attribute 'missing'"),
    ("mine:NOT_A_FUNCTION", "is a int, not a function"),
    ("mine:short", "in the start-up probe on 2 completions returned 1 score ([1.0]): return one score per"),
    ("mine:broken", "in the start-up probe on 2 completions raised KeyError: 'boom'"),
    ("mine:words", "returned non-numbers for 2 of them ('yes' at 0, 'yes' at 1;"),
    ("mine:", "write it as path/to/file.py:function or package.module:function"),
])
def test_each_failing_reward_check_says_which_and_shows_the_signature(user_module, path, message):
    with pytest.raises(ValueError) as err:  # PluginError (importing it) or RewardError (calling it)
        rewards.probe(path)
    assert message in str(err.value) and plugins.REWARD_SIGNATURE in str(err.value)


def test_a_dataset_by_import_path(user_module):
    train = load_dataset("mine:data", split="train")
    assert [(e.prompt, e.answer, e.meta) for e in train[:2]] == [("0+1=", "1", {"level": 0}), ("1+1=", "2", {"level": 1})]
    assert len(load_dataset("mine:data", split="test")) == 2 and len(load_dataset("mine:data", limit=3)) == 3
    assert load_dataset("mine:objects")[0].answer == "2"
    with pytest.raises(ValueError, match="takes no path or options"):
        load_dataset("mine:data", path="x.jsonl")


@pytest.mark.parametrize("path, message", [
    ("mine:empty", "split 'train' is empty"),
    ("mine:bad_rows", "row 0 is {'question'"),
    ("mine:broken", "calling it with split='train' raised"),
    ("mine:nothing", "has no attribute 'nothing'"),
])
def test_each_failing_dataset_check_says_which(user_module, path, message):
    with pytest.raises(plugins.PluginError) as err:
        plugin_examples(path, "train")
    assert message in str(err.value) and plugins.DATASET_SIGNATURE in str(err.value)


def test_validate_reports_plugin_problems_before_a_model_loads(user_module):
    """validate checks the settings; the start-up step (pods.run.prepare) runs each plug-in once and reports
    their problems together, before a model loads."""
    from pods.errors import ConfigError
    from pods.run.prepare import check_plugins_and_data

    cfg = compose([
            "model=tiny", "dataset.name=mine:empty", "dataset.rewards=[{name: mine:short, weight: 1.0}]",
            "dataset.accuracy_reward=null", "optim.name=adamw", "rl.n=8", "rl.m=4", "rl.max_steps=1"])
    with pytest.raises(ConfigError) as err:
        check_plugins_and_data(cfg)
    assert "dataset.name: dataset 'mine:empty'" in str(err.value) and "returned 1 score ([1.0])" in str(err.value)


def _train(cwd, *overrides):
    cmd = [sys.executable, str(ROOT / "train.py"), "model=tiny", "dataset.prompt_style=base", "rl.n=4", "rl.m=2",
           "rl.prompts_per_step=2", "rl.max_steps=2", "rl.max_time=null", "rl.max_completion_tokens=4",
           "optim.name=adamw", "logging.progress=false", f"output_root={cwd / 'runs'}", "run_name=plug", *overrides]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "WANDB_MODE": "disabled", "PYTHONPATH": ""}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


DECOY = "raise RuntimeError('the decoy rewards.py of the working directory was imported')\n"


@pytest.fixture
def decoy_cwd(tmp_path, monkeypatch):
    """A working directory holding a `rewards.py` that must never be imported, and no rewards/ folder."""
    (tmp_path / "rewards.py").write_text(DECOY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_file_path_loads_the_checkouts_rewards_folder_beside_a_decoy(decoy_cwd):
    fn = rewards.get("rewards/countdown.py:exact_number")
    assert fn(["71 is it", "no"], ["71", "3"]) == [1.0, 0.0]
    assert fn.__module__.startswith("pods_plugin_") and "rewards" not in sys.modules
    assert fn.__module__ in sys.modules  # by name, so it pickles
    assert rewards.get(str(ROOT / "rewards" / "countdown.py") + ":exact_number") is fn  # absolute: the same module
    rewards.probe("rewards/countdown.py:brevity")
    train = load_dataset("rewards/countdown.py:countdown", split="train")
    assert len(train) == 200 and train[0].meta["start"] + 0 == int(train[0].answer) + 9


def test_a_relative_file_path_prefers_the_working_directory(decoy_cwd):
    (decoy_cwd / "rewards").mkdir()
    (decoy_cwd / "rewards" / "countdown.py").write_text("def exact_number(completions, answers, **columns):\n"
                                                        "    return [0.5 for _ in completions]\n")
    assert rewards.get("rewards/countdown.py:exact_number")(["a"], ["b"]) == [0.5]


@pytest.mark.parametrize("path, message", [
    ("rewards/nope.py:f", "no file rewards/nope.py (looked in"),
    ("/nonexistent/r.py:f", "no file /nonexistent/r.py\n"),
    ("rewards/countdown.py:nothing", "has no attribute 'nothing'"),
    ("rewards/countdown.py:", "write it as path/to/file.py:function"),
])
def test_a_bad_file_path_says_what_is_wrong(decoy_cwd, path, message):
    with pytest.raises(plugins.PluginError) as err:
        rewards.probe(path)
    assert message in str(err.value) and plugins.REWARD_SIGNATURE in str(err.value)


def test_a_file_that_fails_to_import_is_named_and_not_kept(decoy_cwd):
    (decoy_cwd / "broken.py").write_text("import nonexistent_module_xyz\n")
    with pytest.raises(plugins.PluginError, match="cannot import 'broken.py' .ModuleNotFoundError"):
        rewards.probe("broken.py:f")
    assert not [m for m in sys.modules if m.startswith("pods_plugin_") and "broken" in str(sys.modules[m])]


@pytest.mark.slow
def test_the_worked_example_trains_two_steps_from_any_directory(tmp_path):
    """train.py run from a user's directory with a decoy rewards.py: the checkout's rewards/countdown.py trains."""
    (tmp_path / "rewards.py").write_text(DECOY)
    file = "rewards/countdown.py"
    out = _train(tmp_path, f"dataset.name={file}:countdown",
                 f"dataset.rewards=[{{name: {file}:exact_number, weight: 1.0}}, {{name: {file}:brevity, weight: 0.1}}]",
                 f"dataset.accuracy_reward={file}:exact_number")
    assert out.returncode == 0, out.stderr[-3000:]
    import json

    rows = [json.loads(line) for line in (tmp_path / "runs" / "plug" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert f"reward/{file}:brevity" in rows[0] and f"reward/{file}:exact_number" in rows[0]


@pytest.mark.slow  # the message before a model loads: test_validate_reports_plugin_problems_before_a_model_loads
def test_a_bad_plugin_path_on_the_command_line_is_a_clean_error(tmp_path):
    (tmp_path / "mine.py").write_text(USER_MODULE)
    out = _train(tmp_path, "dataset.name=arithmetic", "dataset.rewards=[{name: mine:short, weight: 1.0}]",
                 "dataset.accuracy_reward=null")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "returned 1 score ([1.0])" in out.stderr and "def my_reward(completions" in out.stderr


@pytest.mark.parametrize("overrides, said", [
    (["dataset.name=nomod_xyz:load"], ["dataset 'nomod_xyz:load': cannot import 'nomod_xyz'",
                                       "expected: def my_data(split: str)"]),
    (["dataset.rewards=[{name: 'os.path:nope', weight: 1.0}]", "dataset.accuracy_reward=null"],
     ["reward 'os.path:nope': 'os.path'", "has no attribute 'nope'", "expected: def my_reward("]),
    (["dataset.rewards=[{name: 'json:dumps', weight: 1.0}]", "dataset.accuracy_reward=null"],
     ["dataset.rewards: reward 'json:dumps' in the start-up probe on 2 completions raised TypeError"]),
    *[([f"dataset.rewards=[{{name: 'tests/fixtures/plugins/{name}.py:score', weight: 1}}]",
        "dataset.accuracy_reward=null"],
       ["invalid config:", f"reward 'tests/fixtures/plugins/{name}.py:score': importing ",
        f"tests/fixtures/plugins/{name}.py {said}: a plug-in must not end the program; code that parses a command "
        "line (argparse) or exits belongs under `if __name__ == \"__main__\":`", "expected: def my_reward("])
      for name, said in (("exits_at_import", "called sys.exit()"),
                         ("argparse_at_import", "called sys.exit(2) (a usage or error line printed just above came "
                                                "from it, not from pods)"))],
], ids=["dataset-no-module", "reward-no-attribute", "reward-wrong-signature", "exits-at-import",
        "argparse-at-import"])
def test_a_plugin_that_cannot_be_used_is_one_message_before_a_model_loads(monkeypatch, overrides, said):
    """The start-up step (pods.run.prepare) imports your functions (from the checkout, as train.py does) and
    probes a reward on two completions: each failure is one ConfigError naming it and the signature expected."""
    from pods.errors import ConfigError
    from pods.run.prepare import check_plugins_and_data

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    monkeypatch.setattr(sys, "argv", ["train.py", *overrides])  # what a plug-in's argparse sees under train.py
    with pytest.raises(ConfigError) as err:
        check_plugins_and_data(compose(["model=tiny", "dataset=arithmetic", *overrides]))
    assert all(text in str(err.value) for text in said), str(err.value)
