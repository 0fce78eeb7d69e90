"""Resolve a SETTING given on the command line into its runs.

    runs = load_setting("Instruct-GSM8K-512-16-16", "paper-data/results", hours_per_checkpoint=0.5)

A SETTING is, tried in this order: 1. a directory (in --results, as given, or a train.py `run_name` in
checkpoints/): one run directory (`eval_results.json` inside) or a folder of them (seeds), or a glob of run
directories (`'*-n64-m16-*'`); 2. `<stem>:<pattern>`, a multi-GPU setting in `<stem>-acc.csv` (`h100s:n128-m32-ga4`);
3. a prefix of the paper's `<prefix>-Run<k>.json` files in --results; 4. a prefix of run directories there named
`<prefix>-s<k>` / `<prefix>-seed<k>` / `<prefix>_seed<k>`. Else a ResultsError naming what is there. docs/analysis.md.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
from fractions import Fraction
from pathlib import Path

from pods.analysis.csvruns import load_csv_setting
from pods.analysis.loaders import (
    RUN_FILE,
    Run,
    check_irregular,
    load_base,
    load_paper_file,
    load_run_dir,
    paper_run_files,
    run_dirs_in,
)
from pods.errors import ResultsError

RUNS = Path("checkpoints")  # train.py's default output_root: a bare run_name is also looked for there
_GLOB = re.compile(r"[*?\[]")


def _places(results: Path | None) -> list[Path]:
    """Where a SETTING's directory may be: --results, the working directory, checkpoints/ (deduplicated)."""
    out = []
    for p in ([results] if results is not None else []) + [Path("."), RUNS]:
        if p.is_dir() and p.resolve() not in {q.resolve() for q in out}:
            out.append(p)
    return out


def find_run_dirs(spec: str, results: str | Path | None, marker: str = RUN_FILE) -> list[Path]:
    """Run directories (holding `marker`) a SETTING names by rules 1 and 4; [] if it names none."""
    res = Path(results) if results is not None else None
    if _GLOB.search(spec):  # every matching run directory, in the first place with a match
        for place in _places(res):
            found = sorted(Path(p) for p in glob.glob(os.path.join(place, spec)) if (Path(p) / marker).is_file())
            if found:
                return found
        return []
    for cand in [res / spec if res is not None else None, Path(spec), RUNS / spec]:
        if cand is not None and cand.is_dir() and (dirs := run_dirs_in(cand, marker)):
            return dirs
    if res is None or not res.is_dir():
        return []
    pat = re.compile(r"^" + re.escape(spec) + r"[-_](s|seed)\d+$")
    return sorted(p for p in res.iterdir() if p.is_dir() and pat.match(p.name) and (p / marker).is_file())


def load_setting(spec: str, results: str | Path | None = None, *, hours_per_checkpoint: float = 0.5,
                 irregular: str = "align", csv_time_unit: str = "seconds", results_file: str = RUN_FILE) -> list[Run]:
    """All runs of one setting (see module docstring for what `spec` may be); run directories are read
    from their `results_file` (evaluate-run.py's eval_results.json unless told otherwise)."""
    res = Path(results) if results is not None else None
    dirs = find_run_dirs(spec, res, results_file)
    if dirs:
        return [load_run_dir(d, Path(spec.rstrip("/")).name, results_file) for d in dirs]
    if res is not None and res.is_dir() and ":" in spec:
        stem, pattern = spec.split(":", 1)
        return load_csv_setting(res, stem, pattern, time_unit=csv_time_unit)
    files = paper_run_files(res, spec) if res is not None and res.is_dir() else []
    if files:
        runs = [load_paper_file(p, spec, hours_per_checkpoint) for _, p in files]
        return check_irregular(runs, hours_per_checkpoint, irregular)
    if _GLOB.search(spec):
        raise ResultsError(f"setting {spec!r}: the pattern matches no run directory with {results_file} in "
                           f"{', '.join(map(str, _places(res)))}; run directories there: {known_runs(res, results_file)}")
    empty = [str(c) for c in ([res / spec] if res is not None else []) + [Path(spec)] if c.is_dir()]
    if empty:
        raise ResultsError(f"{empty}: neither a run directory (with {results_file}) nor a folder of them")
    if res is None or not res.is_dir():
        raise ResultsError(f"setting {spec!r}: not a directory, and --results {res} is not a directory")
    raise ResultsError(f"setting {spec!r}: no directory, no {spec}-Run<k>.json and no {spec}-s<k> run directories "
                       f"in {res}; known prefixes: {known_prefixes(res)[:20]}; run directories: "
                       f"{known_runs(res, results_file)}")


def hours_arg(text: str) -> float:
    """Command-line hours: a positive number or a fraction such as `1/6` (the Llama runs' checkpoint interval)."""
    try:
        hours = float(Fraction(text))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours (e.g. 0.5 or 1/6)") from None
    if not hours > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: hours must be positive (e.g. 0.5 or 1/6)")
    return hours


def known_prefixes(results: Path) -> list[str]:
    """The `<prefix>` of every `<prefix>-Run<k>.json` in results."""
    pat = re.compile(r"^(.+)-Run\d+\.json$")
    return sorted({m.group(1) for p in results.iterdir() if (m := pat.match(p.name))})


def known_runs(results: Path | None, marker: str = RUN_FILE, limit: int = 20) -> list[str]:
    """Names of the run directories (holding `marker`) in --results and checkpoints/, for error messages."""
    names = sorted({p.name for place in _places(results) for p in place.iterdir() if (p / marker).is_file()})
    return names[:limit] + (["..."] if len(names) > limit else [])


def base_run(path: str | Path | None) -> Run | None:
    """The base-model run (t = 0 point) from a file, or None."""
    return load_base(path) if path else None
