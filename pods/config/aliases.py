"""One vocabulary: TRL's names for train.py's settings and metrics, and "did you mean" for typos.

    args, notes = rewrite_overrides(["num_generations=16", "pods_m=4", "model=tiny"], groups=["model"])
    # args == ["rl.n=16", "rl.m=4", "model=tiny"]; notes: "note: num_generations is TRL's name for rl.n ..."
    hint("rl.nn")                  # "did you mean rl.n?"  (used by pods.config.checks.validate)
    trl_metric_names(row)          # TRL-named copies of a metrics.jsonl row's keys (pods.run.metrics adds them)

`CONFIG_ALIASES`: a `trl.GRPOConfig` / `PODSConfig` field -> the train.py key of the same meaning (and a
value map where the two spell values differently), read from the schema fields' `trl` metadata;
`NO_COUNTERPART`: what to use for TRL fields without one; `METRIC_ALIASES`: native metrics.jsonl keys -> TRL's names. The table for humans: docs/vocabulary.md.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass

from pods.backends import BACKENDS, settings
from pods.config.fields import declared
from pods.config.schema import TrainConfig


@dataclass(frozen=True)
class Alias:
    target: str  # dotted train.py key
    values: dict | None = None  # TRL value (as typed on the command line) -> train.py value; None: as is
    refused: str = ""  # what to do instead when a TRL value has no counterpart


CONFIG_ALIASES = {f.metadata["trl"]: Alias(key, f.metadata.get("trl_values"), f.metadata.get("trl_refused", ""))
                  for key, f, _ in declared(TrainConfig) if "trl" in f.metadata}
NO_COUNTERPART = {
    "per_device_train_batch_size": "train.py counts prompts, not completions: rl.prompts_per_step prompts x rl.n "
                                   "rollouts per step, rl.micro_batch_size completions per forward/backward",
    "gradient_accumulation_steps": "train.py accumulates over micro-batches of rl.micro_batch_size within each step",
    "output_dir": "runs go to <output_root>/<run_name>: set output_root=... and/or run_name=...",
    "report_to": "logging.wandb=true (metrics.jsonl is always written)",
    "use_vllm": "backend=vllm",
    "bf16": "model.dtype=bfloat16",
    "save_steps": "rl.save_strategy=steps rl.save_steps=K",
    "warmup_steps": "optim.warmup_ratio=R (a fraction of the run, as TRL's warmup_steps below 1)",
    "adam_beta1": "optim.betas=[B1,B2]",
    "adam_beta2": "optim.betas=[B1,B2]",
}
METRIC_ALIASES = {  # native metrics.jsonl key -> TRL's logged name for the same quantity
    "reward/total": "reward",  # mean weighted reward over all n generated rollouts
    "completion_length/mean": "completions/mean_length",
    "completion_length/max": "completions/max_length",
    "frac_truncated": "completions/clipped_ratio",  # hit the completion-length limit
    "lr": "learning_rate",
    "reward_kept/total": "pods/kept_reward",  # PODSTrainer's name: mean reward of the kept m
}
OPEN_SECTIONS = ("warmstart", "evaluation", "hydra")  # keys under these are not checked here
_OVERRIDE = re.compile(r"^(?P<prefix>\+\+|\+|~)?(?P<key>[A-Za-z_][\w.\-]*)(?P<rest>=.*)?$")


def schema_keys() -> tuple[set[str], set[str]]:
    """(dotted leaf keys of pods.config.schema.TrainConfig, keys whose values are open dicts/lists)."""
    fields = list(declared(TrainConfig))
    sections = {key for key, _, kind in fields if dataclasses.is_dataclass(kind)}
    leaves = {key for key, _, _ in fields if key not in sections}
    free = {key for key, f, _ in fields if key in leaves and f.default_factory is not dataclasses.MISSING
            and "schema_of" not in f.metadata}  # backend: backend_keys
    return leaves, set(OPEN_SECTIONS) | free  # a dict or list default: its entries are free-form


def backend_keys() -> tuple[set[str], set[str]]:
    """schema_keys of the `backend` section: every backend's settings (which one applies, the config decides).
    Imports the backend modules (torch): called only for a backend.* key."""
    fields = [(f"backend.{key}", f) for name in BACKENDS for key, f, _ in declared(settings(name))]
    return {key for key, _ in fields}, {key for key, f in fields if f.default_factory is not dataclasses.MISSING}


def _suggest(key: str, names: set[str]) -> str | None:
    """The closest known key: same last component (rl.n for `n`), else difflib's best match."""
    last = [k for k in names if k.rsplit(".", 1)[-1] == key.rsplit(".", 1)[-1] and k != key]
    if len(last) == 1:
        return last[0]
    close = difflib.get_close_matches(key, sorted(names), n=1, cutoff=0.6)
    return close[0] if close else None


REMOVED_KEYS = {  # keys of earlier versions: what replaced them
    "rl.epsilon": "removed: every batch is trained on once (importance ratio 1), so PPO clipping never acted; "
                  "delete the key (docs/algorithms.md)",
    "rl.epsilon_high": "removed with rl.epsilon (ratio 1, no clipping); delete the key",
    "rl.scale_std": "replaced by rl.scale_rewards: group (was true) | batch | none (was false)",
}


