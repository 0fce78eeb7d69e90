"""Start-up checks of train.py's and evaluate-run.py's settings, run before any model loads.

    validate(cfg)             # config/train.yaml as composed: ConfigError listing every problem
    validate_eval(eval_cfg)   # config/evaluate.yaml

Contract: every key's type, bounds and choices first, in one pass (pods.config.fields.walk over
pods.config.schema); then, once those hold, the rules here, each relating several keys or a key to what
it names (a file, a dataset, a reward). Each problem is one sentence naming the key, the value and what to write.
"""

from __future__ import annotations

from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from pods import data, plugins, rewards
from pods.backends import memory
from pods.backends.checks import backend_problems, model_problems
from pods.config.aliases import hint
from pods.config.fields import by_key, finite, integer, output_path, walk
from pods.config.schema import EvalConfig, HeldoutConfig, RLConfig, TrainConfig, WarmStartSettings
from pods.core import profiles
from pods.core.lab_checks import lab_problems
from pods.data.math_labels import labels_problem
from pods.errors import ConfigError


def validate(cfg, *, cuda: bool | None = None) -> None:
    """Check config/train.yaml as composed; raise ConfigError listing every problem (cuda: None = look)."""
    found = by_key(cfg, TrainConfig, hint=hint)
    p = [problem for problems in found.values() for problem in problems]
    rules = {("output_root", "run_name"): _top, ("rl",): _rl, ("optim",): _optim, ("model",): _model,
             ("dataset",): _dataset}
    for keys, rule in rules.items():  # a rule compares values: only once the keys it reads are well typed
        p += [] if any(k.split(".")[0] in keys for k in found) else rule(cfg)
    if not found:
        p += backend_problems(cfg, cuda=torch.cuda.is_available() if cuda is None else cuda) + _open_sections(cfg)
    if p:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(p))


NAME_MAX = 255  # bytes in one file name (ext4, xfs, NFS, Lustre): a longer run_name cannot be a directory


def _top(cfg) -> list[str]:
    """output_root and run_name: a writable directory and a name inside it."""
    root, name = Path(cfg.output_root), cfg.run_name
    if name is not None:
        parts = Path(name).parts
        if Path(name).is_absolute() or ".." in parts or not parts or name.strip() != name:
            return [f"run_name {name!r} must be a name inside output_root (no absolute path, no '..', no "
                        f"surrounding spaces): the run would land outside {root}; set output_root=DIR to choose "
                        "the parent directory and run_name=NAME for the run"]
        longest = max(parts, key=lambda part: len(part.encode()))
        if len(longest.encode()) > NAME_MAX:  # the file system would refuse the directory (ENAMETOOLONG)
            return [f"run_name {name[:40]!r}... is {len(longest)} characters long ({len(longest.encode())} bytes): a "
                    f"directory name holds at most {NAME_MAX} bytes; choose a shorter run_name=NAME"]
    found = output_path("output_root", root)
    if not found and name is not None and (root / name).exists() and not (root / name).is_dir():
        found.append(f"run directory {root / name} is a file: choose another run_name")
    return found


def _rl(cfg) -> list[str]:
    """Sampling temperature against n, the run's end, saving, and the n / m / rule / algorithm combinations."""
    rl, p = cfg.rl, []
    if rl.temperature < 0:
        p.append(f"rl.temperature must be >= 0, got {rl.temperature!r}")
    elif rl.temperature == 0:  # m >= 2, so n >= 2: identical greedy rollouts
        p.append(f"rl.temperature=0 samples greedily: the rl.n={rl.n} rollouts of a prompt would be identical, "
                 "so their rewards have no spread and the update no gradient"
                 + (", and rl.logprob_temperature=true divides the logits by rl.temperature, which is 0"
                    if rl.logprob_temperature else "") + "; set rl.temperature > 0 (the paper: 0.9)")
    if rl.max_steps is None and rl.max_time is None and rl.token_budget is None:
        p.append("the run never stops: set rl.max_steps, rl.max_time or rl.token_budget")
    return p + _saving(rl) + _budget(rl) + _time_budget(cfg) + _n_m(rl) + _dynamic(rl) + lab_problems(rl)


