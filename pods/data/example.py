"""One problem of a dataset: `Example(prompt, answer, meta)`, what every reader and generator of pods.data returns.

    Example("964+494=", "1458", {"digits": 3})      # meta: extra columns, passed to the rewards as keywords
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Example:
    """One problem: the user-facing prompt text, the gold answer string, extra columns."""

    prompt: str
    answer: str
    meta: dict = field(default_factory=dict)
