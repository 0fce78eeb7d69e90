r"""MATH labels: `labels=paper` reproduces the authors' loader, `full` keeps the whole boxed answer.

The reference is written here from the authors' `extract_math_answer` (YixuanEvenXu/pods utils/data.py:134-140
at 3fc107e, the commit of their MATH runs; read, not copied): no `\boxed{` -> None; else the text after the
LAST `\boxed{`, up to the first `}` after it, stripped. It is compared with `pods.data.load_dataset` on
solutions built around the MATH references of the paper's examples (../shared/paper-examples/, skipped when
absent), around a fixed list of answers, and on rewritten solutions (several boxes, nested boxes, spaces,
`\fbox`, no box).
"""

import gzip
import json
from pathlib import Path

import pytest

from pods import data
from pods.config.checks import validate
from pods.data.math_labels import LABELS, answer_label, math_label
from pods.errors import ConfigError

from helpers import compose

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = "shared/paper-examples/examples.jsonl.gz"
PAPER = next((p / EXAMPLES for p in REPO.parents if (p / EXAMPLES).is_file()), None)
ANSWERS = [r"\frac{1}{2}", r"\dfrac{3}{4}", r"\frac{\sqrt{3}}{2}", r"x^{2}+1", r"6\sqrt{2}+1", r"\sqrt{2}",
           r"\left( 3, \frac{\pi}{2} \right)", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\text{Evelyn}", r"2^{10}",
           "12", r"\pi", r"(1, \infty)", "p - q", r"\$18.90", r"10\%", r"\{1, 2\}"]


def authors_label(solution: str):
    """The authors' label, from the description in the module docstring (index arithmetic, no split)."""
    start = solution.rfind("\\boxed{")
    if start < 0:
        return None
    rest = solution[start + len("\\boxed{"):]
    end = rest.find("}")
    return (rest if end < 0 else rest[:end]).strip()


def rewritten(answer: str) -> list[str]:
    """Solutions that end in `answer`, written the ways MATH's solutions write them (and some they don't)."""
    return [
        f"Adding them gives $\\boxed{{{answer}}}$.",
        f"First $x = \\boxed{{7}}$ is tried, but the answer is $\\boxed{{{answer}}}$.",  # the last box counts
        f"So $\\boxed{{ {answer} }}$ \\text{{ (in lowest terms)}}.",  # spaces, braces after the box
        f"Hence $\\boxed{{\\boxed{{{answer}}}}}$",  # a box in a box
        f"The answer is $\\fbox{{{answer}}}$.",  # no \boxed{: the authors' loader has no label
        f"The answer is {answer}.",  # no box at all
        f"$$\\boxed{{{answer}}}$$\n\n(Check: \\frac{{1}}{{2}} + \\frac{{1}}{{2}} = 1.)",  # braces after the box
    ]


def references() -> list[str]:
    if PAPER is None:
        return []
    rows = [json.loads(line) for line in gzip.open(PAPER, "rt", encoding="utf-8")]
    return sorted({r["answer"] for r in rows if r["dataset"] == "math500"})


def load(tmp_path, rows, labels):
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data.load_dataset("math", split="train", path=path, labels=labels)


@pytest.mark.parametrize("source", ["answers", "paper-examples"])
def test_paper_labels_are_the_authors_loader_and_full_labels_the_whole_answer(tmp_path, source):
    answers = ANSWERS if source == "answers" else references()
    if not answers:
        pytest.skip(f"{EXAMPLES} is absent")
    solutions = [s for a in answers for s in rewritten(a)]
    rows = [{"problem": f"problem {i}", "solution": s} for i, s in enumerate(solutions)]
    theirs = {f"problem {i}": authors_label(s) for i, s in enumerate(solutions)}
    got = {ex.prompt: ex.answer for ex in load(tmp_path, rows, "paper")}
    # every row the authors gave a non-empty label is kept with exactly that label; the others are left out
    assert got == {p: label for p, label in theirs.items() if label}
    full = {ex.prompt: ex.answer for ex in load(tmp_path, rows, "full")}
    for i, answer in enumerate(answers):  # the whole last box (the plain-text solution has none)
        kept = [full.get(f"problem {7 * i + k}") for k in range(7)]
        assert kept == [answer, answer, answer, answer, answer, None, answer], answer


def test_the_cut_changes_exactly_the_answers_with_a_brace(tmp_path):
    rows = [{"problem": a, "solution": f"so $\\boxed{{{a}}}$."} for a in ANSWERS]
    got = {ex.prompt: ex.answer for ex in load(tmp_path, rows, "paper")}
    assert {a for a in ANSWERS if got[a] != a} == {a for a in ANSWERS if "}" in a}
    assert got[r"\frac{1}{2}"] == r"\frac{1" and got[r"\left( 3, \frac{\pi}{2} \right)"] == r"\left( 3, \frac{\pi"


def test_an_answer_column_is_cut_as_the_solution_it_came_from(tmp_path):
    rows = [{"problem": a, "answer": a} for a in ANSWERS]
    got = {ex.prompt: ex.answer for ex in load(tmp_path, rows, "paper")}
    assert got == {a: authors_label(f"Thus $\\boxed{{{a}}}$.") for a in ANSWERS}
    assert [answer_label(a, "full") for a in ANSWERS] == ANSWERS


def test_the_share_of_cut_labels_is_logged(tmp_path, caplog):
    rows = [{"problem": a, "solution": f"so $\\boxed{{{a}}}$."} for a in ANSWERS]
    load(tmp_path, rows, "paper")
    changed = sum("}" in a for a in ANSWERS)
    assert f"labels=paper changed {changed} of {len(ANSWERS)} labels" in caplog.text


def test_bad_labels_are_refused():
    with pytest.raises(ConfigError, match="only the math dataset has a label cut"):
        data.load_dataset("gsm8k", split="train", path=REPO / "tests/fixtures/gsm8k", labels="paper")
    with pytest.raises(ConfigError, match="valid: full, paper"):
        data.load_dataset("math", split="train", path=REPO / "tests/fixtures/math", labels="cut")
    with pytest.raises(ValueError, match="unknown MATH labels"):
        math_label(r"\boxed{1}", "cut")
    assert LABELS == ("full", "paper")


def test_the_paper_preset_trains_on_cut_labels_and_evaluates_on_whole_ones():
    cfg = compose(["experiment=math_main"])
    assert cfg.dataset.labels == "paper" and compose(["dataset=math"]).dataset.labels == "full"
    examples = data.load_examples({**cfg.dataset, "path": str(REPO / "tests/fixtures/math")})
    assert r"\frac{1" in [ex.answer for ex in examples]
    # evaluation entries carry no labels: MATH-500 and MATH test answers stay whole
    entry = {"name": "math", "split": "train", "path": str(REPO / "tests/fixtures/math"), "limit": None, "options": {}}
    assert r"\frac{1}{2}" in [ex.answer for ex in data.load_examples(entry)]


def test_a_label_cut_on_another_dataset_is_a_config_error():
    with pytest.raises(ConfigError, match="dataset.labels='paper': only the math dataset"):
        validate(compose(["dataset=gsm8k", "dataset.labels=paper"]), cuda=False)