def _time_budget(cfg) -> list[str]:
    """rl.budget_cost=seconds needs a profile that loads and was measured on the run's backend; a profile or a
    token weight that would not act is refused."""
    rl = cfg.rl
    if rl.budget_cost != "seconds":
        return [f"rl.budget_profile={rl.budget_profile} prices seconds only: set rl.budget_cost=seconds, or "
                "rl.budget_profile=null"] if rl.budget_profile is not None else []
    p = []
    if rl.token_budget_weight != getattr(RLConfig, "token_budget_weight"):
        p.append(f"rl.token_budget_weight={rl.token_budget_weight} weighs tokens, but rl.budget_cost=seconds prices "
                 f"steps on rl.budget_profile: leave it at {getattr(RLConfig, 'token_budget_weight')}")
    if rl.budget_profile is None:
        return p + [f"rl.budget_cost=seconds needs rl.budget_profile: one of {', '.join(profiles.known())} or a "
                    "profile file (`pods gpu-check --config ... --random-weights` measures one)"]
    try:
        profiles.load(rl.budget_profile).check_backend(str(cfg.backend.name))
    except ConfigError as err:
        p.append(f"rl.budget_profile: {err}")
    return p


def _dynamic(rl) -> list[str]:
    """The dynamic-sampling settings act only with rl.dynamic_sampling=true: set otherwise, they would be ignored."""
    keys = ("dynamic_sampling_metric", "short_batch", "max_generation_rounds")
    changed = [f"rl.{k}={rl[k]}" for k in keys if rl[k] != getattr(RLConfig, k)]
    if changed and not rl.dynamic_sampling:
        return [f"{', '.join(changed)}: used by dynamic sampling only; set rl.dynamic_sampling=true, or leave "
                f"{', '.join(f'rl.{k}' for k in keys)} at their defaults "
                f"({', '.join(str(getattr(RLConfig, k)) for k in keys)})"]
    return []


def _budget(rl) -> list[str]:
    """rl.token_budget_weight weighs the trained tokens of rl.token_budget and rl.save_tokens; without either it
    would be ignored."""
    w, default = rl.token_budget_weight, getattr(RLConfig, "token_budget_weight")
    if rl.token_budget is None and rl.save_tokens is None and w != default:
        return [f"rl.token_budget_weight={w} weighs the trained tokens of rl.token_budget and rl.save_tokens, but both "
                f"are null, so it would be ignored: set rl.token_budget (or rl.save_tokens), or leave "
                f"rl.token_budget_weight at {default}"]
    return []


def _n_m(rl) -> list[str]:
    n, m, alg, p = rl.n, rl.m, rl.algorithm, []
    if m > n:
        p.append(f"rl.m={m} > rl.n={n}: cannot keep more rollouts than are generated; set rl.m <= rl.n")
    if m < 2:
        p.append(f"rl.m={m}: group advantages need at least 2 kept rollouts per prompt; set rl.m >= 2")
    if rl.rule == "none" and m != n and alg not in ("grpo", "grpo_ga"):
        p.append(f"rl.rule=none keeps all rollouts, so rl.m must equal rl.n (got n={n}, m={m}); "
                 "use rl.m=rl.n or a down-sampling rule such as rl.rule=max_variance")
    if alg == "grpo" and m != n:
        p.append(f"rl.algorithm=grpo needs rl.m == rl.n (got n={n}, m={m}); use rl.algorithm=auto for PODS")
    if alg == "pods" and m >= n:
        p.append(f"rl.algorithm=pods needs rl.m < rl.n (got n={n}, m={m})")
    if alg == "grpo_ga" and m != n:
        p.append(f"rl.algorithm=grpo_ga trains on all n rollouts in one optimizer step (got n={n}, m={m}): "
                 "set rl.m=rl.n; rl.micro_batch_size sets how many go through each forward/backward pass")
    return p


