"""The schema of train.py's and evaluate-run.py's configs: one dataclass per section, a comment per key.

    from pods.config.schema import TrainConfig, EvalConfig
    cfg = OmegaConf.structured(TrainConfig)      # the defaults (config/train.yaml mirrors them)

Contract: every key is declared here once, with its type and a comment; config/*.yaml repeat the
comment above each key. A choice's valid names live where it is implemented (`pods.config.checks.CHOICES`
reads them there); its checks are that section's function in pods.config.checks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SAVE_STRATEGIES = ("time", "steps", "no")  # rl.save_strategy (pods.run.checkpoint.SaveSchedule)
OPTIMIZERS = ("adamw", "adamw_8bit")  # optim.name (pods.run.optim.build_optimizer)


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
class ArchitectureConfig:
    """The checkpoint's numbers from its config.json, for the memory estimate (pods.backends.memory.architecture);
    null: read config.json (the tiny model's numbers follow from model.tiny)."""

    layers: Any = None  # num_hidden_layers
    hidden: Any = None  # hidden_size
    intermediate: Any = None  # intermediate_size
    heads: Any = None  # num_attention_heads
    kv_heads: Any = None  # num_key_value_heads
    vocab: Any = None  # vocab_size
    tied_embeddings: Any = None  # tie_word_embeddings: lm_head shares the embedding
    attention_bias: Any = None  # q, k, v projections have biases (Qwen2)
    params: Any = None  # the checkpoint's parameter count: the numbers above must add up to it


@dataclass
class ModelConfig:
    name: str = "Qwen/Qwen2.5-3B-Instruct"  # hub name, local model dir, or "tiny" (built in code)
    short_name: str = "qwen2.5-3b-instruct"  # used in the derived run name
    load_in_4bit: bool = True  # 4-bit base weights (bitsandbytes); applied only on a CUDA GPU
    dtype: str = "bfloat16"  # GPU autocast dtype: auto | float32 | bfloat16 | float16; CPU: float32 (backends.precision)
    gradient_checkpointing: bool = True  # recompute activations in backward (GPU memory saver)
    lora: LoraConfig = field(default_factory=LoraConfig)
    tiny: TinyConfig = field(default_factory=TinyConfig)  # used only when name == "tiny"
    architecture: ArchitectureConfig = field(default_factory=ArchitectureConfig)  # for the memory estimate


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
    labels: str = "full"  # MATH answer labels: full (the whole last boxed answer) | paper (the authors' cut at its first })


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
    dynamic_sampling: bool = False  # drop groups whose kept rollouts are all right or all wrong; draw more (collect)
    dynamic_sampling_metric: str = "accuracy"  # what must differ among the kept rollouts: accuracy (DAPO) | total
    max_generation_rounds: int = 30  # dynamic sampling: at most this many rounds of B prompts per step (<= 32; verl's DAPO: 30)
    short_batch: str = "partial"  # rounds ran out short: partial (train the groups found) | top_up (flat ones) | error


@dataclass
class OptimConfig:
    name: str = "adamw_8bit"  # adamw | adamw_8bit (8-bit needs CUDA + bitsandbytes, else adamw)
    lr: float = 5e-6
    betas: list = field(default_factory=lambda: [0.9, 0.99])
    weight_decay: float = 0.1  # AdamW decay of the weights; biases and norms get none (as HF's Trainer)
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
    check_memory: bool = True  # on a GPU, refuse to start when the memory estimate exceeds its free memory
    model: ModelConfig = field(default_factory=ModelConfig)
    backend: dict = field(default_factory=lambda: {"name": "hf"})
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    rl: RLConfig = field(default_factory=RLConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    warmstart: Any = None  # supervised warm start before RL (WarmStartSettings + cache_dir; null: none)
    evaluation: Any = None  # held-out accuracy printed after training (HeldoutConfig; null: none)


# ----------------------------------------------------------------------------- open sections of train.py


@dataclass
class WarmStartSettings:
    """Everything that determines the warm-started model (all of it goes into the cache hash)."""

    dataset: str = "arithmetic"  # pods.data task to learn (its train split); also the verifier's name
    options: dict = field(default_factory=dict)  # keyword arguments for pods.data.load_dataset
    prompt_style: str = "plain"  # how prompts are rendered (pods.data.render_prompts style)
    arch: str = "qwen2"  # tiny architecture (pods.backends.tiny.ARCHITECTURES)
    hidden: int = 64  # hidden size of the tiny model
    layers: int = 2  # transformer layers
    heads: int = 4  # attention heads
    kv_heads: int = 2  # key/value heads
    model_seed: int = 0  # seed of the random initialisation
    seed: int = 0  # seed of the batch order
    batch_size: int = 64  # problems per supervised step
    lr: float = 1e-3  # AdamW learning rate (constant)
    max_steps: int = 3000  # give up (error) if the target is not reached by then
    eval_every: int = 10  # steps between held-out evaluations (accuracy rises steeply: check often)
    eval_size: int = 256  # held-out problems per evaluation (the first of the test split)
    target_greedy: float = 0.1  # stop at the first evaluation with greedy accuracy >= this
    max_new_tokens: int = 8  # tokens generated when evaluating

    def key(self) -> str:
        blob = json.dumps(dataclasses.asdict(self), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


def settings_from(cfg) -> tuple[WarmStartSettings, Path]:
    """(settings, cache_dir) from a mapping/DictConfig with WarmStartSettings keys plus `cache_dir`."""
    raw = dict(cfg) if cfg is not None else {}
    cache_dir = Path(raw.pop("cache_dir", "checkpoints/.warmstart"))
    raw.pop("enabled", None)
    valid = {f.name for f in dataclasses.fields(WarmStartSettings)}
    unknown = sorted(set(raw) - valid)
    if unknown:
        raise ValueError(f"warmstart: unknown key(s) {unknown}; valid keys: {', '.join(sorted(valid))}, cache_dir")
    raw["options"] = dict(raw.get("options") or {})
    return WarmStartSettings(**raw), cache_dir


@dataclass
class HeldoutConfig:
    """The `evaluation` section: held-out accuracy of the final checkpoint (pods.evaluation.heldout)."""

    size: int = 2000  # held-out problems: the first `size` of the run's test split
    draws: int = 4  # sampled pass@1 = mean accuracy over this many samples per problem
    temperature: float = 1.0  # sampling temperature of the draws
    greedy: bool = True  # also report greedy accuracy
    max_tokens: Any = None  # tokens per answer (null: rl.max_completion_tokens)
    seed: int = 1234  # draw r samples with seed + 1000 r, the same for every run
    batch_size: int = 1024  # prompts per generate call


# ----------------------------------------------------------------------------- evaluate-run.py


@dataclass
class EvalConfig:
    """config/evaluate.yaml: evaluate every checkpoint of a run (pods.evaluation.evaluate_run)."""

    run_dir: Any = None  # the run directory written by train.py (required)
    repeats: int = 1  # samples per problem and checkpoint (repeat r uses seed + 1000 r)
    temperature: Any = None  # sampling temperature (0: greedy; null: the run's rl.temperature)
    top_p: Any = None  # nucleus mass (null: the run's rl.top_p)
    max_tokens: Any = None  # tokens per answer (null: the run's rl.max_completion_tokens)
    seed: int = 1234  # sampling seed of repeat 0
    batch_size: int = 256  # prompts per generate call
    base: bool = True  # also evaluate the base model (key `base`)
    examples: int = 3  # completions kept per checkpoint and dataset under `examples`
    paper_grader: Any = "paper_answer"  # the authors' grader for paper_* metrics (pods.rewards.paper; null: none)
    weights: str = "adapter"  # adapter (the trained policy exactly) | merged_4bit (the authors': LoRA merged, then NF4)
    max_prompt_tokens: Any = None  # longer prompts are left out (null: the run's rl.max_prompt_tokens)
    output: Any = None  # results file (null: <run_dir>/eval_results.json)
    backend: Any = None  # backend keys merged over the run's (e.g. {name: vllm}); null: the run's
    datasets: Any = None  # [{name, split, limit, ...}] (pods.evaluation.eval_datasets); null: the run's test split
