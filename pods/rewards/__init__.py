"""Verifiable reward functions by name (`pods.rewards`): the REGISTRY, and `combined`, train.py's one scoring path.

    from pods import rewards
    scores = rewards.get("gsm8k")(["<answer>72</answer>"], ["72"])                      # [1.0]
    total, per_function = rewards.combined(cfg.dataset.rewards)(completions, answers)    # [N], {name: [N]}

Contract: fn(completions: list[str], answers: list[str], **columns) -> list[float], one score per completion
(`columns`: the other dataset columns, per completion). `combined` takes items {name, weight = 1, unless = null}
(`Entry`; `unless: other` scores 0 wherever `other` scores > 0); an output that is not one finite number per
completion (`scores`; float32-sized), an exception or sys.exit, is a pods.errors.RewardError naming the function;
each function gets its own copies of the lists, so one cannot change what the next scores. docs/verifiers.md.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass, fields
from typing import Callable

from pods import plugins
from pods.errors import RewardError
from pods.rewards.arithmetic import arithmetic_reward
from pods.rewards.authors.openr1 import openr1_accuracy, openr1_format, openr1_tags
from pods.rewards.authors.paper import (
    paper_answer_decimal_reward,
    paper_answer_reward,
    paper_format_reward,
    paper_format_score_reward,
)
from pods.rewards.chemistry import chemistry_reward
from pods.rewards.format import format_reward, strict_format, tags_reward  # strict_format(text) -> bool: for_acc
from pods.rewards.gsm8k import gsm8k_reward
from pods.rewards.math_answer import math_reward

RewardFn = Callable[..., list[float]]

REGISTRY: dict[str, RewardFn] = {
    "gsm8k": gsm8k_reward,  # the number the final answer states == the gold number (1.0 / 0.0)
    "math": math_reward,  # MATH / MATH-500 / AMC23 equivalence: exact fast path, then math-verify (1.0 / 0.0)
    "chemistry": chemistry_reward,  # option letter / number + unit within a tolerance / formula (1.0 / 0.0)
    "arithmetic": arithmetic_reward,  # the embedded demo task: leading digits == gold exactly (1.0 / 0.0)
    "format": format_reward,  # strict `<think>..</think><answer>..</answer>` (1.0 / 0.0)
    "tags": tags_reward,  # 0.25 per think/answer tag present exactly once
    # the authors' 8-GPU rewards (docs/multi-gpu.md)
    "openr1_accuracy": openr1_accuracy, "openr1_format": openr1_format, "openr1_tags": openr1_tags,
    # the authors' own grader (last number \d+ / [\d.,]+), strict format flag and training format term: what the
    # paper's runs trained and were graded on, not correct verifiers
    "paper_answer": paper_answer_reward,
    "paper_answer_decimal": paper_answer_decimal_reward,
    "paper_format": paper_format_reward,
    "paper_format_score": paper_format_score_reward,
}
# Which reward grades which dataset: its declaration says (pods.data.DATASETS[name].reward).

__all__ = ["REGISTRY", "ENTRY_KEYS", "Combined", "Entry", "combined", "entry_problems", "get",
           "names", "probe", "scores", "strict_format"]


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


@dataclass(frozen=True)
class Entry:
    """One item of `dataset.rewards` (and of `combined`'s specs), declared once here."""

    name: str  # a registered reward (`names()`) or your own path/to/file.py:function
    weight: float = 1.0  # its weight in the total
    unless: str | None = None  # another item's name: this one scores 0 wherever that one scores > 0


ENTRY_KEYS = tuple(f.name for f in fields(Entry))


def entry_problems(specs, where: str = "rewards") -> list[str]:
    """Every problem of a list of {name, weight, unless} items, one sentence each ([] when usable);
    the reward functions themselves are looked up by `combined` (and probed by `probe`)."""
    if not isinstance(specs, Sequence) or isinstance(specs, str) or not specs:
        return [f"{where} is empty: list at least one {{name, weight}} reward function"]
    p, names = [], []
    for i, item in enumerate(specs):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item.get("name"):
            p.append(f"{where}[{i}] must be a {{name, weight}} item with a reward name, got {item!r}")
            continue
        unknown = sorted(set(item) - set(ENTRY_KEYS))
        if unknown:
            p.append(f"{where}[{i}] ({item['name']}): unknown key(s) {', '.join(map(str, unknown))}; valid keys: "
                     f"{', '.join(ENTRY_KEYS)}")
        weight = item.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
            p.append(f"{where}[{i}].weight must be a finite number, got {weight!r}")
        if item["name"] in names:
            p.append(f"{where}: {item['name']!r} listed twice; list each reward once (give it one weight)")
        names.append(item["name"])
    gates = {item["name"]: item.get("unless") for item in specs if isinstance(item, Mapping) and "name" in item}
    for name, gate in gates.items():
        if gate is not None and (gate not in gates or gate == name or gates[gate] is not None):
            p.append(f"{where}: {name!r} has unless={gate!r}, which must name another, ungated item of the list "
                     f"({', '.join(n for n, g in gates.items() if g is None and n != name) or 'none'}): the item "
                     "then scores 0 wherever that one scores > 0 (e.g. format credit only for wrong answers)")
    return p


class Combined:
    """The total reward training optimises: call -> (total [N], {name: scores [N]}), every output checked.

    per_function holds each item's scores after its `unless` gate, so total = sum(weight * per_function).
    """

    def __init__(self, specs):
        problems = entry_problems(specs)
        if problems:
            raise ValueError("combined " + "; ".join(problems))
        self.entries = [Entry(str(s["name"]), float(s.get("weight", 1.0)), s.get("unless")) for s in specs]
        self.fns = {e.name: get(e.name) for e in self.entries}

    def __call__(self, completions: list[str], answers: list[str], **columns):
        if len(completions) != len(answers):
            raise ValueError(f"{len(completions)} completions but {len(answers)} answers")
        raw = {name: scores(name, fn, completions, answers, columns) for name, fn in self.fns.items()}
        per_function = {e.name: raw[e.name] if e.unless is None else gated(raw[e.name], raw[e.unless])
                        for e in self.entries}
        total = [sum(e.weight * per_function[e.name][i] for e in self.entries) for i in range(len(completions))]
        huge = [i for i, t in enumerate(total) if not abs(t) <= FLOAT32_MAX]
        if huge:
            terms = " + ".join(f"{e.weight:g} x {e.name}" for e in self.entries)
            raise RewardError(f"the weighted total of the rewards ({terms}) is too large for float32 for {len(huge)} "
                              f"of {len(total)} completions ({_at(total, huge)}): lower the weights or the scores "
                              f"(at most {FLOAT32_MAX:.3g})")
        return total, per_function

    def __repr__(self) -> str:
        return f"Combined({[dataclasses.asdict(e) for e in self.entries]})"


def gated(scores: list[float], gate: list[float]) -> list[float]:
    """An item's scores after its `unless` gate: 0 wherever the gate's reward scores > 0."""
    return [0.0 if g > 0 else s for s, g in zip(scores, gate)]


def combined(specs: list[dict]) -> Combined:
    """A callable (completions, answers, **columns) -> (total [N], {name: [N]}) from {name, weight, unless} items."""
    return Combined(specs)


def probe(name: str) -> None:
    """Look a reward up (an error for an unknown name); your own function is also imported and called on two
    completions (`plugins.PROBE`), with the error of `scores` if that fails."""
    fn = get(name)
    if plugins.is_plugin(name):
        scores(name, fn, *plugins.PROBE, {}, during=" in the start-up probe")


# ----------------------------------------------------------------------------- the one check of every call


def scores(name: str, fn: RewardFn, completions, answers, columns: dict, during: str = "") -> list[float]:
    """fn(completions, answers, **columns) as floats [N]; RewardError naming `name`, what it returned and
    what to fix when it raises (your own functions), or returns anything but one finite number per completion."""
    n, yours = len(completions), plugins.is_plugin(name)
    where = f"reward {name!r}{during} on {n} completion{'s' * (n != 1)}"
    hint = f"\n  expected: {plugins.REWARD_SIGNATURE}" if yours else ""
    try:  # its own copies: a function that sorts or rewrites them cannot change what the next one scores
        out = fn(_fresh(completions), _fresh(answers), **{k: _fresh(v) for k, v in columns.items()})
    except SystemExit as err:
        if not yours:
            raise
        raise RewardError(f"{where} {plugins.exited(err)}{_probe_note(during)}: a reward must return its scores, "
                          f"not end the program{hint}") from None
    except Exception as err:  # your function's failure, reported as one message
        if not yours:
            raise  # a built-in verifier that raises is a bug of pods: keep its traceback
        if isinstance(err, TypeError) and columns and "unexpected keyword argument" in str(err):
            raise RewardError(f"{where} does not accept the dataset's extra columns ({', '.join(columns)}): "
                              f"TypeError: {err}; add **columns to its signature (each column arrives as a keyword "
                              f"argument, one value per completion){hint}") from err
        raise RewardError(f"{where} raised {type(err).__name__}: {err}{_probe_note(during)}{hint}") from err
    if isinstance(out, (str, bytes, Mapping)) or not isinstance(out, Sized):
        raise RewardError(f"{where} returned {_show(out)} ({type(out).__name__}), not a list of {n} numbers: "
                          f"return one float per completion{hint}")
    values = list(out)
    if len(values) != n:
        raise RewardError(f"{where} returned {len(values)} score{'s' * (len(values) != 1)} "
                          f"({_show(values)}): return one score per completion, in order{hint}")
    floats, bad, beyond = [], [], []
    for i, v in enumerate(values):
        try:
            if v is None or isinstance(v, (str, bytes)):
                raise TypeError
            floats.append(float(v))
        except OverflowError:  # an int beyond any float (10**400)
            floats.append(0.0)
            beyond.append(i)
        except (TypeError, ValueError):
            floats.append(math.nan)
            bad.append(i)
    if bad:
        raise RewardError(f"{where} returned non-numbers for {len(bad)} of them ({_at(values, bad)}; first at "
                          f"completion {bad[0]}: {_show(completions[bad[0]])}): return a float (or int, bool) "
                          f"for every completion{hint}")
    huge = sorted(beyond + [i for i, v in enumerate(floats) if math.isfinite(v) and abs(v) > FLOAT32_MAX])
    if huge:
        raise RewardError(f"{where} returned scores too large for float32 for {len(huge)} of them "
                          f"({_at(values, huge)}; first at completion {huge[0]}: {_show(completions[huge[0]])}): "
                          f"scores are trained in float32 (at most {FLOAT32_MAX:.3g} in size), where these would be "
                          f"inf; return scores on a small scale (0.0 to 1.0){hint}")
    bad = [i for i, v in enumerate(floats) if not math.isfinite(v)]
    if bad:
        raise RewardError(f"{where} returned NaN/inf for {len(bad)} of them ({_at(floats, bad)}; first at "
                          f"completion {bad[0]}: {_show(completions[bad[0]])}): return a finite score for every "
                          "completion (0.0 for no credit); a NaN or inf would make its group's advantages "
                          f"NaN{hint}")
    return floats


FLOAT32_MAX = 3.4028234663852886e38  # torch.finfo(torch.float32).max: rewards become float32 tensors


def _fresh(values) -> list:
    """A copy of a list of inputs that the callee may change at will (deep only where an item is mutable)."""
    values = list(values)
    if all(v is None or isinstance(v, (str, bytes, int, float)) for v in values):
        return values
    return copy.deepcopy(values)


def _probe_note(during: str) -> str:
    return "" if during else "; it passed the start-up probe, so look at what real completions hold (empty, " \
        "unfinished or very long ones) and return a score for every one (0.0 for no credit)"


def _show(value, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width] + "..."


def _at(values: list, positions: list[int], few: int = 3) -> str:
    shown = ", ".join(f"{_show(values[i], 20)} at {i}" for i in positions[:few])
    return shown + (", ..." if len(positions) > few else "")
