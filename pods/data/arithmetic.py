"""The embedded arithmetic task: multi-operand addition generated in code, for the CPU demo and tests.

    problems("train", size=1000, seed=0, digits=3)    # [("964+494=", "1458"), ...]
    problems("test", digits=3, operands=3)            # TEST_SIZE fixed problems: [("958+881+570=", "2409"), ...]
    examples("train", digits=3)                       # the same as Examples (meta: digits, operands): pods.data

Operands have exactly `digits` digits (no leading zeros); the answer is zero-padded to the largest sum's
length, `answer_width` ("123+456=" -> "0579"), so the tiny model must learn the carry into the leading
digit. `test` comes from a seed of the difficulty alone (every run evaluates on the same problems), `train`
from `seed`, never holding a test problem. The verifier is `rewards.arithmetic` (exact leading digits).
"""

from __future__ import annotations

import functools
import random

from pods.data.example import Example
from pods.errors import ConfigError

# Default number of held-out problems (>= 2000 for a standard error of about 1 point; docs/demo.md).
TEST_SIZE = 2000
# Default number of training problems (the demo samples batches from them with replacement).
TRAIN_SIZE = 100_000
# Seed offset of the fixed test split (combined with the difficulty, never with the run seed).
TEST_SEED = 1_000_003


def answer_width(digits: int, operands: int) -> int:
    """Characters of every answer: the length of the largest possible sum."""
    return len(str(operands * (10**digits - 1)))


def _check(digits: int, operands: int, size: int) -> None:
    if not 1 <= digits <= 18:
        raise ValueError(f"arithmetic: digits must be in 1..18, got {digits}")
    if not 2 <= operands <= 10:
        raise ValueError(f"arithmetic: operands must be in 2..10, got {operands}")
    if size < 0:
        raise ValueError(f"arithmetic: size must be >= 0, got {size}")


def _draw(rng: random.Random, digits: int, operands: int) -> tuple[int, ...]:
    low = 10 ** (digits - 1) if digits > 1 else 0
    return tuple(rng.randrange(low, 10**digits) for _ in range(operands))  # randint's draws, one call less


def _render(terms: tuple[int, ...], width: int) -> tuple[str, str]:
    return "+".join(str(t) for t in terms) + "=", str(sum(terms)).zfill(width)


def _test_terms(digits: int, operands: int, size: int) -> tuple[tuple[int, ...], ...]:
    rng = random.Random(TEST_SEED * 1000 + digits * 10 + operands)
    space = (10**digits - (10 ** (digits - 1) if digits > 1 else 0)) ** operands
    size = min(size, space // 2)  # leave at least half the problems for training
    seen: set[tuple[int, ...]] = set()
    out = []
    while len(out) < size:
        terms = _draw(rng, digits, operands)
        if terms not in seen:
            seen.add(terms)
            out.append(terms)
    return tuple(out)


def problems(
    split: str, *, size: int | None = None, seed: int = 0, digits: int = 3, operands: int = 2,
    test_size: int = TEST_SIZE,
) -> list[tuple[str, str]]:
    """[(prompt, answer)] of one split. `size` defaults to TRAIN_SIZE (train) / test_size (test).

    The train split excludes the first `test_size` test problems, so pass the same `test_size`
    when loading both splits.
    """
    if split not in ("train", "test"):
        raise ValueError(f"arithmetic: unknown split {split!r}; valid: train, test")
    test_size = int(test_size)
    size = int(size if size is not None else (TRAIN_SIZE if split == "train" else test_size))
    _check(digits, operands, size)
    width = answer_width(digits, operands)
    if split == "test":
        if size > test_size:
            raise ValueError(f"arithmetic: test size {size} > test_size {test_size}; raise test_size")
        return [_render(t, width) for t in _test_terms(digits, operands, test_size)[:size]]
    return list(_train_problems(size, seed, digits, operands, test_size))


def _train_problems(size: int, seed: int, digits: int, operands: int, test_size: int) -> tuple[tuple[str, str], ...]:
    held_out = set(_test_terms(digits, operands, test_size))
    space = (10**digits - (10 ** (digits - 1) if digits > 1 else 0)) ** operands
    if space - len(held_out) <= 0 and size > 0:
        raise ValueError("arithmetic: no training problems left outside the test split; lower test_size")
    rng, width, out = random.Random(seed), answer_width(digits, operands), []
    while len(out) < size:
        terms = _draw(rng, digits, operands)
        if terms not in held_out:
            out.append(_render(terms, width))
    return tuple(out)


OPTIONS = ("digits", "operands", "size", "seed", "test_size")


def examples(split: str, **options) -> list[Example]:
    """`problems(split, **options)` as Examples with meta {digits, operands}; a bad option: ConfigError."""
    if set(options) - set(OPTIONS):
        raise ConfigError(f"arithmetic: unknown option(s) {sorted(set(options) - set(OPTIONS))}; "
                          f"valid: {sorted(OPTIONS)}")
    try:
        key = tuple(sorted(options.items()))
        return list(_examples(split, key) if _hashable(key) else _examples.__wrapped__(split, key))
    except (ValueError, TypeError) as err:  # a bad option value (_check says which)
        raise ConfigError(f"{err} (dataset option of arithmetic)") from None


# A process that trains often (a sweep, the tests) makes each split once; the Examples are shared between calls:
# nothing changes an Example once made.
@functools.lru_cache(maxsize=4)
def _examples(split: str, options: tuple) -> tuple[Example, ...]:
    given = dict(options)
    digits, operands = int(given.get("digits", 3)), int(given.get("operands", 2))
    return tuple(Example(p, a, {"digits": digits, "operands": operands}) for p, a in problems(split, **given))


def _hashable(key) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True
