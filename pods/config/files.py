"""Where the Hydra config tree is (config/train.yaml, config/evaluate.yaml and their groups).

    from pods.config.files import CONFIG_DIR, groups
    initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None)

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
