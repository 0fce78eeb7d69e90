"""pods.config.aliases: TRL's names on train.py's command line, "did you mean" hints, TRL metric names."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pods.config import aliases
from pods.config.aliases import CONFIG_ALIASES, hint, rewrite_overrides, schema_keys, trl_metric_names
from pods.config.checks import validate
from pods.errors import ConfigError
from pods.run.metrics import MetricsLogger, read_metrics

from helpers import compose

ROOT = Path(__file__).resolve().parents[3]
GROUPS = ["model", "backend", "dataset", "rule", "experiment"]


@pytest.mark.parametrize("name", sorted(CONFIG_ALIASES))
def test_every_alias_names_a_real_key_and_a_trl_field(name):
    from trl import GRPOConfig

    from pods.integrations.trl import PODSConfig

    target = CONFIG_ALIASES[name].target
    if target not in schema_keys()[0]:
        pytest.skip(f"{target} is not in this version's schema")
    assert name in {f.name for f in __import__("dataclasses").fields(PODSConfig)}
    assert name in GRPOConfig.__dataclass_fields__ or name.startswith("pods_")


def test_rewrite_maps_names_and_values_with_a_note():
    args, notes = rewrite_overrides(["num_generations=16", "pods_m=4", "pods_rule=random", "learning_rate=1e-6",
                                     "loss_type=grpo", "max_completion_length=64", "model=tiny", "-m",
                                     "backend.device=cpu", "~warmstart", "hydra.run.dir=.", "seed=3",
                                     "+rl.extra=1"], GROUPS)
    assert args == ["rl.n=16", "rl.m=4", "rl.rule=random", "optim.lr=1e-6", "rl.aggregation=sequence",
                    "rl.max_completion_tokens=64", "model=tiny", "-m", "backend.device=cpu", "~warmstart",
                    "hydra.run.dir=.", "seed=3", "+rl.extra=1"]
    assert notes[0] == "note: num_generations is TRL's name for rl.n; using rl.n=16" and len(notes) == 6
    args, _ = rewrite_overrides(["num_generations=16,32,64", "loss_type=grpo,dapo"])  # sweeps
    assert args == ["rl.n=16,32,64", "rl.aggregation=sequence,token"]


def test_scale_rewards_values():
    if "rl.scale_rewards" not in schema_keys()[0]:
        pytest.skip("rl.scale_rewards is not in this version's schema")
    assert rewrite_overrides(["scale_rewards=true", "scale_rewards=batch", "scale_rewards=False"])[0] == [
        "rl.scale_rewards=group", "rl.scale_rewards=batch", "rl.scale_rewards=none"]


def test_unknown_keys_get_the_closest_key():
    with pytest.raises(ValueError) as err:
        rewrite_overrides(["rl.nn=3", "n=4", "lr=1e-5", "learning_rat=1", "loss_type=bnpo",
                           "per_device_train_batch_size=8", "zzz=1"], GROUPS)
    msg = str(err.value)
    assert "unknown config key 'rl.nn'; did you mean rl.n?" in msg
    assert "'n'; did you mean rl.n?" in msg and "'lr'; did you mean optim.lr?" in msg
    assert "did you mean learning_rate (TRL's name for optim.lr)?" in msg
    assert "loss_type=bnpo: no counterpart" in msg and "grpo, dapo" in msg
    assert "per_device_train_batch_size has no single key here: train.py counts prompts" in msg
    assert "'zzz'; see config/train.yaml" in msg
    assert hint("rl.num_generations") == "num_generations is TRL's name: write rl.n"


def test_a_config_group_option_that_does_not_exist_gets_the_message_of_an_unknown_key():
    from pods.config.files import groups

    with pytest.raises(ValueError) as err:  # rule=cppo: no config/rule/cppo.yaml, though rl.rule=cppo works
        rewrite_overrides(["rule=cppo", "model=tiny", "dataset=gsm8k,arithmetc", "rule=null", "~experiment"],
                          groups())
    assert str(err.value).splitlines() == [
        "invalid overrides:",
        "  - unknown config group option 'rule=cppo': config/rule/ has no cppo.yaml; the options: max_reward, "
        "max_variance, none, percentile, random; or set the key itself: rl.rule=cppo",
        "  - unknown config group option 'dataset=arithmetc': config/dataset/ has no arithmetc.yaml; did you mean "
        "dataset=arithmetic? the options: " + ", ".join(groups()["dataset"])]
    assert rewrite_overrides(["rule=random", "model=tiny", "experiment=glob(*)"], groups())[1] == []  # Hydra's own


def test_validate_hints_on_unknown_keys():
    cfg = compose([])
    OmegaConf.set_struct(cfg, False)
    cfg.rl.num_generations = 8
    cfg.optim.learnig_rate = 1e-5
    with pytest.raises(ConfigError) as err:
        validate(cfg, cuda=False)
    assert "unknown key rl.num_generations; num_generations is TRL's name: write rl.n" in str(err.value)
    assert "unknown key optim.learnig_rate; did you mean learning_rate (TRL's name for optim.lr)?" in str(err.value)


def test_train_py_applies_aliases_before_hydra(tmp_path):
    """`--cfg job` makes Hydra print the composed config and exit: the aliases reached it."""
    out = subprocess.run([sys.executable, str(ROOT / "train.py"), "model=tiny", "num_generations=8", "pods_m=4",
                          "learning_rate=1e-5", "--cfg", "job"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    cfg = OmegaConf.create(out.stdout)
    assert (cfg.rl.n, cfg.rl.m, cfg.optim.lr) == (8, 4, 1e-5) and cfg.model.name == "tiny"
    assert "note: num_generations is TRL's name for rl.n; using rl.n=8" in out.stderr
    bad = subprocess.run([sys.executable, str(ROOT / "train.py"), "rl.nn=8", "--cfg", "job"], capture_output=True,
                         text=True, cwd=tmp_path)
    assert bad.returncode == 2 and "did you mean rl.n?" in bad.stderr


def test_metrics_carry_trl_names(tmp_path):
    row = {"step": 1, "reward/total": 0.5, "reward/gsm8k": 0.4, "reward/format": 1.0, "reward_kept/total": 0.6,
           "reward_kept/gsm8k": 0.5, "completion_length/mean": 12.0, "completion_length/max": 20,
           "frac_truncated": 0.25, "lr": 1e-6, "frac_groups_with_spread": 0.75, "frac_groups_with_spread_kept": 1.0,
           "loss": 0.1, "grad_norm": 0.3}
    assert trl_metric_names(row) == {"reward": 0.5, "rewards/gsm8k/mean": 0.4, "rewards/format/mean": 1.0,
                                     "pods/kept_reward": 0.6, "completions/mean_length": 12.0,
                                     "completions/max_length": 20, "completions/clipped_ratio": 0.25,
                                     "learning_rate": 1e-6, "frac_reward_zero_std": 0.25,
                                     "pods/frac_kept_zero_std": 0.0}
    log = MetricsLogger(tmp_path)
    log.log(row)
    log.close()
    (saved,) = read_metrics(tmp_path)
    assert saved["reward/total"] == saved["reward"] == 0.5 and saved["loss"] == 0.1  # both vocabularies
    assert json.loads((tmp_path / "metrics.jsonl").read_text())["rewards/gsm8k/mean"] == 0.4
    assert aliases.METRIC_ALIASES["lr"] == "learning_rate"