def _saving(rl) -> list[str]:
    """Refuse a run that provably saves nothing without saying so (rl.save_strategy=no)."""
    if rl.save_final or rl.save_strategy == "no":
        return []
    if rl.save_strategy == "steps" and rl.max_steps is not None and rl.save_steps > rl.max_steps:
        why = f"rl.save_steps={rl.save_steps} > rl.max_steps={rl.max_steps}"
    elif rl.save_strategy == "time" and rl.max_time is not None and rl.save_interval > rl.max_time:
        why = f"rl.save_interval={rl.save_interval} > rl.max_time={rl.max_time}"
    else:
        return []
    return [f"rl.save_final=false and no checkpoint falls within the run ({why}): the trained model would be "
            "thrown away. Set rl.save_final=true, or save more often, or set rl.save_strategy=no to train "
            "without saving on purpose"]


def _optim(cfg) -> list[str]:
    """Adam's two betas, and the warm-up against the schedule."""
    optim, p = cfg.optim, []
    betas = list(optim.betas)
    if len(betas) != 2 or not all(finite(b) and 0 <= b < 1 for b in betas):
        p.append(f"optim.betas must be two numbers in [0, 1) (Adam's beta1, beta2), got {betas}; "
                 "e.g. optim.betas=[0.9,0.99]")
    w = optim.warmup_ratio  # warm-up in [0, 1), and only for schedules that have one (HF's `constant` has none)
    if not 0 <= w < 1:
        p.append(f"optim.warmup_ratio must be in [0, 1) (a fraction of the run), got {w!r}")
    elif optim.scheduler == "constant" and w > 0:
        p.append(f"optim.scheduler=constant has no warm-up (as HF's `constant`, which ignores warmup_ratio), "
                 f"got optim.warmup_ratio={w}: set optim.warmup_ratio=0, or optim.scheduler=constant_with_warmup "
                 "for a warm-up then a constant lr")
    return p


def _model(cfg) -> list[str]:
    """LoRA alpha with a rank, the tiny model's shapes, the architecture's sum, the model's name."""
    model = cfg.model
    p = integer("model.lora.alpha", model.lora.alpha, low=1) if model.lora.rank > 0 else []
    if model.name == "tiny":
        t = model.tiny
        if t.hidden % t.heads or t.heads % t.kv_heads:
            p.append(f"model.tiny: hidden={t.hidden} must be a multiple of heads={t.heads}, and heads a multiple "
                     f"of kv_heads={t.kv_heads}")
    return p + _architecture(model) + model_problems(model.name)


def _architecture(model) -> list[str]:
    """model.architecture: with every number set, they must add up to `params` (a wrong number would make the
    memory estimate wrong)."""
    a, p = model.get("architecture") or {}, []
    arch = memory.architecture(model) if model.name != "tiny" else None
    if arch is not None and a.get("params") is not None and arch.params() != a.params:
        p.append(f"model.architecture: these numbers give {arch.params():,} parameters, params says {a.params:,}; "
                 "copy layers, hidden, intermediate, heads, kv_heads, vocab, tied_embeddings and attention_bias "
                 "from the model's config.json")
    elif arch is not None and arch.hidden % arch.heads:
        p.append(f"model.architecture: hidden={arch.hidden} must be a multiple of heads={arch.heads}")
    return p


def _dataset(cfg) -> list[str]:
    """The dataset (built in, or your function: run by pods.run.prepare), its file, its rewards and weights."""
    d = cfg.dataset
    p = []
    if not plugins.is_plugin(d.name) and d.name not in data.DATASETS:
        p.append(f"unknown dataset.name {d.name!r}; valid: {', '.join(sorted(data.DATASETS))}, "
                 "or your own function as package.module:function (docs/workbench.md)")
    p += [ignored] if (ignored := data.generated_source_problem(d.name, "dataset.", path=d.path)) else []
    p += data.shots_problems(d.get("shots"))
    if d.path is not None and not Path(str(d.path)).exists():
        p.append(f"dataset.path {d.path} does not exist; point dataset.path at the local file or "
                 "set dataset.path=null to use the built-in/hub source")
    p += [wrong] if (wrong := labels_problem(d.name, d.labels)) else []
    return p + reward_problems(d)