def hint(key: str) -> str | None:
    """What to write instead of the unknown dotted key, or None when nothing is close."""
    if key in REMOVED_KEYS:
        return REMOVED_KEYS[key]
    name = key.rsplit(".", 1)[-1]
    if name in CONFIG_ALIASES:
        return f"{name} is TRL's name: write {CONFIG_ALIASES[name].target}"
    if name in NO_COUNTERPART:
        return f"TRL's {name} has no single key here: {NO_COUNTERPART[name]}"
    if key.startswith("backend."):  # another backend's setting, or the closest of any backend's
        owners = [b for b in BACKENDS if key in {f"backend.{k}" for k, _, _ in declared(settings(b))}]
        best = _suggest(key, backend_keys()[0])
        return f"a setting of backend={' or backend='.join(owners)}" if owners else \
            f"did you mean {best}?" if best else None
    leaves, _ = schema_keys()
    best = _suggest(key, leaves | set(CONFIG_ALIASES))
    if best in CONFIG_ALIASES:
        return f"did you mean {best} (TRL's name for {CONFIG_ALIASES[best].target})?"
    return f"did you mean {best}?" if best else None


def _map_values(name: str, alias: Alias, value: str) -> str:
    if alias.values is None:
        return value
    out = []
    for v in value.split(","):  # a Hydra sweep list: map every element
        if v.strip().lower() not in alias.values:
            valid = ", ".join(alias.values)
            raise ValueError(f"{name}={v}: no counterpart in train.py's {alias.target} (TRL values accepted: {valid})"
                             + (f"; {alias.refused}" if alias.refused else ""))
        out.append(alias.values[v.strip().lower()])
    return ",".join(out)


def group_problem(group: str, value: str, options, leaves=()) -> str | None:
    """Why `group=value` names no option of the config group (each value of a sweep's comma list), in the words of
    an unknown key: the options, the closest one, and the key of the same name when there is one (rule=cppo ->
    rl.rule=cppo); None for an option, null, or Hydra's own forms (glob(...), interpolations)."""
    if not options or not re.fullmatch(r"[\w.\-]+(,[\w.\-]+)*", value):
        return None
    bad = [v for v in value.split(",") if v not in options and v != "null"]
    if not bad:
        return None
    close = difflib.get_close_matches(bad[0], list(options), n=1, cutoff=0.6)
    key = sorted(k for k in leaves if k.rsplit(".", 1)[-1] == group)
    return (f"unknown config group option '{group}={bad[0]}': config/{group}/ has no {bad[0]}.yaml; "
            + (f"did you mean {group}={close[0]}? " if close else "") + f"the options: {', '.join(options)}"
            + (f"; or set the key itself: {key[0]}={bad[0]}" if key and not close else ""))


def rewrite_overrides(args: list[str], groups=()) -> tuple[list[str], list[str]]:
    """Hydra command-line overrides with TRL names replaced by train.py's keys: (new args, notes).

    ValueError (listing every problem) for keys that are neither train.py keys, config groups,
    open sections nor TRL aliases, with the closest key as a "did you mean" hint; with `groups` a dict of
    {group: options} (pods.config.files.groups), also for a group option that does not exist."""
    leaves, open_ = schema_keys()
    out, notes, problems = [], [], []
    for arg in args:
        m = _OVERRIDE.match(arg)
        if arg.startswith("-") or m is None or (m["rest"] is None and m["prefix"] != "~"):
            out.append(arg)  # a flag (-m, --cfg job) or something Hydra parses itself
            continue
        prefix, key, rest = m["prefix"] or "", m["key"], m["rest"] or ""
        if key in CONFIG_ALIASES and key not in leaves:
            alias = CONFIG_ALIASES[key]
            if alias.target not in leaves:  # the table names a key this version of the schema lacks
                problems.append(f"{key}: TRL's name for {alias.target}, which this version of train.py lacks")
                continue
            try:
                new = f"{prefix}{alias.target}" + (f"={_map_values(key, alias, rest[1:])}" if rest else "")
            except ValueError as err:
                problems.append(str(err))
                continue
            notes.append(f"note: {key} is TRL's name for {alias.target}; using {new}")
            out.append(new)
            continue
        known = key in leaves or key in groups or any(key == p or key.startswith(p + ".") for p in open_) \
            or key.startswith("backend.") and _backend_key(key)
        if not known and prefix not in ("+", "++"):
            problems.append(f"unknown config key {key!r}; " + (hint(key) or "see config/train.yaml for the keys"))
        elif key in groups and isinstance(groups, dict) and rest and prefix != "~":
            problems += [p for p in [group_problem(key, rest[1:], groups[key], leaves)] if p]
        out.append(arg)
    if problems:
        raise ValueError("\n  - ".join(["invalid overrides:", *problems]))
    return out, notes


def _backend_key(key: str) -> bool:
    """A key of some backend's settings, or inside one of their free-form mappings (backend.engine_kwargs.x)."""
    leaves, free = backend_keys()
    return key in leaves or any(key.startswith(p + ".") for p in free)


def trl_metric_names(row: dict) -> dict:
    """TRL-named copies of a native metrics row: reward, rewards/<fn>/mean, completions/*, learning_rate,
    frac_reward_zero_std (= 1 - frac_groups_with_spread), pods/kept_reward, pods/frac_kept_zero_std."""
    out = {trl: row[key] for key, trl in METRIC_ALIASES.items() if key in row}
    out.update({f"rewards/{k[len('reward/'):]}/mean": v for k, v in row.items()
                if k.startswith("reward/") and k != "reward/total"})
    if "frac_groups_with_spread" in row:
        out["frac_reward_zero_std"] = 1.0 - row["frac_groups_with_spread"]
    if "frac_groups_with_spread_kept" in row:
        out["pods/frac_kept_zero_std"] = 1.0 - row["frac_groups_with_spread_kept"]
    return out
