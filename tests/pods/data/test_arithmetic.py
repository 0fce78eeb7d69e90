"""The embedded arithmetic task: deterministic, disjoint splits, difficulty knob.

Run: uv run pytest tests/pods/data/test_arithmetic.py
"""

import pytest

from pods import data
from pods.data import arithmetic
from pods.rewards.arithmetic import arithmetic_reward


def test_prompt_and_answer_format():
    ex = data.load_dataset("arithmetic", split="train", size=200, seed=1)
    for e in ex:
        a, b = e.prompt[:-1].split("+")
        assert e.prompt.endswith("=") and len(a) == len(b) == 3
        assert e.answer == str(int(a) + int(b)).zfill(4)


@pytest.mark.parametrize("digits, operands, width", [
    # 3-digit pairs: sums up to 1998 -> 4 characters
    (3, 2, 4),
    # 2-digit triples: up to 297 -> 3 characters
    (2, 3, 3),
    # 5-digit pairs: up to 199998 -> 6 characters
    (5, 2, 6),
    # 1-digit pairs: up to 18 -> 2 characters
    (1, 2, 2),
])
def test_difficulty_knob(digits, operands, width):
    assert arithmetic.answer_width(digits, operands) == width
    ex = data.load_dataset("arithmetic", split="train", size=50, digits=digits, operands=operands)
    assert all(len(e.answer) == width and e.prompt.count("+") == operands - 1 for e in ex)
    assert arithmetic_reward([e.answer for e in ex], [e.answer for e in ex]) == [1.0] * 50


def test_deterministic_from_seed():
    a = data.load_dataset("arithmetic", split="train", size=100, seed=3)
    b = data.load_dataset("arithmetic", split="train", size=100, seed=3)
    c = data.load_dataset("arithmetic", split="train", size=100, seed=4)
    assert [e.prompt for e in a] == [e.prompt for e in b] != [e.prompt for e in c]


def test_test_split_is_fixed_and_disjoint_from_train():
    test1 = data.load_dataset("arithmetic", split="test")
    test2 = data.load_dataset("arithmetic", split="test", seed=99)  # the run seed does not matter
    assert len(test1) == arithmetic.TEST_SIZE == 2000
    assert [e.prompt for e in test1] == [e.prompt for e in test2]
    assert len({e.prompt for e in test1}) == 2000  # no duplicates
    train = data.load_dataset("arithmetic", split="train", size=20_000, seed=0)
    assert not {e.prompt for e in train} & {e.prompt for e in test1}
    # a smaller test size is a prefix of the full one
    assert [e.prompt for e in data.load_dataset("arithmetic", split="test", size=10)] == [e.prompt for e in test1[:10]]


def test_small_spaces_keep_training_problems():
    # 1-digit pairs have 100 problems: the test split takes at most half
    test = data.load_dataset("arithmetic", split="test", digits=1)
    train = data.load_dataset("arithmetic", split="train", digits=1, size=300)
    assert len(test) == 50 and not {e.prompt for e in train} & {e.prompt for e in test}


@pytest.mark.parametrize("kwargs, message", [
    # unknown split
    ({"split": "validation"}, "unknown split"),
    # digits out of range
    ({"split": "train", "digits": 0}, "digits must be"),
    # operands out of range
    ({"split": "train", "operands": 1}, "operands must be"),
    # unknown option
    ({"split": "train", "ops": "+-"}, "unknown option"),
])
def test_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        data.load_dataset("arithmetic", **kwargs)


@pytest.mark.slow  # importing reasoning-gym takes ~10 s
def test_gsm_symbolic_offline():
    # reasoning-gym generates GSM8K-like problems locally; the gsm8k verifier grades them
    from pods.rewards import get

    ex = data.load_dataset("gsm_symbolic", split="test", size=3)
    assert len(ex) == 3 and all(e.prompt and e.answer for e in ex)
    assert get("gsm8k")([f"<answer>{e.answer}</answer>" for e in ex], [e.answer for e in ex]) == [1.0] * 3
    again = data.load_dataset("gsm_symbolic", split="test", size=3, seed=123)
    assert [e.prompt for e in again] == [e.prompt for e in ex]  # fixed test split


@pytest.mark.slow  # imports torch/transformers and generates with a tiny model
def test_untrained_tiny_model_is_far_below_half():
    # the task must leave room to learn: a random-initialised tiny model (the demo's, before its warm
    # start) answers almost nothing correctly
    import torch

    from pods.backends.tiny import byte_tokenizer, tiny_causal_lm

    torch.manual_seed(0)
    tok = byte_tokenizer()
    model = tiny_causal_lm(tok, "qwen2", seed=0).eval()
    test = data.load_dataset("arithmetic", split="test", size=32)
    _, ids, _ = data.render_prompts(test, tok, style="base")
    batch = torch.tensor(ids)  # all prompts have the same length (3-digit operands)
    with torch.no_grad():
        out = model.generate(batch, attention_mask=torch.ones_like(batch), max_new_tokens=5, do_sample=False,
                             pad_token_id=tok.pad_token_id)
    texts = tok.batch_decode(out[:, batch.shape[1]:], skip_special_tokens=True)
    accuracy = sum(arithmetic_reward(texts, [e.answer for e in test])) / len(test)
    assert accuracy < 0.2
