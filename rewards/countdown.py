"""A worked plug-in: a countdown task, an exact-number reward and a shaping term, named by file path.

    uv run python train.py model=tiny dataset.name=rewards/countdown.py:countdown \
        'dataset.rewards=[{name: rewards/countdown.py:exact_number, weight: 1.0}, {name: rewards/countdown.py:brevity, weight: 0.1}]' \
        dataset.accuracy_reward=rewards/countdown.py:exact_number dataset.prompt_style=base rl.n=8 rl.m=4 \
        rl.max_steps=2 rl.max_time=null rl.max_completion_tokens=8 optim.name=adamw run_name=countdown

Contract (rewards/README.md): a reward is `fn(completions, answers, **columns) -> list[float]`, one score
per completion, `columns` the other keys of the dataset rows (here `start`); a dataset is `fn(split) -> list`
of `pods.data.Example`s or dicts with `prompt` and `answer`.
"""

from __future__ import annotations

import random
import re

from pods.data import Example


def countdown(split: str) -> list:
    """'Count down from N by 3: the 4th number is' -> N - 9; a fixed, seeded list per split."""
    rng = random.Random({"train": 0, "test": 1}.get(split, 2))
    rows = []
    for _ in range(200 if split == "train" else 50):
        start = rng.randrange(20, 100)
        rows.append({"prompt": f"Count down from {start} by 3. The 4th number is ", "answer": str(start - 9),
                     "start": start})
    return rows


def exact_number(completions: list[str], answers: list[str], **columns) -> list[float]:
    """1.0 when the first number of the completion is the answer."""
    out = []
    for text, answer in zip(completions, answers):
        found = re.search(r"-?\d+", text)
        out.append(float(found is not None and found.group() == answer))
    return out


def brevity(completions: list[str], answers: list[str], start=None, **columns) -> list[float]:
    """A shaping term that uses a dataset column: shorter completions score higher (0..1)."""
    assert start is None or len(start) == len(completions)  # columns arrive one value per completion
    return [1.0 / (1 + len(text)) for text in completions]


def as_examples(split: str) -> list:
    """The same data as pods.data.Example objects (the other accepted row type)."""
    return [Example(prompt=r["prompt"], answer=r["answer"], meta={"start": r["start"]}) for r in countdown(split)]
