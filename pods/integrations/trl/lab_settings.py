"""PODSConfig's lab settings: the train.py lab under TRL's spelling, and their start-up checks.

    fields = lab_fields()                 # {"pods_prompt_rule": dataclasses.field(...), ...} for PODSConfig
    rl = lab_view(args)                   # the settings under train.py's names (pods.core.lab.Lab, lab_problems)
    check_lab_args(args)                  # ValueError: one line per problem, train.py's sentences in TRL's names
    lab_mode(args)                        # True: PODSTrainer draws the step's prompts itself (pods.core.prompts)

Contract: each field mirrors the train.py key in LAB (pods/config/schema.py's `trl` metadata names the same
pairs; tests keep their defaults equal, pods_ledger apart); the checks are pods.core.lab_checks' (the same
refused combinations, pods.core.compat) plus what only TRL's trainer forbids. docs/multi-gpu.md "The lab".
"""

from __future__ import annotations

import dataclasses
import re
from types import SimpleNamespace

from pods.core.advantages import OVER
from pods.core.allocation import Allocation, make_allocation
from pods.core.downsample import SCOPES
from pods.core.lab_checks import lab_problems
from pods.core.m_schedule import m_at
from pods.core.prompt_rules import PromptRule, make_prompt_rule

# PODSConfig field -> (train.py key, default, help)
LAB = {
    "pods_rule_scope": ("rl.rule_scope", "group", "what pods_rule ranks together: group (m of each prompt's n) | "
                        "batch (B x m of the step's B x n, groups keeping unequal numbers: CPPO's pruning; cppo only)"),
    "pods_advantage_over": ("rl.advantage_over", "kept", "the rollouts whose mean (and std) the advantages use: kept "
                            "(the m trained, the paper's) | drawn (every rollout drawn for the prompt: Reinforce-Ada, "
                            "CPPO)"),
    "pods_prompt_rule": ("rl.prompt_rule", "none", "prompt rule: which prompts of the stream to generate for, from "
                         "each prompt's history (docs/rules.md)"),
    "pods_prompt_rule_options": ("rl.prompt_rule_options", None, "keyword arguments of pods_prompt_rule (e.g. "
                                 "{'low': 0.2, 'high': 0.8} for band; None: its defaults)"),
    "pods_prompt_pool": ("rl.prompt_pool", 1, "a prompt rule is offered this many candidates per prompt it may pick "
                         "at once (a selector such as mopps chooses among them; filters walk the stream)"),
    "pods_allocation": ("rl.allocation", "none", "allocation rule: each prompt's number of rollouts over generation "
                        "rounds (docs/rules.md)"),
    "pods_allocation_options": ("rl.allocation_options", None, "keyword arguments of pods_allocation (e.g. "
                                "{'screen': 8} for speed; None: its defaults)"),
    "pods_allocation_budget": ("rl.allocation_budget", None, "most rollouts an allocation rule generates per step, "
                               "at least its first round for B prompts (None: n per prompt)"),
    "pods_dynamic_sampling": ("rl.dynamic_sampling", False, "drop groups whose kept rollouts are all right or all "
                              "wrong; draw more"),
    "pods_dynamic_sampling_metric": ("rl.dynamic_sampling_metric", "accuracy", "what must differ among the kept "
                                     "rollouts: accuracy | total"),
    "pods_max_generation_rounds": ("rl.max_generation_rounds", 30, "dynamic sampling: at most this many rounds of B "
                                   "prompts per step (verl's DAPO: 30)"),
    "pods_short_batch": ("rl.short_batch", "partial", "rounds ran out short: partial | top_up (flat groups) | error"),
    "pods_token_mask": ("rl.token_mask", "none", "which completion tokens carry the policy gradient (docs/rules.md; "
                        "entropy_top is TRL's top_entropy_quantile)"),
    "pods_token_mask_quantile": ("rl.token_mask_quantile", 0.2, "token mask: the share of tokens kept"),
    "pods_m_schedule": ("rl.m_schedule", "constant", "m as a function of the step, from pods_m to pods_m_end over "
                        "pods_m_horizon steps (D3S relaxes down-sampling)"),
    "pods_m_end": ("rl.m_end", None, "m schedule: m at the end of the horizon (None: num_generations)"),
    "pods_m_horizon": ("rl.m_horizon", None, "m schedule: steps from pods_m to pods_m_end (None: max_steps)"),
    "pods_token_budget": ("rl.token_budget", None, "stop once the run's cost, tokens generated + "
                          "pods_token_budget_weight x tokens trained (the cost ledger), reaches this (None: none)"),
    "pods_token_budget_weight": ("rl.token_budget_weight", 1.0, "w of the cost: what one trained token costs in "
                                 "generated tokens (docs/leaderboard.md: measured per tier)"),
    "pods_ledger": ("logging.ledger", False, "record every step's rewards, lengths and kept rollouts per prompt group "
                    "in <output_dir>/ledger/ (docs/ledger.md; train.py's default is true)"),
    "pods_accuracy_reward": ("dataset.accuracy_reward", None, "the reward function whose value > 0 counts as correct "
                             "(None: the first one)"),
}
TRL_NAME = {key.split(".", 1)[1]: name for name, (key, _, _) in LAB.items()}
TRL_NAME.update(n="num_generations", m="pods_m", rule="pods_rule", max_steps="max_steps",
                prompts_per_step="generation_batch_size / num_generations")
