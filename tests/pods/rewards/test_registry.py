"""Registry and combined rewards. Run: uv run pytest tests/pods/rewards/test_registry.py"""

from pathlib import Path

import pytest

from pods import data, rewards


def test_names_and_get():
    assert rewards.names() == ["arithmetic", "chemistry", "format", "gsm8k", "math", "openr1_accuracy",
                               "openr1_format", "openr1_tags", "paper_answer", "paper_answer_decimal", "paper_format",
                               "paper_format_score", "tags"]
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
    ([{"weight": 1}], "must be a {name, weight} item with a reward name"),
    # the same reward twice
    ([{"name": "tags"}, {"name": "tags"}], "listed twice"),
    # a misspelt key is never ignored
    ([{"name": "tags", "unles": "gsm8k"}], "rewards[0] (tags): unknown key(s) unles; valid keys: name, weight, unless"),
    # a weight that is not a finite number
    ([{"name": "tags", "weight": "0.1"}], "rewards[0].weight must be a finite number, got '0.1'"),
    ([{"name": "tags", "weight": float("nan")}], "rewards[0].weight must be a finite number, got nan"),
    # a gate must be another, ungated item of the list
    ([{"name": "tags", "unless": "gsm8k"}], "'tags' has unless='gsm8k', which must name another, ungated item"),
    ([{"name": "tags", "unless": "tags"}], "which must name another"),
    ([{"name": "gsm8k"}, {"name": "format", "unless": "gsm8k"}, {"name": "tags", "unless": "format"}],
     "'tags' has unless='format'"),
])
def test_combined_bad_specs(specs, message):
    with pytest.raises(ValueError) as err:
        rewards.combined(specs)
    assert message in str(err.value)


def test_dataset_reward_map_names_registered_rewards():
    assert {d.reward for d in data.DATASETS.values()} <= set(rewards.names())


def test_unless_gives_an_item_credit_only_where_its_gate_scores_zero():
    """The paper's GSM8K reward: a correct answer earns exactly 1.0, a wrong one format and tag credit."""
    reward = rewards.combined([{"name": "paper_answer"},
                               {"name": "paper_format_score", "weight": 0.1, "unless": "paper_answer"},
                               {"name": "tags", "weight": 0.1, "unless": "paper_answer"}])
    completions = ["<think>6*12</think>\n<answer>72</answer>", "<think>6*12</think>\n<answer>70</answer> ok",
                   "72", "<answer>70</answer>"]
    total, per = reward(completions, ["72"] * 4)
    assert per["paper_answer"] == [1.0, 0.0, 1.0, 0.0]
    assert per["paper_format_score"] == pytest.approx([0.0, 0.97, 0.0, 0.0])  # 3 characters outside the match
    assert per["tags"] == [0.0, 1.0, 0.0, 0.5]  # gated: what the total adds, so total = sum(weight * per)
    assert total == pytest.approx([1.0, 0.197, 1.0, 0.05])
    assert total[0] == 1.0 and total[2] == 1.0  # exactly, whatever the format


def test_entry_declares_the_item_keys_once():
    assert rewards.ENTRY_KEYS == ("name", "weight", "unless")
    assert rewards.Entry("tags") == rewards.Entry(name="tags", weight=1.0, unless=None)
    assert rewards.entry_problems([{"name": "tags", "weight": 2}], where="dataset.rewards") == []


BAD = {  # a built-in-like reward of each misbehaviour, called through the one check
    "raises": lambda c, a, **k: 1 / 0,
    "short": lambda c, a, **k: [1.0],
    "strings": lambda c, a, **k: ["1.0" for _ in c],
    "none": lambda c, a, **k: None,
    "nan": lambda c, a, **k: [float("nan")] + [0.0] * (len(c) - 1),
    "inf": lambda c, a, **k: [0.0] * (len(c) - 1) + [float("inf")],
    "strict": lambda c, a: [0.0 for _ in c],  # no **columns
    "exits": lambda c, a, **k: exit(0),
    "huge": lambda c, a, **k: [0.0, 1e308, 0.0],
    "bigint": lambda c, a, **k: [0, 0, -10**400],
}


