"""The strict verifiers on the paper's real completions, against verdicts checked by hand.

`../shared/paper-examples/examples.jsonl.gz` (next to the checkout or one of its parents) holds 1,653
completions of the paper's models with the authors' grader's verdicts. Where our verdict differs from
theirs, each row was read by hand (docs/verifiers.md has the table); every other row must agree with
the authors. Skipped when the file is absent. With paper-data/ (scripts/paper_data.py) the disagreements
on all 22,885 published completions are pinned by count. Run: uv run pytest tests/pods/rewards/test_paper_examples.py
"""

import gzip
import json
from pathlib import Path

import pytest

from pods import data, rewards

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = "shared/paper-examples/examples.jsonl.gz"  # next to the checkout or one of its parents
PAPER = next((p / EXAMPLES for p in REPO.parents if (p / EXAMPLES).is_file()), REPO.parent / EXAMPLES)

# Row index -> the verdict by hand, for the rows where the strict verifiers and the authors differ.
HAND = {
    # MATH-500 tuple `(3, π/2)` / `$(3, \frac{\pi}{2})$` == `\left( 3, \frac{\pi}{2} \right)`: right.
    **dict.fromkeys([40, 212, 240, 317, 582, 627, 681, 698, 707, 717, 773, 819, 837, 924, 1034, 1156, 1177,
                     1182, 1648], 1),
    # 14/3 stated before a loop, after a malformed tag, with a stray `\right)`, or before an empty block.
    **dict.fromkeys([22, 740, 847, 995, 1054, 1464, 1597], 1),
    # GSM8K answers in a sentence ("a profit of $70,000.", "$18 per day."): right (their last
    # number was `000` or a period).
    **dict.fromkeys([850, 1195, 1243, 1330, 1340, 1376], 1),
    # AMC "the possible values are 0 and 36": two conflicting answers, wrong.
    **dict.fromkeys([181, 278, 328, 376, 579, 644], 0),
    # cut off while still comparing cases or verifying, no concluded answer: wrong ...
    **dict.fromkeys([12, 112, 419, 431, 849, 1157], 0),
    # ... and so is every completion that stops mid-sentence (no block, no box), even after computing the
    # reference (`So, \( x +`, `The answer is`, `To verify, we`, `... = 36 \` cut before its `\]`): it
    # stated no final answer (docs/verifiers.md). Their last number matched.
    **dict.fromkeys([23, 46, 100, 118, 158, 171, 180, 227, 249, 309, 337, 404, 454, 460, 480, 482, 487, 504,
                     506, 589, 599, 624, 650, 660, 686, 706, 709, 713, 761, 777, 792, 932, 958, 1185, 1569,
                     1590, 1594, 1595, 1599, 1642], 0),
    # GSM8K: an intermediate step in the block, a cut "For 20 chickens, ...", `3x`: wrong.
    **dict.fromkeys([923, 969, 1372], 0),
}
KNOWN_MISSES: set[int] = set()


@pytest.fixture(scope="module")
def verdicts():
    if not PAPER.is_file():
        pytest.skip(f"{PAPER} is absent")
    rows = [json.loads(line) for line in gzip.open(PAPER, "rt", encoding="utf-8")]
    ours = [rewards.get(data.DATASETS[r["dataset"]].reward)([r["completion"]], [r["answer"]])[0] for r in rows]
    return rows, ours


def test_disagreements_with_the_authors_are_the_hand_checked_ones(verdicts):
    rows, ours = verdicts
    differ = {i for i, (row, score) in enumerate(zip(rows, ours)) if bool(score) != row["correct"]}
    assert differ == set(HAND)


def test_hand_verdicts_hold(verdicts):
    _, ours = verdicts
    wrong = {i for i, hand in HAND.items() if int(ours[i]) != hand}
    assert wrong == KNOWN_MISSES


# All 22,885 completions the authors published (scripts/paper_data.py -> paper-data/examples.jsonl.gz): only the
# sample's rows above were read by hand, so here the disagreements are pinned by count and direction
# (docs/verifiers.md): a verifier change that moves any of them fails and must be re-read.
FULL = {"rows": 22_885, "only_strict_accepts": 584, "only_authors_accept": 147}


def test_disagreements_on_every_published_completion_are_pinned():
    from pods.analysis.paper_data import locate_examples

    path = locate_examples()
    if path is None or "paper-data" not in str(path):
        pytest.skip("paper-data/examples.jsonl.gz is absent: uv run python scripts/paper_data.py")
    rows = [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]
    ours = [rewards.get(data.DATASETS[r["dataset"]].reward)([r["completion"]], [r["answer"]])[0] for r in rows]
    strict_only = sum(bool(s) and not r["correct"] for r, s in zip(rows, ours))
    authors_only = sum(r["correct"] and not bool(s) for r, s in zip(rows, ours))
    assert {"rows": len(rows), "only_strict_accepts": strict_only, "only_authors_accept": authors_only} == FULL
