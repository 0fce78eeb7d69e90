"""Registry and combined rewards. Run: uv run pytest tests/pods/rewards/test_registry.py"""

import pytest

from pods import rewards


def test_names_and_get():
    assert rewards.names() == ["arithmetic", "chemistry", "format", "gsm8k", "math", "openr1_accuracy",
                               "openr1_format", "openr1_tags", "paper_answer", "paper_answer_decimal", "paper_format",
                               "tags"]
    for name in rewards.names():
        assert rewards.get(name)(["x"], ["1"]) in ([0.0], [1.0])


def test_unknown_name_lists_valid_ones():
    with pytest.raises(ValueError, match="valid names: arithmetic, chemistry, format, gsm8k, math, openr1_"):
        rewards.get("accuracy")


def test_combined_paper_weights():
    # paper: correctness 1.0, format 0.1, tag count 0.1
    reward = rewards.combined([{"name": "gsm8k", "weight": 1.0}, {"name": "format", "weight": 0.1},
                               {"name": "tags", "weight": 0.1}])
    completions = ["<think>a</think><answer>72</answer>", "72", "<answer>7</answer>"]
    total, per = reward(completions, ["72"] * 3)
    assert per == {"gsm8k": [1.0, 1.0, 0.0], "format": [1.0, 0.0, 0.0], "tags": [1.0, 0.0, 0.5]}
    assert total == pytest.approx([1.2, 1.0, 0.05])


def test_combined_accepts_omegaconf_and_default_weight():
    from omegaconf import OmegaConf

    specs = OmegaConf.create([{"name": "arithmetic"}, {"name": "format", "weight": 0.5}])
    total, per = rewards.combined(specs)(["0579"], ["0579"])
    assert total == [1.0] and set(per) == {"arithmetic", "format"}


@pytest.mark.parametrize("specs, message", [
    # nothing to combine
    ([], "at least one"),
    # unknown reward name
    ([{"name": "nope", "weight": 1}], "unknown reward"),
    # entry without a name
    ([{"weight": 1}], "needs a 'name'"),
    # the same reward twice
    ([{"name": "tags"}, {"name": "tags"}], "listed twice"),
])
def test_combined_bad_specs(specs, message):
    with pytest.raises(ValueError, match=message):
        rewards.combined(specs)


def test_dataset_reward_map_names_registered_rewards():
    assert set(rewards.DATASET_REWARD.values()) <= set(rewards.names())
