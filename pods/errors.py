"""The project's own errors: one small hierarchy, each message saying what is wrong and what to do.

    from pods.errors import ConfigError, DataError
    raise DataError(f"{file} line {n} is not valid JSON: ...; fix the line or point dataset.path elsewhere")

    try: ...
    except PodsError as err:              # what pods.cli does for train.py, evaluate-run.py, scripts/
        print(f"error: {err}", file=sys.stderr); sys.exit(err.exit_code)       # 2

- `PodsError`: anything the user can fix (a setting, a file, a run directory); a CLI prints
  `error: <message>` without a traceback and exits with `exit_code` (2).
- `ConfigError`: a config value or combination (train.py, evaluate-run.py, presets; pods.config.checks).
- `DataError`: a dataset file or source (empty, malformed, missing column, wrong types, hub
  unreachable); names the file.
- `CheckpointError`: a checkpoint or run directory that cannot be used as asked.
- `ResultsError`: a results file (eval_results.json, metrics.jsonl, the paper's JSON/CSV) that
  the analysis scripts cannot read; names the file.
- `RewardError`: a reward function that raised (your own), or returned anything but one finite number
  per completion, on a real batch or the start-up probe; names the function and what it returned.
- `MissingExtra`: an optional extra is not installed (pods.extras.require); names the install command.
- defined beside the code that raises them: `pods.io.WriteError` (also an OSError: "no space left on
  device: <path>") and `pods.run.guard.NonFiniteError` (non-finite steps or weights).

The user-facing subclasses also derive from the builtin error they replace (ValueError,
RuntimeError, ImportError), so code that caught those keeps working. Anything that is not a PodsError is a bug
or an environment problem: the CLIs keep its traceback (pods.cli).
"""

from __future__ import annotations


class PodsError(Exception):
    """A problem the user can fix; str() is the whole message (what is wrong, what to do)."""

    exit_code = 2


class ConfigError(PodsError, ValueError):
    """A config problem found at start-up; the message names the key, the value and what to change."""


class DataError(PodsError, ValueError):
    """A dataset that cannot be used; the message names the file (or hub dataset) and what to do."""


class CheckpointError(PodsError, RuntimeError):
    """A checkpoint or run directory that cannot be used as asked."""


class ResultsError(PodsError, ValueError):
    """A results or metrics file that cannot be read; the message names the file."""


class RewardError(PodsError, ValueError):
    """A reward call that failed or returned unusable scores; names the function, what it returned, what to fix."""


class MissingExtra(PodsError, ImportError):
    """An optional dependency is not installed; the message names the extra to install (pods.extras)."""
