r"""rewards.authors.paper: the authors' grader, verdict for verdict.

The main test replays the authors' real completions with their stored verdicts (paper-data/examples.jsonl.gz
from scripts/paper_data.py: 22,885 rows; or a 1,653-row sample) and requires 100 % agreement; the tables pin the protocol's known
quirks (each verdict below is also what the authors' utils/grader.py returns).
Run: uv run pytest tests/pods/rewards/authors/test_paper.py
"""

import gzip
import json
import random
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from pods import rewards
from pods.analysis.paper_data import GET_IT, locate_examples
from pods.rewards.authors.normalize import mathd, prm, same_answer
from pods.rewards.authors.paper import NUMBER_PATTERNS, answer_block, last_number, paper_correct, paper_format_ok

# the authors' real completions: paper-data/examples.jsonl.gz (scripts/paper_data.py, all 22,885), or the
# 1,653-row sample in a shared/paper-examples folder beside the checkout (pods.analysis.paper_data.locate_examples)
EXAMPLES = locate_examples() or Path("paper-data/examples.jsonl.gz")
# the paper's grader per model of the examples file (docs/evaluation.md)
GRADER = {"qwen": "paper_answer", "llama": "paper_answer_decimal"}


@pytest.mark.skipif(not EXAMPLES.is_file(), reason=f"the authors' examples are absent: {GET_IT}")
def test_every_verdict_of_the_paper_examples():
    rows = [json.loads(line) for line in gzip.open(EXAMPLES, "rt", encoding="utf-8")]
    assert len(rows) >= 1653
    wrong, count = [], Counter()
    for r in rows:
        count[r["dataset"], r["model"]] += 1
        ans = rewards.get(GRADER[r["model"]])([r["completion"]], [r["answer"]])[0]
        fmt = rewards.get("paper_format")([r["completion"]], [r["answer"]])[0]
        if (ans == 1.0) != r["correct"] or (fmt == 1.0) != r["format_correct"]:
            wrong.append((r["dataset"], r["model"], r["answer"], r["completion"][-200:]))
    assert wrong == [], f"{len(wrong)} of {len(rows)} verdicts differ, e.g. {wrong[:3]}"
    assert set(count) == {(d, m) for d in ("gsm8k", "math500", "amc23") for m in ("qwen", "llama")}


ANSWER_CASES = [
    # (completion, reference, verdict with \d+, verdict with [\d.,]+)
    # a word after the number in the answer block: the block does not match, the last number 18 does
    ("<think>9 - 4 = 5</think>\n<answer>\n18 dollars\n</answer>", "18", True, True),
    # a dollar sign: the PRM800K normalisation removes it
    ("<think>...</think><answer>$18</answer>", "18", True, True),
    # thousands comma inside the answer block: normalised away
    ("<think>...</think><answer>$70,000</answer>", "70000", True, True),
    # the same number only in prose: \d+ takes the last group, 000 (docs/verifiers.md's "$70,000" case)
    ("Her profit is $70,000.", "70000", False, True),
    # [\d.,]+ ends on a sentence's full stop: the last "number" is "."
    ("So she makes 18 dollars.", "18", True, False),
    ("So she makes 18 dollars", "18", True, True),
    # a unit word the normalisation strips
    ("<answer>540 meters</answer>", "540", True, True),
    ("<answer>45 degrees</answer>", "45", True, True),
    ("<answer>45^\\circ</answer>", "45", True, True),
    # LaTeX in the block is turned into text before the comparison: 14/3 == 14/3
    ("<answer>\\(\\frac{14}{3}\\)</answer>", "\\frac{14}{3}", True, True),
    ("<answer>14/3</answer>", "\\frac{14}{3}", True, True),
    # no numeric tolerance, no symbolic equivalence
    ("<answer>4.67</answer>", "\\frac{14}{3}", False, False),
    ("<answer>1.5</answer>", "\\frac{3}{2}", False, False),
    # except this one: the MATH normalisation maps 0.5 to \frac{1}{2}
    ("<answer>0.5</answer>", "\\frac{1}{2}", True, True),
    # a tuple with inline maths: text (3,pi/2) on both sides
    ("<answer>(3, \\(\\frac{\\pi}{2}\\))</answer>", "\\left( 3, \\frac{\\pi}{2} \\right)", True, True),
    # the same tuple with a Unicode pi is never equal (docs/verifiers.md: "(3, π/2)")
    ("<answer>(3, π/2)</answer>", "\\left( 3, \\frac{\\pi}{2} \\right)", False, False),
    # text answers: \text{} unwrapped, case ignored
    ("<answer>evelyn</answer>", "\\text{Evelyn}", True, True),
    # an expression must match as a string
    ("<answer>\\(p - q\\)</answer>", "p - q", True, True),
    ("<answer>q - p</answer>", "p - q", False, False),
    # a rambling completion without a block is correct when its last number is the reference
    ("The answer is 12, wait, let me recheck: 3 + 4 = 7, so 36", "36", True, True),
    # ... and wrong when the reference is stated earlier but another number comes last
    ("<think>We get 36 games. Check: 36 = 3L(3L-1)/2 with L = 3", "36", False, False),
    # text after the block does not matter when the block matches
    ("<answer>36</answer> and 1", "36", True, True),
    ("<answer>x = 27</answer>", "27", True, True),
    ("<answer>27.0</answer>", "27", True, True),
    ("<answer>\\boxed{27}</answer>", "27", True, True),
    ("<answer>3,159</answer>", "3159", True, True),
    # no number at all, an empty completion; a bare correct number
    ("no answer at all", "9", False, False),
    ("", "9", False, False),
    ("9", "9", True, True),
]


