"""Start-up checks shared by the configs: field types from the schema dataclasses, numbers, paths.

    problems = schema_problems(cfg, TrainConfig)     # ["rl.n must be an integer, got 4.5 ...", ...]
    problems += integer("seed", cfg.seed, low=0, high=SEED_MAX)
    problems += number("rl.top_p", cfg.rl.top_p, low=0, low_open=True, high=1)
    problems += output_path("output_root", Path(cfg.output_root))
    validate_eval(eval_cfg)                          # evaluate-run.py's settings (config/evaluate.yaml)

Every function returns a list of messages (empty: fine) that name the key, the value and what to
write instead; the callers join them into one pods.errors.ConfigError. `schema_problems` reads the
expected type of every field from the dataclass annotations (int, float, bool, str, list, dict, a
nested dataclass; `Any` fields are checked by their owner), so a new field is checked as soon as
it is declared.
"""

from __future__ import annotations

import dataclasses
import math
import os
import typing
from pathlib import Path

from omegaconf import DictConfig, ListConfig, OmegaConf

from pods.errors import ConfigError

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


def schema_problems(cfg, schema, prefix: str = "", choices: dict | None = None) -> list[str]:
    """Keys of `schema` (a dataclass) missing from `cfg` or holding a value of the wrong type.

    choices: {dotted key: valid names} of string fields, listed when such a field holds a non-string."""
    hints = typing.get_type_hints(schema)
    choices = choices or {}
    problems = []
    for f in dataclasses.fields(schema):
        key, kind = prefix + f.name, hints[f.name]
        if f.name not in cfg:
            problems.append(f"missing key {key}: add it back (its default is in config/ and pods/config_schema.py)")
            continue
        value = _raw(cfg, f.name)
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


def _raw(cfg, key):
    """cfg[key] without resolving errors surfacing as tracebacks (an interpolation that fails -> None)."""
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
    if kind in (int, float) and isinstance(value, str):
        return " (a quoted number is a string: write it unquoted)"
    return ""


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
    if low is not None and high is None:
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


# ----------------------------------------------------------------------------- train.py


def _text(key: str, value, *, none_ok: bool = True) -> list[str]:
    if (value is None and none_ok) or (isinstance(value, str) and value != ""):
        return []
    return [f"{key} must be a non-empty string{' or null' if none_ok else ''}, got {value!r}"]


def train_problems(cfg) -> list[str]:
    """Ranges and combinations of config/train.yaml beyond the types (run after `schema_problems`)."""
    rl, optim, model, data = cfg.rl, cfg.optim, cfg.model, cfg.dataset
    p = integer("seed", cfg.seed, low=0, high=SEED_MAX) + integer("model.tiny.seed", model.tiny.seed, low=0,
                                                                  high=SEED_MAX)
    p += integer("rl.max_steps", rl.max_steps, low=1, none_ok=True)
    p += number("rl.max_time", rl.max_time, low=0, low_open=True, none_ok=True, why="seconds of training time")
    p += number("rl.top_p", rl.top_p, low=0, low_open=True, high=1, why="1 samples from the whole distribution")
    p += integer("dataset.limit", data.limit, low=1, none_ok=True, why="null keeps every example")
    p += number("optim.weight_decay", optim.weight_decay, low=0)
    betas = list(optim.betas)
    if len(betas) != 2 or not all(_KINDS[float][0](b) and 0 <= b < 1 for b in betas):
        p.append(f"optim.betas must be two numbers in [0, 1) (Adam's beta1, beta2), got {betas}; "
                 "e.g. optim.betas=[0.9,0.99]")
    p += number("model.lora.dropout", model.lora.dropout, low=0, high=1, high_open=True)
    if model.lora.rank > 0:
        p += integer("model.lora.alpha", model.lora.alpha, low=1)
    if model.name == "tiny":
        t = model.tiny
        for key in ("hidden", "layers", "heads", "kv_heads"):
            p += integer(f"model.tiny.{key}", t[key], low=1)
        if t.heads >= 1 and t.kv_heads >= 1 and (t.hidden % t.heads or t.heads % t.kv_heads):
            p.append(f"model.tiny: hidden={t.hidden} must be a multiple of heads={t.heads}, and heads a multiple "
                     f"of kv_heads={t.kv_heads}")
    for key in ("dataset.path", "dataset.system_prompt", "dataset.accuracy_reward", "logging.entity"):
        section, name = key.split(".")
        value = cfg[section][name]
        p += [] if key == "dataset.system_prompt" and value == "" else _text(key, value)
    for i, item in enumerate(data.rewards):
        if isinstance(item, (dict, DictConfig)) and "weight" in item:
            p += number(f"dataset.rewards[{i}].weight", item["weight"])
    return p + run_dir_problems(cfg)


