"""The resumable per-run results file `eval_results.json` (the paper's layout plus our fields).

    results = ResultsFile(run_dir / "eval_results.json", settings)     # refuses foreign/mismatched files
    results.add("checkpoint-100", "gsm8k", repeat, metrics, step=100, elapsed_seconds=1800.0)   # atomic (pods.io)
    results.done("checkpoint-100", "gsm8k")   # repeats stored; results.mean(entry, dataset, "ans_acc")

    {"format": "pods-eval-results/1", "settings": "{...json...}",              # metrics: docs/evaluation.md
     "base": {"step": 0, "elapsed_seconds": 0.0, "<dataset>": {"ans_acc": [R], ...}},
     "checkpoint-<step>": {"step": int, "elapsed_seconds": float, "<dataset>": {...}},
     "examples": {"checkpoint-<step>": {"<dataset>": [{"prompt", "completion", "answer", "correct"}]}}}
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from pods.errors import ResultsError
from pods.io import atomic_write_json

RESULTS_FILE = "eval_results.json"
FORMAT = "pods-eval-results/1"
METRICS = ("ans_acc", "for_acc", "both_acc", "lengths")
# the same accuracies by the paper-compatible graders (rewards.authors.paper), stored when evaluation.paper_grader is set
PAPER_METRICS = ("paper_ans_acc", "paper_for_acc", "paper_both_acc")
_CKPT = re.compile(r"^checkpoint-(\d+)$")
_RESERVED = ("format", "settings", "examples")


def checkpoint_step(name: str) -> int | None:
    """`checkpoint-<step>` -> step; anything else -> None."""
    m = _CKPT.match(name)
    return int(m.group(1)) if m else None



class ResultsFile:
    """The results JSON of one run, resumable per (entry, dataset, repeat).

    `settings`: the evaluation settings that must match an existing file (temperature, max
    tokens, seeds, ...); a file written with other settings, a file that is not valid JSON or
    not ours raises pods.errors.ResultsError (a ValueError) and is left untouched. `metrics`: the metric names every repeat
    stores (METRICS, plus PAPER_METRICS when the paper-compatible graders run).
    """

    def __init__(self, path: str | Path, settings: dict, metrics: tuple[str, ...] = METRICS):
        self.path = Path(path)
        self.metrics = tuple(metrics)
        self.settings = json.dumps(settings, sort_keys=True)
        self.data: dict = {"format": FORMAT, "settings": self.settings, "examples": {}}
        if self.path.exists():
            self.data = self._read_existing()

    def _read_existing(self) -> dict:
        where = f"{self.path}"
        try:
            data = json.loads(self.path.read_text())
        except OSError as e:
            raise ResultsError(f"{where}: cannot be read ({e.strerror or e}); fix its permissions or point the "
                               "evaluation at another results file (output=...)") from e
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ResultsError(f"{where}: not valid JSON ({e}); it was left untouched - move it away or "
                               "point the evaluation at another results file") from e
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ResultsError(f"{where}: not a pods results file (no \"format\": {FORMAT!r}); it was left "
                               "untouched - move it away or choose another output path")
        if data.get("settings") != self.settings:
            raise ResultsError(f"{where}: written with other evaluation settings\n  file: {data.get('settings')}\n"
                               f"  now:  {self.settings}\nuse the same settings to resume, or another output path")
        for key, entry in data.items():
            if key in _RESERVED:
                continue
            ok = (key == "base" or checkpoint_step(key) is not None) and isinstance(entry, dict)
            ok = ok and all(isinstance(v, dict) and all(isinstance(v.get(m, []), list) for m in self.metrics)
                            for k, v in entry.items() if k not in ("step", "elapsed_seconds"))
            if not ok:
                raise ResultsError(f"{where}: unexpected entry {key!r}; the file was left untouched - fix or move it")
        data.setdefault("examples", {})
        return data

    def done(self, entry: str, dataset: str) -> int:
        """Number of repeats already stored for (entry, dataset)."""
        ds = self.data.get(entry, {}).get(dataset)
        return 0 if not ds else min(len(ds.get(m, [])) for m in self.metrics)

    def add(self, entry: str, dataset: str, repeat: int, metrics: dict[str, float], *, step: int,
            elapsed_seconds: float, examples: list[dict] | None = None) -> None:
        """Store repeat `repeat` (must be the next one) of (entry, dataset) and write the file."""
        have = self.done(entry, dataset)
        if repeat != have:
            raise ValueError(f"{entry}/{dataset}: repeat {repeat} added but {have} stored (repeats go in order)")
        e = self.data.setdefault(entry, {})
        e["step"], e["elapsed_seconds"] = int(step), float(elapsed_seconds)
        ds = e.setdefault(dataset, {m: [] for m in self.metrics})
        for m in self.metrics:
            v = float(metrics[m])  # KeyError: a metric of this file is missing
            if not math.isfinite(v):
                raise ValueError(f"{entry}/{dataset}: metric {m} is {v}")
            vals = ds.setdefault(m, [])
            del vals[repeat:]
            vals.append(v)
        if examples is not None and repeat == 0:
            self.data["examples"].setdefault(entry, {})[dataset] = examples
        self.save()

    def save(self) -> None:
        atomic_write_json(self.path, self.data)

    def entries(self) -> list[str]:
        """Stored entry names, base first then checkpoints by step."""
        keys = [k for k in self.data if k not in _RESERVED]
        return sorted(keys, key=lambda k: -1 if k == "base" else checkpoint_step(k))

    def mean(self, entry: str, dataset: str, metric: str = "ans_acc") -> float:
        vals = self.data[entry][dataset][metric]
        return sum(vals) / len(vals)
