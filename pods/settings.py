"""A setting's declaration: a dataclass field holding its default, help, bounds and choices.

    @dataclass
    class LoraConfig:
        rank: int = setting(64, "LoRA rank r; 0 trains all parameters", low=0, why="0 = full-parameter")

Contract: the field's type annotation gives its kind (`int | None`: an integer or null); its metadata holds
help, low/high (closed unless low_open/high_open), choices, why (appended to a bound's or choice's message),
what (the expected value in words), empty_ok, resume_safe, trl (TRL's name, with trl_values / trl_refused) and
schema_of (a section whose keys depend on its values: "module:function" giving its dataclass). A bound or choice
written "module:NAME" is read from where it is implemented when checked. The one walker that checks a config
against these declarations is pods.config.fields; the train.py schema is pods.config.schema, each backend's
own settings live in its module (pods.backends.base.Facts.settings).
"""

from __future__ import annotations

import dataclasses

META = frozenset({"help", "low", "high", "low_open", "high_open", "choices", "why", "what", "empty_ok", "resume_safe",
                  "trl", "trl_values", "trl_refused", "schema_of"})


def setting(default=dataclasses.MISSING, help: str = "", *, factory=None, **meta):  # help: TRL's key
    """A schema field: `default` (or `factory` for lists, dicts, sections) and its metadata (see the contract)."""
    unknown = set(meta) - META
    if unknown:
        raise TypeError(f"setting(): unknown metadata {sorted(unknown)}; known: {', '.join(sorted(META))}")
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata={"help": help, **meta})
    return dataclasses.field(default=default, metadata={"help": help, **meta})
