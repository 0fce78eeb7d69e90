"""The training config's start-up checks and derived values; the schema is pods.config.schema.

    cfg = hydra/omegaconf config composed from config/train.yaml (see train.py)
    pods.config.validate(cfg)            # raises ConfigError listing every problem and how to fix it
    pods.config.algorithm(cfg)           # "pods" (m < n) | "grpo" (m == n) | "grpo_ga"
    pods.config.run_dir(cfg)             # Path("<output_root>/<run_name>")

Contract for other modules (trainer, backends, evaluation, demo scripts):
- sections `model`, `dataset`, `rl`, `optim`, `logging` are closed: a key not in the dataclasses
  of pods.config.schema (re-exported here) is an error (typos in experiment files are caught).
  `backend` is open: each backend reads its own keys, only `backend.name` is required. `warmstart` and `evaluation` are open
  sections owned by pods.run.warmstart / pods.evaluation (null when unused).
- The run name is `run_name` when set, else derived from the config (`default_run_name`).
- Nothing here loads a model or touches the network: `validate` runs before any model loads.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from pods.config import aliases
from pods.config.aliases import REMOVED_KEYS  # noqa: F401  (importable as pods.config.REMOVED_KEYS)
from pods.errors import ConfigError  # noqa: F401  (importable as pods.config.ConfigError)
from pods.config.schema import (  # noqa: F401  (re-exported: pods.config.TrainConfig etc.)
    ALGORITHMS, DTYPES, GPU_ONLY_BACKENDS, OPTIMIZERS, SAVE_STRATEGIES, SCHEDULERS, DatasetConfig, LoggingConfig,
    LoraConfig, ModelConfig, OptimConfig, RLConfig, TinyConfig, TrainConfig,
)

DEMO_HINT = "on a machine without a GPU run the CPU demo instead: `uv run python train.py experiment=demo`"


OPEN = ("backend", "warmstart", "evaluation")  # sections whose keys are not checked here


def default_config() -> DictConfig:
    return OmegaConf.structured(TrainConfig)


def to_container(cfg) -> dict:
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)


def algorithm(cfg) -> str:
    """The algorithm the run uses: pods (m < n), grpo (m == n) or grpo_ga (explicit)."""
    alg = cfg.rl.algorithm
    if alg == "auto":
        return "pods" if cfg.rl.m < cfg.rl.n else "grpo"
    return alg


def default_run_name(cfg) -> str:
    """e.g. `gsm8k-qwen2.5-3b-instruct-pods-max_variance-n64-m16-seed0`."""
    alg = algorithm(cfg)
    parts = [cfg.dataset.name, cfg.model.short_name, alg]
    if alg == "pods":
        parts.append(cfg.rl.rule)
    parts += [f"n{cfg.rl.n}", f"m{cfg.rl.m}"]
    if cfg.rl.prompts_per_step != 1:
        parts.append(f"b{cfg.rl.prompts_per_step}")
    if cfg.rl.beta:
        parts.append(f"beta{cfg.rl.beta:g}")
    parts.append(f"seed{cfg.seed}")
    return "-".join(str(p).replace("/", "_") for p in parts)


def run_dir(cfg) -> Path:
    return Path(cfg.output_root) / (cfg.run_name or default_run_name(cfg))


def _unknown_keys(section: str, value, schema) -> list[str]:
    if not isinstance(value, (dict, DictConfig)):
        return []
    names = {f.name: f for f in dataclasses.fields(schema)}
    problems = []
    for key in value:
        if key not in names:
            dotted = f"{section}.{key}".lstrip(".")
            hint = aliases.hint(dotted)  # TRL's name, or "did you mean rl.n?"
            text = REMOVED_KEYS.get(dotted) or (f"{hint}; " if hint else "") + f"valid keys: {', '.join(names)}"
            problems.append(f"unknown key {section}.{key}; {text}")
        else:
            sub = names[key].default_factory if names[key].default_factory is not dataclasses.MISSING else None
            if sub is not None and dataclasses.is_dataclass(sub):
                problems += _unknown_keys(f"{section}.{key}", value[key], sub)
    return problems


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def validate(cfg, *, cuda: bool | None = None) -> None:
    """Check the config before any model loads; raise ConfigError listing every problem."""
    from pods.core.advantages import SCALES, STDS
    from pods.backends import BACKENDS
    from pods.core.downsample import RULES

    from pods.config import fields as checks

    from pods.config import checks as config_checks

    p: list[str] = _unknown_keys("", cfg, TrainConfig)
    p = [s.replace("key .", "key ") for s in p]
    p += checks.schema_problems(cfg, TrainConfig, choices=_choices())  # types first: the checks below compare values
    p += config_checks.loose_problems(cfg)  # the fields typed Any: max_steps, max_time, limit, run_name, ...
    if p:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(p))
    p += config_checks.train_problems(cfg)  # ranges, the run directory, open sections, the `Any` fields
    rl, optim, model, data = cfg.rl, cfg.optim, cfg.model, cfg.dataset

    def positive(name, value, allow_none=False):
        if value is None and allow_none:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            p.append(f"{name} must be a positive number, got {value!r}")

    for name in ("n", "m", "prompts_per_step", "micro_batch_size", "max_prompt_tokens",
                 "max_completion_tokens", "save_steps", "max_generation_rounds"):
        positive(f"rl.{name}", rl[name])
    positive("rl.save_interval", rl.save_interval)
    positive("optim.lr", optim.lr)
    if isinstance(rl.max_nonfinite_steps, bool) or not isinstance(rl.max_nonfinite_steps, int) \
            or rl.max_nonfinite_steps < 1:
        p.append(f"rl.max_nonfinite_steps must be an integer >= 1 (1: stop at the first non-finite step), "
                 f"got {rl.max_nonfinite_steps!r}")
    p += _check_saving(rl)
    lg = cfg.logging
    if isinstance(lg.samples_every, bool) or not isinstance(lg.samples_every, int) or lg.samples_every < 0:
        p.append(f"logging.samples_every must be an integer >= 0 (0: no samples.jsonl), got {lg.samples_every!r}")
    positive("logging.samples_prompts", lg.samples_prompts)
    if rl.temperature < 0:
        p.append(f"rl.temperature must be >= 0, got {rl.temperature!r}")
    elif rl.temperature == 0:  # m >= 2, so n >= 2: identical greedy rollouts
        p.append(f"rl.temperature=0 samples greedily: the rl.n={rl.n} rollouts of a prompt would be identical, "
                 "so their rewards have no spread and the update no gradient"
                 + (", and rl.logprob_temperature=true divides the logits by rl.temperature, which is 0"
                    if rl.logprob_temperature else "") + "; set rl.temperature > 0 (the paper: 0.9)")
    if rl.beta < 0:
        p.append(f"rl.beta must be >= 0, got {rl.beta!r}")
    if rl.max_steps is None and rl.max_time is None:
        p.append("the run never stops: set rl.max_steps or rl.max_time")
    if rl.rule not in RULES:
        p.append(f"unknown rl.rule {rl.rule!r}; valid rules: {', '.join(RULES)}")
    if rl.algorithm not in ALGORITHMS:
        p.append(f"unknown rl.algorithm {rl.algorithm!r}; valid: {', '.join(ALGORITHMS)}")
    if rl.save_strategy not in SAVE_STRATEGIES:  # an unquoted `no` (YAML's false): the type check says to quote it
        p.append(f"unknown rl.save_strategy {rl.save_strategy!r}; valid: {', '.join(SAVE_STRATEGIES)}")
    if rl.scale_rewards not in SCALES:
        p.append(f"unknown rl.scale_rewards {rl.scale_rewards!r}; valid: {', '.join(SCALES)}")
    if rl.advantage_std not in STDS:
        p.append(f"unknown rl.advantage_std {rl.advantage_std!r}; valid: {', '.join(STDS)}")
    if rl.aggregation not in ("sequence", "token"):
        p.append(f"unknown rl.aggregation {rl.aggregation!r}; valid: sequence, token")
    if optim.name not in OPTIMIZERS:
        p.append(f"unknown optim.name {optim.name!r}; valid: {', '.join(OPTIMIZERS)}")
    if optim.scheduler not in SCHEDULERS:
        p.append(f"unknown optim.scheduler {optim.scheduler!r}; valid: {', '.join(SCHEDULERS)}")
    p += _check_schedule(optim)
    n, m = rl.n, rl.m
    if isinstance(n, int) and isinstance(m, int):
        if m > n:
            p.append(f"rl.m={m} > rl.n={n}: cannot keep more rollouts than are generated; set rl.m <= rl.n")
        if m < 2:
            p.append(f"rl.m={m}: group advantages need at least 2 kept rollouts per prompt; set rl.m >= 2")
        alg = rl.algorithm
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
    if model.lora.rank is None or model.lora.rank < 0:
        p.append(f"model.lora.rank must be >= 0 (0 = full-parameter), got {model.lora.rank!r}")
    if data.path is not None and not Path(str(data.path)).exists():
        p.append(f"dataset.path {data.path} does not exist; point dataset.path at the local file or "
                 "set dataset.path=null to use the built-in/hub source")
    if not data.rewards:
        p.append("dataset.rewards is empty: list at least one {name, weight} reward function")
    else:
        p += _check_rewards(data)
    name = (cfg.backend or {}).get("name")
    if name not in BACKENDS:
        p.append(f"unknown backend.name {name!r}; valid backends: {', '.join(BACKENDS)}")
    elif name in GPU_ONLY_BACKENDS:
        has_cuda = _cuda() if cuda is None else cuda
        cpu_vllm = name == "vllm" and importlib.util.find_spec("vllm") is not None
        if not has_cuda and not cpu_vllm:
            p.append(f"backend {name!r} needs a CUDA GPU and none is available; use backend=hf, or "
                     + DEMO_HINT)
    if name in BACKENDS:  # sequence lengths, 4-bit (pods.backends.checks)
        from pods.backends.checks import backend_problems

        p += backend_problems(cfg, cuda=_cuda() if cuda is None else cuda)
    if model.dtype not in ("auto", *DTYPES):
        p.append(f"unknown model.dtype {model.dtype!r}; valid: auto, {', '.join(DTYPES)}")
    p += _check_dataset(data)
    if model.name == "tiny" and model.tiny.arch not in ("qwen2", "llama"):
        p.append(f"unknown model.tiny.arch {model.tiny.arch!r}; valid: qwen2, llama")
    if p:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(p))


def _choices() -> dict[str, tuple]:
    """Valid names of the string settings that name a choice (listed when such a setting is not a string)."""
    from pods import data
    from pods.core.advantages import SCALES, STDS
    from pods.core.downsample import RULES

    return {"rl.rule": RULES, "rl.algorithm": ALGORITHMS, "rl.save_strategy": SAVE_STRATEGIES,
            "rl.scale_rewards": SCALES, "rl.advantage_std": STDS, "rl.aggregation": ("sequence", "token"),
            "optim.name": OPTIMIZERS, "optim.scheduler": SCHEDULERS, "model.dtype": ("auto", *DTYPES),
            "dataset.name": tuple(sorted(data.DATASETS)), "dataset.prompt_style": data.STYLES}


def _check_schedule(optim) -> list[str]:
    """Warm-up in [0, 1), and only for schedules that have one (HF's `constant` ignores it)."""
    w = optim.warmup_ratio
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w < 1:
        return [f"optim.warmup_ratio must be in [0, 1) (a fraction of the run), got {w!r}"]
    if optim.scheduler == "constant" and w > 0:
        return [f"optim.scheduler=constant has no warm-up (as HF's `constant`, which ignores warmup_ratio), "
                f"got optim.warmup_ratio={w}: set optim.warmup_ratio=0, or optim.scheduler=constant_with_warmup "
                "for a warm-up then a constant lr"]
    return []


def _check_saving(rl) -> list[str]:
    """Refuse a run that provably saves nothing without saying so (rl.save_strategy=no)."""
    if rl.save_final or rl.save_strategy == "no":
        return []
    number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
    if rl.save_strategy == "steps" and number(rl.max_steps) and number(rl.save_steps) and rl.save_steps > rl.max_steps:
        why = f"rl.save_steps={rl.save_steps} > rl.max_steps={rl.max_steps}"
    elif rl.save_strategy == "time" and number(rl.max_time) and number(rl.save_interval) \
            and rl.save_interval > rl.max_time:
        why = f"rl.save_interval={rl.save_interval} > rl.max_time={rl.max_time}"
    else:
        return []
    return [f"rl.save_final=false and no checkpoint falls within the run ({why}): the trained model would be "
            "thrown away. Set rl.save_final=true, or save more often, or set rl.save_strategy=no to train "
            "without saving on purpose"]


def _check_dataset(data) -> list[str]:
    """Dataset name and prompt style must be known to pods.data; shuffle_seed an integer >= 0 or null."""
    from pods import data as registry, plugins

    problems = []
    if plugins.is_plugin(data.name):
        try:
            plugins.check_dataset(data.name, data.split)
        except plugins.PluginError as err:
            problems.append(f"dataset.name: {err}")
    elif data.name not in registry.DATASETS:
        problems.append(f"unknown dataset.name {data.name!r}; valid: {', '.join(sorted(registry.DATASETS))}, "
                        "or your own function as package.module:function (docs/workbench.md)")
    if data.prompt_style not in registry.STYLES:
        problems.append(f"unknown dataset.prompt_style {data.prompt_style!r}; valid: {', '.join(registry.STYLES)}")
    seed = data.get("shuffle_seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        problems.append(f"dataset.shuffle_seed must be a non-negative integer or null, got {seed!r}")
    return problems


def _check_rewards(data) -> list[str]:
    """Reward names must exist in the rewards registry (skipped if rewards/ is not importable)."""
    try:
        from pods import rewards as registry
    except ImportError:
        return []
    problems, names = [], []
    for item in data.rewards:
        if not isinstance(item, (dict, DictConfig)) or "name" not in item:
            problems.append(f"dataset.rewards entries must be {{name, weight}}, got {item!r}")
            continue
        names.append(item["name"])
        try:
            from pods import plugins

            plugins.check_reward(item["name"]) if plugins.is_plugin(item["name"]) else registry.get(item["name"])
        except (ValueError, KeyError) as err:
            problems.append(f"dataset.rewards: {err}")
    if data.accuracy_reward is not None and data.accuracy_reward not in names:
        problems.append(f"dataset.accuracy_reward {data.accuracy_reward!r} is not one of dataset.rewards {names}")
    return problems


from pods.run.rundir import check_run_dir, differences  # noqa: E402,F401  (re-exported: pods.config.check_run_dir)