@pytest.mark.parametrize("kind, message", [
    ("raises", "reward 'mine:raises' on 3 completions raised ZeroDivisionError: division by zero; it passed the "
               "start-up probe"),
    ("short", "reward 'mine:short' on 3 completions returned 1 score ([1.0]): return one score per completion"),
    ("strings", "returned non-numbers for 3 of them ('1.0' at 0, '1.0' at 1, '1.0' at 2; first at completion 0: "
                "'<think>a</think>'): return a float"),
    ("none", "returned None (NoneType), not a list of 3 numbers"),
    ("nan", "returned NaN/inf for 1 of them (nan at 0; first at completion 0: '<think>a</think>'): return a finite"),
    ("inf", "returned NaN/inf for 1 of them (inf at 2; first at completion 2: ''): return a finite score"),
    ("strict", "reward 'mine:strict' on 3 completions does not accept the dataset's extra columns (level): TypeError:"),
    ("exits", "reward 'mine:exits' on 3 completions called sys.exit(0); it passed the start-up probe"),
    ("huge", "returned scores too large for float32 for 1 of them (1e+308 at 1; first at completion 1: '72'): scores "
             "are trained in float32 (at most 3.4e+38 in size)"),
    ("bigint", "returned scores too large for float32 for 1 of them (-1000000000000000000... at 2;"),
])
def test_every_call_is_checked_in_one_place_and_names_the_plugin(kind, message):
    from pods.errors import PodsError, RewardError

    with pytest.raises(RewardError) as err:
        rewards.scores(f"mine:{kind}", BAD[kind], ["<think>a</think>", "72", ""], ["72"] * 3, {"level": [1, 2, 3]})
    assert message in str(err.value) and isinstance(err.value, PodsError)
    assert "expected: def my_reward(completions" in str(err.value)


def test_a_builtin_that_raises_keeps_its_traceback_but_its_output_is_checked():
    with pytest.raises(ZeroDivisionError):  # a bug of pods, not of a setting
        rewards.scores("gsm8k", BAD["raises"], ["x"], ["1"], {})
    from pods.errors import RewardError

    with pytest.raises(RewardError, match=r"reward 'gsm8k' on 1 completion returned NaN/inf"):
        rewards.scores("gsm8k", BAD["nan"], ["x"], ["1"], {})
    assert rewards.scores("gsm8k", lambda c, a: (True,), ["x"], ["1"], {}) == [1.0]  # bools and tuples are fine


def test_each_function_gets_inputs_it_cannot_corrupt(tmp_path):
    """A function that sorts, reverses or rewrites its lists (or a mutable column value) in place changes nothing
    for the functions after it, nor for the caller."""
    (tmp_path / "vandal.py").write_text(
        "def vandal(completions, answers, **columns):\n"
        "    completions.sort(reverse=True)\n    answers.reverse()\n    answers[0] = '-1'\n"
        "    for values in columns.values():\n        values[-1].append('x')\n        values.reverse()\n"
        "    return [0.0 for _ in completions]\n")

    def count_tags(completions, answers, **columns):
        return [float(len(t)) for t in columns["tags"]]

    completions, answers, tags = ["<answer>3</answer>", "<answer>9</answer>", "x"], ["3", "4", "9"], [["a"], [], []]
    before = (list(completions), list(answers), [list(t) for t in tags])
    mixed = rewards.combined([{"name": f"{tmp_path / 'vandal.py'}:vandal", "weight": 0.0}, {"name": "gsm8k"}])
    total, per_fn = mixed(completions, answers, tags=tags)
    assert per_fn["gsm8k"] == [1.0, 0.0, 0.0] and total == [1.0, 0.0, 0.0]
    assert (completions, answers, tags) == before
    assert rewards.scores("mine:count", count_tags, completions, answers, {"tags": tags}) == [1.0, 0.0, 0.0]


