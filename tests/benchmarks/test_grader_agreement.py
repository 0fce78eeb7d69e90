"""benchmarks/grader_agreement.py: agreement table, disagreement kinds by explicit rules, clear errors.

Run: uv run pytest tests/scripts/test_grader_agreement.py
"""

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("grader_agreement", REPO / "benchmarks" / "grader_agreement.py")
ga = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ga)

PI = r"\left( 3, \frac{\pi}{2} \right)"
LOOP = "<think>x + y = 27 + 9 = 36." + "\n</think>" * 20


@pytest.mark.parametrize("completion, answer, pattern, strict, kind", [
    # the paper's grader accepts, the strict verifier rejects
    (LOOP, "36", r"\d+", False, "degenerate loop at the end; the number before it counts"),
    ("<think>so 9</think>\n<answer>\n9\n</", "9", r"\d+", False, "cut off inside the answer block; the number in it counts"),
    ("They meet 27 miles from A.", "27", r"\d+", False, "no answer block; the last number of the prose counts"),
    (r"<answer>\frac{14}{3}\</answer>", r"\frac{14}{3}", r"\d+", False, "LaTeX debris in the answer block (`\\frac{14}{3}\\`)"),
    ("<answer>27 miles from City A.</answer>", "27", r"\d+", False, "words around the number in the answer block"),
    # the strict verifier accepts, the paper's grader rejects
    ("<answer>$70,000 profit</answer>", "70000", r"\d+", True, "`$70,000`: the last number under \\d+ is `000`"),
    ("<answer>She makes $18 a day.</answer>", "18", r"[\d.,]+", True,
     "`[\\d.,]+` ends on the sentence's full stop: the last number is `.`"),
    ("<answer>(3, π/2)</answer>", PI, r"\d+", True, "tuple written with a Unicode pi, `(3, π/2)`: never string-equal"),
    (r"</think> \[ (3, \frac{\pi}{2}) \]", PI, r"\d+", True,
     "LaTeX answer outside a closed answer block: the last number cannot be a fraction or tuple"),
    (r"<answer>They are $(3, \frac{\pi}{2})$.</answer>", PI, r"\d+", True, "LaTeX answer inside a sentence in the answer block"),
    ("<answer>3.0</answer>", "3", r"\d+", True, "other: the strict verifier accepts an equivalent form"),
])
def test_each_answer_kind_rule(completion, answer, pattern, strict, kind):
    assert ga.kind_of({"completion": completion, "answer": answer, "pattern": pattern}, strict) == kind


def test_format_kinds_and_examples():
    row = {"completion": "<think>a</think>\n</think>\n<answer>1</answer>", "answer": "1"}
    assert ga.kind_of(row, False, ga.FORMAT_KINDS).startswith("a tag repeated inside")
    assert ga.format_example(row) == "<think>x1 </think>x2 <answer>x1 </answer>x1; between: '\\n'"
    row = {"completion": "<think>a</think>\n\n<answer>1</answer>", "answer": "1"}
    assert ga.kind_of(row, True, ga.FORMAT_KINDS).startswith("more than one blank")
    # examples: the answer block, or the end of the text without its loop
    assert ga.example_of({"completion": LOOP}) == "<think>x + y = 27 + 9 = 36. </think>"
    assert ga.example_of({"completion": "<answer> 42 \n</answer>"}) == "42"


ROWS = [
    # everyone agrees
    {"dataset": "gsm8k", "model": "qwen", "answer": "42", "completion": "<think>6*7</think>\n<answer>42</answer>",
     "correct": True, "format_correct": True},
    # the strict verifier reads 70000, the paper's last \d+ number is 000
    {"dataset": "gsm8k", "model": "qwen", "answer": "70000", "completion": "<think>a</think>\n<answer>$70,000 profit</answer>",
     "correct": False, "format_correct": True},
    # Llama's [\d.,]+ ends on the full stop
    {"dataset": "gsm8k", "model": "llama", "answer": "18", "completion": "<think>a</think>\n<answer>$18 every day.</answer>",
     "correct": False, "format_correct": True},
]


def test_report_on_a_small_examples_file(tmp_path, capsys):
    path = tmp_path / "examples.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(json.dumps(r) for r in ROWS) + "\n")
    assert ga.main(["--examples", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| gsm8k | llama | 1 | 0 (0.0 %) | 1 (100.0 %) | 1 (100.0 %) | 1 (100.0 %) |" in out
    assert "| gsm8k | qwen | 2 | 1 (50.0 %) | 2 (100.0 %) |" in out
    assert "differs from the authors' verdict on 2 rows" in out
    assert "| `$70,000`: the last number under \\d+ is `000` | strict | 1 | gsm8k/qwen 1 | `70000`: $70,000 profit |" in out
    assert "WARNING" not in out  # the paper-compatible graders reproduce these verdicts
    assert ga.main(["--examples", str(path)]) == 0 and capsys.readouterr().out == out  # deterministic


def test_missing_examples_file_is_a_clear_error(tmp_path, capsys):
    assert ga.main(["--examples", str(tmp_path / "nope.jsonl.gz")]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "scripts/paper_data.py" in err and "--examples PATH" in err
