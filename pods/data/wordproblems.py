"""Arithmetic word problems generated in code: GSM8K-like sentences, one to three operations, integer answers.

    problems("train", size=1000, seed=0)   # [("Mia has 12 apples. She buys 5 more. How many apples ...?", "17")]
    problems("test", steps=2)               # TEST_SIZE fixed problems, every one with exactly 2 operations

A problem starts from a quantity and applies `steps` operations (1 to 3; `steps=0`: 1 to 3 at random), each a
sentence: add, take away, multiply ("twice as many"), keep one of k equal piles (exact division). Every intermediate and the
answer is a non-negative integer below 1000. `test` comes from a fixed seed (every run evaluates on the same
problems), `train` from `seed`, never repeating a test problem's text. Verifier: rewards gsm8k / paper_answer.
"""

from __future__ import annotations

import random

from pods.data.example import Example
from pods.errors import ConfigError

TEST_SIZE = 500  # default held-out problems
TRAIN_SIZE = 20_000  # default training problems
TEST_SEED = 2_000_003  # seed of the fixed test split (combined with `steps`, never with the run seed)
MAX_VALUE = 999  # every quantity stays below this

NAMES = ["Mia", "Liam", "Ava", "Noah", "Emma", "Omar", "Sofia", "Lucas", "Zoe", "Ethan", "Maya", "Leo", "Nora",
         "Ravi", "Hana", "Jack"]
PRONOUN = {n: ("she" if n in {"Mia", "Ava", "Emma", "Sofia", "Zoe", "Maya", "Nora", "Hana"} else "he") for n in NAMES}
ITEMS = ["apples", "marbles", "stickers", "pencils", "cookies", "books", "stamps", "shells", "cards", "coins"]


def _step(rng: random.Random, value: int, name: str, item: str) -> tuple[str, int] | None:
    """One operation on `value`: (sentence, new value), or None when the drawn kind does not fit."""
    he = PRONOUN[name].capitalize()
    friend = rng.choice([n for n in NAMES if n != name])
    kind = rng.choice(["add", "sub", "mul", "div"])
    if kind == "add":
        b = rng.randint(2, 40)
        text = rng.choice([f"{he} buys {b} more {item}.", f"{friend} gives {name} {b} {item}.",
                           f"{he} finds {b} more {item}."])
        return text, value + b
    if kind == "sub" and value >= 3:
        b = rng.randint(1, value - 1)
        text = rng.choice([f"{he} gives {b} {item} to {friend}.", f"{he} loses {b} of them.",
                           f"{he} uses {b} of the {item}."])
        return text, value - b
    if kind == "mul" and value <= MAX_VALUE // 2:
        k = rng.randint(2, min(5, MAX_VALUE // value))
        word = {2: "twice", 3: "three times", 4: "four times", 5: "five times"}[k]
        return f"{friend} has {word} as many {item} as {name}, and gives them all to {name}.", value + k * value
    if kind == "div":
        ks = [k for k in range(2, 7) if value % k == 0 and value // k >= 1]
        if ks:
            k = rng.choice(ks)
            return f"{he} splits the {item} into {k} equal piles and keeps one pile.", value // k
    return None


def problem(rng: random.Random, steps: int) -> tuple[str, str]:
    """One (question, answer) with exactly `steps` operations."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    value = rng.randint(2, 60)
    sentences = [f"{name} has {value} {item}."]
    while len(sentences) <= steps:
        done = _step(rng, value, name, item)
        if done is not None and done[1] <= MAX_VALUE:
            sentences.append(done[0])
            value = done[1]
    sentences.append(f"How many {item} does {name} have now?")
    return " ".join(sentences), str(value)


def _draw(rng: random.Random, steps: int) -> tuple[str, str]:
    return problem(rng, steps or rng.randint(1, 3))


def problems(split: str, *, size: int | None = None, seed: int = 0, steps: int = 0,
             test_size: int = TEST_SIZE) -> list[tuple[str, str]]:
    """[(question, answer)] of one split; `size` defaults to TRAIN_SIZE (train) / test_size (test).

    The train split leaves out the first `test_size` test problems: load both splits with the same test_size.
    """
    if split not in ("train", "test"):
        raise ValueError(f"word_problems: unknown split {split!r}; valid: train, test")
    if not 0 <= int(steps) <= 3:
        raise ValueError(f"word_problems: steps must be 0 (1 to 3 at random) or 1..3, got {steps}")
    size = int(size if size is not None else (TRAIN_SIZE if split == "train" else test_size))
    if size < 0 or int(test_size) < 0:
        raise ValueError(f"word_problems: size and test_size must be >= 0, got {size}, {test_size}")
    trng = random.Random(TEST_SEED * 10 + int(steps))
    test = [_draw(trng, int(steps)) for _ in range(int(test_size))]
    if split == "test":
        if size > int(test_size):
            raise ValueError(f"word_problems: test size {size} > test_size {test_size}; raise test_size")
        return test[:size]
    held_out, rng, out = {q for q, _ in test}, random.Random(int(seed)), []
    while len(out) < size:
        q, a = _draw(rng, int(steps))
        if q not in held_out:
            out.append((q, a))
    return out


OPTIONS = ("size", "seed", "steps", "test_size")


def examples(split: str, **options) -> list[Example]:
    """`problems(split, **options)` as Examples; an unknown or bad option: ConfigError."""
    if set(options) - set(OPTIONS):
        raise ConfigError(f"word_problems: unknown option(s) {sorted(set(options) - set(OPTIONS))}; "
                          f"valid: {sorted(OPTIONS)}")
    try:
        pairs = problems(split, **options)
    except (ValueError, TypeError) as err:  # a bad option value (problems says which)
        raise ConfigError(f"{err} (dataset option of word_problems)") from None
    return [Example(q, a, {}) for q, a in pairs]