PLUGINS = "tests/fixtures/plugins/bad_rewards.py"


@pytest.mark.parametrize("kind, said", [
    ("raises", "raised KeyError: 'score'; it passed the start-up probe"),
    ("short", "returned 1 score ([0.0]): return one score per completion"),
    ("strings", "returned non-numbers for 4 of them ('0.5' at 0, '0.5' at 1, '0.5' at 2, ...;"),
    ("nan", "returned NaN/inf for 1 of them (nan at 1; first at completion 1:"),
    ("exits", "called sys.exit(0); it passed the start-up probe, so look at what real completions hold"),
    ("huge", "returned scores too large for float32 for 1 of them (1e+308 at 0; first at completion 0:"),
    ("bigint", "returned scores too large for float32 for 1 of them (10000000000000000000... at 2; first at "
               "completion 2:"),
])
def test_a_plugin_that_misbehaves_only_on_a_real_batch_is_named_with_what_it_returned(monkeypatch, kind, said):
    """tests/fixtures/plugins/bad_rewards.py: each passes the start-up probe and fails on the second real batch
    (in a run: step 2, which train.py reports with the checkpoint it resumes from, tests/test_bad_inputs.py)."""
    from pods.errors import RewardError

    monkeypatch.chdir(Path(__file__).resolve().parents[3])
    name = f"{PLUGINS}:{kind}_on_batch"
    fn, batch = rewards.get(name), ["12", "7", "x", ""]
    rewards.scores(name, fn, batch[:2], ["12"] * 2, {}, during=" in the start-up probe")
    rewards.scores(name, fn, batch, ["12"] * 4, {})  # step 1
    with pytest.raises(RewardError) as err:
        rewards.scores(name, fn, batch, ["12"] * 4, {})
    assert f"reward '{name}' on 4 completions {said}" in str(err.value), str(err.value)
    assert "expected: def my_reward(" in str(err.value)


def test_a_plugin_without_columns_is_refused_on_a_dataset_that_has_them(monkeypatch):
    from pods.errors import RewardError

    monkeypatch.chdir(Path(__file__).resolve().parents[3])
    name = f"{PLUGINS}:no_columns"
    with pytest.raises(RewardError) as err:
        rewards.scores(name, rewards.get(name), ["1"] * 4, ["1"] * 4, {"start": [1, 2, 3, 4]})
    assert (f"reward '{name}' on 4 completions does not accept the dataset's extra columns (start): TypeError:"
            in str(err.value)) and "add **columns to its signature" in str(err.value)


def test_a_plugin_that_sorts_its_inputs_in_place_changes_nothing_for_the_next_reward(monkeypatch):
    """bad_rewards.py:sorts_in_place (sorts the completions, reverses the answers and the columns, overwrites an
    answer) listed first: the arithmetic reward after it scores what it scores alone."""
    monkeypatch.chdir(Path(__file__).resolve().parents[3])
    completions, answers, cols = ["12", "7", "5", "x"], ["12", "3", "5", "9"], {"level": [[1], [2], [3], [4]]}
    plain = rewards.combined([{"name": "arithmetic", "weight": 1.0}])(completions, answers, **cols)
    mixed = rewards.combined([{"name": f"{PLUGINS}:sorts_in_place", "weight": 0.0},
                              {"name": "arithmetic", "weight": 1.0}])(completions, answers, **cols)
    assert plain[0] == [1.0, 0.0, 1.0, 0.0]  # some right, some wrong: else the comparison proves nothing
    assert mixed[0] == plain[0] and mixed[1]["arithmetic"] == plain[1]["arithmetic"]
    assert (completions, answers) == (["12", "7", "5", "x"], ["12", "3", "5", "9"])
