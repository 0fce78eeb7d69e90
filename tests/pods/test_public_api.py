"""`import pods`: cheap (no torch / TRL), the public names resolve lazily; missing extras name the extra."""

import subprocess
import sys

import pytest

import pods
from pods.extras import require


def test_import_pods_loads_no_heavy_module():
    code = ("import sys, pods; heavy = [m for m in ('torch', 'trl', 'transformers', 'numpy', 'pods.rewards') "
            "if m in sys.modules]; print(','.join(heavy) or 'none')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "none"


def test_public_names_are_the_implementations():
    from pods import rewards
    from pods.core.advantages import group_advantages
    from pods.core.downsample import select
    from pods.integrations import trl

    assert pods.select is select and pods.group_advantages is group_advantages
    assert pods.PODSConfig is trl.PODSConfig and pods.PODSTrainer is trl.PODSTrainer
    assert pods.rewards is rewards and pods.get_reward is rewards.get
    assert pods.reward_names() == rewards.names() and "gsm8k" in pods.reward_names()
    assert pods.combined_rewards([{"name": "gsm8k", "weight": 1.0}])(["<answer>7</answer>"], ["7"])[0] == [1.0]
    assert set(pods.__all__) <= set(dir(pods))


def test_algorithm_through_the_public_api():
    import torch

    rewards = torch.tensor([[0.0, 1.0, 0.5, 1.0, 0.0, 0.2]])  # [G=1, n=6]
    idx = pods.select(rewards, 4)  # max variance: the 2 lowest and 2 highest
    assert sorted(rewards[0, idx[0]].tolist()) == [0.0, 0.0, 1.0, 1.0]
    adv = pods.group_advantages(rewards.gather(1, idx))
    assert adv.shape == (1, 4) and float(adv.sum()) == pytest.approx(0.0, abs=1e-6)


def test_unknown_name_lists_the_public_ones():
    with pytest.raises(AttributeError, match="public names: select, group_advantages"):
        pods.not_there
    from pods import config  # submodules still import as usual

    assert config.__name__ == "pods.config"


def test_missing_extra_names_the_extra(monkeypatch):
    for name in ("scipy", "scipy.stats"):  # importing them now raises ImportError (even if imported before)
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"pip install 'pods\[analysis\]'"):
        require("scipy.stats", "analysis")
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(ImportError, match=r"pods\[wandb\]"):
        require("wandb", "wandb")
    with pytest.raises(ValueError, match="valid: analysis"):
        require("scipy", "plots")
    assert require("json", "analysis").__name__ == "json"


def test_a_users_own_rewards_module_does_not_shadow_pods_rewards(tmp_path):
    """A `rewards.py` in the user's working directory (imported first) leaves pods' registry intact."""
    (tmp_path / "rewards.py").write_text("def get(name):\n    raise RuntimeError('the user module')\n")
    code = ("import rewards, pods; from pods import rewards as ours; "
            "print(rewards.__file__ != ours.__file__, ours.get('gsm8k')(['<answer>7</answer>'], ['7']), "
            "'gsm8k' in pods.reward_names())")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "[1.0]", "True"]


def test_help_is_short_and_loads_nothing_heavy():
    """help(pods) documents the package, not TRL's trainer: a page, at once, without torch or TRL."""
    code = ("import pods, pydoc, sys; text = pydoc.render_doc(pods, renderer=pydoc.plaintext); "
            "print(len(text.splitlines()), 'torch' in sys.modules, 'trl' in sys.modules, 'PODSTrainer' in text)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines, torch_loaded, trl_loaded, named = out.stdout.split()
    assert int(lines) < 80 and torch_loaded == trl_loaded == "False" and named == "True"


def test_select_takes_a_plain_list():
    assert sorted(pods.select([0.0, 1.0, 0.5, 1.0], 2).tolist()) in ([0, 1], [0, 3])  # the lowest and a highest
    assert pods.select([[0.0, 1.0, 0.5]], 2).shape == (1, 2)
    with pytest.raises(ValueError, match=r"rewards must have shape \[G, n\] or \[n\], got \(1, 1, 2\)"):
        pods.select([[[0.0, 1.0]]], 1)
    with pytest.raises(ValueError, match="rewards must be numbers"):
        pods.select(["a", "b"], 1)
