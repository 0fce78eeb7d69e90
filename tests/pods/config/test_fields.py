"""pods.config.fields: a key declared once (its schema field and metadata) is checked by the one walker."""

import dataclasses
import itertools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pods.backends import BACKENDS, settings
from pods.config.fields import by_key, choices_of, declared, kind_of, resolved, walk
from pods.config.files import CONFIG_DIR
from pods.config.schema import EvalConfig, HeldoutConfig, TrainConfig, WarmStartSettings
from pods.settings import setting

from helpers import compose

SCHEMAS = (TrainConfig, WarmStartSettings, HeldoutConfig, EvalConfig, *(settings(name) for name in BACKENDS))
LEAVES = [(key, f, kind) for key, f, kind in declared(TrainConfig) if not dataclasses.is_dataclass(kind)]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.__name__)
def test_every_field_is_typed_with_help_and_known_choices(schema):
    for key, f, annotation in declared(schema):
        kind, _ = kind_of(annotation)
        assert kind in (int, float, bool, str, list, dict) or dataclasses.is_dataclass(kind), (key, annotation)
        assert f.metadata.get("help"), f"{key}: no help"
        names = choices_of(f)  # "module:NAME" read from where the choice is implemented
        assert names is None or (names and all(isinstance(n, str) for n in names)), key
        if names is not None and f.default not in (None, dataclasses.MISSING):
            assert f.default in names, key


def test_train_yaml_and_the_schema_agree():
    """config/train.yaml sets the schema's defaults; composed, it has exactly the schema's keys."""
    raw = OmegaConf.load(f"{CONFIG_DIR}/train.yaml")
    for key, f, _ in LEAVES:
        value = OmegaConf.select(raw, key, default="<not in train.yaml>")  # model/dataset/backend: config groups
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        assert value in ("<not in train.yaml>", default), f"{key}: train.yaml {value!r}, schema {default!r}"
    assert by_key(compose([]), TrainConfig) == {}


def yaml_comments(path: Path) -> dict[str, str | None]:
    """{dotted key: the comment lines right above it joined by spaces, or None} of a YAML file of nested mappings
    (two spaces a level; defaults-list entries left out)."""
    lines, out, stack = path.read_text().splitlines(), {}, []
    for i, line in enumerate(lines):
        found = re.match(r"^( *)([A-Za-z_]\w*):", line)
        if not found:
            continue
        stack = stack[:len(found[1]) // 2] + [found[2]]
        block = list(itertools.takewhile(lambda text: text.strip().startswith("#"), reversed(lines[:i])))
        out[".".join(stack)] = " ".join(text.strip()[1:].strip() for text in reversed(block)) if block else None
    return out


@pytest.mark.parametrize("name, schema, least", [("train", TrainConfig, 67), ("evaluate", EvalConfig, 15)])
def test_yaml_comments_are_the_help(name, schema, least):
    """Help is written once, on the field: every key of config/<name>.yaml (Hydra's defaults list and hydra section
    aside) is a key of the schema, and the comment above it is that key's help, word for word."""
    comments = {key: text for key, text in yaml_comments(Path(CONFIG_DIR) / f"{name}.yaml").items()
                if key.split(".")[0] not in ("defaults", "hydra")}
    helps = {key: f.metadata["help"] for key, f, _ in declared(schema)}
    assert [key for key in comments if key not in helps] == [], "keys the schema does not declare"
    assert [key for key, text in comments.items() if text is None] == [], "keys without a comment"
    assert len(comments) >= least and comments == {key: helps[key] for key in comments}


@pytest.mark.parametrize("name", BACKENDS)
def test_a_backends_yaml_holds_its_settings_defaults_and_help(name):
    """config/backend/<name>.yaml: exactly the keys of the backend's settings (pods.backends.<name>), their
    defaults, and each help as the comment above the key."""
    path = Path(CONFIG_DIR) / "backend" / f"{name}.yaml"
    fields = {key: f for key, f, _ in declared(settings(name))}
    raw = OmegaConf.to_container(OmegaConf.load(path))
    assert list(raw) == list(fields) and raw["name"] == name
    for key, f in list(fields.items())[1:]:  # after the name, which has no default
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        assert raw[key] == default, (key, raw[key], default)
    comments = yaml_comments(path)
    assert {key: comments.get(key) for key in fields} == {key: f.metadata["help"] for key, f in fields.items()}


def test_every_bound_is_enforced_from_the_metadata_alone():
    """A key with a range needs nothing but its field: a value past each end is refused, naming the key."""
    cfg = compose([])
    bounded = [(key, f) for key, f, _ in LEAVES if "low" in f.metadata or "high" in f.metadata]
    assert {"rl.n", "rl.top_p", "seed", "rl.max_generation_rounds", "optim.lr"} <= {k for k, _ in bounded}
    for key, f in bounded:
        for end, step in (("low", -1), ("high", 1)):
            if end in f.metadata:
                edge = resolved(f.metadata[end])
                value = edge if f.metadata.get(f"{end}_open") else edge + step
                found = by_key(OmegaConf.merge(cfg, OmegaConf.from_dotlist([f"{key}={value}"])), TrainConfig)
                assert list(found) == [key] and found[key][0].startswith(f"{key} must be"), (key, value, found)


@dataclass
class _Section:
    count: int = setting(3, "how many", low=1, high=9, why="a small count")
    mode: str = setting("a", "which mode", choices=("a", "b"))
    label: str | None = setting(None, "a name or null")


@dataclass
class _Schema:
    seed: int = setting(0, "a seed", low=0)
    section: _Section = setting(help="a section", factory=_Section)


def test_one_walk_reports_every_problem_at_once():
    cfg = {"seed": -1, "section": {"count": 2.5, "mode": "c", "label": "", "extra": 1}, "typo": 0}
    assert walk(cfg, _Schema) == [
        "unknown key typo; valid keys: seed, section",
        "seed must be an integer >= 0, got -1",
        "unknown key section.extra; valid keys: count, mode, label",
        "section.count must be an integer, got 2.5 (counts are whole numbers)",
        "unknown section.mode 'c'; valid: a, b",
        "section.label must be a non-empty string or null, got ''",
    ]
    assert walk({"seed": 0, "section": {"count": 10, "mode": "a", "label": None}}, _Schema) == \
        ["section.count must be an integer in [1, 9], got 10; a small count"]
    assert walk({"seed": 0}, _Schema) == ["missing key section: add it back (its default is in config/ and "
                                          f"{__name__.replace('.', '/')}.py)"]
    assert walk({"section": {"mode": "b"}}, _Schema, partial=True) == []


def test_a_misspelt_metadata_name_is_refused_where_it_is_declared():
    with pytest.raises(TypeError, match="unknown metadata \\['hgih'\\]"):
        setting(1, "a count", hgih=3)
