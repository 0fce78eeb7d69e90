"""The project's own errors: one small hierarchy, each message saying what is wrong and what to do.

    from pods.errors import ConfigError, DataError
    raise DataError(f"{file} line {n} is not valid JSON: ...; fix the line or point dataset.path elsewhere")
    try: ...
    except PodsError as err:              # what pods.cli does for train.py, evaluate-run.py, scripts/
        print(f"error: {err}", file=sys.stderr); sys.exit(err.exit_code)       # 2, no traceback

A PodsError is anything the user can fix, and also the builtin it replaces (ValueError, RuntimeError, ...);
anything else is a bug (the CLIs keep its traceback). Two more: pods.io.WriteError, pods.run.guard.NonFiniteError.
"""

from __future__ import annotations


class PodsError(Exception):
    """A problem the user can fix (a setting, a file, a run directory); str() is the whole message."""

    exit_code = 2


class ConfigError(PodsError, ValueError):
    """A config value or combination (train.py, evaluate-run.py, presets: pods.config.checks); names the key,
    the value and what to change."""


class DataError(PodsError, ValueError):
    """A dataset file or source that cannot be used (empty, malformed, a missing column, wrong types, hub
    unreachable); the message names the file (or hub dataset) and what to do."""


class CheckpointError(PodsError, RuntimeError):
    """A checkpoint or run directory that cannot be used as asked."""


class ResultsError(PodsError, ValueError):
    """A results file the analysis cannot read (eval_results.json, metrics.jsonl, the paper's JSON/CSV);
    the message names the file."""


class RewardError(PodsError, ValueError):
    """A reward call that failed or returned unusable scores; names the function, what it returned, what to fix."""


class MissingExtra(PodsError, ImportError):
    """An optional dependency is not installed (pods.extras.require); the message names the install command."""