ROW_MEAN_LOSSES = ("grpo", "sapo", "dr_grpo", "luspo")  # TRL losses that average over a micro-batch's rows


def lab_fields() -> dict:
    """The PODSConfig fields of LAB (dataclasses.field with TRL's `help` metadata)."""
    return {name: dataclasses.field(default=default, metadata={"help": text})
            for name, (_, default, text) in LAB.items()}


LAB_ANNOTATIONS = {"pods_rule_scope": str, "pods_advantage_over": str,
                   "pods_prompt_rule": str, "pods_prompt_rule_options": dict | None, "pods_prompt_pool": int,
                   "pods_allocation": str, "pods_allocation_options": dict | None,
                   "pods_allocation_budget": int | None, "pods_dynamic_sampling": bool,
                   "pods_dynamic_sampling_metric": str, "pods_max_generation_rounds": int, "pods_short_batch": str,
                   "pods_token_mask": str, "pods_token_mask_quantile": float,
                   "pods_m_schedule": str, "pods_m_end": int | None, "pods_m_horizon": int | None,
                   "pods_token_budget": float | None, "pods_token_budget_weight": float, "pods_ledger": bool,
                   "pods_accuracy_reward": str | None}


class LabView(SimpleNamespace):
    """PODSConfig's lab settings under train.py's rl names (attribute and item access, as an rl section)."""

    def __getitem__(self, key):
        return getattr(self, key)


def lab_view(args) -> LabView:
    """The rl section pods.core.lab.Lab and pods.core.lab_checks read, from a (post-init) PODSConfig."""
    rl = {key.split(".", 1)[1]: getattr(args, name) for name, (key, _, _) in LAB.items() if key.startswith("rl.")}
    n = args.num_generations
    return LabView(**rl, n=n, m=args.pods_m, rule=args.pods_rule, algorithm="pods",
                   prompts_per_step=args.generation_batch_size // n, max_steps=args.max_steps if args.max_steps > 0
                   else None)


def lab_mode(args) -> bool:
    """PODSTrainer draws each step's prompts from pods' prompt stream and generates in rounds (collect), instead
    of training on TRL's sampler's prompts: a prompt rule, an allocation rule, dynamic sampling, the ledger, or
    the selection and advantages of pods.core.algorithms.plan_update (rule scope batch, advantages over drawn)."""
    return (args.pods_prompt_rule != "none" or args.pods_allocation != "none" or bool(args.pods_dynamic_sampling)
            or bool(args.pods_ledger) or args.pods_rule_scope != "group" or args.pods_advantage_over != "kept")


def in_trl_names(problem: str) -> str:
    """A train.py sentence with its rl.<key> names (and logging.ledger, dataset.accuracy_reward) in TRL's spelling
    (pods_prompt_rule for rl.prompt_rule)."""
    return re.sub(r"\b(?:rl|logging|dataset)\.(\w+)", lambda m: TRL_NAME.get(m[1], m[0]), problem)


def check_lab_args(args) -> None:
    """Validate the lab settings of a (post-init) PODSConfig; ValueError naming every problem and what to set."""
    problems = [in_trl_names(p) for p in _types(args) or lab_problems(lab_view(args))]
    if not problems:
        problems = _trl_problems(args)
    if problems:
        raise ValueError("\n  - ".join(["invalid PODS lab settings:", *problems]) if len(problems) > 1 else problems[0])


