"""The start-up step of a training run: every check and every load, once, before the first step.

    with prepare(cfg) as ready:        # cfg is not changed; the run directory is locked inside the block
        ready.policy, ready.generator, ready.prompts, ready.resumed   # what the loop starts from

In order: the settings (pods.config.checks.validate: no user code runs) -> your plug-ins, each run once (the
dataset function reads its split: those examples are the training data; each reward is probed) -> the data
files -> the warm start (returns the model to load) -> offline cache and memory estimate -> lock the run
directory -> same run?, stale files, a resumable checkpoint? -> model, prompts -> config.yaml -> optimizer and
checkpoint restored. ConfigError / DataError say what to fix; nothing is written before the lock.
"""

from __future__ import annotations

import copy
import random
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from pods import backends, data, plugins, rewards
from pods.backends.checks import check_memory, check_offline, load_error
from pods.cli import doing
from pods.config import algorithm
from pods.config import run_dir as get_run_dir
from pods.config.checks import validate
from pods.core.ledger_writer import check_resume
from pods.errors import ConfigError
from pods.io import atomic_write_text
from pods.run import budget
from pods.run import checkpoint as ckpt
from pods.run.optim import build_optimizer
from pods.run.rundir import ASKED, check_run_dir, lock_run_dir
from pods.run.warmstart import ensure_warmstart


@dataclass
class Ready:
    """What the loop starts from: the run's config, its directory, the model, the data, the optimizer, the
    checkpoint restored (`resumed`: its path and state.json, or None at step 0)."""

    cfg: DictConfig  # the run's config as config.yaml records it (model.name: the model loaded)
    run_dir: Path
    algorithm: str  # pods | grpo | grpo_ga
    policy: object  # pods.backends.base.Policy
    generator: object  # pods.backends.base.Generator
    prompts: list  # prompt token ids [N]
    answers: list  # gold answers [N]
    cols: dict  # {meta key: [N]}, the rewards' keyword columns
    reward: rewards.Combined  # the total training optimises
    accuracy: str  # the reward whose score > 0 counts as correct
    optimizer: object
    scheduler: object  # pods.core.schedule.LRSchedule
    gens: dict  # {"select": torch.Generator}: the selection's RNG, saved in checkpoints
    resumed: tuple[Path, dict] | None  # (checkpoint, its state.json) the run continues from


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@contextmanager
def prepare(cfg):
    """The run of `cfg` made ready to train (`Ready`), its run directory held by this process in the block."""
    examples = check_plugins_and_data(cfg)
    model = warm_start(cfg)
    run_cfg = loading(cfg, model)
    rdir = get_run_dir(cfg)
    check_offline(model)  # a hub model that cannot load offline, before anything is written
    fits = check_memory(run_cfg)  # on a GPU: the memory estimate; ConfigError with its table when it cannot fit
    if fits:
        print(fits)
    rdir.mkdir(parents=True, exist_ok=True)
    with lock_run_dir(rdir):  # a second process on this run directory is refused (pods.io.LockedError)
        yield start(cfg, run_cfg, rdir, examples)


def check_plugins_and_data(cfg) -> list[data.Example]:
    """validate(cfg), then your plug-ins, each run once, then the data files: the training examples.

    A plug-in dataset function is called here and only here (its rows are the training data); each plug-in
    reward is imported and probed on plugins.PROBE. Their problems come together in one ConfigError."""
    validate(cfg)
    d, problems, examples = cfg.dataset, [], None
    if plugins.is_plugin(d.name):
        try:
            examples = data.load_examples(d)  # imported, called and every row checked
        except plugins.PluginError as err:
            problems.append(f"dataset.name: {err}")
    for name in dict.fromkeys(item["name"] for item in d.rewards):
        if plugins.is_plugin(name):
            try:
                rewards.probe(name)
            except ValueError as err:  # PluginError, RewardError
                problems.append(f"dataset.rewards: {err}")
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))
    return examples if examples is not None else data.load_examples(d)  # every file read before a model loads


def warm_start(cfg) -> str:
    """The model to load: the warm-started model's directory when cfg.warmstart is on (trained once, then
    cached: pods.run.warmstart), else cfg.model.name."""
    if cfg.get("warmstart") and cfg.warmstart.get("enabled", True):
        return str(ensure_warmstart(cfg.warmstart))  # absolute unless warmstart.cache_dir is relative
    return str(cfg.model.name)


def loading(cfg, model: str) -> DictConfig:
    """The run's config: `cfg` itself, or where the model to load is another (a warm start) a copy with that
    model.name; `cfg` stays as asked."""
    if model == cfg.model.name:
        return cfg
    run_cfg = copy.deepcopy(cfg)
    run_cfg.model.name = model
    return run_cfg


def record(cfg, run_cfg) -> str:
    """config.yaml: the run's config (what it loaded) plus, under `asked`, the settings you gave that the
    start-up step resolved to something else (the warm start: model.name)."""
    text = OmegaConf.to_yaml(run_cfg, resolve=True)
    if run_cfg.model.name != cfg.model.name:
        text += OmegaConf.to_yaml({ASKED: {"model": {"name": cfg.model.name}}})
    return text


