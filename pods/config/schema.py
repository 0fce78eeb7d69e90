"""The schema of train.py's and evaluate-run.py's configs: one dataclass per section, every key declared once.

    from pods.config.schema import TrainConfig, EvalConfig
    from pods.config.fields import declared, walk
    walk(cfg, TrainConfig)              # every problem of a composed config/train.yaml, at once

Contract: a key is its typed field here with its help, bounds, choices, resume-safety and TRL name in the
metadata (pods.settings.setting); config/train.yaml and config/evaluate.yaml repeat its help as the comment
above it (tests/pods/config/test_fields.py keeps them equal). A choice's names live where it is implemented ("module:NAME"); the `backend`
section's keys are the chosen backend's settings (pods.backends.settings); rules that relate several keys
are pods.config.checks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pods.config.fields import SEED_MAX, walk
from pods.io import user_cache
from pods.settings import setting

SAVE_STRATEGIES = ("time", "steps", "no")  # rl.save_strategy (pods.run.checkpoint.SaveSchedule)
OPTIMIZERS = ("adamw", "adamw_8bit")  # optim.name (pods.run.optim.build_optimizer)
_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
_ARCH = "from the model's config.json"


@dataclass
class LoraConfig:
    rank: int = setting(64, "LoRA rank r; 0 trains all parameters (full fine-tuning)", low=0, why="0 = full-parameter")
    alpha: int = setting(64, "LoRA scaling numerator (scale = alpha / rank)")
    dropout: float = setting(0.0, "dropout on the LoRA branch", low=0, high=1, high_open=True)
    target_modules: list[str] = setting(help="modules that get a LoRA adapter", factory=lambda: list(_LORA_TARGETS))


@dataclass
class TinyConfig:
    arch: str = setting("qwen2", "architecture of the random tiny model", choices="pods.backends.tiny:ARCHITECTURES")
    hidden: int = setting(64, "hidden size", low=1)
    layers: int = setting(2, "transformer layers", low=1)
    heads: int = setting(4, "attention heads", low=1)
    kv_heads: int = setting(2, "key/value heads", low=1)
    seed: int = setting(0, "initialisation seed of the random weights", low=0, high=SEED_MAX)


@dataclass
class ArchitectureConfig:
    """The checkpoint's numbers from its config.json, for the memory estimate (pods.backends.memory.architecture);
    null: read config.json (the tiny model's numbers follow from model.tiny)."""

    layers: int | None = setting(None, "num_hidden_layers", low=1, why=_ARCH)
    hidden: int | None = setting(None, "hidden_size", low=1, why=_ARCH)
    intermediate: int | None = setting(None, "intermediate_size", low=1, why=_ARCH)
    heads: int | None = setting(None, "num_attention_heads", low=1, why=_ARCH)
    kv_heads: int | None = setting(None, "num_key_value_heads", low=1, why=_ARCH)
    vocab: int | None = setting(None, "vocab_size", low=1, why=_ARCH)
    tied_embeddings: bool | None = setting(None, "tie_word_embeddings: lm_head shares the embedding")
    attention_bias: bool | None = setting(None, "q, k, v projections have biases (Qwen2)")
    params: int | None = setting(None, "the checkpoint's parameter count: the numbers above must add up to it",
                                 low=1, why=_ARCH)


@dataclass
class ModelConfig:
    name: str = setting("Qwen/Qwen2.5-3B-Instruct", 'hub name, local model dir, or "tiny" (built in code)')
    short_name: str = setting("qwen2.5-3b-instruct", "used in the derived run name")
    load_in_4bit: bool = setting(True, "4-bit base weights (bitsandbytes); applied only on a CUDA GPU")
    dtype: str = setting("bfloat16", "GPU autocast dtype; CPU: model.cpu_dtype (pods.backends.precision)",
                         choices=("auto", "pods.backends.precision:DTYPES"))
    cpu_dtype: str = setting("float32", "CPU compute dtype: bfloat16 where the CPU has AMX / avx512_bf16 "
                             "(pods.backends.precision)", choices="pods.backends.precision:CPU_DTYPES")
    gradient_checkpointing: bool = setting(True, "recompute activations in backward (GPU memory saver)")
    lora: LoraConfig = setting(help="the LoRA adapter", factory=LoraConfig)
    tiny: TinyConfig = setting(help='used only when name == "tiny"', factory=TinyConfig)
    architecture: ArchitectureConfig = setting(help="for the memory estimate", factory=ArchitectureConfig,
                                               resume_safe=True)


@dataclass
class DatasetConfig:
    name: str = setting("gsm8k", "pods.data dataset (gsm8k, math, arithmetic, jsonl, ...) or package.module:function")
    split: str = setting("train", "the split trained on")
    path: str | None = setting(None, "local file/dir instead of the hub (required by some loaders)")
    limit: int | None = setting(None, "keep only the first `limit` examples (null: all)", low=1,
                                why="null keeps every example")
    options: dict = setting(help="extra keyword arguments for pods.data.load_dataset", factory=dict)
    prompt_style: str = setting("instruct", "pods.data.render_prompts style", choices="pods.data:STYLES")
    system_prompt: str | None = setting(None, "null: the style's default", empty_ok=True)
    shots: list = setting(help="worked examples shown before each question (instruct: earlier user / assistant turns): "
                               "[{question, completion}]", factory=list)
    rewards: list = setting(help="[{name, weight, unless}] for rewards.combined", factory=list)
    accuracy_reward: str | None = setting(None, "reward whose value > 0 counts as correct (null: the first one)",
                                          trl="pods_accuracy_reward")
    shuffle_seed: int | None = setting(None, "shuffle the kept training prompts with this seed (the paper's MATH: 42); "
                                             "null: file order", low=0)
    labels: str = setting("full", "MATH answer labels: full (the whole last boxed answer) | paper (the authors' cut "
                                  "at its first })", choices="pods.data.math_labels:LABELS")


@dataclass
class RLConfig:
    n: int = setting(64, "rollouts generated per prompt", low=1, trl="num_generations")
    m: int = setting(16, "rollouts kept per prompt for the policy update (m < n: PODS, m = n: GRPO)", low=1,
                     trl="pods_m")
    rule: str = setting("max_variance", "down-sampling rule", choices="pods.core.downsample:RULES", trl="pods_rule")
    rule_scope: str = setting("group", "what the rollout rule ranks together: group (m of each prompt's n) | batch (B x "
                                       "m of the whole step's B x n, groups keeping unequal numbers: CPPO's batch-level "
                                       "pruning, rule cppo only; docs/rules.md)",
                              choices="pods.core.downsample:SCOPES", trl="pods_rule_scope")
    algorithm: str = setting("auto", "auto (pods if m < n else grpo) | pods | grpo | grpo_ga (the paper's GRPO-GA: m "
                                     "= n, all rollouts in one optimizer step, gradients accumulated over "
                                     "micro-batches; computes what grpo does, docs/algorithms.md)",
                             choices=("auto", "pods.core.algorithms:ALGORITHMS"))
    prompts_per_step: int = setting(1, "B: prompts (groups) per training step", low=1)
    micro_batch_size: int = setting(4, "completions per forward/backward pass; gradients accumulate over "
                                       "micro-batches", low=1)
    beta: float = setting(0.0, "KL coefficient (k3 estimator) against the reference model (adapter disabled); 0 skips"
                               " the reference log-probs", low=0, trl="beta")
    reference_pass: str = setting("auto", "the reference forward pass (adapter disabled, no gradient) over the kept "
                                          "completions: auto (only when beta > 0 needs it) | always (at beta = 0 too,"
                                          " as the authors' trainer every step: the loss and gradient are unchanged, "
                                          "the KL is logged, the step takes their time; the paper presets set it)",
                                  choices="pods.core.reference:REFERENCE_PASSES")
    aggregation: str = setting("sequence", "loss aggregation: sequence (mean per completion, then over completions: "
                                           "the authors') | token. Every batch is trained on once, so the importance "
                                           "ratio is 1", choices="pods.core.losses:AGGREGATIONS",
                               trl="loss_type", trl_values={"grpo": "sequence", "dapo": "token"},
                               trl_refused="train.py aggregates the loss per sequence or per token (grpo -> sequence "
                                           "(the paper's), dapo -> token); TRL's other loss types run with "
                                           "scripts/train_trl.py")
    scale_rewards: str = setting("group", "advantage = (r - mean of the prompt's kept rewards) / (std + 1e-4); "
                                          "scale_rewards picks the std (TRL's name and meaning): group (each prompt's"
                                          " own; the paper's) | batch (all G x m rewards of the step) | none (no "
                                          "division: r - group mean, Dr. GRPO)",
                                 choices="pods.core.advantages:SCALES", trl="scale_rewards",
                                 trl_values={"group": "group", "batch": "batch", "none": "none", "true": "group",
                                             "false": "none"})
    advantage_std: str = setting("sample", "std estimator: sample (unbiased, n - 1: torch.std as the authors, TRL and"
                                           " verl) | population (n)",
                                 choices="pods.core.advantages:STDS")
    advantage_over: str = setting("kept", "the rollouts whose mean (and std) the advantages use: kept (the m trained: "
                                          "the paper's) | drawn (every rollout drawn for the prompt: Reinforce-Ada's "
                                          "global statistics, CPPO's advantages before pruning; docs/rules.md)",
                                  choices="pods.core.advantages:OVER", trl="pods_advantage_over")
    temperature: float = setting(0.9, "sampling temperature of the rollouts", trl="temperature")
    logprob_temperature: bool = setting(True, "true: the loss's log-probs (current and reference) come from logits / "
                                              "rl.temperature, the distribution the rollouts were sampled from (TRL, "
                                              "verl and the authors' 8-GPU fork); false: from the raw logits, as the "
                                              "authors' single-GPU trainer, which the single-GPU paper presets "
                                              "(config/experiment/) set. Same objective only at temperature 1 "
                                              "(docs/algorithms.md)")
    top_p: float = setting(1.0, "nucleus sampling mass; top-k is never used (nor by the authors)", low=0,
                           low_open=True, high=1, trl="top_p", why="1 samples from the whole distribution")
    max_prompt_tokens: int = setting(512, "prompts longer than this (in tokens, after the chat template) are "
                                          "dropped", low=1)
    max_completion_tokens: int = setting(512, "most tokens generated per completion", low=1,
                                         trl="max_completion_length")
    max_steps: int | None = setting(None, "stop after this many training steps (null: no step limit; with null, "
                                          "linear/cosine schedules and warm-up are sized by max_time instead)", low=1,
                                    resume_safe=True, trl="max_steps")
    max_time: float | None = setting(21600, "stop after this many seconds of training time (null: no time limit); the"
                                            " paper: 6 h", low=0,
                                     low_open=True, why="seconds of training time", resume_safe=True)
    save_strategy: str = setting("time", "when to checkpoint: time (every save_interval seconds of training time) | "
                                         "steps (every save_steps) | no (no periodic checkpoints; with "
                                         "save_final=false nothing is saved, docs/long-runs.md)",
                                 choices=SAVE_STRATEGIES, resume_safe=True)
    save_interval: float = setting(1800, "seconds of training time between checkpoints (save_strategy=time); the "
                                         "paper: 30 min", low=0,
                                   low_open=True, resume_safe=True)
    save_steps: int = setting(100, "training steps between checkpoints (save_strategy=steps)", low=1, resume_safe=True)
    save_final: bool = setting(True, "also checkpoint the last step of the run (false needs a save point within the "
                                     "run, or save_strategy=no)", resume_safe=True)
    token_budget: float | None = setting(None, "stop once the run's cost, tokens generated + token_budget_weight x "
                                               "tokens trained (the cost ledger), reaches this (null: no token "
                                               "budget; scripts/leaderboard.py gives every arm the same, "
                                               "docs/leaderboard.md)",
                                         low=0, low_open=True, resume_safe=True, trl="pods_token_budget")
    token_budget_weight: float = setting(1.0, "w of the cost: what one trained token costs in generated tokens "
                                         "(docs/leaderboard.md: measured per tier); used by rl.token_budget and "
                                         "rl.save_tokens", low=0, trl="pods_token_budget_weight")
    save_tokens: float | None = setting(None, "also checkpoint after the step whose cost passes each multiple of "
                                        "this (the leaderboard's budget points; null: off)", low=0, low_open=True,
                                        resume_safe=True)
    budget_cost: str = setting("tokens", "what token_budget and save_tokens count: tokens (generated + "
                                         "token_budget_weight x trained) | seconds (a step's modelled seconds on "
                                         "budget_profile, from the cost ledger; docs/leaderboard.md \"Time, not "
                                         "tokens\")", choices="pods.core.timing:BUDGET_COSTS")
    budget_profile: str | None = setting(None, "the machine profile of budget_cost=seconds: cpu | l40s-unsloth | "
                                               "h100-hf | a measured one (pods gpu-check --random-weights) | a "
                                               "profile file (pods.core.profiles)")
    max_nonfinite_steps: int = setting(3, "stop after this many consecutive steps whose loss or gradient norm is "
                                          "NaN/inf (each one is skipped: no optimizer step, `skipped: true` in "
                                          "metrics.jsonl)", low=1, why="1: stop at the first non-finite step",
                                   resume_safe=True)
    dynamic_sampling: bool = setting(False, "dynamic sampling (DAPO's, as verl's recipe/dapo filter_groups): drop "
                                            "prompt groups whose rollouts kept for the update are all right or all "
                                            "wrong (no learning signal) and draw more prompts until B informative "
                                            "groups are found (pods/core/collect.py, docs/workbench.md)",
                                     trl="pods_dynamic_sampling")
    dynamic_sampling_metric: str = setting("accuracy", "what must differ among a group's kept rollouts: accuracy (the"
                                                       " accuracy reward > 0: DAPO's `acc`) | total (the weighted "
                                                       "reward sum: verl's `seq_reward`, where format terms make "
                                                       "almost every group differ)",
                                           choices="pods.core.collect:FILTER_METRICS",
                                           trl="pods_dynamic_sampling_metric")
    max_generation_rounds: int = setting(30, "dynamic sampling: at most this many generation rounds of B prompts per "
                                             "step, 1..32 (a signal stops between); 30 = verl's DAPO recipe budget "
                                             "(max_num_gen_batches 10 of gen_batch_size 3 x B prompts), "
                                             "docs/workbench.md", low=1,
                                         high="pods.core.collect:MAX_ROUNDS",
                                         why="each round generates B x n more rollouts; the most rounds make one step "
                                             "cost that many steps' generation", trl="pods_max_generation_rounds")
    short_batch: str = setting("partial", "when the rounds run out before B informative groups: partial (this suite's"
                                          " choice, not DAPO's: train on the groups found, so every trained group "
                                          "carries signal and a long run never stops for a hard stretch of data; "
                                          "warned once, short_batch in metrics.jsonl) | top_up (fill up with flat "
                                          "groups: zero advantages, a smaller gradient) | error (stop: verl's DAPO "
                                          "recipe raises after max_num_gen_batches)",
                               choices="pods.core.collect:SHORT_BATCH", trl="pods_short_batch")
    prompt_rule: str = setting("none", "prompt rule (before generation): which prompts of the stream to generate for,"
                                       " from each prompt's history: none | band | greso | mopps | snr_top_p | "
                                       "snr_top_k (docs/rules.md)", trl="pods_prompt_rule")
    prompt_rule_options: dict | None = setting(None, "keyword arguments of rl.prompt_rule (e.g. {low: 0.2, "
                                               "high: 0.8} for band; null: its defaults)",
                                               trl="pods_prompt_rule_options")
    prompt_pool: int = setting(1, "a selector prompt rule (mopps) is offered this many candidates per prompt it "
                               "picks, at least 2 (the other rules walk the stream: 1; MoPPS's scripts: 16 for MATH, 8 "
                               "for Countdown and Geometry3K)", low=1, trl="pods_prompt_pool")
    allocation: str = setting("none", "allocation rule: each prompt's number of rollouts over generation rounds: none"
                                      " | speed | ada | ada_positive (docs/rules.md)", trl="pods_allocation")
    allocation_options: dict | None = setting(None, "keyword arguments of rl.allocation (e.g. {screen: 8} for "
                                              "speed; null: its defaults)", trl="pods_allocation_options")
    allocation_budget: int | None = setting(None, "most rollouts an allocation rule generates per step, at least "
                                            "its first round for B prompts (null: n per prompt, B x n per round "
                                            "of new prompts)", trl="pods_allocation_budget")
    token_mask: str = setting("none", "which completion tokens carry the policy gradient: none | entropy_top (TRL's "
                                      "top_entropy_quantile) | adv_entropy_top (D3S); docs/rules.md",
                              trl="pods_token_mask")
    token_mask_quantile: float = setting(0.2, "token mask: the share of tokens kept (TRL's top_entropy_quantile)",
                                         low=0, low_open=True, high=1, trl="pods_token_mask_quantile")
    m_schedule: str = setting("constant", "m as a function of the step: constant | linear | cosine | step, from rl.m "
                                          "to rl.m_end over rl.m_horizon steps (D3S relaxes down-sampling)",
                              trl="pods_m_schedule")
    m_end: int | None = setting(None, "m schedule: m at the end of the horizon (null: rl.n)", low=2, trl="pods_m_end")
    m_horizon: int | None = setting(None, "m schedule: steps from rl.m to rl.m_end (null: rl.max_steps)", low=1,
                                    trl="pods_m_horizon")


@dataclass
class OptimConfig:
    name: str = setting("adamw_8bit", "adamw | adamw_8bit (bitsandbytes, CUDA only; falls back to adamw elsewhere "
                                      "with a warning)",
                        choices=OPTIMIZERS)
    lr: float = setting(5e-6, "peak learning rate", low=0, low_open=True, trl="learning_rate")
    betas: list[float] = setting(help="Adam's beta1, beta2", factory=lambda: [0.9, 0.99])
    weight_decay: float = setting(0.1, "decoupled weight decay on the trainable weights; biases and norms are exempt,"
                                       " as HF's Trainer exempts them (a LoRA adapter has none; full-parameter runs "
                                       "do)",
                                  low=0, trl="weight_decay")
    warmup_ratio: float = setting(0.0, "warm-up: this fraction of rl.max_steps, or of the time budget rl.max_time "
                                       "when max_steps is null (the authors passed 0.01 with HF's `constant`, which "
                                       "ignores it: they had none, docs/algorithms.md)")
    scheduler: str = setting("constant", "constant (from step 1, no warm-up) | constant_with_warmup | linear | cosine"
                                         " (decay to 0 at rl.max_steps, or at rl.max_time when max_steps is null; "
                                         "pods/core/schedule.py)",
                             choices="pods.core.schedule:SCHEDULERS", trl="lr_scheduler_type",
                             trl_values={v: v for v in ("constant", "constant_with_warmup", "linear", "cosine")},
                             trl_refused="train.py's schedules are constant, constant_with_warmup, linear, cosine")
    max_grad_norm: float = setting(0.1, "clip the gradient norm to this (<= 0: no clipping)", trl="max_grad_norm")


@dataclass
class LoggingConfig:
    wandb: bool = setting(False, "also log to Weights & Biases (offline mode when no WANDB_API_KEY is set)")
    project: str = setting("pods", "wandb project")
    entity: str | None = setting(None, "wandb entity (null: your default)")
    progress: bool = setting(True, "tqdm progress bar with reward, accuracy and ETA")
    samples_every: int = setting(10, "every N steps append a few prompts with all n completions, their rewards and "
                                     "kept flags to samples.jsonl (and a wandb table); 0: never",
                                 low=0, why="0: no samples.jsonl")
    samples_prompts: int = setting(2, "prompts (groups) per logged step", low=1)
    print_samples: bool = setting(False, "also print the best and the worst kept completion of each logged step under"
                                         " the progress bar")
    ledger: bool = setting(True, "record every step's rewards, lengths, entropies and kept rollouts per prompt group "
                                 "in <run_dir>/ledger/ (Parquet; docs/ledger.md; scripts/replay.py replays other "
                                 "rules on it)", resume_safe=True, trl="pods_ledger")


@dataclass
class TrainConfig:
    """The whole run; mirrors config/train.yaml."""

    seed: int = setting(0, "seed of data order, sampling, selection and initialisation", low=0, high=SEED_MAX)
    run_name: str | None = setting(None, "run directory name under output_root (null: derived from the config, e.g. "
                                         "gsm8k-...-n64-m16-seed0)", resume_safe=True)
    output_root: str = setting("checkpoints", "parent directory of run directories", resume_safe=True)
    resume: bool = setting(True, "continue from the latest complete checkpoint in the run directory when there is "
                                 "one", resume_safe=True)
    check_memory: bool = setting(True, "on a GPU, refuse to start when the memory estimate exceeds its free memory "
                                       "(scripts/preflight.py, docs/gpu.md); false: print the estimate and start "
                                       "anyway",
                                 resume_safe=True)
    model: ModelConfig = setting(help="the model and its adapter", factory=ModelConfig)
    backend: dict = setting(help="who generates and trains (config/backend/): hf (transformers + PEFT, CPU or GPU), "
                            "vllm, unsloth", factory=lambda: {"name": "hf"}, choices="pods.backends:BACKENDS",
                            schema_of="pods.backends:settings")
    dataset: DatasetConfig = setting(help="training prompts and their rewards", factory=DatasetConfig)
    rl: RLConfig = setting(help="the RL algorithm: PODS knobs n, m, rule; loss; sampling; run length and "
                                "checkpoints", factory=RLConfig)
    optim: OptimConfig = setting(help="optimizer and learning-rate schedule", factory=OptimConfig)
    logging: LoggingConfig = setting(help="metrics.jsonl is always written; these add wandb, the progress bar, "
                                          "samples and the rollout ledger", factory=LoggingConfig, resume_safe=True)
    warmstart: dict | None = setting(None, "supervised warm start before RL (pods.run.warmstart: WarmStartSettings + "
                                           "cache_dir; set by experiment=demo; null: none)",
                                     what="a section of keys")
    evaluation: dict | None = setting(None, "held-out evaluation printed after training (pods/evaluation/heldout.py: "
                                            "HeldoutConfig; the demo sets it); null: none",
                                      what="a section of keys", resume_safe=True)


# ----------------------------------------------------------------------------- open sections of train.py


@dataclass
class WarmStartSettings:
    """Everything that determines the warm-started model (all of it goes into the cache hash)."""

    dataset: str = setting("arithmetic", "pods.data task to learn (its train split); also the verifier's name")
    options: dict = setting(help="keyword arguments for pods.data.load_dataset", factory=dict)
    prompt_style: str = setting("plain", "how prompts are rendered", choices="pods.data:STYLES")
    arch: str = setting("qwen2", "tiny architecture", choices="pods.backends.tiny:ARCHITECTURES")
    hidden: int = setting(64, "hidden size of the tiny model", low=1)
    layers: int = setting(2, "transformer layers", low=1)
    heads: int = setting(4, "attention heads", low=1)
    kv_heads: int = setting(2, "key/value heads", low=1)
    model_seed: int = setting(0, "seed of the random initialisation", low=0, high=SEED_MAX)
    seed: int = setting(0, "seed of the batch order", low=0, high=SEED_MAX)
    batch_size: int = setting(64, "problems per supervised step", low=1)
    lr: float = setting(1e-3, "AdamW learning rate (constant)", low=0, low_open=True)
    max_steps: int = setting(3000, "give up (error) if the target is not reached by then", low=1)
    eval_every: int = setting(10, "steps between held-out evaluations (accuracy rises steeply: check often)", low=1)
    eval_size: int = setting(256, "held-out problems per evaluation (the first of the test split)", low=1)
    target_greedy: float = setting(0.1, "stop at the first evaluation with greedy accuracy >= this", low=0,
                                   low_open=True, high=1)
    max_new_tokens: int = setting(8, "tokens generated when evaluating", low=1)

    def key(self) -> str:
        blob = json.dumps(dataclasses.asdict(self), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


def settings_from(cfg) -> tuple[WarmStartSettings, Path]:
    """(settings, cache_dir) from a mapping/DictConfig with WarmStartSettings keys plus `cache_dir` (absent or null:
    pods.io.user_cache("warmstart"), one warm start per machine; a relative path is relative to the working
    directory)."""
    raw = dict(cfg) if cfg is not None else {}
    cache_dir = raw.pop("cache_dir", None)
    cache_dir = Path(cache_dir) if cache_dir is not None else user_cache("warmstart")
    raw.pop("enabled", None)
    problems = walk(raw, WarmStartSettings, "warmstart.", partial=True)
    if problems:
        raise ValueError("; ".join(problems))
    raw["options"] = dict(raw.get("options") or {})
    return WarmStartSettings(**raw), cache_dir


@dataclass
class HeldoutConfig:
    """The `evaluation` section: held-out accuracy of the final checkpoint (pods.evaluation.heldout)."""

    size: int = setting(2000, "held-out problems: the first `size` of the run's test split", low=1)
    draws: int = setting(4, "sampled pass@1 = mean accuracy over this many samples per problem", low=1)
    temperature: float = setting(1.0, "sampling temperature of the draws", low=0)
    greedy: bool = setting(True, "also report greedy accuracy")
    max_tokens: int | None = setting(None, "tokens per answer (null: rl.max_completion_tokens)", low=1,
                                     why="null: rl.max_completion_tokens")
    seed: int = setting(1234, "draw r samples with seed + 1000 r, the same for every run", low=0, high=SEED_MAX)
    batch_size: int = setting(1024, "prompts per generate call", low=1)
    format_reward: str | None = setting(None, "also report the format rate: the share of completions this reward "
                                              "scores > 0 (paper_format: the authors' strict <think>/<answer> "
                                              "format); null: accuracy only", choices="pods.rewards:REGISTRY")


# ----------------------------------------------------------------------------- evaluate-run.py


@dataclass
class EvalConfig:
    """config/evaluate.yaml: evaluate every checkpoint of a run (pods.evaluation.evaluate_run)."""

    run_dir: str | None = setting(None, "the run directory written by train.py (holds config.yaml and "
                                        "checkpoint-<step>/)")
    repeats: int = setting(1, "evaluation repeats per (checkpoint, dataset); the paper: 5 (protocol=paper)", low=1)
    temperature: float | None = setting(None, "sampling temperature (0 = greedy); null: the run's rl.temperature; the"
                                              " paper: 0.9",
                                        low=0, why="0 is greedy decoding, null the run's own")
    top_p: float | None = setting(None, "nucleus sampling mass; null: the run's rl.top_p", low=0, low_open=True, high=1)
    max_tokens: int | None = setting(None, "most new tokens per completion; null: the run's rl.max_completion_tokens;"
                                           " the paper: 512", low=1)
    seed: int = setting(1234, "seed of repeat r is seed + 1000 * r, identical for every checkpoint and run", low=0,
                        high=SEED_MAX)
    batch_size: int = setting(256, "prompts per generate call", low=1)
    base: bool = setting(True, "also evaluate the untrained base model (the t = 0 point, key \"base\")")
    examples: int = setting(3, "example completions kept per (checkpoint, dataset), from the first repeat", low=0)
    paper_grader: str | None = setting("paper_answer", "the paper-compatible grader for paper_ans_acc / paper_for_acc"
                                                       " / paper_both_acc (pods.rewards.authors.paper): paper_answer "
                                                       "(last number \\d+: the Qwen runs and the paper's main figures)"
                                                       " | paper_answer_decimal (last number [\\d.,]+: compare with "
                                                       "the paper's Llama runs) | null (no paper-compatible metrics)",
                                       choices="pods.rewards.authors.paper:NUMBER_PATTERNS")
    weights: str = setting("adapter", "the weights evaluated: adapter (each checkpoint loaded into the run's policy: "
                                      "the trained policy exactly; a 4-bit LoRA run is NF4(W) + dW) | merged_4bit "
                                      "(the authors' protocol, protocol=paper: each LoRA merged into the 16-bit base,"
                                      " the merged model reloaded in 4-bit NF4 with bitsandbytes: NF4(W + dW)); "
                                      "docs/evaluation.md", choices="pods.backends.merged:WEIGHTS",
                           why="adapter: the trained policy exactly; merged_4bit: the authors' protocol, the LoRA "
                               "merged into the 16-bit base and reloaded in 4-bit")
    max_prompt_tokens: int | None = setting(None, "test prompts longer than this many tokens are left out (the "
                                                  "paper's evaluation: 512); null: the run's rl.max_prompt_tokens",
                                            low=1, why="null: the run's own")
    output: str | None = setting(None, "results file (null: <run_dir>/eval_results.json)", what="a file path")
    backend: dict | None = setting(None, "backend overrides, e.g. {name: vllm} to evaluate an hf-trained run with "
                                         "vLLM (null: the run's backend)",
                                   what="a mapping such as {name: vllm}")
    datasets: list | None = setting(None, "datasets to evaluate (null: the run's own dataset, test split, no format "
                                          "check). Each entry: {name, split, path, limit, options, prompt_style, "
                                          "system_prompt, reward, format_reward, key, max_prompt_tokens}; unset keys "
                                          "default to the run's dataset settings, split test, reward = the dataset's "
                                          "verifier (the run's accuracy_reward for its own dataset), format_reward "
                                          "\"format\" (rewards: strict <think>/<answer> check). The paper (its "
                                          "config/test.yaml): [{name: amc23}, {name: gsm8k}, {name: math500}]",
                                    what="a list of {name: ...} entries")
