"""Every dataset declared once (`DATASETS`: its reward, its answer type, its source), and the readers behind them.

    from pods.data.sources import DATASETS, load_rows, to_examples
    DATASETS["amc23"].reward, DATASETS["amc23"].answer                  # "math", "integer"
    rows, source, places = load_rows("gsm8k", "train", path=None, hub=None, subsets=None)  # rows: list[dict]
    examples = to_examples("gsm8k", rows, source, prompt_column=None, answer_column=None, places=places)

`pods.data.load_dataset` is the public entry point. A dataset is a `Dataset` here plus its config/dataset/*.yaml;
a generated one names its generator (`generate`). The hub is only imported when no local `path` is given
(never in tests: they fake `datasets.load_dataset`).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pods.data import arithmetic, gsm_symbolic, wordproblems
from pods.data.example import Example
from pods.data.math_labels import answer_label, math_label
from pods.errors import ConfigError, DataError

log = logging.getLogger("pods.data")

MATH_SUBSETS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra",
                "number_theory", "prealgebra", "precalculus")
PROMPT_COLUMNS = ("question", "problem", "prompt")


@dataclass(frozen=True)
class Dataset:
    """One dataset's facts: the reward that grades it, what its answers are, where its rows come from."""

    reward: str  # the pods.rewards verifier that grades it (evaluation's ans_acc, the warm start's accuracy)
    answer: str  # what a gold answer is and how a row's is read: a key of ANSWERS
    hub: str | None = None  # hub dataset id (None: local files only, or generated)
    hub_config: str | None = None  # hub config name
    subsets: tuple[str, ...] = ()  # hub configs read and joined (dataset.options.subsets picks some)
    answer_columns: tuple[str, ...] = ("answer",)  # candidates, first present wins
    meta_columns: tuple[str, ...] = ()  # copied into Example.meta when present
    hub_splits: tuple[str, ...] = ("train", "test")
    choices_column: str | None = None  # a list of options, shown under the prompt as (A) ..., (B) ...
    generate: Callable[..., list[Example]] | None = None  # generated in code: generate(split, **options)


DATASETS: dict[str, Dataset] = {
    "gsm8k": Dataset("gsm8k", "number", hub="openai/gsm8k", hub_config="main"),
    "math": Dataset("math", "latex", hub="EleutherAI/hendrycks_math", subsets=MATH_SUBSETS,
                    answer_columns=("answer", "solution"), meta_columns=("level", "type", "subject")),
    "math500": Dataset("math", "latex", hub="HuggingFaceH4/MATH-500", meta_columns=("level", "subject", "unique_id"),
                       hub_splits=("test",)),
    # the paper's copy of AMC23 (YixuanEvenXu/pods utils/data.py line 200 at 3fc107e); math-ai/amc23 via options.hub
    "amc23": Dataset("math", "integer", hub="zwhe99/amc23", meta_columns=("id",), hub_splits=("test",)),
    "chemistry": Dataset("chemistry", "text", meta_columns=("tolerance", "choices", "subject"),
                         choices_column="choices"),
    "arithmetic": Dataset("arithmetic", "text", generate=arithmetic.examples),  # zero-padded digits
    "word_problems": Dataset("gsm8k", "number", generate=wordproblems.examples),  # GSM8K-like, in code
    "gsm_symbolic": Dataset("gsm8k", "number", generate=gsm_symbolic.examples),  # reasoning-gym
}


def load_rows(name: str, split: str, path, hub, subsets) -> tuple[list[dict], str, list[str] | None]:
    """(rows, description of the source, where each row is: "line 3" / "row 3", None for the hub) from a local
    file/dir or the hub; DataError naming the file, or ConfigError for a setting, when that fails."""
    spec = DATASETS[name]
    if path is not None:
        file = _local_file(name, split, Path(path))
        rows, places = _read_file(name, file)
        return rows, str(file), places
    hub_id = hub or spec.hub
    if hub_id is None:
        raise ConfigError(f"{name}: no default hub dataset; set dataset.path to a local .jsonl/.parquet file "
                          f"(columns: question, answer) or dataset.options.hub to a hub dataset id")
    if hub is None and split not in spec.hub_splits:
        raise ConfigError(f"{name}: hub dataset {hub_id} has split(s) {list(spec.hub_splits)}, not {split!r}")
    if spec.subsets and hub is None:
        chosen = list(subsets or spec.subsets)
        bad = sorted(set(chosen) - set(spec.subsets))
        if bad:
            raise ConfigError(f"{name}: unknown subset(s) {bad}; valid: {', '.join(spec.subsets)}")
        rows = []
        for subset in chosen:
            rows += [dict(r, subject=r.get("type", subset)) for r in _hub(name, split, hub_id, subset)]
        return rows, f"{hub_id} ({', '.join(chosen)})/{split}", None
    return list(_hub(name, split, hub_id, spec.hub_config)), f"{hub_id}/{split}", None


