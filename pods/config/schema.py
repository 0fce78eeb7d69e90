"""The training config's schema: one dataclass per section, documenting every key beside its field.

    from pods.config.schema import TrainConfig, RLConfig     # also re-exported by pods.config
    cfg = OmegaConf.structured(TrainConfig)                  # the defaults (config/train.yaml mirrors them)

Every key here has a comment; config/train.yaml and its groups repeat it above each YAML key.
The start-up checks that use these names live in pods.config (validate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pods.core.schedule import SCHEDULERS  # noqa: F401  (optim.scheduler names)

ALGORITHMS = ("auto", "pods", "grpo", "grpo_ga")
SAVE_STRATEGIES = ("time", "steps", "no")
OPTIMIZERS = ("adamw", "adamw_8bit")
GPU_ONLY_BACKENDS = ("unsloth", "vllm")  # vllm is allowed on CPU only when a (CPU) vllm is importable
DTYPES = ("float32", "bfloat16", "float16")


@dataclass
class LoraConfig:
    rank: int = 64  # LoRA rank r; 0 trains all parameters (full fine-tuning)
    alpha: int = 64  # LoRA scaling numerator (scale = alpha / rank)
    dropout: float = 0.0  # dropout on the LoRA branch
    target_modules: list = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj",
                                                          "gate_proj", "up_proj", "down_proj"])


@dataclass
class TinyConfig:
    arch: str = "qwen2"  # qwen2 | llama (pods.backends.tiny.ARCHITECTURES)
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
    dtype: str = "bfloat16"  # GPU autocast dtype: auto | float32 | bfloat16 | float16; CPU: float32 (backends.precision)
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
    shuffle_seed: Any = None  # shuffle the kept training prompts with this seed (the paper's MATH: 42); null: file order


@dataclass
class RLConfig:
    n: int = 64  # rollouts generated per prompt
    m: int = 16  # rollouts kept per prompt for the update
    rule: str = "max_variance"  # down-sampling rule (pods.core.downsample.RULES)
    algorithm: str = "auto"  # auto: pods if m < n else grpo; grpo_ga (m = n): the paper's GRPO-GA baseline
    prompts_per_step: int = 1  # B: prompts (groups) per training step
    micro_batch_size: int = 4  # completions per forward/backward pass (gradient accumulation)
    beta: float = 0.0  # KL coefficient; > 0 computes reference log-probs (adapter disabled)
    aggregation: str = "sequence"  # loss aggregation: sequence | token
    scale_rewards: str = "group"  # advantage scale (TRL's scale_rewards): group | batch | none (r - group mean)
    advantage_std: str = "sample"  # std of that scale: sample (n - 1, torch/TRL/the authors) | population (n)
    temperature: float = 0.9  # sampling temperature of the rollouts
    logprob_temperature: bool = True  # loss log-probs from logits / temperature (TRL, verl); false: the authors' 1-GPU
    top_p: float = 1.0
    max_prompt_tokens: int = 512  # longer prompts are dropped from the dataset
    max_completion_tokens: int = 512
    max_steps: Any = None  # stop after this many training steps (null: no limit)
    max_time: Any = 21600  # stop after this many seconds of training time (null: no limit)
    save_strategy: str = "time"  # time | steps | no (no periodic checkpoints; save_final still applies)
    save_interval: float = 1800  # seconds of training time between checkpoints (strategy time)
    save_steps: int = 100  # steps between checkpoints (strategy steps)
    save_final: bool = True  # also checkpoint the last step
    max_nonfinite_steps: int = 3  # stop after this many consecutive steps skipped for a NaN/inf loss or grad norm
    dynamic_sampling: bool = False  # drop groups whose n rewards are all equal and draw more prompts (pods.core.collect)
    max_generation_rounds: int = 4  # dynamic sampling: at most this many rounds of B prompts per step


@dataclass
class OptimConfig:
    name: str = "adamw_8bit"  # adamw | adamw_8bit (8-bit needs CUDA + bitsandbytes, else adamw)
    lr: float = 5e-6
    betas: list = field(default_factory=lambda: [0.9, 0.99])
    weight_decay: float = 0.1
    warmup_ratio: float = 0.0  # warm-up: this fraction of rl.max_steps, or of rl.max_time when max_steps is null
    scheduler: str = "constant"  # constant (no warm-up) | constant_with_warmup | linear | cosine (pods.core.schedule)
    max_grad_norm: float = 0.1  # gradient clipping (<= 0: off)


@dataclass
class LoggingConfig:
    wandb: bool = False  # also log to Weights & Biases (offline mode when no API key)
    project: str = "pods"
    entity: Any = None
    progress: bool = True  # tqdm progress bar
    samples_every: int = 10  # append prompts with all n completions to samples.jsonl every N steps (0: never)
    samples_prompts: int = 2  # prompts (groups) per logged step
    print_samples: bool = False  # also print the best and worst kept completion of each logged step


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
    warmstart: Any = None  # open section for pods.run.warmstart (null: no warm start)
    evaluation: Any = None  # open section for pods.evaluation (null: unused)
