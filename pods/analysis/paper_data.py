"""The paper's published data: fetch it once (scripts/paper_data.py), then find it from anywhere.

    build(Path("paper-data"))          # clone the authors' repo -> paper-data/results, paper-data/examples.jsonl.gz
    locate_results()                   # Path of the results folder, or None
    locate_examples()                  # Path of examples.jsonl.gz, or None
    examples_path()                    # the same, else paper-data/examples.jsonl.gz (scripts' default)

`locate_*` look in `paper-data/` of the working directory, of this checkout and of their parents, then
in a `shared/paper-results` / `shared/paper-examples` folder beside them; GET_IT says how to get the data.
The source is Apache-2.0; the data stays in the user's copy (apart from the 56 completions of
tests/fixtures/paper_rewards/). The extraction is deterministic.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

URL = "https://github.com/YixuanEvenXu/pods"
QUESTION_CHARS = 600
_USER_TURN = (re.compile(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", re.S),  # Qwen's chat template
              re.compile(r"<\|start_header_id\|>user<\|end_header_id\|>\n\n(.*?)<\|eot_id\|>", re.S))  # Llama's


class PaperDataError(RuntimeError):
    """Something the user can fix: the message says what."""


def question(prompt: str) -> str:
    """The user turn of a chat-templated prompt (the whole prompt when no template is recognised)."""
    for pattern in _USER_TURN:
        found = pattern.findall(prompt)
        if found:
            return found[-1][:QUESTION_CHARS]
    return prompt[:QUESTION_CHARS]


def examples(results: Path) -> list[dict]:
    """Every stored example completion of the results folder, with its file's model and dataset."""
    rows = []
    for path in sorted(results.glob("*.json")):
        model = "llama" if "llama" in path.name.lower() else "qwen"
        data = json.loads(path.read_text())
        entries = [data] if path.name.startswith("base-") else [v for v in data.values() if isinstance(v, dict)]
        for entry in entries:
            for dataset, block in entry.items():
                for ex in (block.get("examples") or []) if isinstance(block, dict) else []:
                    rows.append({"dataset": dataset, "model": model, "question": question(ex.get("prompt", "")),
                                 "answer": ex.get("answer"), "completion": ex.get("completion"),
                                 "correct": ex.get("correct"), "format_correct": ex.get("format_correct")})
    return rows


def find_results(source: Path) -> Path:
    for candidate in (source / "results", source):
        if any(candidate.glob("Instruct-*-Run*.json")):
            return candidate
    raise PaperDataError(f"{source}: no results folder with the authors' Instruct-*-Run*.json files (give a clone "
                         f"of {URL} or its results/ folder)")


def clone(into: Path) -> Path:
    if shutil.which("git") is None:
        raise PaperDataError(f"git is not installed: clone {URL} by hand (or download its ZIP) and pass --from PATH")
    out = subprocess.run(["git", "clone", "--depth", "1", URL, str(into)], capture_output=True, text=True)
    if out.returncode != 0:
        raise PaperDataError(f"could not clone {URL} ({out.stderr.strip().splitlines()[-1] if out.stderr else ''}); "
                             f"with no network here, clone it elsewhere and pass --from PATH")
    return into


def build(dest: Path, source: Path | None = None, log=print) -> tuple[Path, Path]:
    """Fill `dest` with results/ and examples.jsonl.gz; returns both paths."""
    if dest.exists() and any(dest.iterdir()):
        raise PaperDataError(f"{dest} already exists and is not empty: remove it or choose --dest")
    with tempfile.TemporaryDirectory() as tmp:
        results = find_results(source if source is not None else clone(Path(tmp) / "pods"))
        shutil.copytree(results, dest / "results", dirs_exist_ok=True)
    rows = examples(dest / "results")
    out = dest / "examples.jsonl.gz"
    with gzip.open(out, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    log(f"{dest / 'results'}: {len(list((dest / 'results').iterdir()))} files; {out}: {len(rows)} completions")
    return dest / "results", out


GET_IT = "get it with `uv run python scripts/paper_data.py` (or --from an existing clone of " + URL + ")"
_ROOT = Path(__file__).resolve().parents[2]


def _places() -> list[Path]:
    seen, out = set(), []
    for start in (Path.cwd(), _ROOT):
        for base in (start, *start.parents):
            if base not in seen:
                seen.add(base)
                out.append(base)
    return out


def locate_results() -> Path | None:
    """The paper's results folder: paper-data/results, else shared/paper-results, near here."""
    for base in _places():
        for cand in (base / "paper-data" / "results", base / "shared" / "paper-results"):
            if any(cand.glob("Instruct-*-Run*.json")):
                return cand
    return None


def locate_examples() -> Path | None:
    """The paper's real completions: paper-data/examples.jsonl.gz, else shared/paper-examples/examples.jsonl.gz."""
    for base in _places():
        for cand in (base / "paper-data" / "examples.jsonl.gz", base / "shared" / "paper-examples" / "examples.jsonl.gz"):
            if cand.is_file():
                return cand
    return None


def examples_path() -> Path:
    """locate_examples(), else where scripts/paper_data.py writes them (paper-data/examples.jsonl.gz)."""
    return locate_examples() or Path("paper-data/examples.jsonl.gz")
