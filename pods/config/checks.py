"""Start-up checks of train.py's and evaluate-run.py's settings, run before any model loads.

    validate(cfg)             # config/train.yaml as composed: ConfigError listing every problem
    validate_eval(eval_cfg)   # config/evaluate.yaml
    CHOICES["rl.rule"]        # the names a choice accepts, read from the module that implements it

Contract: unknown keys and types first (from pods.config.schema), then one function per section for
ranges and combinations. Each problem is one sentence naming the key, the value and what to write.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
from omegaconf import DictConfig, ListConfig, OmegaConf

from pods import data, plugins, rewards
from pods.backends import memory
from pods.backends.checks import backend_problems, model_problems
from pods.backends.merged import WEIGHTS
from pods.backends.precision import DTYPES
from pods.backends.tiny import ARCHITECTURES
from pods.config.aliases import REMOVED_KEYS, hint
from pods.config.fields import SEED_MAX, finite, integer, number, output_path, schema_problems, value_of
from pods.config.schema import (OPTIMIZERS, SAVE_STRATEGIES, EvalConfig, HeldoutConfig, RLConfig, TrainConfig,
                                WarmStartSettings, settings_from)
from pods.core.advantages import SCALES, STDS
from pods.core.algorithms import ALGORITHMS
from pods.core.collect import FILTER_METRICS, MAX_ROUNDS, SHORT_BATCH
from pods.core.downsample import NEEDS, RULES
from pods.core.losses import AGGREGATIONS
from pods.core.schedule import SCHEDULERS
from pods.data.math_labels import LABELS, labels_problem
from pods.errors import ConfigError
from pods.rewards.paper import NUMBER_PATTERNS

CHOICES = {  # dotted key -> valid names, from where each choice is implemented
    "rl.rule": tuple(RULES), "rl.algorithm": ("auto", *ALGORITHMS), "rl.save_strategy": SAVE_STRATEGIES,
    "rl.scale_rewards": SCALES, "rl.advantage_std": STDS, "rl.aggregation": AGGREGATIONS,
    "optim.name": OPTIMIZERS, "optim.scheduler": SCHEDULERS, "model.dtype": ("auto", *DTYPES),
    "model.tiny.arch": tuple(ARCHITECTURES), "dataset.prompt_style": data.STYLES,
    "rl.dynamic_sampling_metric": FILTER_METRICS, "rl.short_batch": SHORT_BATCH, "dataset.labels": LABELS,
}
PAPER_GRADERS = tuple(NUMBER_PATTERNS)  # evaluate-run.py's paper_grader (or null)


def validate(cfg, *, cuda: bool | None = None) -> None:
    """Check config/train.yaml as composed; raise ConfigError listing every problem (cuda: None = look)."""
    p = [s.replace("key .", "key ") for s in _unknown_keys("", cfg, TrainConfig)]
    p += schema_problems(cfg, TrainConfig, choices=CHOICES)  # types first: the checks below compare values
    p += _loose(cfg)
    if not p:
        cuda = torch.cuda.is_available() if cuda is None else cuda
        p += _choices(cfg) + _top(cfg) + _rl(cfg.rl) + _optim(cfg.optim) + _model(cfg.model) + _dataset(cfg.dataset)
        p += _logging(cfg.logging) + backend_problems(cfg, cuda=cuda) + _open_sections(cfg)
    if p:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(p))


def _unknown_keys(section: str, value, schema) -> list[str]:
    """Keys of a closed section (a dataclass of the schema) that the schema does not declare."""
    if not isinstance(value, (dict, DictConfig)):
        return []
    names = {f.name: f for f in dataclasses.fields(schema)}
    problems = []
    for key in value:
        if key not in names:
            dotted = f"{section}.{key}".lstrip(".")
            found = hint(dotted)  # what replaced a removed key, TRL's name, or "did you mean rl.n?"
            text = REMOVED_KEYS.get(dotted) or (f"{found}; " if found else "") + f"valid keys: {', '.join(names)}"
            problems.append(f"unknown key {section}.{key}; {text}")
        else:
            sub = names[key].default_factory if names[key].default_factory is not dataclasses.MISSING else None
            if sub is not None and dataclasses.is_dataclass(sub):
                problems += _unknown_keys(f"{section}.{key}", value[key], sub)
    return problems


def _text(key: str, value, *, none_ok: bool = True) -> list[str]:
    if (value is None and none_ok) or (isinstance(value, str) and value != ""):
        return []
    return [f"{key} must be a non-empty string{' or null' if none_ok else ''}, got {value!r}"]


def _loose(cfg) -> list[str]:
    """The fields the schema types `Any` (a value or null), checked together with the types."""
    get = lambda key: OmegaConf.select(cfg, key, default=None, throw_on_missing=False)  # noqa: E731
    p = integer("rl.max_steps", get("rl.max_steps"), low=1, none_ok=True)
    p += number("rl.max_time", get("rl.max_time"), low=0, low_open=True, none_ok=True, why="seconds of training time")
    p += integer("dataset.limit", get("dataset.limit"), low=1, none_ok=True, why="null keeps every example")
    for key in ("run_name", "dataset.path", "dataset.system_prompt", "dataset.accuracy_reward", "logging.entity"):
        value = get(key)
        p += [] if key == "dataset.system_prompt" and value == "" else _text(key, value)
    return p


def _choices(cfg) -> list[str]:
    """A string setting that names a choice must name one of CHOICES (non-strings: schema_problems)."""
    p = []
    for key, names in CHOICES.items():
        value = OmegaConf.select(cfg, key)
        if isinstance(value, str) and value not in names:
            p.append(f"unknown {key} {value!r}; valid: {', '.join(names)}")
    return p


def _top(cfg) -> list[str]:
    """seed, output_root and run_name: a writable directory and a name inside it."""
    p = integer("seed", cfg.seed, low=0, high=SEED_MAX)
    root, name = Path(cfg.output_root), cfg.run_name
    if name is not None:
        parts = Path(name).parts
        if Path(name).is_absolute() or ".." in parts or not parts or name.strip() != name:
            return p + [f"run_name {name!r} must be a name inside output_root (no absolute path, no '..', no "
                        f"surrounding spaces): the run would land outside {root}; set output_root=DIR to choose "
                        "the parent directory and run_name=NAME for the run"]
    found = output_path("output_root", root)
    if not found and name is not None and (root / name).exists() and not (root / name).is_dir():
        found.append(f"run directory {root / name} is a file: choose another run_name")
    return p + found


def _rl(rl) -> list[str]:
    """Counts, sampling, the run's end and saving, and the n / m / rule / algorithm combinations."""
    p = []
    for name in ("n", "m", "prompts_per_step", "micro_batch_size", "max_prompt_tokens", "max_completion_tokens",
                 "save_steps"):
        p += integer(f"rl.{name}", rl[name], low=1)
    p += integer("rl.max_generation_rounds", rl.max_generation_rounds, low=1, high=MAX_ROUNDS,
                 why=f"each round generates B x n more rollouts; {MAX_ROUNDS} rounds make one step cost {MAX_ROUNDS} "
                     "steps' generation")
    p += number("rl.save_interval", rl.save_interval, low=0, low_open=True)
    p += integer("rl.max_nonfinite_steps", rl.max_nonfinite_steps, low=1, why="1: stop at the first non-finite step")
    p += number("rl.top_p", rl.top_p, low=0, low_open=True, high=1, why="1 samples from the whole distribution")
    p += number("rl.beta", rl.beta, low=0)
    if rl.temperature < 0:
        p.append(f"rl.temperature must be >= 0, got {rl.temperature!r}")
    elif rl.temperature == 0:  # m >= 2, so n >= 2: identical greedy rollouts
        p.append(f"rl.temperature=0 samples greedily: the rl.n={rl.n} rollouts of a prompt would be identical, "
                 "so their rewards have no spread and the update no gradient"
                 + (", and rl.logprob_temperature=true divides the logits by rl.temperature, which is 0"
                    if rl.logprob_temperature else "") + "; set rl.temperature > 0 (the paper: 0.9)")
    if rl.max_steps is None and rl.max_time is None:
        p.append("the run never stops: set rl.max_steps or rl.max_time")
    return p + _saving(rl) + _n_m(rl) + _dynamic(rl)


