"""Atomic file writes: a reader (or a crash) never sees a half-written file.

    atomic_write_json(run_dir / "eval_results.json", results)
    atomic_write_text(run_dir / "config.yaml", text)

The content goes to a temporary file in the same directory, is flushed to disk, and replaces
the target with `os.replace`; on any error the temporary file is removed and the old target is
left untouched.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Callable, TextIO


def atomic_write(path: str | Path, write: Callable[[TextIO], None]) -> None:
    """Replace `path` with what `write(file)` writes, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write(path, lambda f: f.write(text))


def atomic_write_json(path: str | Path, data, indent: int = 1) -> None:
    atomic_write(path, lambda f: json.dump(data, f, indent=indent))
