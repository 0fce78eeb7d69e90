"""Import a dependency that comes with an optional extra, or fail saying which extra to install.

    stats = require("scipy.stats", "analysis")      # module, or ImportError naming pods[analysis]

The core (training, rewards, the TRL integration) needs only the `dependencies` of pyproject.toml;
the extras are `analysis` (matplotlib, scipy, pandas), `wandb` and `gym` (reasoning-gym).
In the checkout `uv sync` installs all of them (the dev group), so this only fires for a library
install without the extra.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from types import ModuleType

from pods.errors import MissingExtra

EXTRAS = {"analysis": "speed-up tables and figures", "wandb": "Weights & Biases logging",
          "gym": "the gsm_symbolic dataset (reasoning-gym)"}


def require(module: str, extra: str) -> ModuleType:
    """`importlib.import_module(module)`; pods.errors.MissingExtra (an ImportError) naming the install command."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; valid: {', '.join(EXTRAS)}")
    try:
        return importlib.import_module(module)
    except ImportError as err:
        if err.name is None or module.split(".")[0] != err.name.split(".")[0]:
            raise  # the package is there but something inside it failed: show that error as it is
        raise MissingExtra(
            f"{module.split('.')[0]} is needed for {EXTRAS[extra]}; install the extra: "
            f"`pip install 'pods[{extra}]'` (or `uv add 'pods[{extra}]'`; in the pods checkout `uv sync`)"
        ) from err


def installed_versions(names) -> dict[str, str | None]:
    """{distribution: its installed version, None when it is not installed}."""
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out
