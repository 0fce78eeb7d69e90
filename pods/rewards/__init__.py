"""Verifiable reward functions (`pods.rewards`), by name. One contract for all of them:

    fn(completions: list[str], answers: list[str], **columns) -> list[float]   # one score each

`columns` are extra dataset columns (per-completion lists), ignored by functions that do not use
them. Registered names (see each module's docstring for exactly what it accepts):
- `gsm8k`      rewards.gsm8k        the number the final answer states == gold (rewards.numbers; 1.0 / 0.0)
- `math`       rewards.math_answer  MATH / MATH-500 / AMC23 equivalence (exact fast path, then math-verify; 1.0 / 0.0)
- `chemistry`  rewards.chemistry    option letter / number+unit with tolerance / formula (1.0 / 0.0)
- `arithmetic` rewards.arithmetic   embedded task: leading digits == gold exactly (1.0 / 0.0)
- `format`     rewards.format       strict `<think>..</think><answer>..</answer>` (1.0 / 0.0)
- `tags`       rewards.format       0.25 per think/answer tag present exactly once
- `openr1_accuracy`, `openr1_format`, `openr1_tags`  rewards.openr1  the authors' 8-GPU rewards
- `paper_answer`, `paper_answer_decimal`, `paper_format`  rewards.paper  the authors' own grader
               (string normalisation, last number `\\d+` / `[\\d.,]+`) and format flag: numbers
               comparable with the paper's, not a correct verifier (1.0 / 0.0)
- `strict_format` is also exported as a predicate, `strict_format(text) -> bool`, for `for_acc`.

Usage:
    from pods import rewards
    scores = rewards.get("gsm8k")(["<answer>72</answer>"], ["72"])            # [1.0]
    reward = rewards.combined([{"name": "gsm8k", "weight": 1.0},
                               {"name": "format", "weight": 0.1}, {"name": "tags", "weight": 0.1}])
    total, per_function = reward(completions, answers)   # [N], {"gsm8k": [N], "format": [N], ...}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Callable

from pods import plugins
from pods.rewards.arithmetic import arithmetic_reward
from pods.rewards.chemistry import chemistry_reward
from pods.rewards.format import format_reward, strict_format, tags_reward
from pods.rewards.gsm8k import gsm8k_reward
from pods.rewards.math_answer import math_reward
from pods.rewards.openr1 import openr1_accuracy, openr1_format, openr1_tags
from pods.rewards.paper import paper_answer_decimal_reward, paper_answer_reward, paper_format_reward

RewardFn = Callable[..., list[float]]

REGISTRY: dict[str, RewardFn] = {
    "gsm8k": gsm8k_reward,
    "math": math_reward,
    "chemistry": chemistry_reward,
    "arithmetic": arithmetic_reward,
    "format": format_reward,
    "tags": tags_reward,
    "openr1_accuracy": openr1_accuracy, "openr1_format": openr1_format, "openr1_tags": openr1_tags,
    "paper_answer": paper_answer_reward,
    "paper_answer_decimal": paper_answer_decimal_reward,
    "paper_format": paper_format_reward,
}
# Which correctness reward goes with which dataset (pods.data names); evaluation's `ans_acc`.
DATASET_REWARD = {
    "gsm8k": "gsm8k",
    "gsm_symbolic": "gsm8k",
    "math": "math",
    "math500": "math",
    "amc23": "math",
    "chemistry": "chemistry",
    "arithmetic": "arithmetic",
}

__all__ = ["REGISTRY", "DATASET_REWARD", "Combined", "combined", "get", "names", "strict_format"]


def names() -> list[str]:
    """Registered reward names, sorted."""
    return sorted(REGISTRY)


def get(name: str) -> RewardFn:
    """The reward function registered as `name`, or your own at `package.module:function`
    (pods.plugins); ValueError listing valid names otherwise."""
    if plugins.is_plugin(name):
        return plugins.reward(name)
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown reward {name!r}; valid names: {', '.join(names())}, or your own function "
                         "as package.module:function (docs/workbench.md)") from None


class Combined:
    """Weighted sum of registered rewards; call -> (total [N], {name: scores [N]})."""

    def __init__(self, specs: list[dict]):
        if not specs:
            raise ValueError("combined rewards: give at least one {name, weight} entry")
        self.weights: dict[str, float] = {}
        for spec in specs:
            if not isinstance(spec, Mapping) or "name" not in spec:
                raise ValueError(f"combined rewards: each entry needs a 'name' (and 'weight'), got {spec!r}")
            name, weight = spec["name"], float(spec.get("weight", 1.0))
            get(name)  # validate early
            if name in self.weights:
                raise ValueError(f"combined rewards: {name!r} listed twice")
            self.weights[name] = weight
        self.fns = {name: get(name) for name in self.weights}

    def __call__(self, completions: list[str], answers: list[str], **columns):
        if len(completions) != len(answers):
            raise ValueError(f"{len(completions)} completions but {len(answers)} answers")
        per_function = {name: [float(x) for x in fn(completions, answers, **columns)] for name, fn in self.fns.items()}
        total = [0.0] * len(completions)
        for name, scores in per_function.items():
            w = self.weights[name]
            total = [t + w * s for t, s in zip(total, scores, strict=True)]
        return total, per_function

    def __repr__(self) -> str:
        return f"Combined({self.weights})"


def combined(specs: list[dict]) -> Combined:
    """A callable (completions, answers, **columns) -> (total [N], {name: [N]}) from {name, weight} specs."""
    return Combined(specs)
