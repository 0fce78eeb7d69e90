"""Each paper preset trains on the reward of its published runs: on the authors' own completions, the preset's
`pods.rewards.combined(cfg.dataset.rewards)` equals their reward recomputed here, independently, from their code
at the commit that produced the runs (YixuanEvenXu/pods; docs/algorithms.md has the commits).

Correctness is the authors' own verdict stored with each completion (`correct`), so this file re-implements only
their formula around it. Always run on tests/fixtures/paper_rewards/examples.jsonl (56 real rows: right and
wrong x formatted, unformatted, partial tags, extra characters; Apache-2.0, from the authors' results files);
also on all 1,653 rows of ../shared/paper-examples/ when that file is there (skipped otherwise).
Run: uv run pytest tests/pods/rewards/authors/test_paper_training_reward.py
"""

import gzip
import json
import re
from pathlib import Path

import pytest

from pods import rewards

from helpers import compose

REPO = Path(__file__).resolve().parents[4]
FIXTURE = REPO / "tests" / "fixtures" / "paper_rewards" / "examples.jsonl"
EXAMPLES = "shared/paper-examples/examples.jsonl.gz"  # next to the checkout or one of its parents
SHARED = next((p / EXAMPLES for p in REPO.parents if (p / EXAMPLES).is_file()), None)

# ---- the authors' training reward, re-implemented from their code (not from pods.rewards)
TAGS = ("<think>", "</think>", "<answer>", "</answer>")
MATCH = re.compile(r"<think>.*</think>[ \n]?<answer>.*</answer>", re.DOTALL)  # format_score's pattern, both commits


def outside(text: str) -> int | None:
    """Characters outside their format match (re.search, as format_score does), None without a match."""
    m = MATCH.search(text)
    return None if m is None else len(text) - len(m.group(0))


def qwen_gsm8k(text: str, correct: bool) -> float:
    """3fc107e, train.py:95-97 + utils/data.py:239-269: correctness_reward_func + format_reward_func +
    xmlcount_reward_func, summed with weight 1 each; the last two are 0 where answer_correct."""
    if correct:
        return 1.0 + 0 + 0
    extra = outside(text)
    fmt = 0.0 if extra is None else max(0.0, 0.1 - 0.001 * extra)  # format_score, utils/data.py:57-62
    xml = sum(0.025 for tag in TAGS if text.count(tag) == 1)  # count_xml, utils/data.py:254-264
    return 0.0 + fmt + xml


def qwen_math(text: str, correct: bool) -> float:
    """3fc107e, train.py:95-97: the MATH runs ("NF") had correctness_reward_func only."""
    return 1.0 if correct else 0.0


def llama(text: str, correct: bool) -> float:
    """0c453d2, train.py:97 + utils/data.py:252-284: correctness + 0.01 x format_score (now 1 - 0.01 per extra
    character) + 0.01 x count_xml (now 0.25 per tag), none of them gated."""
    extra = outside(text)
    fmt = 0.0 if extra is None else max(0.0, 1 - 0.01 * extra)
    xml = sum(0.25 for tag in TAGS if text.count(tag) == 1)
    return (1.0 if correct else 0.0) + 0.01 * fmt + 0.01 * xml


# preset -> (the authors' reward, the model whose runs it reproduces: its rows carry that grader's verdicts)
PRESETS = {"gsm8k_main": (qwen_gsm8k, "qwen"), "n_scaling": (qwen_gsm8k, "qwen"), "m_scaling": (qwen_gsm8k, "qwen"),
           "rules": (qwen_gsm8k, "qwen"), "math_main": (qwen_math, "qwen"), "llama_main": (llama, "llama")}


def preset_reward(preset: str):
    cfg = compose([f"experiment={preset}"])
    return rewards.combined(cfg.dataset.rewards)


def read(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def compare(preset: str, rows: list[dict]) -> int:
    theirs, model = PRESETS[preset]
    rows = [r for r in rows if r["model"] == model]
    total, per = preset_reward(preset)([r["completion"] for r in rows], [r["answer"] for r in rows])
    want = [theirs(r["completion"], r["correct"]) for r in rows]
    differ = [(i, got, w) for i, (got, w) in enumerate(zip(total, want)) if abs(got - w) > 1e-9]
    assert differ == [], differ[:5]
    return len(rows)


@pytest.mark.parametrize("preset", list(PRESETS))
def test_each_preset_trains_on_its_runs_reward_fixture(preset):
    assert compare(preset, read(FIXTURE)) >= 10


@pytest.mark.parametrize("preset", ["gsm8k_main", "math_main", "llama_main"])
def test_each_preset_trains_on_its_runs_reward_every_shared_example(preset):
    if SHARED is None:
        pytest.skip(f"{EXAMPLES} is absent next to the checkout")
    assert compare(preset, read(SHARED)) >= 180


def test_the_fixture_covers_every_branch():
    rows = read(FIXTURE)
    seen = {(r["model"], r["correct"], outside(r["completion"]) is None, (outside(r["completion"]) or 0) > 0,
             sum(r["completion"].count(t) == 1 for t in TAGS) == 4) for r in rows}
    for model in ("qwen", "llama"):
        for correct in (True, False):
            assert (model, correct, False, False, True) in seen  # formatted exactly, every tag once
            assert any(s[:3] == (model, correct, True) for s in seen)  # no format match
            assert any(s[:2] == (model, correct) and not s[4] for s in seen)  # some tag missing or repeated
    assert any(s[0] == "qwen" and s[3] for s in seen)  # a match with characters outside it


def test_a_correct_gsm8k_answer_earns_exactly_one_whatever_its_format():
    rows = [r for r in read(FIXTURE) if r["model"] == "qwen" and r["correct"]]
    total, _ = preset_reward("gsm8k_main")([r["completion"] for r in rows], [r["answer"] for r in rows])
    assert total == [1.0] * len(rows)