def _hub(name: str, split: str, hub_id: str, config):
    """datasets.load_dataset, or a DataError saying the hub was not reached and how to use a local copy."""
    import datasets  # only here: tests never reach the hub

    try:
        return datasets.load_dataset(hub_id, config, split=split)
    except Exception as err:  # offline, network, unknown id or split: datasets raises many types
        reason = (str(err).strip().splitlines() or [""])[0][:300]
        raise DataError(f"{name}: could not load the hub dataset {hub_id} (split {split}): {type(err).__name__}: "
                        f"{reason}. Without network access (or with HF_DATASETS_OFFLINE=1 and no cached copy), "
                        f"download it elsewhere and point at the local copy: dataset.path=/path/to/{split}.jsonl "
                        f"(or .parquet, or a directory holding {split}.jsonl; evaluate-run.py: the entry's `path`)"
                        ) from err


def _local_file(name: str, split: str, path: Path) -> Path:
    if path.is_file():
        return path
    if path.is_dir():
        tried = [path / f"{split}{ext}" for ext in (".jsonl", ".json", ".parquet")]
        for file in tried:
            if file.is_file():
                return file
        raise DataError(f"{name}: no {split} split in {path}: looked for "
                        f"{', '.join(f.name for f in tried)}; found {sorted(p.name for p in path.iterdir())}")
    raise DataError(f"{name}: local data {path} does not exist; point dataset.path at a .jsonl/.json/"
                    f".parquet file or a directory holding <split>.jsonl")


def _read_file(name: str, file: Path) -> tuple[list, list[str]]:
    """(rows, "line N" / "row N" of each) of a local .jsonl / .json / .parquet file; DataError naming the
    file (and line) when it is empty, not UTF-8, not valid JSON or not parquet."""
    suffix = file.suffix.lower()
    if suffix not in (".jsonl", ".json", ".parquet"):
        raise DataError(f"{name}: unsupported file type {file.name}; use .jsonl, .json or .parquet")
    try:
        raw = file.read_bytes()
    except OSError as err:
        raise DataError(f"{name}: cannot read {file} ({err.strerror or err}); check the path and its permissions")
    if not raw.strip():
        raise DataError(f"{name}: {file} is empty; it should hold the {'rows' if suffix == '.parquet' else 'examples'}"
                        " (question, answer per row): check the file or point dataset.path at another one")
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:  # ParquetFile, not read_table: read_table's dataset layer left a thread that aborted the
            # process at exit ("terminate called without an active exception", 8 of 10 exits after a DataError)
            rows = pq.ParquetFile(pa.BufferReader(raw)).read(use_threads=False).to_pylist()
        except (pa.ArrowException, OSError) as err:
            raise DataError(f"{name}: {file} is not a readable parquet file ({err}); re-export it") from None
        return rows, [f"row {i + 1}" for i in range(len(rows))]
    text = _utf8(name, file, raw)
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise DataError(f"{name}: {file} line {err.lineno} column {err.colno} is not valid JSON: {err.msg}; "
                            "fix the file (or use one JSON object per line, .jsonl)") from None
        if not isinstance(data, list):
            raise DataError(f"{name}: {file} must hold a JSON list of objects (or use .jsonl)")
        return data, [f"item {i + 1}" for i in range(len(data))]
    rows, places = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise DataError(f"{name}: {file} line {lineno} is not valid JSON: {err}; fix or delete the line"
                                ) from None
            places.append(f"line {lineno}")
    return rows, places


def _utf8(name: str, file: Path, raw: bytes) -> str:
    """The file's text (a UTF-8 byte-order mark dropped), or a DataError naming the line of the first bad byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - raw.rfind(b"\n", 0, err.start)
        raise DataError(f"{name}: {file} line {line} is not UTF-8 text (byte 0x{raw[err.start]:02x} at column "
                        f"{column}: {err.reason}); save the file as UTF-8, e.g. `iconv -f latin1 -t utf-8`") from None


def _pick(row: dict, wanted: str | None, candidates: tuple[str, ...], what: str, ctx: str) -> Any:
    names = (wanted,) if wanted else candidates
    for col in names:
        if col in row and row[col] is not None:
            return col, row[col]
    option = "prompt_column" if what == "prompt" else "answer_column"
    null = [c for c in names if c in row]
    if null:
        raise DataError(f"{ctx}: the {what} (column {null[0]!r}) is null; fill it in or remove the row")
    raise DataError(f"{ctx}: no {what} column (looked for {', '.join(names)}); columns found: "
                    f"{sorted(row)}; set dataset.options.{option} to the right column")


def is_blank(value) -> bool:
    """An empty or whitespace-only text: a prompt with nothing to answer, an answer no completion can match."""
    return isinstance(value, str) and not value.strip()


def blank_rows(where: str, what: str, found: list[str], total: int) -> str:
    """The message refusing the rows `found` (their places, e.g. "line 3") whose `what` is blank."""
    why = "a model given nothing to answer" if what == "prompt" else "an answer no completion can match (reward 0)"
    return (f"{where}: {len(found)} of {total} rows have an empty or blank {what} (first: {found[0]}), {why}; fill "
            f"them in or remove those rows")


def usable_answer(answer) -> bool:
    """Text or a finite number (not a bool): what a completion's answer can be compared with."""
    number = isinstance(answer, (int, float)) and not isinstance(answer, bool)
    return isinstance(answer, str) or (number and math.isfinite(answer))


