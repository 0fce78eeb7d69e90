"""Seconds per training step of a train.py config on a machine profile, before anything loads (the time preflight).

    prof = pods.core.profiles.load("l40s-unsloth")
    est = estimate(cfg, prof, arch)              # arch: pods.backends.memory.Architecture of cfg.model
    est.seconds_per_step, est.steps_per_hour, est.wall_seconds, est.notes
    est.line()                                   # "seconds per step: 10.1 (356 steps per hour); ..."

Contract: a step is planned from the config (rl.prompts_per_step x rl.n sequences in one generation call, chunked by
backend.generation_batch_size; rl.m kept; one round: dynamic sampling's extra rounds are not foreseen) with mean
prompt and completion lengths (given, else the profile's typical ones), priced by pods.core.timing on the profile,
scaled from sizes when the config's model differs from the profile's. The run's wall time is the first of its
limits reached: rl.max_steps, rl.max_time, rl.token_budget (tokens: per planned step's cost; seconds: the budget).
Notes say what lies outside the profile's fitted range. docs/gpu.md "Time".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pods.core.profiles import Profile
from pods.core.reference import runs_reference
from pods.core.timing import planned_counts, step_seconds

COMPLETION_SHARE = 0.45  # mean completion / rl.max_completion_tokens without --completion-tokens: the authors'
# GSM8K runs (230 of 512 tokens; docs/leaderboard.md "Time, not tokens")
PROMPT_SHARE = 0.3  # mean prompt / rl.max_prompt_tokens without --prompt-tokens: theirs (~150 of 512)


@dataclass
class TimeEstimate:
    seconds_per_step: float
    prompt_tokens: float
    completion_tokens: float
    steps: float | None  # the run's steps until its first limit (None: no limit)
    wall_seconds: float | None
    limit: str  # which limit ends the run
    profile: str
    notes: list[str] = field(default_factory=list)

    @property
    def steps_per_hour(self) -> float:
        return 3600.0 / self.seconds_per_step

    def line(self) -> str:
        wall = (f"; the run: {self.steps:,.0f} steps, {self.wall_seconds / 3600:.2f} h ({self.limit})"
                if self.wall_seconds is not None else "; the run has no limit")
        return (f"seconds per step: {self.seconds_per_step:.3g} ({self.steps_per_hour:,.0f} steps per hour, on "
                f"{self.profile}; prompts {self.prompt_tokens:.0f}, completions {self.completion_tokens:.0f} tokens "
                f"on average){wall}")

    def as_dict(self) -> dict:
        return {"seconds_per_step": self.seconds_per_step, "steps_per_hour": self.steps_per_hour,
                "steps": self.steps, "wall_seconds": self.wall_seconds, "limit": self.limit, "profile": self.profile,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "notes": self.notes}


def estimate(cfg, profile: Profile, arch, *, prompt_tokens: float | None = None,
             completion_tokens: float | None = None) -> TimeEstimate:
    """The config's seconds per step on `profile` and its run's wall time (see the module)."""
    rl, notes = cfg.rl, []
    P = float(prompt_tokens if prompt_tokens is not None else round(PROMPT_SHARE * rl.max_prompt_tokens))
    L = float(completion_tokens if completion_tokens is not None
              else round(COMPLETION_SHARE * rl.max_completion_tokens))
    if prompt_tokens is None or completion_tokens is None:
        notes.append(f"assumed mean lengths: {P:.0f} prompt and {L:.0f} completion tokens ({PROMPT_SHARE:.0%} and "
                     f"{COMPLETION_SHARE:.0%} of rl.max_prompt_tokens / rl.max_completion_tokens, as in the authors' "
                     "GSM8K runs); --prompt-tokens / --completion-tokens set them")
    compute = 4 if profile.device == "cpu" or str(cfg.model.dtype) == "float32" else 2  # as the profile counted
    params, kv = float(arch.params()), float(arch.kv_bytes_per_token(compute))
    if abs(params / profile.model_params - 1) > 0.1 or abs(kv / profile.kv_bytes_per_token - 1) > 0.1:
        notes.append(f"model {cfg.model.name} ({params / 1e9:.2f} B parameters) is not the profile's "
                     f"({profile.model}): its constants are scaled from sizes, outside what the profile was "
                     "measured on")
        profile = profile.scaled(params, kv)
    batch = (cfg.backend.get("generation_batch_size") if str(cfg.backend.name) == "hf" else None)
    B = int(rl.prompts_per_step)
    counts = planned_counts(prompts=B, n=int(rl.n), m=int(rl.m), prompt_tokens=P, completion_tokens=L,
                            max_tokens=float(rl.max_completion_tokens), batch_size=batch)
    reference = runs_reference(float(rl.beta), str(rl.get("reference_pass", "auto")))
    sps = step_seconds(counts, profile.constants, reference=reference)
    size = min(batch or B * int(rl.n), B * int(rl.n))
    outside = profile.outside(sequences=size, completion_tokens=L, kept=int(rl.m))
    if outside:
        notes.append(f"outside what {profile.name} was fitted on: {'; '.join(outside)}")
    if rl.get("dynamic_sampling"):
        notes.append("rl.dynamic_sampling: each extra round adds a generation of the same size (not foreseen here)")
    limits = []
    if rl.max_steps is not None:
        limits.append((float(rl.max_steps), f"rl.max_steps={rl.max_steps}"))
    if rl.max_time is not None:
        limits.append((float(rl.max_time) / sps, f"rl.max_time={rl.max_time:g} s"))
    if rl.token_budget is not None:
        if rl.get("budget_cost", "tokens") == "seconds":
            limits.append((float(rl.token_budget) / sps, f"rl.token_budget={rl.token_budget:g} modelled s"))
        else:
            per = counts["tokens_generated"] + float(rl.token_budget_weight) * counts["tokens_trained"]
            limits.append((float(rl.token_budget) / per, f"rl.token_budget={rl.token_budget:g} tokens"))
    if not limits:
        return TimeEstimate(sps, P, L, None, None, "no limit", profile.name, notes)
    steps, limit = min(limits)
    steps = math.ceil(steps)
    return TimeEstimate(sps, P, L, steps, steps * sps, limit, profile.name, notes)
