"""Where the Hydra config tree is (config/train.yaml, config/evaluate.yaml and their groups), and composing it.

    from pods.config.files import CONFIG_DIR, compose, groups
    cfg = compose(["experiment=demo", "rl.n=8"])                 # config/train.yaml with overrides
    cfg = compose(["run_dir=x"], name="evaluate")                # config/evaluate.yaml
    compose(["experiment=gsm8k_main"], hydra=True).hydra.sweeper  # with Hydra's own section (a preset's sweep)

A checkout reads its own `config/`; an installed wheel carries a copy of it as `pods/_config/`
(pyproject.toml: force-include), so the `pods` command composes the same configs from either.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGED = Path(__file__).resolve().parents[1] / "_config"  # the wheel's copy
CONFIG_DIR = _PACKAGED if _PACKAGED.is_dir() else Path(__file__).resolve().parents[2] / "config"


def groups() -> list[str]:
    """The config groups (model, dataset, ...): names an override like `model=tiny` may choose from."""
    return sorted(p.name for p in CONFIG_DIR.iterdir() if p.is_dir())


def compose(overrides: list[str], *, hydra: bool = False, name: str = "train"):
    """config/<name>.yaml with `overrides` (hydra: with Hydra's own section, e.g. a preset's sweep)."""
    from hydra import compose as hydra_compose  # Hydra is heavy: load it when composing
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return hydra_compose(config_name=name, overrides=list(overrides), return_hydra_config=hydra)
