"""Start-up check helpers: field types from the schema dataclasses, numbers in ranges, output paths.

    problems = schema_problems(cfg, TrainConfig)     # ["rl.n must be an integer, got 4.5 ...", ...]
    problems += integer("seed", cfg.seed, low=0, high=SEED_MAX)
    problems += number("rl.top_p", cfg.rl.top_p, low=0, low_open=True, high=1)
    problems += output_path("output_root", Path(cfg.output_root))

Each returns messages (empty: fine) naming the key, the value and what to write; pods.config.checks
joins them into one pods.errors.ConfigError. `schema_problems` reads each field's type from the dataclass
annotations (`_KINDS`, nested dataclasses; `Any` fields are checked by their owner) as soon as it is declared.
"""

from __future__ import annotations

import dataclasses
import math
import os
import typing
from pathlib import Path

from omegaconf import DictConfig, ListConfig

SEED_MAX = 2**32 - 1  # numpy's seed range (torch takes more)
_KINDS = {  # annotation -> (test, what to write)
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    float: (lambda v: _real(v) and math.isfinite(v), "a finite number"),
    bool: (lambda v: isinstance(v, bool), "true or false"),
    str: (lambda v: isinstance(v, str), "a string"),
    list: (lambda v: isinstance(v, (list, ListConfig)), "a list, e.g. [a, b]"),
    dict: (lambda v: isinstance(v, (dict, DictConfig)), "a mapping, e.g. {key: value}"),
}


def _real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def finite(v) -> bool:
    """A finite int or float (not a bool)."""
    return _real(v) and math.isfinite(v)


def schema_problems(cfg, schema, prefix: str = "", choices: dict | None = None, partial: bool = False) -> list[str]:
    """Keys of `schema` (a dataclass) missing from `cfg` or holding a value of the wrong type.

    choices: {dotted key: valid names} of string fields, listed when such a field holds a non-string;
    partial: keys may be left out (the dataclass default applies)."""
    hints = typing.get_type_hints(schema)
    choices = choices or {}
    problems = []
    for f in dataclasses.fields(schema):
        key, kind = prefix + f.name, hints[f.name]
        if f.name not in cfg:
            if partial:
                continue
            problems.append(f"missing key {key}: add it back (its default is in config/ and pods/config/schema.py)")
            continue
        value = value_of(cfg, f.name)
        if dataclasses.is_dataclass(kind):
            if not isinstance(value, (dict, DictConfig)):
                problems.append(f"{key} must be a section of keys, got {value!r}")
            else:
                problems += schema_problems(value, kind, key + ".", choices)
        elif kind is str and key in choices and not isinstance(value, str):
            problems.append(f"unknown {key} {value!r}; valid: {', '.join(choices[key])}{_hint(kind, value)}")
        elif kind in _KINDS and not _KINDS[kind][0](value):
            problems.append(f"{key} must be {_KINDS[kind][1]}, got {value!r}{_hint(kind, value)}")
    return problems


def value_of(cfg, key):
    """cfg[key], or a text saying why it cannot be read (an interpolation that fails, a missing value)."""
    try:
        return cfg[key]
    except Exception as err:  # noqa: BLE001 - OmegaConf's interpolation/missing-value errors
        return f"<unreadable: {type(err).__name__}: {err}>"


def _hint(kind, value) -> str:
    if kind is int and _real(value) and float(value).is_integer() and math.isfinite(value):
        return f" (write {int(value)})"
    if kind is int and _real(value):
        return " (counts are whole numbers)"
    if kind is str and value is False:
        return ' (YAML reads an unquoted no/off as false: quote it, e.g. "no")'
    if kind is bool and isinstance(value, str):
        return " (write true or false, unquoted)"
    if kind in (int, float) and isinstance(value, str) and _numeric(value):
        return " (a quoted number is a string: write it unquoted)"
    return ""


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def integer(key: str, value, *, low: int | None = None, high: int | None = None, none_ok: bool = False,
            why: str = "") -> list[str]:
    """`value` must be an integer in [low, high] (or None when `none_ok`); `why` is added to the message."""
    if value is None and none_ok:
        return []
    if not _KINDS[int][0](value):
        return [f"{key} must be an integer{' or null' if none_ok else ''}, got {value!r}{_hint(int, value)}"]
    if (low is not None and value < low) or (high is not None and value > high):
        span = f">= {low}" if high is None else f"in [{low}, {high}]" if low is not None else f"<= {high}"
        return [f"{key} must be an integer {span}{' or null' if none_ok else ''}, got {value}"
                + (f"; {why}" if why else "")]
    return []


def number(key: str, value, *, low: float | None = None, high: float | None = None, low_open: bool = False,
           high_open: bool = False, none_ok: bool = False, why: str = "") -> list[str]:
    """`value` must be a finite number within the bounds (open or closed ends), or None when `none_ok`."""
    if value is None and none_ok:
        return []
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    span = f"in {lo}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi}"
    if low is None and high is None:
        span = "(finite)"
    elif low is not None and high is None:
        span = f"> {low}" if low_open else f">= {low}"
    elif high is not None and low is None:
        span = f"< {high}" if high_open else f"<= {high}"
    ok = _KINDS[float][0](value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if ok:
        return []
    return [f"{key} must be a number {span}{' or null' if none_ok else ''}, got {value!r}"
            + (f"; {why}" if why else "")]


def output_path(key: str, path: Path) -> list[str]:
    """A directory that exists or can be created and written: no file in the way, a writable parent."""
    if path.exists():
        if not path.is_dir():
            return [f"{key} {path} is a file, not a directory: point {key} at a directory (created when missing)"]
        return [] if os.access(path, os.W_OK | os.X_OK) else [f"{key} {path} is not writable: choose another {key}"]
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return [f"{key} {path}: {parent} is a file, so the directory cannot be created; choose another {key}"]
    if not os.access(parent, os.W_OK | os.X_OK):
        return [f"{key} {path}: cannot create it inside {parent} (not writable); choose another {key}"]
    return []
