#!/usr/bin/env python
r"""Where this suite's strict verifiers and the paper's grader disagree, by kind, on real completions.

    uv run python benchmarks/grader_agreement.py                      # paper-data/examples.jsonl.gz (scripts/paper_data.py)
    uv run python benchmarks/grader_agreement.py --examples FILE.jsonl.gz

For every completion of the examples file (rows: dataset, model, answer, completion, correct,
format_correct; docs/evaluation.md) it runs the strict verifier of the dataset
(`pods.data.DATASETS[name].reward`: gsm8k -> `gsm8k`, math500 / amc23 -> `math`) and the paper-compatible
grader of the model (qwen -> `paper_answer`, `\d+`; llama -> `paper_answer_decimal`, `[\d.,]+`),
and prints (markdown):
1. per dataset and model: rows, and how often each grader agrees with the authors' stored verdicts
   (answer: `correct`; format: `format_correct`, strict `format` vs `paper_format`);
2. the disagreements of the strict checks with the authors' verdicts BY KIND, each kind decided by
   a small explicit rule (ANSWER_KINDS, FORMAT_KINDS; first match wins) with one short example.
Deterministic (file order, no sampling) and quick (seconds); rerun it after changing a verifier.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from pods import data, rewards
from pods.analysis.paper_data import examples_path
from pods.rewards.authors.paper import NUMBER_PATTERNS, answer_block, last_number
from pods.rewards.extract import final, stops_mid_sentence

ROOT = Path(__file__).resolve().parent.parent
GRADER = {"qwen": "paper_answer", "llama": "paper_answer_decimal"}


# ----------------------------------------------------------------------------- kinds


def _tail_loops(text: str) -> bool:
    """The completion ends in a loop: its last 6 non-blank lines are one line repeated."""
    lines = [line.strip() for line in text.rstrip().splitlines() if line.strip()]
    return len(lines) >= 6 and len(set(lines[-6:])) == 1


def _closed_block(text: str) -> bool:
    """An `<answer>` whose `</answer>` follows it."""
    start = text.rfind("<answer>")
    return start >= 0 and text.find("</answer>", start) >= 0


def _words(block: str) -> bool:
    """Three letters in a row outside LaTeX commands: the block is a phrase, not a bare answer."""
    return re.search(r"[A-Za-z]{3}", re.sub(r"\\[A-Za-z]+", "", block)) is not None


# (name, direction, rule(row) -> bool); row: the example plus `pattern` (the grader's number regex).
# direction "paper": the authors' grader accepts, the strict verifier rejects; "strict": the reverse.
ANSWER_KINDS = [
    ("degenerate loop at the end; the number before it counts", "paper", lambda r: _tail_loops(r["completion"])),
    ("cut off inside the answer block; the number in it counts", "paper",
     lambda r: "<answer>" in r["completion"] and not _closed_block(r["completion"])),
    ("stops mid-sentence, no answer block or box: no final answer; their last number counts", "paper",
     lambda r: stops_mid_sentence(r["completion"]) and final(r["completion"], "math") is None),
    ("no answer block; the last number of the prose counts", "paper", lambda r: "<answer>" not in r["completion"]),
    ("LaTeX debris in the answer block (`\\frac{14}{3}\\`)", "paper",
     lambda r: "\\" in answer_block(r["completion"]) and not _words(answer_block(r["completion"]))),
    ("words around the number in the answer block", "paper", lambda r: _words(answer_block(r["completion"]))),
    ("other: the paper's grader accepts", "paper", lambda r: True),
    ("`$70,000`: the last number under \\d+ is `000`", "strict",
     lambda r: r["pattern"] == "\\d+" and r["answer"].isdigit() and len(r["answer"]) >= 4
     and f"{int(r['answer']):,}" in r["completion"]),
    ("`[\\d.,]+` ends on the sentence's full stop: the last number is `.`", "strict",
     lambda r: re.fullmatch(r"[.,]+", last_number(r["completion"], re.compile(r["pattern"]))) is not None),
    ("tuple written with a Unicode pi, `(3, π/2)`: never string-equal", "strict",
     lambda r: "\\pi" in r["answer"] and "π" in answer_block(r["completion"])),
    ("LaTeX answer outside a closed answer block: the last number cannot be a fraction or tuple", "strict",
     lambda r: "\\" in r["answer"] and not _closed_block(r["completion"])),
    ("LaTeX answer inside a sentence in the answer block", "strict",
     lambda r: "\\" in r["answer"] and _words(answer_block(r["completion"]))),
    ("other: the strict verifier accepts an equivalent form", "strict", lambda r: True),
]
TAGS = ("<think>", "</think>", "<answer>", "</answer>")
FORMAT_KINDS = [
    ("a tag repeated inside (the paper's `.*` allows it; strict wants each tag once)", "paper",
     lambda r: any(r["completion"].count(t) > 1 for t in TAGS)),
    ("other: the paper's format flag accepts", "paper", lambda r: True),
    ("more than one blank at the start, end or between the parts (the paper allows one)", "strict",
     lambda r: re.search(r"</think>\s\s+<answer>|^\s\s|</answer>\s\s\s", r["completion"]) is not None),
    ("other: the strict format accepts", "strict", lambda r: True),
]


def kind_of(row: dict, strict: bool, kinds: list = ANSWER_KINDS) -> str:
    """The first kind whose direction and rule fit a row on which the strict verdict (`strict`)
    and the authors' verdict differ."""
    direction = "strict" if strict else "paper"
    return next(name for name, d, rule in kinds if d == direction and rule(row))