def _dynamic(rl) -> list[str]:
    """The dynamic-sampling settings act only with rl.dynamic_sampling=true: set otherwise, they would be ignored."""
    keys = ("dynamic_sampling_metric", "short_batch")
    changed = [f"rl.{k}={rl[k]}" for k in keys if rl[k] != getattr(RLConfig, k)]
    if changed and not rl.dynamic_sampling:
        return [f"{', '.join(changed)}: used by dynamic sampling only; set rl.dynamic_sampling=true, or leave "
                f"rl.dynamic_sampling_metric and rl.short_batch at their defaults "
                f"({', '.join(getattr(RLConfig, k) for k in keys)})"]
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
    if NEEDS.get(rl.rule):  # until the loop passes them (issue 30 wiring); pods.select and PODSTrainer do
        p.append(f"rl.rule={rl.rule} needs {' and '.join(NEEDS[rl.rule])} per rollout, which train.py does not "
                 "pass to the rule yet; use it through pods.select or PODSTrainer, or pick another rl.rule")
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


def _optim(optim) -> list[str]:
    p = number("optim.lr", optim.lr, low=0, low_open=True) + number("optim.weight_decay", optim.weight_decay, low=0)
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


def _model(model) -> list[str]:
    p = integer("model.lora.rank", model.lora.rank, low=0, why="0 = full-parameter")
    p += number("model.lora.dropout", model.lora.dropout, low=0, high=1, high_open=True)
    if model.lora.rank > 0:
        p += integer("model.lora.alpha", model.lora.alpha, low=1)
    if model.name == "tiny":
        t = model.tiny
        p += integer("model.tiny.seed", t.seed, low=0, high=SEED_MAX)
        for key in ("hidden", "layers", "heads", "kv_heads"):
            p += integer(f"model.tiny.{key}", t[key], low=1)
        if t.heads >= 1 and t.kv_heads >= 1 and (t.hidden % t.heads or t.heads % t.kv_heads):
            p.append(f"model.tiny: hidden={t.hidden} must be a multiple of heads={t.heads}, and heads a multiple "
                     f"of kv_heads={t.kv_heads}")
    return p + _architecture(model) + model_problems(model.name)


