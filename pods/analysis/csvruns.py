"""The multi-GPU tracker exports (`h100s-acc.csv`, `h100s-length.csv`, `a100s-*.csv`) as runs.

    runs = load_csv_setting(results_dir, "h100s", "n32-m32-ga16")   # or the setting `h100s:n32-m32-ga16`

Each CSV has a time column `eval/time` (seconds, see docs/analysis.md; `--csv-time-unit` overrides) and,
per run, `data/<run> - _step` and `data/<run> - <metric>` columns, empty where a run was not evaluated.
Run names are `<prefix>-s<seed>-p8-n<n>-m<m>-ga<ga>`, the setting is the name without `-s<seed>`;
`<stem>-acc.csv` gives gsm8k `ans_acc`, `<stem>-length.csv` gives gsm8k `lengths`. `Run.steps` are optimizer
steps decoded from the tracker's `_step` rows (docs/multi-gpu.md; NaN where a row does not decode).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from pods.analysis.loaders import Run, reading
from pods.errors import ResultsError
from pods.extras import require

TIME_COLUMN = "eval/time"
CSV_METRICS = {"acc": "ans_acc", "length": "lengths"}  # file suffix -> our metric name
CSV_DATASET = "gsm8k"
TIME_UNITS = {"minutes": 1 / 60.0, "seconds": 1 / 3600.0, "hours": 1.0}  # factor to hours
_COL = re.compile(r"^data/(.+) - (.+)$")
_SEED = re.compile(r"-s\d+(?=-|$)")
_GA = re.compile(r"-ga(\d+)(?=-|$)")
# tracker rows one evaluation logs, per export (fitted: every evaluation of every run decodes exactly)
EVAL_ROWS = {"h100s": 5, "a100s": 45}
# rows the last evaluation of a run may carry beyond the pattern (logged once at the end of training)
FINAL_EXTRA_ROWS = 2


def optimizer_steps(logged: np.ndarray, ga: int, eval_rows: int) -> np.ndarray:
    """[K] tracker `_step` of a run's K evaluations, in order -> [K] optimizer steps (NaN: does not decode).

    The j-th evaluation after S optimizer steps is row (3 ga + 5) S + eval_rows j - 2; the last one may
    carry FINAL_EXTRA_ROWS more. A row between evaluations missing from the export breaks the count: NaN.
    """
    j = np.arange(1, len(logged) + 1)  # [K]
    steps, rest = np.divmod(np.asarray(logged, float) - eval_rows * j + 2, 3 * ga + 5)
    ok = rest == 0
    if len(ok):
        ok[-1] |= rest[-1] == FINAL_EXTRA_ROWS
    return np.where(ok & (steps >= 0), steps, np.nan)


def decode_steps(name: str, stem: str, logged: np.ndarray) -> np.ndarray:
    """[K] optimizer steps of run `name` of export `stem` (all NaN: no `-ga<k>` in the name, or an export
    whose rows per evaluation are not known)."""
    ga = _GA.search(name)
    if ga is None or stem not in EVAL_ROWS:
        return np.full(len(logged), np.nan)
    return optimizer_steps(logged, int(ga.group(1)), EVAL_ROWS[stem])


def setting_of(run_name: str) -> str:
    """'GRPO-s25-p8-n128-m32-ga4' -> 'GRPO-p8-n128-m32-ga4'."""
    return _SEED.sub("", run_name, count=1)


def _read(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """run name -> (time [K], step [K], value [K]) for rows where the run has a value."""
    pd = require("pandas", "analysis")  # here, not at import: `pods plot --help` stays light
    with reading(path, "a CSV export of the multi-GPU tracker (one column per run and metric)"):
        df = pd.read_csv(path)
    if TIME_COLUMN not in df.columns:
        raise ResultsError(f"{path}: no {TIME_COLUMN!r} column; columns start {list(df.columns)[:3]}")
    out = {}
    for col in df.columns:
        m = _COL.match(col)
        if not m or m.group(2) == "_step" or m.group(2).endswith(("__MIN", "__MAX")):
            continue
        run = m.group(1)
        ok = df[col].notna()
        step_col = f"data/{run} - _step"
        steps = df.loc[ok, step_col].to_numpy(float) if step_col in df else np.full(ok.sum(), np.nan)
        out[run] = (df.loc[ok, TIME_COLUMN].to_numpy(float), steps, df.loc[ok, col].to_numpy(float))
    return out


def load_csv_setting(results: str | Path, stem: str, pattern: str, time_unit: str = "seconds") -> list[Run]:
    """All seeds of the one setting in `<stem>-*.csv` whose name contains `pattern`."""
    results = Path(results)
    if time_unit not in TIME_UNITS:
        raise ResultsError(f"unknown time unit {time_unit!r}; valid: {sorted(TIME_UNITS)}")
    files = {suffix: results / f"{stem}-{suffix}.csv" for suffix in CSV_METRICS}
    if not files["acc"].is_file():
        raise ResultsError(f"no {files['acc']}; multi-GPU settings are '<stem>:<pattern>' "
                           "with <stem>-acc.csv in --results")
    tables = {suffix: _read(p) for suffix, p in files.items() if p.is_file()}
    settings = sorted({setting_of(r) for r in tables["acc"]})
    match = [s for s in settings if s == pattern] or [s for s in settings if pattern in s]
    if len(match) != 1:
        raise ResultsError(f"{stem}:{pattern} matches {match or 'no'} settings; choose one of {settings}")
    setting = match[0]
    names = sorted({r for table in tables.values() for r in table if setting_of(r) == setting})
    runs = []
    for name in names:  # a run may be in only one of the tables (then it has only that metric)
        t, steps, _ = next(table[name] for table in tables.values() if name in table)
        data = {}
        for suffix, table in tables.items():
            if name not in table:
                continue
            tt, _, v = table[name]
            pos = {x: i for i, x in enumerate(tt)}
            vals = np.array([v[pos[x]] if x in pos else np.nan for x in t])  # on the first table's times
            data[CSV_METRICS[suffix]] = vals[:, None]  # [C, 1]
        order = np.argsort(t, kind="stable")
        runs.append(Run(name, f"{stem}:{setting}", t[order] * TIME_UNITS[time_unit],
                        decode_steps(name, stem, steps[order]), {CSV_DATASET: {k: a[order] for k, a in data.items()}},
                        meta={"source": str(files["acc"]), "time_unit": time_unit, "logged_steps": steps[order],
                              "grader": "authors"}))  # their fork's tracker: not the suite's verifiers
    return runs
