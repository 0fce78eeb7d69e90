"""GSM-Symbolic: GSM8K-like word problems generated locally by reasoning-gym (the `gym` extra).

    examples("train", size=1000, seed=0)     # [Example(question, "42", {}), ...]
    examples("test")                         # a fixed split: its own seed, the same for every run

Options: size (default 1000), seed (train only). A bad option or split: ConfigError. Graded by `rewards.gsm8k`.
"""

from __future__ import annotations

from pods.data.example import Example
from pods.errors import ConfigError
from pods.extras import require

# Seed of the fixed test split.
TEST_SEED = 1_000_003


def examples(split: str, **options) -> list[Example]:
    """The problems of `split` (train | test) as Examples."""
    unknown = sorted(set(options) - {"size", "seed"})
    if unknown:
        raise ConfigError(f"gsm_symbolic: unknown option(s) {unknown}; valid: size, seed")
    size, seed = int(options.get("size", 1000)), int(options.get("seed", 0))
    if split not in ("train", "test"):
        raise ConfigError(f"gsm_symbolic: unknown split {split!r}; valid: train, test")
    reasoning_gym = require("reasoning_gym", "gym")  # optional extra: GSM8K-like problems made locally

    seed = TEST_SEED if split == "test" else int(seed)
    data = reasoning_gym.create_dataset("gsm_symbolic", size=int(size), seed=seed)
    return [Example(x["question"], str(x["answer"]).strip(), {}) for x in data]