def _types(args) -> list[str]:
    """The values' types (the schema walker's job in train.py; its sentences)."""
    p = []
    for name, kind in LAB_ANNOTATIONS.items():
        value, base = getattr(args, name), kind.__args__[0] if hasattr(kind, "__args__") else kind
        if value is None and kind is not base:
            continue
        ok = isinstance(value, base) and not (base in (int, float) and isinstance(value, bool))
        if base is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            what = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
                    dict: "a mapping, e.g. {key: value}"}[base]
            p.append(f"{name} must be {what}{' or None' if kind is not base else ''}, got {value!r}")
    for name, choices in (("pods_rule_scope", SCOPES), ("pods_advantage_over", OVER)):
        if not p and getattr(args, name) not in choices:
            p.append(f"unknown {name} {getattr(args, name)!r}; valid: {', '.join(choices)}")
    for name, low in (("pods_prompt_pool", 1), ("pods_max_generation_rounds", 1), ("pods_m_end", 2),
                      ("pods_m_horizon", 1)):
        value = getattr(args, name)
        if not p and value is not None and value < low:
            p.append(f"{name} must be an integer >= {low}{' or None' if LAB[name][1] is None else ''}, got {value}")
    budget, weight = args.pods_token_budget, args.pods_token_budget_weight
    if not p and budget is not None and not budget > 0:
        p.append(f"pods_token_budget must be a number > 0 or None, got {budget}")
    if not p and not weight >= 0:
        p.append(f"pods_token_budget_weight must be a number >= 0, got {weight}")
    return p


def _trl_problems(args) -> list[str]:
    """What TRL's trainer forbids besides train.py's checks (lab mode, rounds, loss types, batch shapes)."""
    p, n, rl = [], args.num_generations, lab_view(args)
    if lab_mode(args):
        why = ("the lab draws each step's prompts itself, once per optimizer step (pods_prompt_rule, pods_allocation, "
               "pods_dynamic_sampling, pods_ledger, pods_rule_scope=batch or pods_advantage_over=drawn is set)")
        if args.prompt_repeats != 1:
            p.append(f"prompt_repeats={args.prompt_repeats} repeats TRL's sampler's prompts, but {why}: set "
                     "prompt_repeats=1")
        if args.steps_per_generation != args.gradient_accumulation_steps or args.num_iterations != 1:
            p.append(f"steps_per_generation={args.steps_per_generation} and num_iterations={args.num_iterations} "
                     f"reuse a generation over several optimizer steps, but {why}: leave steps_per_generation unset "
                     "(= gradient_accumulation_steps) and num_iterations=1")
    rounds = args.pods_allocation != "none" or args.pods_dynamic_sampling
    if rounds and args.use_vllm and args.vllm_mode == "colocate" and args.vllm_enable_sleep_mode:
        p.append("vllm_enable_sleep_mode=True puts colocated vLLM to sleep after every generation call (level 2: "
                 "its weights are dropped and pushed again on waking), and pods_allocation / pods_dynamic_sampling "
                 "generate in several calls per step: set vllm_enable_sleep_mode=False, or generate in one round")
    if varying_groups(args) and args.loss_type in ROW_MEAN_LOSSES:
        p.append(f"{varying_groups(args)} trains a varying number of groups per step, so PODSTrainer pads the step's "
                 f"batch with rows of no tokens to split it evenly; loss_type={args.loss_type} averages over rows and "
                 "would count them: use loss_type=dapo or bnpo (token sums, where those rows weigh nothing)")
    if args.pods_token_mask != "none" and args.top_entropy_quantile < 1.0:
        p.append(f"top_entropy_quantile={args.top_entropy_quantile} is TRL's entropy_top token mask and "
                 f"pods_token_mask={args.pods_token_mask} is set too: set one of them (pods_token_mask=entropy_top "
                 "with pods_token_mask_quantile is the same mask)")
    if args.pods_m_schedule != "constant":
        horizon = rl.m_horizon if rl.m_horizon is not None else rl.max_steps
        end = n if rl.m_end is None else rl.m_end
        ms = sorted({m_at(rl.m_schedule, s, m=rl.m, n=n, m_end=end, horizon=horizon) for s in range(horizon + 1)})
        bad = [m for m in ms if args.per_device_train_batch_size * m % n]
        if bad:
            p.append(f"pods_m_schedule={rl.m_schedule} reaches m = {', '.join(map(str, bad))}, for which "
                     f"per_device_train_batch_size * m / n = {args.per_device_train_batch_size} * m / {n} is not a "
                     f"whole number of sequences per micro-batch: make per_device_train_batch_size a multiple of {n}")
    return p


def varying_groups(args) -> str:
    """The setting that makes the number of trained groups vary from step to step ("" when none does)."""
    opts = dict(args.pods_allocation_options or {})
    if args.pods_allocation != "none":
        plan = make_allocation(args.pods_allocation, n=args.num_generations, m=args.pods_m, **opts)
        if type(plan).trained is not Allocation.trained:
            return f"pods_allocation={args.pods_allocation}"
    if args.pods_prompt_rule != "none":
        rule = make_prompt_rule(args.pods_prompt_rule, num_prompts=1, **dict(args.pods_prompt_rule_options or {}))
        if type(rule).keep is not PromptRule.keep:
            return f"pods_prompt_rule={args.pods_prompt_rule} (a group filter)"
    if args.pods_dynamic_sampling and args.pods_short_batch == "partial":
        return "pods_dynamic_sampling with pods_short_batch=partial"
    return ""