@pytest.mark.parametrize("completion, reference, integer, decimal", ANSWER_CASES)
def test_paper_answer_verdicts(completion, reference, integer, decimal):
    assert rewards.get("paper_answer")([completion], [reference]) == [float(integer)]
    assert rewards.get("paper_answer_decimal")([completion], [reference]) == [float(decimal)]


def test_the_three_candidate_strings():
    text = "<think>7</think><answer> 8 </answer> then <answer>9 </answer>, 10"
    assert answer_block(text) == "9"  # after the LAST <answer>, up to the next </answer>, stripped
    assert answer_block("no tags 5") == "no tags 5"  # no tag: the whole text
    assert last_number(text) == "10" and last_number("none") == "-1"
    assert last_number("$70,000", NUMBER_PATTERNS["paper_answer_decimal"]) == "70,000"
    # any of them may match: the block (9), the last number (10) or the whole text
    assert [paper_correct(text, ref) for ref in ("9", "10", "8", "7")] == [True, True, False, False]


def test_normalisations():
    # Hendrycks MATH: \left/\right, \dfrac, a^\circ, "k = " and a/b -> \frac{a}{b}
    assert mathd(r"\left( 3, \dfrac{\pi}{2} \right)") == r"(3,\frac{\pi}{2})"
    assert mathd("k = 3/4") == r"\frac{3}{4}" and mathd(r"\frac12") == r"\frac{1}{2}" and mathd(r"90^\circ") == "90"
    # a \text{ unit is cut; two of them are an internal error: the input comes back unchanged
    assert mathd(r"5\text{ cm}") == "5" and mathd(r"5\text{ cm}\text{ m}") == r"5\text{ cm}\text{ m}"
    # PRM800K: units, $, %, commas, case, LaTeX -> text, integers printed plainly
    assert prm("$1,000.00") == "1000" and prm("12 inches") == "12" and prm("2.0") == "2"
    # unit words are removed anywhere, leaving the rest: "per month" -> "per"
    assert prm("$1,000.00 per month") == "1,000.00per"
    assert prm(r"\frac{\sqrt{3}}{2}") == "sqrt(3)/2" and prm(r"\text{Evelyn}") == "evelyn"
    assert prm("7 3/4") == "7+3/4" and prm("2 million") == "2*10^6"
    # elements of a tuple are compared as written fractions only
    assert same_answer("(1/2,3/4)", "(1/2, 3/4)") and not same_answer("[1/2,3/4]", "(1/2,3/4)")
    assert not same_answer(None, "1")


# The authors' format flag (utils/data.py line 79), the specification of paper_format.
THEIR_FORMAT = re.compile(r"^[ \n]?<think>.*</think>[ \n]?<answer>.*</answer>[ \n]?$", re.DOTALL)


