"""Your own rewards and datasets by import path, without forking: `package.module:function`.

    dataset.rewards=[{name: my_rewards:length_penalty, weight: 0.1}]     # any reward name
    dataset.name=my_data:load                                           # a dataset

A name with a colon is imported from your code: the working directory and PYTHONPATH, as
`import package.module` would find it. Contracts (the registry's own):

    def my_reward(completions: list[str], answers: list[str], **columns) -> list[float]: ...
    def my_data(split: str) -> list[pods.data.Example | dict]: ...   # dicts: prompt, answer, any meta

Everything is checked at start-up, before a model loads (pods.config.validate calls
`check_reward` / `check_dataset`): the module imports, the attribute exists and is callable, and a
probe call works (a reward on two completions returns two numbers; a dataset's training split is a
non-empty list of examples). The error says which check failed and shows the expected signature.
Worked example: examples/custom_reward.py, docs/workbench.md.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
from typing import Callable

from pods.errors import ConfigError

REWARD_SIGNATURE = "def my_reward(completions: list[str], answers: list[str], **columns) -> list[float]"
DATASET_SIGNATURE = "def my_data(split: str) -> list[pods.data.Example | dict(prompt=str, answer=str, ...)]"
PROBE = (["<think>probe</think><answer>1</answer>", "2"], ["1", "3"])  # two completions, two answers


class PluginError(ConfigError):
    """A plug-in path that cannot be used; the message says which check failed and what is expected."""


def is_plugin(name) -> bool:
    return isinstance(name, str) and ":" in name


def load(path: str, kind: str, signature: str) -> Callable:
    """The callable at `package.module:function` (cwd and PYTHONPATH searched)."""
    module_name, _, attr = path.partition(":")
    hint = f"\n  expected: {signature}"
    if not module_name or not attr:
        raise PluginError(f"{kind} {path!r}: write it as package.module:function{hint}")
    if os.getcwd() not in sys.path:  # train.py's sys.path starts at its own folder, not the working directory
        sys.path.insert(1, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - any failure while importing the user's module
        raise PluginError(f"{kind} {path!r}: cannot import module {module_name!r} ({type(err).__name__}: {err}); "
                          f"it must be importable from the working directory or PYTHONPATH{hint}") from err
    if not hasattr(module, attr):
        raise PluginError(f"{kind} {path!r}: module {module_name!r} ({getattr(module, '__file__', '?')}) has no "
                          f"attribute {attr!r}{hint}")
    fn = getattr(module, attr)
    if not callable(fn):
        raise PluginError(f"{kind} {path!r}: {attr!r} is a {type(fn).__name__}, not a function{hint}")
    return fn


def reward(path: str) -> Callable:
    return load(path, "reward", REWARD_SIGNATURE)


def check_reward(path: str) -> None:
    """Import `path` and probe it on two completions: it must return two finite numbers."""
    fn = reward(path)
    hint = f"\n  expected: {REWARD_SIGNATURE}"
    try:
        out = fn(*PROBE)
    except Exception as err:  # noqa: BLE001
        raise PluginError(f"reward {path!r}: the probe call on two completions raised "
                          f"{type(err).__name__}: {err}{hint}") from err
    try:
        values = [float(x) for x in out]
    except (TypeError, ValueError) as err:
        raise PluginError(f"reward {path!r}: the probe call returned {out!r}, not a list of numbers{hint}") from err
    if len(values) != 2:
        raise PluginError(f"reward {path!r}: the probe call on 2 completions returned {len(values)} values; "
                          f"return one score per completion{hint}")
    if not all(math.isfinite(v) for v in values):
        raise PluginError(f"reward {path!r}: the probe call returned non-finite scores {values}{hint}")


def examples(path: str, split: str) -> list:
    """The `pods.data.Example`s of `split` from the dataset function at `path`."""
    from pods.data import Example

    fn = load(path, "dataset", DATASET_SIGNATURE)
    hint = f"\n  expected: {DATASET_SIGNATURE}"
    try:
        rows = fn(split)
    except Exception as err:  # noqa: BLE001
        raise PluginError(f"dataset {path!r}: calling it with split={split!r} raised "
                          f"{type(err).__name__}: {err}{hint}") from err
    try:
        rows = list(rows)
    except TypeError as err:
        raise PluginError(f"dataset {path!r}: split {split!r} returned {type(rows).__name__}, not a list{hint}") from err
    out = []
    for i, row in enumerate(rows):
        if isinstance(row, Example):
            out.append(row)
        elif isinstance(row, dict) and isinstance(row.get("prompt"), str) and "answer" in row:
            meta = {k: v for k, v in row.items() if k not in ("prompt", "answer")}
            out.append(Example(prompt=row["prompt"], answer=str(row["answer"]), meta=meta))
        else:
            raise PluginError(f"dataset {path!r}: split {split!r}, row {i} is {row!r:.200}: each row must be a "
                              f"pods.data.Example or a dict with a string 'prompt' and an 'answer'{hint}")
    return out


def check_dataset(path: str, split: str = "train") -> None:
    """Import `path` and load `split`: a non-empty list of valid examples."""
    if not examples(path, split):
        raise PluginError(f"dataset {path!r}: split {split!r} is empty\n  expected: {DATASET_SIGNATURE}")
