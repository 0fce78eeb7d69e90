"""Start-up checks of the selection lab's settings: rl.rule / prompt_rule / allocation / token_mask / m_schedule.

    problems = lab_problems(cfg.rl)     # [] when the run can start; else one sentence per problem
    (rl: train.py's rl section, or any mapping with its key names: PODSConfig's, pods.integrations.trl.config)

Contract: each hook key names an entry of its registry (where it is implemented); a name of another hook kind says
which key it belongs to, an unknown one the nearest names. Options are tried on the rule itself (its own message),
budgets against B and n, and combinations that make no sense are refused with pods.core.compat's reason.
"""

from __future__ import annotations

import difflib

from pods.core.allocation import ALLOCATIONS, make_allocation
from pods.core.compat import combination_problems
from pods.core.downsample import RULES
from pods.core.m_schedule import M_SCHEDULES, m_at
from pods.core.prompt_rules import PROMPT_RULES, make_prompt_rule
from pods.core.token_masks import TOKEN_MASKS

HOOKS = {"rule": ("rollout rule", RULES), "prompt_rule": ("prompt rule", PROMPT_RULES),
         "allocation": ("allocation rule", ALLOCATIONS), "token_mask": ("token mask", TOKEN_MASKS),
         "m_schedule": ("m schedule", M_SCHEDULES)}


def hook_problems(rl) -> list[str]:
    """Each hook key names one of its registry's entries (nearest names, or the key a name of another kind needs)."""
    p = []
    for key, (kind, names) in HOOKS.items():
        value = rl[key]
        if not isinstance(value, str) or value in names:
            continue
        elsewhere = [(k, kd) for k, (kd, ns) in HOOKS.items() if k != key and value in ns]
        if elsewhere:
            k, kd = elsewhere[0]
            p.append(f"rl.{key}={value}: {value} is a {kd}, not a {kind}: set rl.{k}={value} (rl.{key}: "
                     f"{', '.join(names)})")
        else:
            near = difflib.get_close_matches(value, list(names), n=3, cutoff=0.5)
            hint = f"did you mean {' or '.join(near)}? " if near else ""
            p.append(f"unknown rl.{key} {value!r}; {hint}valid: {', '.join(names)}")
    return p


def lab_problems(rl) -> list[str]:
    """Every problem of the lab settings of `rl` (the run's rl section)."""
    p = hook_problems(rl)
    if p:
        return p
    n, m, B = rl.n, rl.m, rl.prompts_per_step
    for key, default in (("prompt_rule_options", "prompt_rule"), ("allocation_options", "allocation")):
        if rl[key] and rl[default] == "none":
            p.append(f"rl.{key}={dict(rl[key])} is given but rl.{default}=none: set rl.{default}, or drop the options")
    if not (isinstance(rl.prompt_pool, int) and rl.prompt_pool >= 1):
        p.append(f"rl.prompt_pool must be an integer >= 1, got {rl.prompt_pool!r}")
    else:
        p += _pool(rl)
    q = rl.token_mask_quantile
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < q <= 1:
        p.append(f"rl.token_mask_quantile must be a number in (0, 1] (the share of tokens kept), got {q!r}")
    if rl.prompt_rule != "none":
        try:
            make_prompt_rule(rl.prompt_rule, num_prompts=1, **dict(rl.prompt_rule_options or {}))
        except ValueError as err:
            p.append(f"rl.prompt_rule_options: {err}")
    p += _allocation(rl, n, m, B) + _m_schedule(rl, n, m)
    opts = dict(rl.allocation_options or {})
    p += combination_problems(rule=rl.rule, m=m, n=n, algorithm=_algorithm(rl), prompt_rule=rl.prompt_rule,
                              allocation=rl.allocation, token_mask=rl.token_mask, m_schedule=rl.m_schedule,
                              round_n=opts.get("round_n"), rule_scope=getattr(rl, "rule_scope", "group"))
    return p


def _pool(rl) -> list[str]:
    """rl.prompt_pool acts only for a selector (it picks B of pool x B candidates), and a selector needs a pool."""
    pool, name = rl.prompt_pool, rl.prompt_rule
    cls, base = PROMPT_RULES[name], PROMPT_RULES["none"]
    if cls.selects and pool < 2:
        return [f"rl.prompt_rule={name} picks rl.prompts_per_step prompts of the rl.prompt_pool x "
                f"rl.prompts_per_step candidates it is offered; with rl.prompt_pool={pool} it is offered exactly "
                f"those it must pick and chooses nothing: set rl.prompt_pool >= 2 (MoPPS's scripts offer 16x the batch "
                "for MATH, 8x for Countdown and Geometry3K; docs/rules.md)"]
    if not cls.selects and pool > 1:
        does = ("takes the prompts in stream order" if cls is base else
                "filters the step's groups after generation" if cls.choose is base.choose else
                "walks the stream, skipping the prompts it rules out")
        return [f"rl.prompt_pool={pool} offers a selector more candidates than it picks, but rl.prompt_rule={name} "
                f"{does}, so the pool changes nothing: set rl.prompt_pool=1, or a selector (mopps)"]
    return []


def _algorithm(rl) -> str:
    return ("pods" if rl.m < rl.n else "grpo") if rl.algorithm == "auto" else rl.algorithm


def _allocation(rl, n: int, m: int, B: int) -> list[str]:
    budget = rl.allocation_budget
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < B):
        return [f"rl.allocation_budget={budget!r} is below one rollout per prompt (rl.prompts_per_step={B}): set it "
                f">= {B}, or null for B x n = {B * n}"]
    if rl.allocation == "none":
        return ["rl.allocation_budget is set but rl.allocation=none: set rl.allocation, or "
                "rl.allocation_budget=null"] if budget is not None else []
    try:
        make_allocation(rl.allocation, n=n, m=m, budget=budget, **dict(rl.allocation_options or {})).first(B)
    except ValueError as err:
        return [f"rl.allocation={rl.allocation}: {err}"]
    return []


def _m_schedule(rl, n: int, m: int) -> list[str]:
    if rl.m_schedule == "constant":
        unused = [f"rl.{k}={rl[k]}" for k in ("m_end", "m_horizon") if rl[k] is not None]
        return [f"{', '.join(unused)}: used by an m schedule only; set rl.m_schedule (linear, cosine, step) or "
                "leave them null"] if unused else []
    end = n if rl.m_end is None else rl.m_end
    if not (isinstance(end, int) and m <= end <= n):
        return [f"rl.m_end={rl.m_end!r}: the m schedule goes from rl.m={m} to at most rl.n={n}; set rl.m <= "
                "rl.m_end <= rl.n"]
    horizon = rl.m_horizon if rl.m_horizon is not None else rl.max_steps
    if horizon is None:
        return [f"rl.m_schedule={rl.m_schedule} needs a horizon: set rl.m_horizon (steps) or rl.max_steps"]
    try:
        m_at(rl.m_schedule, 0, m=m, n=n, m_end=end, horizon=horizon)
    except ValueError as err:
        return [f"rl.m_schedule={rl.m_schedule}: {err}"]
    return []
