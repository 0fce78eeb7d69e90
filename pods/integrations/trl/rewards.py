"""The `rewards` registry as TRL reward functions.

    from pods.integrations.trl import trl_reward_funcs
    funcs, weights = trl_reward_funcs([{"name": "gsm8k", "weight": 1.0}, {"name": "format", "weight": 0.1}])
    GRPOConfig(..., reward_weights=weights); GRPOTrainer(..., reward_funcs=funcs)
"""

from __future__ import annotations

from pods import rewards
from pods.errors import ConfigError

TRL_ONLY_KWARGS = ("prompts", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments")


def trl_reward_funcs(specs: list[dict], answer_column: str = "answer") -> tuple[list, list[float]]:
    """TRL reward functions and weights from `[{name, weight, unless}]` items (pods.rewards.Entry).

    TRL calls `f(prompts=, completions=, completion_ids=, **dataset_columns, trainer_state=, ...)`;
    each adapter calls `rewards.get(name)(completions, answers, **columns)` through `rewards.scores`
    (the one check of every reward call; conversational completions are reduced to their text) and
    applies its `unless` gate as train.py does. Logged by TRL as `rewards/<name>/mean`.
    """
    problems = rewards.entry_problems(specs)
    if problems:
        raise ConfigError("; ".join(problems))
    fns = {spec["name"]: rewards.get(spec["name"]) for spec in specs}
    funcs, weights = [], []
    for spec in specs:
        name, gate = spec["name"], spec.get("unless")

        def reward(completions, _name=name, _gate=gate, **kwargs):
            if answer_column not in kwargs:
                raise ValueError(f"the training dataset needs a {answer_column!r} column for the reward functions")
            texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
            columns = {k: v for k, v in kwargs.items() if k not in TRL_ONLY_KWARGS and k != answer_column}
            call = lambda n: rewards.scores(n, fns[n], texts, kwargs[answer_column], columns)  # noqa: E731
            scores = call(_name)
            return scores if _gate is None else rewards.gated(scores, call(_gate))

        reward.__name__ = name
        funcs.append(reward)
        weights.append(float(spec.get("weight", 1.0)))
    return funcs, weights