def run_dir_problems(cfg) -> list[str]:
    """output_root must be (or become) a writable directory; run_name a name inside it."""
    p = _text("run_name", cfg.run_name)
    if p:
        return p
    root = Path(cfg.output_root)
    name = cfg.run_name
    if name is not None:
        parts = Path(name).parts
        if Path(name).is_absolute() or ".." in parts or not parts or name.strip() != name:
            return [f"run_name {name!r} must be a name inside output_root (no absolute path, no '..', no "
                    f"surrounding spaces): the run would land outside {root}; set output_root=DIR to choose "
                    "the parent directory and run_name=NAME for the run"]
    p = output_path("output_root", root)
    if not p and name is not None and (root / name).exists() and not (root / name).is_dir():
        p.append(f"run directory {root / name} is a file: choose another run_name")
    return p


# ----------------------------------------------------------------------------- evaluate-run.py


def eval_problems(cfg) -> list[str]:
    """The settings of config/evaluate.yaml (keys this module does not know are left to their owners)."""
    if OmegaConf.is_missing(cfg, "run_dir") or cfg.get("run_dir") in (None, ""):
        return ["run_dir is required: the run directory written by train.py, e.g. "
                "`evaluate-run.py run_dir=checkpoints/<run>`"]
    p = []
    run_dir = Path(str(cfg.run_dir))
    if not run_dir.is_dir():
        p.append(f"run_dir {run_dir} is not a directory; give the run directory written by train.py "
                 "(checkpoints/<run_name>)")
    elif not (run_dir / "config.yaml").is_file():
        p.append(f"{run_dir}: no config.yaml - not a run directory written by train.py")
    checks = {
        "repeats": lambda v: integer("repeats", v, low=1),
        "temperature": lambda v: number("temperature", v, low=0, why="0 is greedy decoding"),
        "top_p": lambda v: number("top_p", v, low=0, low_open=True, high=1),
        "max_tokens": lambda v: integer("max_tokens", v, low=1),
        "seed": lambda v: integer("seed", v, low=0, high=SEED_MAX),
        "batch_size": lambda v: integer("batch_size", v, low=1),
        "examples": lambda v: integer("examples", v, low=0),
        "max_prompt_tokens": lambda v: integer("max_prompt_tokens", v, low=1, none_ok=True, why="null keeps all"),
        "paper_grader": lambda v: [] if v in (None, "paper_answer", "paper_answer_decimal") else
        [f"paper_grader must be paper_answer, paper_answer_decimal or null, got {v!r}"],
        "base": lambda v: [] if isinstance(v, bool) else [f"base must be true or false, got {v!r}"],
        "output": lambda v: [] if v is None or (isinstance(v, str) and v) else
        [f"output must be a file path or null, got {v!r}"],
        "backend": lambda v: [] if v is None or isinstance(v, (dict, DictConfig)) else
        [f"backend must be a mapping such as {{name: vllm}} or null, got {v!r}"],
        "datasets": lambda v: [] if v is None or isinstance(v, (list, ListConfig)) else
        [f"datasets must be a list of {{name: ...}} entries or null, got {v!r}"],
    }
    for key, check in checks.items():
        if key in cfg:
            p += check(_raw(cfg, key))
    out = cfg.get("output")
    if isinstance(out, str) and out and Path(out).is_dir():
        p.append(f"output {out} is a directory; give a file path such as {Path(out) / 'eval_results.json'}")
    for i, entry in enumerate(cfg.get("datasets") or []):
        if not isinstance(entry, (dict, DictConfig)) or not entry.get("name"):
            p.append(f"datasets[{i}] must be a mapping with at least a name, e.g. {{name: gsm8k}}; got {entry!r}")
        else:
            p += integer(f"datasets[{i}].limit", entry.get("limit"), low=1, none_ok=True)
    return p


def validate_eval(cfg) -> None:
    """Raise ConfigError listing every problem of an evaluate-run.py config."""
    problems = eval_problems(cfg)
    if problems:
        raise ConfigError("invalid evaluation settings:\n  - " + "\n  - ".join(problems))
