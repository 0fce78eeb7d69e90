"""The training config: its schema (dataclasses documenting every key) and the start-up checks.

    cfg = hydra/omegaconf config composed from config/train.yaml (see train.py)
    pods.config.validate(cfg)            # raises ConfigError listing every problem and how to fix it
    pods.config.algorithm(cfg)           # "pods" (m < n) | "grpo" (m == n) | "grpo_ga"
    pods.config.run_dir(cfg)             # Path("<output_root>/<run_name>")

Contract for other modules (trainer, backends, evaluation, demo scripts):
- sections `model`, `dataset`, `rl`, `optim`, `logging` are closed: a key not in the dataclass
  below is an error (typos in experiment files are caught). `backend` is open: each backend
  reads its own keys, only `backend.name` is required. `warmstart` and `evaluation` are open
  sections owned by pods.warmstart / pods.evaluation (null when unused).
- The run name is `run_name` when set, else derived from the config (`default_run_name`).
- Nothing here loads a model or touches the network: `validate` runs before any model loads.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

ALGORITHMS = ("auto", "pods", "grpo", "grpo_ga")
SAVE_STRATEGIES = ("time", "steps")
OPTIMIZERS = ("adamw", "adamw_8bit")
SCHEDULERS = ("constant", "linear", "cosine")
GPU_ONLY_BACKENDS = ("unsloth", "vllm")  # vllm is allowed on CPU only when a (CPU) vllm is importable
DTYPES = ("float32", "bfloat16", "float16")
DEMO_HINT = "on a machine without a GPU run the CPU demo instead: `uv run python train.py experiment=demo`"


class ConfigError(ValueError):
    """A config problem found at start-up; the message says what to change."""


@dataclass
class LoraConfig:
    rank: int = 64  # LoRA rank r; 0 trains all parameters (full fine-tuning)
    alpha: int = 64  # LoRA scaling numerator (scale = alpha / rank)
    dropout: float = 0.0  # dropout on the LoRA branch
    target_modules: list = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj",
                                                          "gate_proj", "up_proj", "down_proj"])


@dataclass
class TinyConfig:
    arch: str = "qwen2"  # qwen2 | llama (pods.models.ARCHITECTURES)
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    seed: int = 0  # initialisation seed of the random weights


@dataclass
class ModelConfig:
    name: str = "Qwen/Qwen2.5-3B-Instruct"  # hub name, local model dir, or "tiny" (built in code)
    short_name: str = "qwen2.5-3b-instruct"  # used in the derived run name
    load_in_4bit: bool = True  # 4-bit base weights (bitsandbytes); applied only on a CUDA GPU
    dtype: str = "bfloat16"  # auto | float32 | bfloat16 | float16; CPU always uses float32
    gradient_checkpointing: bool = True  # recompute activations in backward (GPU memory saver)
    lora: LoraConfig = field(default_factory=LoraConfig)
    tiny: TinyConfig = field(default_factory=TinyConfig)  # used only when name == "tiny"


@dataclass
class DatasetConfig:
    name: str = "gsm8k"  # pods.data dataset name (gsm8k, math, arithmetic, jsonl, ...)
    split: str = "train"
    path: Any = None  # local file/dir instead of the hub (required by some loaders)
    limit: Any = None  # keep only the first `limit` examples (null: all)
    options: dict = field(default_factory=dict)  # extra keyword arguments for pods.data.load_dataset
    prompt_style: str = "instruct"  # pods.data.render_prompts style
    system_prompt: Any = None  # null: the style's default
    rewards: list = field(default_factory=list)  # [{name, weight}] for rewards.combined
    accuracy_reward: Any = None  # reward whose value > 0 counts as correct (null: the first one)


@dataclass
class RLConfig:
    n: int = 64  # rollouts generated per prompt
    m: int = 16  # rollouts kept per prompt for the update
    rule: str = "max_variance"  # down-sampling rule (pods.downsample.RULES)
    algorithm: str = "auto"  # auto: pods if m < n else grpo; grpo_ga: all n in n/m optimizer steps of m
    prompts_per_step: int = 1  # B: prompts (groups) per training step
    micro_batch_size: int = 4  # completions per forward/backward pass (gradient accumulation)
    beta: float = 0.0  # KL coefficient; > 0 computes reference log-probs (adapter disabled)
    epsilon: float = 0.2  # PPO clip range (low side)
    epsilon_high: Any = None  # PPO clip range high side (null: epsilon)
    aggregation: str = "sequence"  # loss aggregation: sequence | token
    scale_std: bool = True  # divide advantages by the group std
    temperature: float = 0.9  # sampling temperature of the rollouts
    top_p: float = 1.0
    max_prompt_tokens: int = 512  # longer prompts are dropped from the dataset
    max_completion_tokens: int = 512
    max_steps: Any = None  # stop after this many training steps (null: no limit)
    max_time: Any = 21600  # stop after this many seconds of training time (null: no limit)
    save_strategy: str = "time"  # time | steps
    save_interval: float = 1800  # seconds of training time between checkpoints (strategy time)
    save_steps: int = 100  # steps between checkpoints (strategy steps)
    save_final: bool = True  # also checkpoint the last step


@dataclass
class OptimConfig:
    name: str = "adamw_8bit"  # adamw | adamw_8bit (8-bit needs CUDA + bitsandbytes, else adamw)
    lr: float = 5e-6
    betas: list = field(default_factory=lambda: [0.9, 0.99])
    weight_decay: float = 0.1
    warmup_ratio: float = 0.01  # of max_steps (or of one epoch of prompts when max_steps is null)
    scheduler: str = "constant"  # constant | linear | cosine (after warmup)
    max_grad_norm: float = 0.1  # gradient clipping (<= 0: off)


@dataclass
class LoggingConfig:
    wandb: bool = False  # also log to Weights & Biases (offline mode when no API key)
    project: str = "pods"
    entity: Any = None
    progress: bool = True  # tqdm progress bar


@dataclass
class TrainConfig:
    """The whole run; mirrors config/train.yaml."""

    seed: int = 0
    run_name: Any = None  # null: derived from the config (default_run_name)
    output_root: str = "checkpoints"
    resume: bool = True  # continue from the latest complete checkpoint of the run dir
    model: ModelConfig = field(default_factory=ModelConfig)
    backend: dict = field(default_factory=lambda: {"name": "hf"})
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    rl: RLConfig = field(default_factory=RLConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    warmstart: Any = None  # open section for pods.warmstart (null: no warm start)
    evaluation: Any = None  # open section for pods.evaluation (null: unused)


OPEN = ("backend", "warmstart", "evaluation")  # sections whose keys are not checked here
RUN_NAME_IRRELEVANT = ("run_name", "output_root", "resume", "logging", "evaluation",
                       "rl.max_steps", "rl.max_time", "rl.save_strategy", "rl.save_interval",
                       "rl.save_steps", "rl.save_final")  # may change between resumes of one run


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
            problems.append(f"unknown key {section}.{key}; valid keys: {', '.join(names)}")
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
    from pods.backends import BACKENDS
    from pods.downsample import RULES

    p: list[str] = _unknown_keys("", cfg, TrainConfig)
    p = [s.replace("key .", "key ") for s in p]
    if p:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(p))
    rl, optim, model, data = cfg.rl, cfg.optim, cfg.model, cfg.dataset

    def positive(name, value, allow_none=False):
        if value is None and allow_none:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            p.append(f"{name} must be a positive number, got {value!r}")

    for name in ("n", "m", "prompts_per_step", "micro_batch_size", "max_prompt_tokens",
                 "max_completion_tokens", "save_steps"):
        positive(f"rl.{name}", rl[name])
    for name in ("save_interval", "epsilon"):
        positive(f"rl.{name}", rl[name])
    positive("rl.max_steps", rl.max_steps, allow_none=True)
    positive("rl.max_time", rl.max_time, allow_none=True)
    positive("optim.lr", optim.lr)
    if rl.temperature is None or rl.temperature < 0:
        p.append(f"rl.temperature must be >= 0 (0 = greedy), got {rl.temperature!r}")
    if rl.beta is None or rl.beta < 0:
        p.append(f"rl.beta must be >= 0, got {rl.beta!r}")
    if rl.max_steps is None and rl.max_time is None:
        p.append("the run never stops: set rl.max_steps or rl.max_time")
    if rl.rule not in RULES:
        p.append(f"unknown rl.rule {rl.rule!r}; valid rules: {', '.join(RULES)}")
    if rl.algorithm not in ALGORITHMS:
        p.append(f"unknown rl.algorithm {rl.algorithm!r}; valid: {', '.join(ALGORITHMS)}")
    if rl.save_strategy not in SAVE_STRATEGIES:
        p.append(f"unknown rl.save_strategy {rl.save_strategy!r}; valid: {', '.join(SAVE_STRATEGIES)}")
    if rl.aggregation not in ("sequence", "token"):
        p.append(f"unknown rl.aggregation {rl.aggregation!r}; valid: sequence, token")
    if optim.name not in OPTIMIZERS:
        p.append(f"unknown optim.name {optim.name!r}; valid: {', '.join(OPTIMIZERS)}")
    if optim.scheduler not in SCHEDULERS:
        p.append(f"unknown optim.scheduler {optim.scheduler!r}; valid: {', '.join(SCHEDULERS)}")
    n, m = rl.n, rl.m
    if isinstance(n, int) and isinstance(m, int):
        if m > n:
            p.append(f"rl.m={m} > rl.n={n}: cannot keep more rollouts than are generated; set rl.m <= rl.n")
        if m < 2:
            p.append(f"rl.m={m}: group advantages need at least 2 kept rollouts per prompt; set rl.m >= 2")
        alg = rl.algorithm
        if rl.rule == "none" and m != n and alg != "grpo_ga":
            p.append(f"rl.rule=none keeps all rollouts, so rl.m must equal rl.n (got n={n}, m={m}); "
                     "use rl.m=rl.n or a down-sampling rule such as rl.rule=max_variance")
        if alg == "grpo" and m != n:
            p.append(f"rl.algorithm=grpo needs rl.m == rl.n (got n={n}, m={m}); use rl.algorithm=auto for PODS")
        if alg == "pods" and m >= n:
            p.append(f"rl.algorithm=pods needs rl.m < rl.n (got n={n}, m={m})")
        if alg == "grpo_ga" and n % m:
            p.append(f"rl.algorithm=grpo_ga splits the n={n} rollouts into optimizer steps of m={m}: "
                     "rl.n must be a multiple of rl.m")
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
    if model.dtype not in ("auto", *DTYPES):
        p.append(f"unknown model.dtype {model.dtype!r}; valid: auto, {', '.join(DTYPES)}")
    p += _check_dataset(data)
    if model.name == "tiny" and model.tiny.arch not in ("qwen2", "llama"):
        p.append(f"unknown model.tiny.arch {model.tiny.arch!r}; valid: qwen2, llama")
    if p:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(p))


def _check_dataset(data) -> list[str]:
    """Dataset name and prompt style must be known to pods.data."""
    from pods import data as registry

    problems = []
    if data.name not in registry.DATASETS:
        problems.append(f"unknown dataset.name {data.name!r}; valid: {', '.join(sorted(registry.DATASETS))}")
    if data.prompt_style not in registry.STYLES:
        problems.append(f"unknown dataset.prompt_style {data.prompt_style!r}; valid: {', '.join(registry.STYLES)}")
    return problems


def _check_rewards(data) -> list[str]:
    """Reward names must exist in the rewards registry (skipped if rewards/ is not importable)."""
    try:
        import rewards as registry
    except ImportError:
        return []
    problems, names = [], []
    for item in data.rewards:
        if not isinstance(item, (dict, DictConfig)) or "name" not in item:
            problems.append(f"dataset.rewards entries must be {{name, weight}}, got {item!r}")
            continue
        names.append(item["name"])
        try:
            registry.get(item["name"])
        except (ValueError, KeyError) as err:
            problems.append(f"dataset.rewards: {err}")
    if data.accuracy_reward is not None and data.accuracy_reward not in names:
        problems.append(f"dataset.accuracy_reward {data.accuracy_reward!r} is not one of dataset.rewards {names}")
    return problems


def differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two plain config dicts (ignoring RUN_NAME_IRRELEVANT)."""
    out = []
    for key in sorted(set(old) | set(new)):
        dotted = f"{prefix}{key}"
        if dotted in RUN_NAME_IRRELEVANT:
            continue
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, dotted + ".")
        elif a != b:
            out.append(f"{dotted}: {a!r} -> {b!r}")
    return out


def check_run_dir(cfg, path: Path) -> None:
    """Raise ConfigError if `path` already holds a different run's config."""
    saved = path / "config.yaml"
    if not saved.exists():
        return
    old = OmegaConf.to_container(OmegaConf.load(saved), resolve=True)
    diff = differences(old, to_container(cfg))
    if diff:
        raise ConfigError(
            f"{path} already holds a different run (changed: {'; '.join(diff[:8])}). "
            f"Choose another run_name=NAME, or delete {path} to start over."
        )