def start(cfg, run_cfg, rdir: Path, examples) -> Ready:
    """`Ready` inside the run directory `rdir`, which this process holds."""
    check_run_dir(run_cfg, rdir)  # under the lock: what it reads cannot change until the run ends
    for line in ckpt.clean_stale(rdir):  # before anything else is written
        print(f"{rdir}: {line}")
    if not cfg.resume and ckpt.latest(rdir) is not None:
        raise ConfigError(f"{rdir} already holds checkpoints and resume=false; set resume=true to continue it, "
                          f"or choose another run_name=NAME (or move {rdir} aside) to start over")
    verified = ckpt.check_resumable(rdir)  # a run whose every checkpoint is damaged stops before a model loads
    check_ledger(cfg, rdir, verified)  # so does a damaged or foreign rollout ledger

    seed_everything(cfg.seed)  # LoRA initialisation
    with doing(f"loading the model {run_cfg.model.name} ({cfg.backend.name} backend)"):
        try:
            policy, generator = backends.build(run_cfg)
        except (OSError, ValueError) as err:  # an unknown hub id, no network, a local directory missing files
            raise load_error(run_cfg.model.name, err) from err
    prompts, answers, cols = load_prompts(cfg, policy.tokenizer, examples)
    # written once the model and prompts loaded: a start that fails there (a wrong model.name) leaves no config
    # that would make the corrected command "a different run"
    atomic_write_text(rdir / "config.yaml", record(cfg, run_cfg))
    optimizer, scheduler = build_optimizer(policy.named_trainable_parameters(), run_cfg)
    seed_everything(cfg.seed)  # the training stream starts from the same RNG state for any model
    gens = {"select": torch.Generator().manual_seed(cfg.seed)}
    with doing(f"resuming from the newest intact checkpoint of {rdir}"):
        resume_from, state = ckpt.resume(rdir, policy, optimizer, scheduler, gens, verified=verified)
    if resume_from is not None:
        generator.update_weights(policy)
        _say_resumed(rdir, resume_from, state, cfg.rl)
    return Ready(cfg=run_cfg, run_dir=rdir, algorithm=algorithm(cfg), policy=policy, generator=generator,
                 prompts=prompts, answers=answers, cols=cols, reward=rewards.combined(cfg.dataset.rewards),
                 accuracy=cfg.dataset.accuracy_reward or cfg.dataset.rewards[0]["name"], optimizer=optimizer,
                 scheduler=scheduler, gens=gens, resumed=None if resume_from is None else (resume_from, state))


def ledger_meta(cfg, algorithm: str, accuracy: str, num_prompts: int | None = None) -> dict:
    """The run's settings a replay of its ledger needs (ledger/_ledger.json); num_prompts once the prompts load."""
    rl = cfg.rl
    keys = ("n", "m", "rule", "rule_scope", "prompts_per_step", "prompt_rule", "prompt_pool", "allocation",
            "allocation_budget", "token_mask", "m_schedule", "scale_rewards", "advantage_std", "advantage_over",
            "dynamic_sampling")
    return {**{k: rl[k] for k in keys}, "prompt_rule_options": dict(rl.prompt_rule_options or {}),
            "allocation_options": dict(rl.allocation_options or {}), "algorithm": algorithm, "seed": cfg.seed,
            "accuracy_reward": accuracy, "rewards": [r["name"] for r in cfg.dataset.rewards],
            **({"num_prompts": num_prompts} if num_prompts is not None else {})}


def check_ledger(cfg, rdir: Path, verified: dict[Path, list[str]]) -> None:
    """A resume's rollout ledger read back against the run and its newest intact checkpoint, before a model
    loads: CheckpointError naming the file (pods.core.ledger_writer.check_resume; the writer checks again)."""
    newest = [path for path, problems in verified.items() if not problems]
    if not cfg.logging.ledger or not newest:
        return
    state = ckpt.read_state(newest[0])
    accuracy = cfg.dataset.accuracy_reward or cfg.dataset.rewards[0]["name"]
    check_resume(rdir, ledger_meta(cfg, algorithm(cfg), accuracy), state["step"], state.get("ledger_id"))


def _say_resumed(rdir: Path, resume_from: Path, state: dict, rl) -> None:
    step, elapsed = state["step"], state["elapsed_seconds"]
    if ckpt.should_stop(step, elapsed, rl.max_steps, rl.max_time) or budget.exhausted(state.get("metrics"), rl):
        limits = ", ".join(f"rl.{k}={rl[k]}" for k in ("max_steps", "max_time", "token_budget") if rl[k] is not None)
        print(f"{rdir} is already trained to its end ({resume_from.name}, {elapsed:.0f} s of training; "
              f"{limits}): nothing to train")
    else:
        print(f"resuming {rdir} from {resume_from.name} ({elapsed:.0f} s of training)")


def load_prompts(cfg, tokenizer, examples=None):
    """(prompt ids [N], answers [N], cols {meta key: [N]}) of the training set after the length filter;
    `examples`: the set already read by pods.data.load_examples (read here when None)."""
    d = cfg.dataset
    examples = data.load_examples(d) if examples is None else examples
    kept, ids, dropped = data.training_set(examples, tokenizer, d, max_prompt_tokens=cfg.rl.max_prompt_tokens)
    if not kept:
        raise ConfigError(f"every prompt of {d.name} is longer than rl.max_prompt_tokens={cfg.rl.max_prompt_tokens} "
                          "tokens: raise rl.max_prompt_tokens")
    cols = data.meta_columns(kept)
    return ids, [ex.answer for ex in kept], cols
