"""A directory's manifest: the size and SHA-256 of every file, written last, checked before use.

    write(checkpoint_dir)            # manifest.json listing every other file under the directory
    problems = check(checkpoint_dir) # [] intact; ["trainer.pt: 1234 bytes, the manifest says 5678"]
                                     # None when the directory has no manifest.json

It catches what happens after a checkpoint was renamed into place: a file truncated or lost by a full
or failing disk, a copy cut short, a file edited by hand. What one SHA-256 pass costs: docs/long-runs.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from pods.io import sha256

MANIFEST = "manifest.json"
FORMAT = "pods-manifest/1"


def _files(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*")
                  if p.is_file() and p.name != MANIFEST)


def write(directory: str | Path) -> dict:
    """Write `<directory>/manifest.json` ({"format", "files": {relative path: {size, sha256}}}); return it."""
    directory = Path(directory)
    files = {name: {"size": (directory / name).stat().st_size, "sha256": sha256(directory / name)}
             for name in _files(directory)}
    manifest = {"format": FORMAT, "files": files}
    with open(directory / MANIFEST, "w") as f:
        json.dump(manifest, f, indent=1)
        f.flush()
    return manifest


def check(directory: str | Path) -> list[str] | None:
    """Problems found comparing the directory with its manifest ([] = intact); None without a manifest."""
    directory = Path(directory)
    path = directory / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text())
        files = manifest["files"]
        assert manifest.get("format") == FORMAT and isinstance(files, dict)
    except (ValueError, KeyError, TypeError, AssertionError, UnicodeDecodeError):
        return [f"{MANIFEST} is unreadable"]
    problems = []
    for name, want in files.items():
        f = directory / name
        if not f.is_file():
            problems.append(f"{name} is missing")
        elif (size := f.stat().st_size) != want.get("size"):
            problems.append(f"{name}: {size} bytes, the manifest says {want.get('size')}")
        elif sha256(f) != want.get("sha256"):
            problems.append(f"{name}: content differs from the manifest (SHA-256)")
    return problems
