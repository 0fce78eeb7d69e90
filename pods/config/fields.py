"""The one walker that checks a config against its declared settings (pods.settings.setting).

    problems = walk(cfg, TrainConfig)    # every unknown or missing key, wrong type, bound or choice, at once
    by_key(cfg, TrainConfig)             # the same, by dotted key: {"rl.n": ["rl.n must be an integer ..."]}
    [key for key, f, kind in declared(TrainConfig) if f.metadata.get("resume_safe")]

Contract: a field's annotation gives its kind, its metadata (pods.settings) the rest; a bound or choice written
"module:NAME" is read from where it is implemented when checked (its module may import torch); a section with
`schema_of` (backend) is checked against the dataclass its values choose (the chosen backend's settings).
Each problem is one sentence naming the key, the value and what to write.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import math
import os
import types
import typing
from pathlib import Path

from omegaconf import DictConfig, ListConfig

SEED_MAX = 2**32 - 1  # numpy's seed range (torch takes more)
_KINDS = {  # type -> (test, what to write)
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    float: (lambda v: _real(v) and math.isfinite(v), "a finite number"),
    bool: (lambda v: isinstance(v, bool), "true or false"),
    str: (lambda v: isinstance(v, str), "a string"),
    list: (lambda v: isinstance(v, (list, ListConfig)), "a list, e.g. [a, b]"),
    dict: (lambda v: isinstance(v, (dict, DictConfig)), "a mapping, e.g. {key: value}"),
}


def kind_of(annotation) -> tuple[type, bool]:
    """(the base type, nullable) of an annotation: `int | None` -> (int, True), `list[str]` -> (list, False)."""
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        base = [a for a in args if a is not type(None)]
        return kind_of(base[0])[0], type(None) in args
    return typing.get_origin(annotation) or annotation, False


def declared(schema, prefix: str = ""):
    """(dotted key, dataclasses.Field, annotation) of every field of `schema`, sections first, then their keys."""
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        yield prefix + f.name, f, hints[f.name]
        if dataclasses.is_dataclass(hints[f.name]):
            yield from declared(hints[f.name], f"{prefix}{f.name}.")


def resolved(ref):
    """A bound or choice list as written in the metadata; "module:NAME" is read from that module."""
    if isinstance(ref, str) and ":" in ref:
        module, name = ref.split(":")
        return getattr(importlib.import_module(module), name)
    if isinstance(ref, tuple):
        return tuple(name for item in ref for name in (resolved(item) if ":" in str(item) else (item,)))
    return ref


def choices_of(f: dataclasses.Field) -> tuple | None:
    """The names a field accepts (its `choices` metadata, resolved), or None when any value of its type will do."""
    return tuple(resolved(f.metadata["choices"])) if "choices" in f.metadata else None


def walk(cfg, schema, prefix: str = "", **kw) -> list[str]:
    """Every problem of `cfg` against `schema` (a dataclass), in one pass over the keys: unknown keys (with a
    hint), missing keys (unless partial), types, bounds and choices; nested sections recursively.

    Keywords (see by_key): partial, extra, hint, unknown_choice."""
    return [problem for found in by_key(cfg, schema, prefix, **kw).values() for problem in found]


def by_key(cfg, schema, prefix: str = "", *, partial: bool = False, extra=(), hint=None,
           unknown_choice: str = "") -> dict[str, list[str]]:
    """walk's problems by dotted key {key: [problem, ...]}, only keys that have any.

    partial: keys may be left out (their defaults apply); extra: more keys the section accepts; hint(dotted
    key): what to write instead of an unknown key (None: the section's closest key); unknown_choice: the
    message of a bad choice, formatted with key, names ("a, b or c"), value and why (default "unknown KEY
    VALUE; valid: A, B")."""
    if not isinstance(cfg, (dict, DictConfig)):
        return {prefix.rstrip("."): [f"{prefix.rstrip('.')} must be a section of keys, got {cfg!r}"]}
    fields = {f.name: (f, kind) for key, f, kind in declared(schema) if "." not in key}
    out = {prefix + str(key): [_unknown(prefix + str(key), list(fields) + list(extra), hint)] for key in cfg
           if key not in fields and key not in extra}
    for name, (f, annotation) in fields.items():
        key = prefix + name
        if name not in cfg:
            if not partial:
                out[key] = [f"missing key {key}: add it back (its default is in config/ and "
                            f"{schema.__module__.replace('.', '/')}.py)"]
            continue
        value = value_of(cfg, name)
        if dataclasses.is_dataclass(annotation):
            out.update(by_key(value, annotation, key + ".", partial=partial, hint=hint,
                              unknown_choice=unknown_choice))
        elif "schema_of" in f.metadata:
            out.update(chosen(key, value, f, partial=partial, hint=hint, unknown_choice=unknown_choice))
        elif found := field_problems(key, value, f, annotation, unknown_choice):
            out[key] = found
    return out


def chosen(key: str, value, f: dataclasses.Field, **kw) -> dict[str, list[str]]:
    """by_key of a section whose `name` chooses its keys (metadata schema_of: "module:function" giving the dataclass
    for a name; backend: the chosen backend's settings). An unknown name is the section's one problem."""
    if not isinstance(value, (dict, DictConfig)):
        return {key: [f"{key} must be a section of keys, got {value!r}"]}
    name = value_of(value, "name") if "name" in value else None
    if wrong := field_problems(f"{key}.name", name, f, str, kw.get("unknown_choice", "")):
        return {f"{key}.name": wrong}
    return by_key(value, resolved(f.metadata["schema_of"])(name), key + ".", **kw)


def _unknown(key: str, valid: list[str], hint) -> str:
    section, _, name = key.rpartition(".")
    found = hint(key) if hint else None  # a removed key, TRL's name for a key, "did you mean rl.n?"
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    found = found or (f"did you mean {section + '.' if section else ''}{close[0]}?" if close else None)
    return f"unknown key {key}; " + (f"{found}; " if found else "") + f"valid keys: {', '.join(valid)}"


def field_problems(key: str, value, f: dataclasses.Field, annotation, unknown_choice: str = "") -> list[str]:
    """The problems of one value: its type, then its bounds or choices (empty: fine)."""
    kind, nullable = kind_of(annotation)
    meta, names = f.metadata, choices_of(f)
    if value is None and nullable:
        return []
    if names is not None and not (isinstance(value, str) and value in names):
        if unknown_choice:
            *most, last = [*names, "null"] if nullable else names
            listed = f"{', '.join(most)} or {last}" if most else last
            why = f" ({meta['why']})" if meta.get("why") else ""
            return [unknown_choice.format(key=key, names=listed, value=value, why=why)]
        shown = repr(value) if isinstance(value, str) else value
        return [f"unknown {key} {shown}; valid: {', '.join(names)}{_hint(kind, value)}"]
    ok, what = _KINDS[kind]
    if kind is str and nullable and not meta.get("empty_ok"):
        ok, what = (lambda v: isinstance(v, str) and v != ""), "a non-empty string"
    what, alt = meta.get("what", what), " or null" if nullable else ""
    if not ok(value):
        what, alt = ("true, false", " or null") if kind is bool and nullable else (what, alt)
        return [f"{key} must be {what}{alt}, got {value!r}{_hint(kind, value)}"]
    low, high, why = resolved(meta.get("low")), resolved(meta.get("high")), meta.get("why", "")
    if kind is int and (low is not None or high is not None):
        return integer(key, value, low=low, high=high, none_ok=nullable, why=why)
    if kind is float and (low is not None or high is not None):
        return number(key, value, low=low, high=high, low_open=meta.get("low_open", False),
                      high_open=meta.get("high_open", False), none_ok=nullable, why=why)
    return []


def _real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def finite(v) -> bool:
    """A finite int or float (not a bool)."""
    return _real(v) and math.isfinite(v)


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
