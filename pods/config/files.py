"""Where the Hydra config tree is (config/train.yaml, config/evaluate.yaml and their groups), and composing it.

    from pods.config.files import CONFIG_DIR, compose, composed_groups, groups
    cfg = compose(["experiment=demo", "rl.n=8"])                 # config/train.yaml with overrides
    groups()["rule"], composed_groups("train")                   # a group's options; the groups train.yaml composes
    compose([f"output_root={quote(path)}"])                      # a path as a value, whatever characters it holds
    cfg = compose(["run_dir=x"], name="evaluate")                # config/evaluate.yaml
    compose(["experiment=gsm8k_main"], hydra=True).hydra.sweeper  # with Hydra's own section (a preset's sweep)

A checkout reads its own `config/`; an installed wheel carries a copy of it as `pods/_config/`
(pyproject.toml: force-include), so the `pods` command composes the same configs from either.
"""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path

_PACKAGED = Path(__file__).resolve().parents[1] / "_config"  # the wheel's copy
CONFIG_DIR = _PACKAGED if _PACKAGED.is_dir() else Path(__file__).resolve().parents[2] / "config"


def quote(value) -> str:
    """`value` as a quoted value of Hydra's override grammar, read back as exactly `value` whatever it holds (a space,
    a quote, an apostrophe, a backslash, ${...}): f"output_root={quote(path)}"."""
    text = re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, str(value))  # backslashes before a quote or the end
    return "'" + text.replace("'", "\\'").replace("${", "\\${") + "'"


def groups() -> dict[str, list[str]]:
    """The config groups (model, dataset, ...) and their options (config/<group>/*.yaml by name): what an override
    like `model=tiny` may choose from (a group of groups, hydra/: no options of its own)."""
    return {p.name: sorted(f.stem for f in p.glob("*.yaml")) for p in sorted(CONFIG_DIR.iterdir()) if p.is_dir()}


def composed_groups(name: str = "train") -> list[str]:
    """The groups config/<name>.yaml composes (its defaults list; Hydra's own and `override` entries aside)."""
    import yaml  # PyYAML (OmegaConf's): a plain read of the defaults list, no composition

    entries = yaml.safe_load((CONFIG_DIR / f"{name}.yaml").read_text()).get("defaults") or []
    return [k for e in entries if isinstance(e, dict) for k in e if " " not in k and "/" not in k]


def compose(overrides: list[str], *, hydra: bool = False, name: str = "train"):
    """config/<name>.yaml with `overrides` (hydra: with Hydra's own section, e.g. a preset's sweep).

    Hydra composes each set of group choices (model=..., experiment=...) once per process; the plain `key=value`
    overrides are then applied to a copy by Hydra's own override step, as Hydra applies them after composing. The
    result and every error are Hydra's: a sweep, an addition (+key), a deletion (~key) or hydra=True compose whole.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl  # Hydra is heavy: load it when composing
    from hydra.core.override_parser.overrides_parser import OverridesParser

    chosen, plain, rest = set(groups()) | {"hydra"}, [], []
    for o in OverridesParser.create().parse_overrides(list(overrides)):
        simple = o.package is None and o.type.name == "CHANGE" and not o.is_sweep_override()
        key = o.key_or_group
        (plain if simple and key not in chosen and "/" not in key and not key.startswith("hydra.") else rest).append(o)
    if hydra or not plain:
        return _composed(tuple(overrides), hydra, name)
    cfg = _composed(tuple(o.input_line for o in rest), False, name)
    ConfigLoaderImpl._apply_overrides_to_config(plain, cfg)
    return cfg


def _composed(overrides: tuple[str, ...], hydra: bool, name: str):
    """A copy of Hydra's composition of `overrides` (made once per process and arguments)."""
    return copy.deepcopy(_hydra_compose(overrides, hydra, name))


@functools.lru_cache(maxsize=64)
def _hydra_compose(overrides: tuple[str, ...], hydra: bool, name: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return hydra_compose(config_name=name, overrides=list(overrides), return_hydra_config=hydra)