def _check_types(ctx: str, pcol: str, prompt, acol: str, answer) -> None:
    """The prompt must be text, the answer text or a finite number (a list, a mapping, NaN or a bool would
    become an answer no completion can match)."""
    if not isinstance(prompt, str):
        raise DataError(f"{ctx}: the prompt (column {pcol!r}) is a {type(prompt).__name__}, not text: "
                        f"{prompt!r:.80}; point dataset.options.prompt_column at a text column")
    if not usable_answer(answer):
        number = isinstance(answer, (int, float)) and not isinstance(answer, bool)
        kind = f"{answer!r} (not a finite number)" if number else f"{type(answer).__name__} {answer!r:.80}"
        raise DataError(f"{ctx}: the answer (column {acol!r}) is {kind}, which would become an "
                        "answer no completion can match; answers must be text or finite numbers: fix the file or "
                        "point dataset.options.answer_column at the right column")


def _format_answer(value: Any) -> str:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))  # amc23 stores 27 as 27.0
    return str(value).strip()


def _integer_answer(answer: str, ctx: str) -> str:
    """AMC23 answers as the paper cast them, `str(int(answer))` (utils/data.py line 216 at 3fc107e), for
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


def _final_number(answer: str, column: str, meta: dict, ctx: str, labels: str) -> str:
    """GSM8K's solutions end in "#### 72": the number after it (commas dropped); the solution goes to meta."""
    if "####" not in answer:
        return answer
    meta["solution"] = answer
    return answer.rsplit("####", 1)[1].strip().replace(",", "")


def _latex(answer: str, column: str, meta: dict, ctx: str, labels: str) -> str:
    """MATH: from a `solution` column its last boxed answer (the solution goes to meta), from an answer column
    the answer; either whole or cut as `labels` says (pods.data.math_labels)."""
    if column != "solution":
        return answer_label(answer, labels) or ""
    meta["solution"] = answer
    return math_label(answer, labels) or ""


# answer type -> how a row's gold answer is read: (text, its column, the row's meta, where, labels) -> answer
ANSWERS: dict[str, Callable[[str, str, dict, str, str], str]] = {
    "number": _final_number,  # a number (GSM8K: the one after "####")
    "latex": _latex,  # a LaTeX expression (MATH: the last \boxed{} of a solution)
    "integer": lambda answer, column, meta, ctx, labels: _integer_answer(answer, ctx),  # 27.0 -> 27, as the paper
    "text": lambda answer, column, meta, ctx, labels: answer,  # as written: option letters, quantities, digits
}


def to_examples(name: str, rows: list[dict], source: str, prompt_column, answer_column,
                places: list[str] | None = None, labels: str = "full") -> list[Example]:
    """Examples of the rows; DataError naming the source and row (`places[i]`, e.g. "line 3") when a
    row is not an object, lacks the prompt or answer, or holds them in the wrong type. `labels`: MATH's
    (pods.data.math_labels.LABELS)."""
    spec = DATASETS[name]
    read = ANSWERS[spec.answer]
    if not rows:
        raise DataError(f"{name}: {source} holds no rows")
    examples, no_answer, cut, blank = [], 0, 0, {"prompt": [], "answer": []}
    for i, row in enumerate(rows):
        place = places[i] if places else f"row {i}"
        ctx = f"{name}: {source} {place}"
        if not isinstance(row, dict):
            raise DataError(f"{ctx} is not an object: {row!r:.80}; each row needs a question and an answer")
        pcol, prompt = _pick(row, prompt_column, PROMPT_COLUMNS, "prompt", ctx)
        col, raw = _pick(row, answer_column, spec.answer_columns, "answer", ctx)
        empty = [what for what, value in (("prompt", prompt), ("answer", raw)) if is_blank(value)]
        for what in empty:
            blank[what].append(place)
        if empty:
            continue
        _check_types(ctx, pcol, prompt, col, raw)
        meta = {k: row[k] for k in spec.meta_columns if k in row}
        text = _format_answer(raw)
        answer = read(text, col, meta, ctx, labels)
        cut += labels != "full" and answer != read(text, col, {}, ctx, "full")
        if not answer:
            no_answer += 1
            continue
        choices = row.get(spec.choices_column) if spec.choices_column else None
        if isinstance(choices, list):
            letters = "ABCDEFGHIJ"
            prompt = f"{prompt}\n" + "\n".join(f"({letters[j]}) {c}" for j, c in enumerate(choices[:10]))
        examples.append(Example(str(prompt), answer, meta))
    for what, found in blank.items():
        if found:
            raise DataError(blank_rows(f"{name}: {source}", what, found, len(rows)))
    if no_answer:
        log.warning("%s: skipped %d of %d rows of %s without an answer", name, no_answer, len(rows), source)
    if labels != "full":
        log.warning("%s: labels=%s changed %d of %d labels of %s (%.1f %%; docs/datasets.md)", name, labels, cut,
                    len(rows), source, 100.0 * cut / len(rows))
    if not examples:
        raise DataError(f"{name}: no row of {source} has an answer")
    return examples