def example_of(row: dict, width: int = 72) -> str:
    """A short excerpt: the answer block when the completion has a closed one, else its end (a loop
    at the end left out), whitespace collapsed."""
    text = row["completion"]
    if _closed_block(text):
        shown = " ".join(answer_block(text).split())
        return shown if len(shown) <= width else shown[: width - 3] + "..."
    lines = text.rstrip().splitlines()
    while len(lines) > 1 and lines[-1].strip() == lines[-2].strip():
        lines.pop()  # the loop's repeats
    shown = " ".join("\n".join(lines).split())
    return shown if len(shown) <= width else "..." + shown[3 - width:]


def format_example(row: dict) -> str:
    """The tag counts and what separates `</think>` from `<answer>`: what the format checks look at."""
    text = row["completion"]
    counts = " ".join(f"{t}x{text.count(t)}" for t in TAGS)
    m = re.search(r"</think>(\s*)<answer>", text)
    return f"{counts}; between: {m.group(1)!r}" if m else counts


# ----------------------------------------------------------------------------- report


def grade(rows: list[dict]) -> list[dict]:
    """Each row plus the verdicts (bool) `strict`, `paper`, `strict_format`, `paper_format` and the
    paper grader's number `pattern`."""
    out = []
    for r in rows:
        name, one = GRADER[r["model"]], ([r["completion"]], [r["answer"]])
        out.append(dict(r, pattern=NUMBER_PATTERNS[name].pattern,
                        strict=rewards.get(data.DATASETS[r["dataset"]].reward)(*one)[0] > 0,
                        paper=rewards.get(name)(*one)[0] > 0, strict_format=rewards.get("format")(*one)[0] > 0,
                        paper_format=rewards.get("paper_format")(*one)[0] > 0))
    return out


def _share(rows: list[dict], key: str, truth: str) -> str:
    same = sum(r[key] == r[truth] for r in rows)
    return f"{same} ({100 * same / len(rows):.1f} %)"


def _kind_table(graded: list[dict], key: str, truth: str, kinds: list, show) -> tuple[list[str], int]:
    counts, where, example = Counter(), defaultdict(Counter), {}
    for r in graded:
        if r[key] != r[truth]:
            k = kind_of(r, r[key], kinds)
            counts[k] += 1
            where[k][f"{r['dataset']}/{r['model']}"] += 1
            example.setdefault(k, (r["answer"], show(r)))
    lines = ["| kind | accepted by | count | where | example (reference: completion) |", "|---|---|---|---|---|"]
    for name, direction, _ in kinds:
        if counts[name]:
            at = ", ".join(f"{k} {v}" for k, v in sorted(where[name].items()))
            ref, shown = example[name]
            who = "paper" if direction == "paper" else "strict"
            lines.append(f"| {name} | {who} | {counts[name]} | {at} | `{ref}`: {shown.replace('|', '/')} |")
    return lines, sum(counts.values())


def report(graded: list[dict]) -> str:
    lines = ["| dataset | model | rows | answer: strict = authors | answer: paper = authors "
             "| format: strict = authors | format: paper = authors |", "|---|---|---|---|---|---|---|"]
    groups = defaultdict(list)
    for r in graded:
        groups[r["dataset"], r["model"]].append(r)
    for (ds, model), rs in [*sorted(groups.items()), (("all", ""), graded)]:
        lines.append(f"| {ds} | {model} | {len(rs)} | {_share(rs, 'strict', 'correct')} | {_share(rs, 'paper', 'correct')} "
                     f"| {_share(rs, 'strict_format', 'format_correct')} | {_share(rs, 'paper_format', 'format_correct')} |")
    for what, key, truth, kinds, show in (
            ("Answers (`ans_acc`)", "strict", "correct", ANSWER_KINDS, example_of),
            ("Format (`for_acc`)", "strict_format", "format_correct", FORMAT_KINDS, format_example)):
        table, n = _kind_table(graded, key, truth, kinds, show)
        lines += ["", f"{what}: the strict check differs from the authors' verdict on {n} rows, by kind:", ""] + table
    wrong = sum(r["paper"] != r["correct"] or r["paper_format"] != r["format_correct"] for r in graded)
    if wrong:
        lines.append(f"\nWARNING: the paper-compatible graders differ from the authors' verdicts on {wrong} rows")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--examples", type=Path, default=None,
                   help="the examples file (default: paper-data/examples.jsonl.gz, scripts/paper_data.py)")
    args = p.parse_args(argv)
    path = args.examples or examples_path()
    if not path.is_file():
        print(f"grader_agreement.py: examples file {path} not found; get the authors' completions with "
              "`uv run python scripts/paper_data.py`, or pass --examples PATH", file=sys.stderr)
        return 2
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    print(f"{path}: {len(rows)} completions\n")
    print(report(grade(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
