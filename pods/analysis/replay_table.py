"""Replay's rows as text: aligned tables, a legend of their columns, and notes on what the figures rest on.

    print(report(rows))                 # tables (rollout rules, then prompt rules), each with its legend, then notes
    legend("rollout")                   # the columns explained (also `pods replay --help`)
    notes(rows)                         # rules that tie, rules with nothing to act on, steps not recorded, stray files

Contract: each column's header and meaning are declared once here (COLUMNS); shares print in %. A tie is two
rules of one run whose figures are all equal; a prompt rule has nothing to act on when it skipped no prompt and
filtered no group; rollout rules have nothing to choose between when m = n. docs/ledger.md.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

WIDTH = 100
COLUMNS = {  # kind -> [(row key, header, meaning)]
    "rollout": [
        ("m", "m", "rollouts kept of each group's n"),
        ("kept_reward_var", "kept var", "variance of the kept rewards (mean over groups)"),
        ("frac_all_correct", "all right %", "groups kept all correct"),
        ("frac_all_wrong", "all wrong %", "groups kept all wrong"),
        ("adv_abs_mean", "|adv|", "mean |advantage| of the kept rollouts"),
        ("adv_std", "adv std", "its spread"),
        ("frac_zero_adv", "adv=0 %", "kept rollouts without a gradient"),
        ("tokens_trained_per_step", "tokens/step", "completion tokens trained per step"),
        ("agreement", "agree %", "groups kept exactly as the run kept them"),
        ("agreement_rollouts", "agree rollouts %", "the run's kept rollouts kept too"),
    ],
    "prompt": [
        ("candidates", "offered", "prompts offered to the rule"),
        ("frac_skipped", "skipped %", "of those, skipped before generation"),
        ("frac_filtered", "filtered %", "generated groups its group filter drops"),
        ("frac_unknown", "unknown %", "picked prompts the run never generated (no rewards)"),
        ("kept_reward_var", "var", "reward variance of the groups it trains on"),
        ("frac_all_correct", "all right %", "of those, all correct"),
        ("frac_all_wrong", "all wrong %", "all wrong"),
        ("tokens_generated_per_step", "gen tokens/step", "completion tokens generated per step"),
        ("agreement", "agree %", "offered prompts it generated or skipped as the run did"),
    ],
}
PERCENT = {"frac_all_correct", "frac_all_wrong", "frac_zero_adv", "agreement", "agreement_rollouts", "frac_skipped",
           "frac_unknown", "frac_filtered"}


def _wrap(text: str) -> str:
    return textwrap.fill(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)


def legend(kind: str) -> str:
    """One line naming what each column of `kind`'s table means (wrapped between columns, never inside one)."""
    lines, line = [], f"{kind} columns:"
    for _, head, meaning in COLUMNS[kind]:
        item = f" {head} = {meaning};"
        if len(line) + len(item) > WIDTH:
            lines.append(line)
            line = " "
        line += item
    return "\n".join([*lines, line.rstrip(";")])


def report(rows: list[dict]) -> str:
    """The tables, each followed by its legend, then the notes (`notes`)."""
    parts = []
    for kind, cols in COLUMNS.items():
        mine = [r for r in rows if r.get("kind", "rollout") == kind]
        if mine:
            head = [("run", "run")] if len({r["run"] for r in rows}) > 1 else []
            parts.append(_aligned(mine, [*head, ("rule", f"{kind} rule"), *((k, h) for k, h, _ in cols)]) + "\n"
                         + legend(kind))
    remarks = notes(rows)
    return "\n\n".join([*parts, "\n".join(remarks)] if remarks else parts)


def _figures(row: dict) -> tuple:
    return tuple("nan" if v != v else v for k, v in row.items() if isinstance(v, (int, float)) and k != "groups")


def notes(rows: list[dict]) -> list[str]:
    """'note: ...' lines: rules whose rows tie, rules with nothing to act on, steps not recorded, files not counted."""
    out = []
    for run in dict.fromkeys(r["run"] for r in rows):
        mine = [r for r in rows if r["run"] == run]
        name = f"{Path(run).name}: " if len({r["run"] for r in rows}) > 1 else ""
        for kind in COLUMNS:
            same: dict[tuple, list[str]] = {}
            for r in (r for r in mine if r.get("kind", "rollout") == kind):
                same.setdefault(_figures(r), []).append(r["rule"])
            for rules in (v for v in same.values() if len(v) > 1):
                out.append(f"note: {name}{', '.join(rules)} tie (identical rows)")
        whole = [r for r in mine if r.get("kind", "rollout") == "rollout" and r.get("m") == r.get("n")]
        if whole:
            out.append(f"note: {name}m = n = {whole[0]['m']}: every rollout rule keeps every rollout, so there is "
                       "nothing to choose between")
        for r in mine:
            if r.get("kind") == "prompt" and not r["frac_skipped"] and not r.get("frac_filtered"):
                h = r.get("frac_with_history", float("nan"))  # NaN: a rule without a history (a group filter)
                why = "" if h != h else (" (no offered prompt had a history yet)" if h == 0 else
                                         f" ({100 * h:.0f} % of the offered prompts had a history)")
                out.append(f"note: {name}{r['rule']} had nothing to act on: it skipped no prompt and filtered no "
                           f"group{why}")
        first = mine[0]
        for a, b, why in first.get("gaps", []):
            span = f"steps {a}-{b}" if b is not None and b != a else f"step {a}" if b == a else f"steps from {a} on"
            out.append(f"note: {name}{span} not recorded ({why}): the figures cover the {first['steps']} steps "
                       "recorded; a rule that draws random numbers or keeps a history may not follow the run past it")
        out += [f"note: {n}" for n in first.get("not_counted", [])]
    return [_wrap(line) for line in out]


def _aligned(rows: list[dict], cols: list[tuple[str, str]]) -> str:
    def cell(key, v):
        if isinstance(v, str):
            return Path(v).name if key == "run" else v
        if isinstance(v, int):
            return str(v)
        return "n/a" if v != v else f"{100 * v:.1f}" if key in PERCENT else f"{v:.4g}"

    body = [[cell(k, r[k]) for k, _ in cols] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, (_, h) in enumerate(cols)]

    def line(xs):
        return "  ".join(x.rjust(w) if i else x.ljust(w) for i, (x, w) in enumerate(zip(xs, widths)))

    return "\n".join([line([h for _, h in cols]), *(line(b) for b in body)])
