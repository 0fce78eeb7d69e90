"""Hub and local-file sources of the datasets: which hub dataset, which columns, how answers are read.

    from pods.data_sources import DATASETS, load_rows, to_examples
    rows, source = load_rows("gsm8k", "train", path=None, hub=None, subsets=None)   # list[dict], "openai/gsm8k/train"
    examples = to_examples("gsm8k", rows, source, prompt_column=None, answer_column=None)

`pods.data.load_dataset` is the public entry point (it also serves the generated tasks); this
module holds the per-dataset source table `DATASETS` and the readers behind it. The hub is only
imported when no local `path` is given (never in tests: they fake `datasets.load_dataset`).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pods.rewards.extract import last_boxed

log = logging.getLogger("pods.data")

MATH_SUBSETS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra",
                "number_theory", "prealgebra", "precalculus")
PROMPT_COLUMNS = ("question", "problem", "prompt")


@dataclass
class Example:
    """One problem: the user-facing prompt text, the gold answer string, extra columns."""

    prompt: str
    answer: str
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True)
class _Spec:
    hub: str | None  # hub dataset id (None: local files only / generated)
    hub_config: str | None  # hub config name
    answer_columns: tuple[str, ...]  # candidates, first present wins
    meta_columns: tuple[str, ...]  # copied into Example.meta when present
    hub_splits: tuple[str, ...] = ("train", "test")


DATASETS: dict[str, _Spec | None] = {
    "gsm8k": _Spec("openai/gsm8k", "main", ("answer",), ()),
    "math": _Spec("EleutherAI/hendrycks_math", None, ("answer", "solution"), ("level", "type", "subject")),
    "math500": _Spec("HuggingFaceH4/MATH-500", None, ("answer",), ("level", "subject", "unique_id"), ("test",)),
    # the paper's copy of AMC23 (YixuanEvenXu/pods utils/data.py line 213); math-ai/amc23 via options.hub
    "amc23": _Spec("zwhe99/amc23", None, ("answer",), ("id",), ("test",)),
    "chemistry": _Spec(None, None, ("answer",), ("tolerance", "choices", "subject")),
    "arithmetic": None,  # generated: pods.arithmetic
    "gsm_symbolic": None,  # generated: reasoning-gym
}


def load_rows(name: str, split: str, path, hub, subsets) -> tuple[list[dict], str]:
    """(rows, description of the source) from a local file/dir or the hub."""
    spec = DATASETS[name]
    if path is not None:
        file = _local_file(name, split, Path(path))
        return _read_file(name, file), str(file)
    hub_id = hub or spec.hub
    if hub_id is None:
        raise ValueError(f"{name}: no default hub dataset; set dataset.path to a local .jsonl/.parquet file "
                         f"(columns: question, answer) or dataset.options.hub to a hub dataset id")
    if hub is None and split not in spec.hub_splits:
        raise ValueError(f"{name}: hub dataset {hub_id} has split(s) {list(spec.hub_splits)}, not {split!r}")
    import datasets  # only here: tests never reach the hub

    if name == "math" and hub is None:
        chosen = list(subsets or MATH_SUBSETS)
        bad = sorted(set(chosen) - set(MATH_SUBSETS))
        if bad:
            raise ValueError(f"math: unknown subset(s) {bad}; valid: {', '.join(MATH_SUBSETS)}")
        rows = []
        for subset in chosen:
            rows += [dict(r, subject=r.get("type", subset)) for r in datasets.load_dataset(hub_id, subset, split=split)]
        return rows, f"{hub_id} ({', '.join(chosen)})/{split}"
    return list(datasets.load_dataset(hub_id, spec.hub_config, split=split)), f"{hub_id}/{split}"


def _local_file(name: str, split: str, path: Path) -> Path:
    if path.is_file():
        return path
    if path.is_dir():
        tried = [path / f"{split}{ext}" for ext in (".jsonl", ".json", ".parquet")]
        for file in tried:
            if file.is_file():
                return file
        raise FileNotFoundError(f"{name}: no {split} split in {path}: looked for "
                                f"{', '.join(f.name for f in tried)}; found {sorted(p.name for p in path.iterdir())}")
    raise FileNotFoundError(f"{name}: local data {path} does not exist; point dataset.path at a .jsonl/.json/"
                            f".parquet file or a directory holding <split>.jsonl")


def _read_file(name: str, file: Path) -> list[dict]:
    suffix = file.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(file).to_pylist()
    if suffix == ".json":
        data = json.loads(file.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise ValueError(f"{name}: {file} must hold a JSON list of objects (or use .jsonl)")
        return data
    if suffix == ".jsonl":
        rows = []
        with open(file, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as err:
                        raise ValueError(f"{name}: {file} line {lineno} is not valid JSON: {err}") from None
        return rows
    raise ValueError(f"{name}: unsupported file type {file.name}; use .jsonl, .json or .parquet")


def _pick(row: dict, wanted: str | None, candidates: tuple[str, ...], what: str, ctx: str) -> Any:
    names = (wanted,) if wanted else candidates
    for col in names:
        if col in row and row[col] is not None:
            return col, row[col]
    option = "prompt_column" if what == "prompt" else "answer_column"
    raise ValueError(f"{ctx}: no {what} column (looked for {', '.join(names)}); columns found: "
                     f"{sorted(row)}; set dataset.options.{option} to the right column")


def _format_answer(value: Any) -> str:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))  # amc23 stores 27 as 27.0
    return str(value).strip()


def _integer_answer(answer: str, ctx: str) -> str:
    """AMC23 answers as the paper cast them, `str(int(answer))` (utils/data.py line 229), for
    integral values (`27.0` -> `27`); a non-integral one is kept as written (int() would truncate it)."""
    try:
        value = float(answer)
    except ValueError:
        return answer
    if math.isfinite(value) and value.is_integer():
        return str(int(value))
    log.warning("%s: answer %s is not an integer; kept as written (the paper's int() cast would make it %s)",
                ctx, answer, int(value) if math.isfinite(value) else "an error")
    return answer


def to_examples(name: str, rows: list[dict], source: str, prompt_column, answer_column) -> list[Example]:
    spec = DATASETS[name]
    if not rows:
        raise ValueError(f"{name}: {source} holds no rows")
    examples, no_answer = [], 0
    for i, row in enumerate(rows):
        ctx = f"{name}: {source} row {i}"
        if not isinstance(row, dict):
            raise ValueError(f"{ctx} is not an object: {row!r:.80}")
        _, prompt = _pick(row, prompt_column, PROMPT_COLUMNS, "prompt", ctx)
        col, raw = _pick(row, answer_column, spec.answer_columns, "answer", ctx)
        meta = {k: row[k] for k in spec.meta_columns if k in row}
        answer = _format_answer(raw)
        if name == "gsm8k" and "####" in answer:
            meta["solution"] = answer
            answer = answer.rsplit("####", 1)[1].strip().replace(",", "")
        elif col == "solution":  # MATH: the whole last boxed expression of the solution (the authors
            meta["solution"] = answer  # cut it at its first "}": \frac{1}{2} -> \frac{1, utils/data.py line 152)
            answer = last_boxed(answer) or ""
        elif name == "amc23":
            answer = _integer_answer(answer, ctx)
        if not answer:
            no_answer += 1
            continue
        if name == "chemistry" and isinstance(row.get("choices"), list):
            letters = "ABCDEFGHIJ"
            prompt = f"{prompt}\n" + "\n".join(f"({letters[j]}) {c}" for j, c in enumerate(row["choices"][:10]))
        examples.append(Example(str(prompt), answer, meta))
    if no_answer:
        log.warning("%s: skipped %d of %d rows of %s without an answer", name, no_answer, len(rows), source)
    if not examples:
        raise ValueError(f"{name}: no row of {source} has an answer")
    return examples
