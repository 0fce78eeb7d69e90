"""pods.analysis.paper_data: the authors' results folder -> paper-data/ (results copy + examples.jsonl.gz), and finding it.

A hand-made results folder pins the extraction (the two JSON layouts, model from the file name, question =
the user turn of Qwen's or Llama's chat template); where the real results folder is present (scripts/paper_data.py
or the project's shared folder), every row of the 1,653-row shared sample must be among the extracted rows.
Run: uv run pytest tests/pods/analysis/test_paper_data.py
"""

import gzip
import json
from pathlib import Path

import pytest

from pods.analysis import paper_data
from pods.analysis.paper_data import PaperDataError, build, examples, question

QWEN = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n"
LLAMA = ("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHow many legs?<|eot_id|>"
         "<|start_header_id|>assistant<|end_header_id|>\n\n")


def example(prompt, completion, correct):
    return {"prompt": prompt, "answer": "5", "completion": completion, "correct": correct, "format_correct": True}


def fake_results(root: Path) -> Path:
    """Two files in the authors' layouts: per-run (checkpoint -> dataset -> block) and base-model (dataset -> block)."""
    root.mkdir(parents=True)
    run = {"checkpoint-10": {"gsm8k": {"accuracy": 0.5, "examples": [example(QWEN, "<answer>5</answer>", True)]}},
           "checkpoint-20": {"gsm8k": {"accuracy": 0.6, "examples": [example(QWEN, "<answer>4</answer>", False)]},
                             "math": {"accuracy": 0.1}},  # a block without examples
           "config": "not a checkpoint"}
    (root / "Instruct-GSM8K-512-128-16-Run1.json").write_text(json.dumps(run))
    base = {"gsm8k": {"examples": [example(LLAMA, "four", False)]}}
    (root / "base-Llama-GSM8K.json").write_text(json.dumps(base))
    (root / "notes.csv").write_text("step,acc\n1,0.5\n")
    return root


def test_question_is_the_user_turn_of_either_template():
    assert question(QWEN) == "What is 2+3?"
    assert question(LLAMA) == "How many legs?"
    assert question("plain text") == "plain text"
    assert len(question("x" * 5000)) == paper_data.QUESTION_CHARS


def test_examples_reads_both_layouts_with_model_and_verdicts(tmp_path):
    rows = examples(fake_results(tmp_path / "results"))
    assert [(r["model"], r["question"], r["completion"], r["correct"]) for r in rows] == [
        ("qwen", "What is 2+3?", "<answer>5</answer>", True),
        ("qwen", "What is 2+3?", "<answer>4</answer>", False),
        ("llama", "How many legs?", "four", False),
    ]  # files in sorted order: "Instruct-..." before "base-..."
    assert {r["model"] for r in rows} == {"qwen", "llama"} and all(r["dataset"] == "gsm8k" for r in rows)


def test_build_copies_results_and_writes_examples(tmp_path):
    src = fake_results(tmp_path / "clone" / "results")
    res, out = build(tmp_path / "paper-data", src.parent, log=lambda *_: None)
    assert sorted(p.name for p in res.iterdir()) == sorted(p.name for p in src.iterdir())
    rows = [json.loads(line) for line in gzip.open(out, "rt")]
    assert len(rows) == 3 and {r["completion"] for r in rows} == {"<answer>5</answer>", "<answer>4</answer>", "four"}


def test_build_refuses_a_non_empty_destination_and_a_wrong_source(tmp_path):
    dest = tmp_path / "paper-data"
    dest.mkdir()
    (dest / "mine.txt").write_text("keep me")
    with pytest.raises(PaperDataError, match="not empty"):
        build(dest, fake_results(tmp_path / "results"))
    assert (dest / "mine.txt").read_text() == "keep me"
    with pytest.raises(PaperDataError, match="Instruct-"):
        build(tmp_path / "other", tmp_path / "mine")


def test_locate_finds_paper_data_in_the_working_directory(tmp_path, monkeypatch):
    build(tmp_path / "paper-data", fake_results(tmp_path / "src" / "results"), log=lambda *_: None)
    monkeypatch.chdir(tmp_path)
    assert paper_data.locate_results() == tmp_path / "paper-data" / "results"
    assert paper_data.locate_examples() == tmp_path / "paper-data" / "examples.jsonl.gz"


SHARED = next((b / "shared" for b in Path(__file__).resolve().parents if (b / "shared" / "paper-examples").is_dir()), None)
RESULTS = paper_data.locate_results()  # None, paper-data/results, or the shared folder's results


@pytest.mark.skipif(SHARED is None or RESULTS is None or "paper-data" not in str(RESULTS),
                    reason="needs the full results folder (scripts/paper_data.py) and the shared 1,653-row sample "
                    "to compare with")
def test_full_extraction_contains_every_shared_sample_row():
    rows = examples(RESULTS)
    assert len(rows) == 22_885
    key = lambda r: (r["dataset"], r["model"], r["completion"], r["correct"], r["format_correct"])  # noqa: E731
    have = {key(r) for r in rows}
    sample = [json.loads(line) for line in gzip.open(SHARED / "paper-examples" / "examples.jsonl.gz", "rt")]
    missing = [s for s in sample if key(s) not in have]
    assert len(sample) == 1653 and missing == []