def reward_problems(d) -> list[str]:
    """dataset.rewards: {name, weight, unless} items (pods.rewards.Entry) naming registered rewards or your own
    functions (imported and probed by pods.run.prepare, not here), and dataset.accuracy_reward among them."""
    p = rewards.entry_problems(d.rewards, where="dataset.rewards")
    items = [item for item in d.rewards or [] if isinstance(item, (dict, DictConfig))
             and isinstance(item.get("name"), str)]
    for name in dict.fromkeys(item["name"] for item in items if not plugins.is_plugin(item["name"])):
        try:
            rewards.get(name)
        except ValueError as err:  # an unknown name
            p.append(f"dataset.rewards: {err}")
    names = [item["name"] for item in items]
    if d.accuracy_reward is not None and d.accuracy_reward not in names:
        p.append(f"dataset.accuracy_reward {d.accuracy_reward!r} is not one of dataset.rewards {names}")
    return p


def _open_sections(cfg) -> list[str]:
    """`warmstart` (WarmStartSettings + cache_dir) and `evaluation` (HeldoutConfig), when they are set."""
    warm, ev = cfg.get("warmstart"), cfg.get("evaluation")
    p = warmstart_problems(warm) if warm is not None and warm.get("enabled", True) else []
    return p + (heldout_problems(ev) if ev is not None else [])


def warmstart_problems(warm) -> list[str]:
    """The `warmstart` section: WarmStartSettings keys (any may be left out) plus cache_dir and enabled."""
    return walk(warm, WarmStartSettings, "warmstart.", partial=True, extra=("cache_dir", "enabled"))


def heldout_problems(ev) -> list[str]:
    """The `evaluation` section (HeldoutConfig; any key may be left out)."""
    return walk(ev, HeldoutConfig, "evaluation.", partial=True)


# ----------------------------------------------------------------------------- evaluate-run.py


def validate_eval(cfg) -> None:
    """Raise ConfigError listing every problem of an evaluate-run.py config (config/evaluate.yaml)."""
    problems = eval_problems(cfg)
    if problems:
        raise ConfigError("invalid evaluation settings:\n  - " + "\n  - ".join(problems))


def eval_problems(cfg) -> list[str]:
    """The keys of EvalConfig that `cfg` sets (Hydra's own section aside)."""
    if OmegaConf.is_missing(cfg, "run_dir") or cfg.get("run_dir") in (None, ""):
        return ["run_dir is required: the run directory written by train.py, e.g. "
                "`evaluate-run.py run_dir=checkpoints/<run>`"]
    p = []
    run_dir = Path(str(cfg.run_dir))
    if not run_dir.is_dir():
        p.append(f"run_dir {run_dir} is not a directory; give the run directory written by train.py "
                 "(checkpoints/<run_name>)")
    elif not (run_dir / "config.yaml").is_file():
        p.append(f"{run_dir}: no config.yaml - not a run directory written by train.py")
    types = walk(cfg, EvalConfig, partial=True, unknown_choice="{key} must be {names}{why}, got {value!r}")
    if types:  # the checks below read the values
        return p + types
    out = cfg.get("output")
    if out and Path(out).is_dir():
        p.append(f"output {out} is a directory; give a file path such as {Path(out) / 'eval_results.json'}")
    for i, entry in enumerate(cfg.get("datasets") or []):
        if not isinstance(entry, (dict, DictConfig)) or not entry.get("name"):
            p.append(f"datasets[{i}] must be a mapping with at least a name, e.g. {{name: gsm8k}}; got {entry!r}")
        else:
            p += integer(f"datasets[{i}].limit", entry.get("limit"), low=1, none_ok=True)
    return p
