"""Which combinations of the hook kinds make no sense, and why (the start-up check refuses them).

    problems = combination_problems(rule="none", m=8, n=16, allocation="ada")   # -> ["rl.rule=none ...", ...]

Contract: one sentence per problem, naming the keys and what to set; an empty list means the combination runs.
Everything not refused composes with PODS's m-of-n step and dynamic sampling (docs/rules.md, "Combinations").
"""

from __future__ import annotations

from pods.core.downsample import BATCH_SCORES

RAGGED = ("ada", "ada_positive")  # allocations whose prompts end with unequal numbers of rollouts


def combination_problems(*, rule: str, m: int, n: int, algorithm: str = "pods", prompt_rule: str = "none",
                         allocation: str = "none", token_mask: str = "none", m_schedule: str = "constant",
                         round_n: int | None = None, rule_scope: str = "group") -> list[str]:
    """The reasons this combination of rl.rule / rl.prompt_rule / rl.allocation / rl.token_mask / rl.m_schedule
    cannot run (empty: it can)."""
    p = []
    if allocation != "none" and algorithm == "grpo_ga":
        p.append(f"rl.allocation={allocation} gives each prompt its own number of rollouts, but rl.algorithm=grpo_ga "
                 "splits every prompt's n into equal repeats: use rl.algorithm=auto (pods) or rl.allocation=none")
    if allocation in RAGGED and rule == "none":
        p.append(f"rl.allocation={allocation} leaves prompts with unequal numbers of rollouts, so rl.rule=none "
                 "(keep all, m = n) has no single n: pick a rollout rule (balanced is Reinforce-Ada's pick)")
    if m_schedule != "constant":
        if rule == "none":
            p.append(f"rl.m_schedule={m_schedule} changes m, but rl.rule=none needs m = n at every step")
        if algorithm in ("grpo", "grpo_ga"):
            p.append(f"rl.m_schedule={m_schedule} changes m, but rl.algorithm={algorithm} trains on all n (m = n)")
        if allocation in RAGGED:
            p.append(f"rl.m_schedule={m_schedule} grows m past what rl.allocation={allocation} guarantees every "
                     f"prompt (its first round of {round_n or 'round_n'}): keep rl.m_schedule=constant")
    if allocation in RAGGED and m == n:
        p.append(f"rl.allocation={allocation} with rl.m = rl.n = {n}: its first round already draws all n of every "
                 "prompt (m <= round_n <= n), so nothing is left to allocate: set rl.m < rl.n, or rl.allocation=none")
    if rule_scope == "batch":
        if rule not in BATCH_SCORES:
            p.append(f"rl.rule_scope=batch ranks rollouts across the whole batch, which rl.rule={rule} does not (it "
                     f"ranks within a group): set rl.rule to {' or '.join(BATCH_SCORES)} (CPPO's pruning), or "
                     "rl.rule_scope=group")
        if m >= n or algorithm in ("grpo", "grpo_ga"):
            p.append(f"rl.rule_scope=batch prunes to m per prompt on average, but rl.m = rl.n = {n} keeps every "
                     "rollout: set rl.m < rl.n (CPPO's pruning rate is 1 - m / n), or rl.rule_scope=group")
        if allocation in RAGGED:
            p.append(f"rl.rule_scope=batch ranks rows of one n, but rl.allocation={allocation} leaves prompts with "
                     "unequal numbers of rollouts: set rl.rule_scope=group or rl.allocation=none")
    if allocation in RAGGED and round_n is not None and m > round_n:
        p.append(f"rl.allocation={allocation} keeps m of at least one round of round_n={round_n} rollouts: "
                 f"rl.m={m} must be <= round_n")
    return p