@pytest.mark.parametrize("text, ok", [
    ("<think>a</think><answer>1</answer>", True),
    # one blank (space or newline) allowed at the start, between the parts and at the end
    ("\n<think>a</think>\n<answer>1</answer>\n", True),
    (" <think>a</think> <answer>1</answer> ", True),
    # Python's `$` also allows one more final newline
    ("<think>a</think><answer>1</answer> \n", True),
    ("<think>a</think><answer>1</answer>\n\n", True),
    ("<think>a</think><answer>1</answer>\n\n\n", False),
    ("  <think>a</think><answer>1</answer>", False),
    ("<think>a</think>\n\n<answer>1</answer>", False),
    # anything, tags included, inside the parts; an empty answer is fine
    ("<think><answer></think><answer></answer>", True),
    ("<think>a</think><answer>1</answer>trailing", False),
    ("<answer>1</answer>", False),
    ("<think>a</answer>", False),
])
def test_paper_format(text, ok):
    assert bool(THEIR_FORMAT.match(text)) is ok  # the table is the authors' regex
    assert rewards.get("paper_format")([text], [""]) == [float(ok)]


def test_paper_format_equals_the_authors_regex_on_random_tag_soup():
    rng = random.Random(0)
    atoms = ["<think>", "</think>", "<answer>", "</answer>", " ", "\n", "x"]
    for _ in range(20_000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 9)))
        assert paper_format_ok(text) == bool(THEIR_FORMAT.match(text)), repr(text)


HOSTILE = [
    "x" * 1_000_000,
    "9" * 1_000_000,
    "1,000" * 200_000,
    r"\frac" * 200_000,
    r"\boxed{" * 100_000,
    "{" * 10_000 + "1" + "}" * 10_000,
    r"\alpha " * 100_000,
    "<think>" + "</think>" * 100_000 + "<answer>" * 100_000,
    "<answer>\u202e٣٤ 🧪 \x00 \ufffd</answer>",
]


@pytest.mark.parametrize("name", ["paper_answer", "paper_answer_decimal", "paper_format"])
@pytest.mark.parametrize("completion", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_completions_score(name, completion):
    assert rewards.get(name)([completion], ["2"]) in ([0.0], [1.0])


@pytest.mark.bench
@pytest.mark.parametrize("name", ["paper_answer", "paper_answer_decimal", "paper_format"])
@pytest.mark.parametrize("completion", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_completions_score_quickly(name, completion):
    start = time.perf_counter()
    scores = rewards.get(name)([completion], ["2"])
    assert scores in ([0.0], [1.0]) and time.perf_counter() - start < 5.0


def test_wrong_types_score_zero():
    for name in ("paper_answer", "paper_answer_decimal", "paper_format"):
        assert rewards.get(name)([None, 5], ["1", "1"]) == [0.0, 0.0]


def authors_math_label(solution: str) -> str:
    """The authors' MATH training label (utils/data.py:134-140 at 3fc107e): the text after the last
    `\\boxed{`, up to its first `}`."""
    return solution.rsplit("\\boxed{", 1)[-1].split("}", 1)[0].strip()


KEPT_BY_THE_CUT = [r"\sqrt{2}", r"5\sqrt{3}", r"\sqrt[3]{2}", r"\text{Evelyn}", r"\text{(C)}", r"2^{10}", r"x^{2}",
                   r"12", r"\pi", r"(1, \infty)"]
LOST_BY_THE_CUT = [r"\frac{1}{2}", r"\dfrac{3}{4}", r"\frac{\sqrt{3}}{2}", r"x^{2}+1", r"6\sqrt{2}+1",
                   r"\left( 3, \frac{\pi}{2} \right)", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}"]


@pytest.mark.parametrize("answer", KEPT_BY_THE_CUT + LOST_BY_THE_CUT)
def test_the_authors_math_label_cut(answer):
    """docs/datasets.md: a cut label still matched a correct answer when nothing followed the answer's
    first `}` (their grader drops leftover braces), and matched nothing when something did."""
    label = authors_math_label(f"so the answer is $\\boxed{{{answer}}}$.")
    grade = rewards.get("paper_answer")
    for written in (answer, f"\\boxed{{{answer}}}", f"${answer}$"):
        completion = f"<think>...</think>\n<answer>{written}</answer>"
        assert grade([completion], [answer]) == [1.0]  # the whole label: always matched
        assert grade([completion], [label]) == [1.0 if answer in KEPT_BY_THE_CUT else 0.0], (label, written)
