"""Your own rewards and datasets without forking: a file path or an import path, then `:function`.

    dataset.rewards=[{name: rewards/countdown.py:exact_number, weight: 1.0}]   # a file (relative or absolute)
    dataset.name=rewards/countdown.py:countdown                               # a dataset function
    dataset.rewards=[{name: my_package.rewards:length_penalty, weight: 0.1}]  # installed code

Contract: REWARD_SIGNATURE, DATASET_SIGNATURE. A file is loaded under a private module name without touching sys.path
(no `rewards.py` in the working directory can shadow it); a relative path is looked up in the working directory,
then in the checkout. All is checked at start-up: a reward by a probe call on `PROBE` (pods.rewards.probe, the check
of every later call), a dataset by reading its split; the error says which check failed, and user code that
calls sys.exit (or an argparse at a file's top level) is a PluginError naming the file. docs/workbench.md.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Callable

from pods.errors import ConfigError

REWARD_SIGNATURE = "def my_reward(completions: list[str], answers: list[str], **columns) -> list[float]"
DATASET_SIGNATURE = "def my_data(split: str) -> list[pods.data.Example | dict(prompt=str, answer=str, ...)]"
PROBE = (["<think>probe</think><answer>1</answer>", "2"], ["1", "3"])  # two completions, two answers
CHECKOUT = Path(__file__).resolve().parents[1]  # where train.py and rewards/ live in a clone


class PluginError(ConfigError):
    """A plug-in path that cannot be used; the message says which check failed and what is expected."""


def is_plugin(name) -> bool:
    return isinstance(name, str) and ":" in name


def is_file(module: str) -> bool:
    """`rewards/countdown.py` names a file; `my_package.rewards` a module."""
    return module.endswith(".py") or "/" in module or os.sep in module


def find_file(module: str) -> Path | None:
    """The plug-in file: absolute, or relative to the working directory, then to the checkout."""
    path = Path(module).expanduser()
    for candidate in ([path] if path.is_absolute() else [Path.cwd() / path, CHECKOUT / path]):
        if candidate.is_file():
            return candidate.resolve()
    return None


def load_file(path: Path):
    """The module of the file at `path`, loaded once under a private name derived from its resolved path."""
    name = "pods_plugin_" + hashlib.sha1(str(path).encode()).hexdigest()[:16]
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # by name, so pickling (multiprocess data loaders) finds it
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


def load(path: str, kind: str, signature: str) -> Callable:
    """The callable at `file.py:function` or `package.module:function`; PluginError saying what failed."""
    module_name, _, attr = path.rpartition(":")
    hint = f"\n  expected: {signature}"
    if not module_name or not attr:
        raise PluginError(f"{kind} {path!r}: write it as path/to/file.py:function or package.module:function{hint}")
    try:
        if is_file(module_name):
            file = find_file(module_name)
            if file is None:
                where = "" if Path(module_name).is_absolute() else f" (looked in {Path.cwd()} and {CHECKOUT})"
                raise PluginError(f"{kind} {path!r}: no file {module_name}{where}{hint}")
            module = load_file(file)
        else:
            if os.getcwd() not in sys.path:  # train.py's sys.path starts at its own folder, not the working dir
                sys.path.insert(1, os.getcwd())
            module = importlib.import_module(module_name)
    except PluginError:
        raise
    except SystemExit as err:  # sys.exit or an argparse at its top level: not the end of train.py
        where = file if is_file(module_name) else module_name
        raise PluginError(f"{kind} {path!r}: importing {where} {exited(err)}: a plug-in must not end the program; "
                          "code that parses a command line (argparse) or exits belongs under "
                          f"`if __name__ == \"__main__\":`{hint}") from None
    except Exception as err:  # any failure while importing the user's code
        raise PluginError(f"{kind} {path!r}: cannot import {module_name!r} ({type(err).__name__}: {err}); a module "
                          f"must be importable from the working directory or PYTHONPATH{hint}") from err
    if not hasattr(module, attr):
        raise PluginError(f"{kind} {path!r}: {module_name!r} ({getattr(module, '__file__', '?')}) has no "
                          f"attribute {attr!r}{hint}")
    fn = getattr(module, attr)
    if not callable(fn):
        raise PluginError(f"{kind} {path!r}: {attr!r} is a {type(fn).__name__}, not a function{hint}")
    return fn


def exited(err: SystemExit) -> str:
    """'called sys.exit(2)': what user code that raised SystemExit did, for a message."""
    if err.code is None:
        return "called sys.exit()"
    said = "" if err.code == 0 else " (a usage or error line printed just above came from it, not from pods)"
    return f"called sys.exit({err.code!r}){said}"


def reward(path: str) -> Callable:
    return load(path, "reward", REWARD_SIGNATURE)


def rows(path: str, split: str) -> list:
    """The rows the dataset function at `path` returns for `split` (pods.data turns them into examples)."""
    fn = load(path, "dataset", DATASET_SIGNATURE)
    hint = f"\n  expected: {DATASET_SIGNATURE}"
    try:
        out = fn(split)
    except SystemExit as err:
        raise PluginError(f"dataset {path!r}: calling it with split={split!r} {exited(err)}: return the rows, "
                          f"do not end the program{hint}") from None
    except Exception as err:
        raise PluginError(f"dataset {path!r}: calling it with split={split!r} raised "
                          f"{type(err).__name__}: {err}{hint}") from err
    if isinstance(out, (str, bytes, dict)):
        raise PluginError(f"dataset {path!r}: split {split!r} returned a {type(out).__name__}, not a list{hint}")
    try:
        return list(out)
    except TypeError as err:
        raise PluginError(f"dataset {path!r}: split {split!r} returned {type(out).__name__}, not a list{hint}") from err
