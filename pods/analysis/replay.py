"""Offline replay: what would rollout rule X have kept of the groups a run recorded in its ledger? (CPU, pure)

    rec = pods.analysis.ledger.read_ledger("checkpoints/<run>")
    row = replay_rollout(rec, "cppo", m=16)      # {"rule": "cppo", "kept_reward_var": ..., "agreement": ...}
    rows = replay(["checkpoints/<run>"], ["max_variance", "random"], m=None)   # m None: the run's own m
    print(pods.analysis.replay_table.report(rows))   # `pods replay`: the same from the command line

Contract: the rule sees each group's recorded rewards [R, n] (and lengths, entropies), in the order the run made
its selections (a random rule draws from a generator seeded with the run's seed, call by call as the run did), so
replaying a run's own rule agrees 100 %. KEYS are the reported quantities (docs/ledger.md says how each is
computed). ConfigError (exit 2) for an unknown rule (the nearest names given), a rule of another hook kind, or an
m the recorded groups cannot give.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from pods.analysis.ledger import Recorded, read_ledger
from pods.analysis.settings import find_run_dirs
from pods.core import ledger as fmt
from pods.core.advantages import kept_advantages
from pods.core.algorithms import keep
from pods.core.allocation import ALLOCATIONS
from pods.core.downsample import RULES
from pods.core.prompt_rules import PROMPT_RULES, PromptRule, make_prompt_rule
from pods.core.prompts import PROMPT_SEED, PromptStream, pick
from pods.core.token_masks import TOKEN_MASKS
from pods.errors import ConfigError, ResultsError

KEYS = ("groups", "n", "m", "kept_reward_var", "frac_all_correct", "frac_all_wrong", "adv_abs_mean", "adv_std",
        "frac_zero_adv", "tokens_trained", "tokens_trained_per_step", "agreement", "agreement_rollouts")
PROMPT_KEYS = ("candidates", "frac_skipped", "frac_with_history", "frac_unknown", "frac_filtered", "kept_reward_var",
               "frac_all_correct", "frac_all_wrong", "tokens_generated_per_step", "agreement")
STOCHASTIC = {"random"}  # rules that draw from the generator: replayed call by call, as the run called them


def check_rule(rule: str) -> None:
    """ConfigError unless `rule` is a rollout or prompt rule; names the nearest ones, or the hook kind it has."""
    if rule in RULES or rule in PROMPT_RULES:
        return
    if rule in ALLOCATIONS:
        raise ConfigError(f"--rule {rule} is an allocation rule (rl.allocation): it decides how many rollouts are "
                          "generated, which a ledger cannot replay; replay a rollout rule or a prompt rule")
    if rule in TOKEN_MASKS:
        raise ConfigError(f"--rule {rule} is a token mask (rl.token_mask): the ledger keeps a per-rollout entropy "
                          "summary, not every token's; replay a rollout rule or a prompt rule")
    names = [*RULES, *PROMPT_RULES]
    near = difflib.get_close_matches(rule, names, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    raise ConfigError(f"--rule {rule}: no such rollout or prompt rule{hint} (rollout rules: {', '.join(RULES)}; "
                      f"prompt rules: {', '.join(PROMPT_RULES)})")


def _select(rec: Recorded, rule: str, m: int, algorithm: str) -> torch.Tensor:
    """idx [R, m] that `rule` keeps of each recorded group, selection by selection as the run made them (rows of
    unequal n, an allocation rule's: each from its own rollouts)."""
    rewards = torch.from_numpy(rec.rewards).float()  # [R, n]
    lengths = torch.from_numpy(rec.lengths).float()  # [R, n] (the entropies exist for trained rollouts only)
    counts = torch.from_numpy(rec.n).long() if bool((rec.n != rewards.shape[1]).any()) else None  # [R]
    part = lambda a, b: None if counts is None else counts[a:b]  # noqa: E731
    try:
        if rule not in STOCHASTIC:
            return keep(rewards, algorithm, m, rule, lengths=lengths, counts=counts)
        gen = torch.Generator().manual_seed(int(rec.meta.get("seed", 0)))
        cuts = np.flatnonzero(np.diff(rec.steps * 1000 + rec.rounds)) + 1  # one selection per (step, round)
        bounds = [0, *cuts.tolist(), len(rec.steps)]
        return torch.cat([keep(rewards[a:b], algorithm, m, rule, generator=gen, lengths=lengths[a:b],
                               counts=part(a, b)) for a, b in zip(bounds, bounds[1:])])
    except ValueError as err:  # e.g. rule none with m < n
        raise ConfigError(f"--rule {rule} --m {m}: {err}") from None


def selected(rec: Recorded) -> Recorded:
    """The groups the run selected rollouts from: all of them, but the ones an allocation rule left unfinished
    (SPEED's screened-out prompts: recorded with no selection)."""
    sel = (rec.kept >= 0).any(axis=1)
    if sel.all():
        return rec
    cut = lambda a: None if a is None else a[sel]  # noqa: E731
    return replace(rec, steps=rec.steps[sel], rounds=rec.rounds[sel], slots=rec.slots[sel], prompts=rec.prompts[sel],
                   trained=rec.trained[sel], n=rec.n[sel], rewards=rec.rewards[sel], accuracy=rec.accuracy[sel],
                   lengths=rec.lengths[sel], entropy=rec.entropy[sel], kept=rec.kept[sel], positions=cut(rec.positions),
                   per_fn={k: v[sel] for k, v in rec.per_fn.items()})


def replay_rollout(rec: Recorded, rule: str, m: int | None = None) -> dict:
    """The quantities of KEYS for `rule` keeping m (None: the run's m) of each recorded group."""
    check_rule(rule)
    run_m = int(rec.meta.get("m", rec.kept.shape[1]))
    m = run_m if m is None else int(m)
    rec = selected(rec)
    n_min, n_max = (int(rec.n.min()), int(rec.n.max())) if len(rec.n) else (0, 0)
    if not 1 <= m <= n_min:
        held = f"{n_min} rollouts (n)" if n_min == n_max else f"{n_min} to {n_max} rollouts (n: an allocation rule's)"
        raise ConfigError(f"--m {m}: the recorded groups hold {held}, so m must lie in 1..{n_min}")
    own = rule == rec.meta.get("rule") and m == run_m and rec.meta.get("rule_scope", "group") == "group"
    algorithm = rec.meta.get("algorithm", "pods") if own else "pods"
    idx = _select(rec, rule, m, algorithm)  # [R, k]
    rewards = torch.from_numpy(rec.rewards).float()
    kept_r = rewards.gather(1, idx)  # [R, k]
    kept_ok = torch.from_numpy(rec.accuracy).float().gather(1, idx) > 0  # [R, k]
    adv = kept_advantages(rewards, idx, over=rec.meta.get("advantage_over", "kept"),
                          scale=rec.meta.get("scale_rewards", "group"), std=rec.meta.get("advantage_std", "sample"))
    trained_len = torch.from_numpy(rec.lengths).float().gather(1, idx)  # [R, k]
    row = {"rule": rule, "groups": len(rec.steps), "n": n_max, "m": m,
           "kept_reward_var": float(kept_r.var(dim=1, unbiased=False).mean()),
           "frac_all_correct": float(kept_ok.all(dim=1).float().mean()),
           "frac_all_wrong": float((~kept_ok).all(dim=1).float().mean()),
           "adv_abs_mean": float(adv.abs().mean()), "adv_std": float(adv.std()),
           "frac_zero_adv": float((adv == 0).float().mean()),
           "tokens_trained": float(trained_len[torch.from_numpy(rec.trained)].sum()),
           "tokens_trained_per_step": float(trained_len[torch.from_numpy(rec.trained)].sum()) / max(rec.num_steps, 1)}
    row.update(agreement(idx, torch.from_numpy(rec.kept).long(), rec.rewards.shape[1]))
    return row


def agreement(idx: torch.Tensor, run_kept: torch.Tensor, n: int) -> dict:
    """Share of groups whose kept set equals the run's, and of the run's kept rollouts also kept (NaN: none kept).

    idx [R, m] the replay's choice, run_kept [R, k] the run's (-1 pads groups it kept fewer of)."""
    if run_kept.shape[1] == 0 or run_kept.shape[1] != idx.shape[1]:
        same = float("nan")
    else:
        same = float((idx.sort(dim=1).values == run_kept.sort(dim=1).values).all(dim=1).float().mean())
    mine = torch.zeros(idx.shape[0], n, dtype=torch.bool).scatter_(1, idx, True)  # [R, n]
    real = run_kept >= 0  # [R, k]
    both = mine.gather(1, run_kept.clamp(min=0)) & real
    total = int(real.sum())
    return {"agreement": same, "agreement_rollouts": float(both.sum()) / total if total else float("nan")}


def replay_prompt(rec: Recorded, rule: str, options: dict | None = None) -> dict:
    """What prompt rule `rule` would have generated for, walking the run's prompt stream step by step as the run
    did (pods.core.prompts.pick, the same generator seed), its history fed with the recorded groups it picked, and
    which of those its group filter (`keep`) would have trained on. A prompt it picks that the run did not generate
    has no recorded rewards: counted in frac_unknown, left out of its history and of the reward statistics.
    Replaying the run's own rule (and options) agrees 100 %."""
    check_rule(rule)
    meta = rec.meta
    P, B, seed = int(meta["num_prompts"]), int(meta["prompts_per_step"]), int(meta.get("seed", 0))
    own = rule == meta.get("prompt_rule", "none")
    opts = dict(meta.get("prompt_rule_options") or {}) if options is None and own else dict(options or {})
    try:
        state = make_prompt_rule(rule, num_prompts=P, **opts)
    except ValueError as err:
        raise ConfigError(f"--rule {rule}: {err}") from None
    gen, stream = torch.Generator().manual_seed(seed + PROMPT_SEED), PromptStream(P, seed)
    off = rec.offered
    generated = {(int(s), int(p)): int(g) for s, p, g in zip(off["step"], off["position"], off["group"]) if g >= 0}
    picked_groups, trained_groups, agree, offered, unknown, skipped, known_before = [], [], 0, 0, 0, 0, 0
    fed = set()  # prompts the rule's history holds
    for step in np.unique(off["step"]):
        at = off["step"] == step
        step_groups = []
        for r in np.unique(off["round"][at]):
            mine = at & (off["round"] == r)
            run_gen = {int(p) for p, g in zip(off["position"][mine], off["group"][mine]) if g >= 0}
            run_all = {int(p) for p in off["position"][mine]}
            got = pick(None if rule == "none" else state, stream, int(off["position"][mine].min()), B,
                       pool=int(meta.get("prompt_pool", 1)), num_prompts=P, generator=gen)
            seen = set(got.positions) | set(got.skipped_positions) | run_all
            agree += sum((p in got.positions) == (p in run_gen) for p in seen)
            known_before += sum(int(q) in fed for q in [*got.prompts, *got.skipped])
            offered, skipped = offered + len(seen), skipped + len(got.skipped)
            known = [generated[(int(step), p)] for p in got.positions if (int(step), p) in generated]
            unknown += len(got.positions) - len(known)
            step_groups += sorted(known)  # the order the run generated them in (round, slot)
        if step_groups and rule != "none":
            g = torch.tensor(step_groups)
            acc = torch.from_numpy(rec.accuracy)[g].float()  # [K, n], NaN pads rows of fewer rollouts
            state.update(torch.from_numpy(rec.prompts)[g], acc.gt(0).float().masked_fill(acc.isnan(), float("nan")))
            fed.update(rec.prompts[step_groups].tolist())
            step_groups_kept = g[state.keep(torch.from_numpy(rec.rewards)[g].float())].tolist()  # its group filter
        else:
            step_groups_kept = step_groups
        picked_groups += step_groups
        trained_groups += step_groups_kept
    g = torch.tensor(trained_groups, dtype=torch.long)
    rewards, acc = torch.from_numpy(rec.rewards)[g], torch.from_numpy(rec.accuracy)[g]  # [K, n]
    drawn = ~rewards.isnan()  # an allocation rule's rows of unequal n are padded
    ok, var = acc > 0, (rewards - rewards.nanmean(dim=1, keepdim=True)).pow(2).nanmean(dim=1)  # [K, n], [K]
    picked = len(picked_groups) + unknown
    generated = torch.tensor(picked_groups, dtype=torch.long)
    return {"rule": rule, "candidates": offered, "frac_skipped": skipped / max(offered, 1),
            "frac_with_history": known_before / max(offered, 1) if keeps_history(state) else float("nan"),
            "frac_unknown": unknown / max(picked, 1),
            "frac_filtered": 1 - len(trained_groups) / len(picked_groups) if picked_groups else 0.0,
            "kept_reward_var": float(var.mean()) if len(g) else float("nan"),
            "frac_all_correct": float((ok | ~drawn).all(dim=1).float().mean()) if len(g) else float("nan"),
            "frac_all_wrong": float((~ok | ~drawn).all(dim=1).float().mean()) if len(g) else float("nan"),
            "tokens_generated_per_step": float(torch.from_numpy(rec.lengths)[generated].sum()) / max(rec.num_steps, 1),
            "agreement": agree / max(offered, 1)}


def keeps_history(rule) -> bool:
    """Whether a prompt rule's choices depend on its history (it overrides `update`); None (rule none): False."""
    return rule is not None and type(rule).update is not PromptRule.update


def replay(paths: list[str | Path], rules: list[str], m: int | None = None) -> list[dict]:
    """One row per (run, rule): `replay_rollout` on each run's ledger (every ledger read and checked first).
    "all" stands for every rollout rule that can keep m of the run's n, "all_prompt" for every prompt rule."""
    for rule in rules:
        if rule not in ("all", "all_prompt"):
            check_rule(rule)
    recs = [read_ledger(p, per_fn=False) for p in paths]
    rows = []
    for rec in recs:
        m_run = int(rec.meta.get("m", rec.kept.shape[1])) if m is None else m
        every = {"all": list(RULES), "all_prompt": [r for r in PROMPT_RULES if r != "none"]}
        names = [r for name in rules for r in every.get(name, [name])
                 if not (name == "all" and r == "none" and m_run != rec.rewards.shape[1])]
        about = {"steps": rec.num_steps, "gaps": [list(g) for g in rec.gaps], "not_counted": rec.notes}
        rows += [{"run": str(rec.path.parent), "kind": "prompt" if rule in PROMPT_RULES and rule not in RULES
                  else "rollout", **(replay_prompt(rec, rule) if rule in PROMPT_RULES and rule not in RULES
                                     else replay_rollout(rec, rule, m)), **about} for rule in dict.fromkeys(names)]
    return rows


def run_dirs(spec: str) -> list[Path]:
    """The run directories a command-line SPEC names: a run directory (or its ledger/), or a glob of them."""
    path = Path(spec)
    if path.is_dir() and not any(ch in spec for ch in "*?["):
        return [path]  # read_ledger says what is wrong with it, if anything
    found = find_run_dirs(spec, None, marker=f"{fmt.DIR}/{fmt.META}")
    if not found:
        raise ResultsError(f"{spec}: no run directory with a rollout ledger ({fmt.DIR}/{fmt.META}) matches; give a "
                           "run directory (checkpoints/<run>) or a quoted glob of them")
    return found