def _architecture(model) -> list[str]:
    """model.architecture: positive integers and booleans (or null); with every number set, they must add up
    to `params` (a wrong number would make the memory estimate wrong)."""
    a = model.get("architecture") or {}
    p = []
    for key in (*memory.ARCHITECTURE_KEYS, "params"):
        value = a.get(key)
        if key in ("tied_embeddings", "attention_bias"):
            p += [] if value is None or isinstance(value, bool) else \
                [f"model.architecture.{key} must be true, false or null, got {value!r}"]
        else:
            p += integer(f"model.architecture.{key}", value, low=1, none_ok=True, why="from the model's config.json")
    arch = memory.architecture(model) if not p and model.name != "tiny" else None
    if arch is not None and a.get("params") is not None and arch.params() != a.params:
        p.append(f"model.architecture: these numbers give {arch.params():,} parameters, params says {a.params:,}; "
                 "copy layers, hidden, intermediate, heads, kv_heads, vocab, tied_embeddings and attention_bias "
                 "from the model's config.json")
    elif arch is not None and arch.hidden % arch.heads:
        p.append(f"model.architecture: hidden={arch.hidden} must be a multiple of heads={arch.heads}")
    return p


def _dataset(d) -> list[str]:
    """The dataset (built in, or your function: run by pods.run.prepare), its file, its rewards and weights,
    its shuffle seed."""
    p = []
    if not plugins.is_plugin(d.name) and d.name not in data.DATASETS:
        p.append(f"unknown dataset.name {d.name!r}; valid: {', '.join(sorted(data.DATASETS))}, "
                 "or your own function as package.module:function (docs/workbench.md)")
    p += [ignored] if (ignored := data.generated_source_problem(d.name, "dataset.", path=d.path)) else []
    if d.path is not None and not Path(str(d.path)).exists():
        p.append(f"dataset.path {d.path} does not exist; point dataset.path at the local file or "
                 "set dataset.path=null to use the built-in/hub source")
    p += integer("dataset.shuffle_seed", d.shuffle_seed, low=0, none_ok=True)
    p += [wrong] if (wrong := labels_problem(d.name, d.get("labels", "full"))) else []
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


def _logging(lg) -> list[str]:
    return (integer("logging.samples_every", lg.samples_every, low=0, why="0: no samples.jsonl")
            + integer("logging.samples_prompts", lg.samples_prompts, low=1))


def _open_sections(cfg) -> list[str]:
    """`warmstart` (WarmStartSettings + cache_dir) and `evaluation` (HeldoutConfig), when they are set."""
    p = []
    warm, ev = cfg.get("warmstart"), cfg.get("evaluation")
    if warm is not None and not isinstance(warm, (dict, DictConfig)):
        p.append(f"warmstart must be a section of keys or null, got {warm!r}")
    elif warm is not None and warm.get("enabled", True):
        p += warmstart_problems(warm)
    if ev is not None and not isinstance(ev, (dict, DictConfig)):
        p.append(f"evaluation must be a section of keys or null, got {ev!r}")
    elif ev is not None:
        p += heldout_problems(ev)
    return p


def _section_keys(section: str, value, schema, extra=()) -> list[str]:
    valid = [f.name for f in dataclasses.fields(schema)] + list(extra)
    unknown = sorted(set(value) - set(valid))
    if unknown:
        return [f"unknown key(s) {section}.{f', {section}.'.join(unknown)}; valid: {', '.join(valid)}"]
    return schema_problems(value, schema, f"{section}.", partial=True)


def warmstart_problems(warm) -> list[str]:
    """The `warmstart` section: WarmStartSettings keys (any may be left out) plus cache_dir and enabled."""
    p = _section_keys("warmstart", warm, WarmStartSettings, extra=("cache_dir", "enabled"))
    if p:
        return p
    s, _ = settings_from(warm)
    if not 0 < s.target_greedy <= 1:
        p.append(f"warmstart.target_greedy must lie in (0, 1], got {s.target_greedy}")
    if min(s.batch_size, s.max_steps, s.eval_every, s.eval_size, s.max_new_tokens) < 1 or s.lr <= 0:
        p.append("warmstart: batch_size, max_steps, eval_every, eval_size, max_new_tokens and lr must be positive")
    return p


def heldout_problems(ev) -> list[str]:
    """The `evaluation` section (HeldoutConfig; any key may be left out)."""
    p = _section_keys("evaluation", ev, HeldoutConfig)
    if p:
        return p
    get = lambda key: ev.get(key, getattr(HeldoutConfig, key))  # noqa: E731
    for key in ("size", "draws", "batch_size"):
        p += integer(f"evaluation.{key}", get(key), low=1)
    p += integer("evaluation.max_tokens", get("max_tokens"), low=1, none_ok=True, why="null: rl.max_completion_tokens")
    p += integer("evaluation.seed", get("seed"), low=0, high=SEED_MAX)
    return p + number("evaluation.temperature", get("temperature"), low=0)


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
    types = schema_problems(cfg, EvalConfig, partial=True)  # int and bool keys; the Any ones below
    if types:
        return p + types
    get = lambda key: value_of(cfg, key) if key in cfg else getattr(EvalConfig, key)  # noqa: E731
    p += integer("repeats", get("repeats"), low=1) + integer("seed", get("seed"), low=0, high=SEED_MAX)
    p += integer("batch_size", get("batch_size"), low=1) + integer("examples", get("examples"), low=0)
    p += number("temperature", get("temperature"), low=0, none_ok=True, why="0 is greedy decoding, null the run's own")
    p += number("top_p", get("top_p"), low=0, low_open=True, high=1, none_ok=True)
    p += integer("max_tokens", get("max_tokens"), low=1, none_ok=True)
    p += integer("max_prompt_tokens", get("max_prompt_tokens"), low=1, none_ok=True, why="null: the run's own")
    if get("paper_grader") not in (None, *PAPER_GRADERS):
        p.append(f"paper_grader must be {', '.join(PAPER_GRADERS)} or null, got {get('paper_grader')!r}")
    if get("weights") not in WEIGHTS:
        p.append(f"weights must be {' or '.join(WEIGHTS)} (adapter: the trained policy exactly; merged_4bit: the "
                 "authors' protocol, the LoRA merged into the 16-bit base and reloaded in 4-bit), "
                 f"got {get('weights')!r}")
    out = get("output")
    if out is not None and not (isinstance(out, str) and out):
        p.append(f"output must be a file path or null, got {out!r}")
    elif out and Path(out).is_dir():
        p.append(f"output {out} is a directory; give a file path such as {Path(out) / 'eval_results.json'}")
    if get("backend") is not None and not isinstance(get("backend"), (dict, DictConfig)):
        p.append(f"backend must be a mapping such as {{name: vllm}} or null, got {get('backend')!r}")
    entries = get("datasets")
    if entries is not None and not isinstance(entries, (list, ListConfig)):
        p.append(f"datasets must be a list of {{name: ...}} entries or null, got {entries!r}")
    for i, entry in enumerate(entries if isinstance(entries, (list, ListConfig)) else []):
        if not isinstance(entry, (dict, DictConfig)) or not entry.get("name"):
            p.append(f"datasets[{i}] must be a mapping with at least a name, e.g. {{name: gsm8k}}; got {entry!r}")
        else:
            p += integer(f"datasets[{i}].limit", entry.get("limit"), low=1, none_ok=True)
    return p
