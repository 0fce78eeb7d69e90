"""The training loop: one loop for PODS (m < n), GRPO (m = n) and GRPO-GA, any backend.

    run_dir = pods.run.trainer.train(cfg)     # cfg: composed config/train.yaml (see train.py)

Per step: B prompts -> n completions each -> rewards [B, n] -> `pods.core.algorithms.plan_update` (which
rollouts, their advantages) -> `pods.core.losses.policy_loss` over micro-batches of rl.micro_batch_size
-> clip, ONE optimizer and scheduler step -> log -> checkpoint when due. Rerunning resumes from the newest
intact checkpoint; step k samples with `sampling_seed(seed, k)`. The run directory and the metrics.jsonl
keys: docs/training.md; signals, non-finite steps, failed writes: docs/long-runs.md.
"""

from __future__ import annotations

import contextlib
import random
import re
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf

from pods import backends, data, rewards
from pods.backends.base import Sampling, sampling_seed
from pods.backends.checks import check_memory, check_offline, load_error
from pods.cli import doing, note
from pods.config import algorithm, run_dir as get_run_dir
from pods.config.checks import validate
from pods.core.algorithms import keep, plan_update
from pods.core.collect import Round, RoundsStopped, ShortBatchError, collect
from pods.core.losses import policy_loss
from pods.core.schedule import LRSchedule
from pods.errors import ConfigError, RewardError
from pods.io import atomic_write_text
from pods.run import checkpoint as ckpt
from pods.run.guard import Interrupted, NonFiniteStreak, StopSignals, nonfinite_reason
from pods.run.metrics import MetricsLogger, PhaseTimers, Progress, step_metrics
from pods.run.rundir import check_run_dir, lock_run_dir
from pods.run.samples import SampleLog
from pods.run.warmstart import ensure_warmstart


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class PromptStream:
    """Epoch-wise shuffled prompt order that depends only on (seed, position): resumable."""

    def __init__(self, size: int, seed: int):
        self.size, self.seed = size, seed
        self._epoch, self._perm = None, None

    def __call__(self, position: int, count: int) -> list[int]:
        out = []
        for p in range(position, position + count):
            epoch = p // self.size
            if epoch != self._epoch:
                g = torch.Generator().manual_seed(self.seed * 100003 + epoch)
                self._epoch, self._perm = epoch, torch.randperm(self.size, generator=g).tolist()
            out.append(self._perm[p % self.size])
        return out


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


def score(texts, answers, cols, reward) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(total [N], {name: [N]}) from `reward` = pods.rewards.combined(cfg.dataset.rewards): the total training
    optimises, every function's output checked there (pods.errors.RewardError)."""
    total, per_fn = reward(texts, answers, **cols)
    as_tensor = lambda xs: torch.tensor(xs, dtype=torch.float32)  # noqa: E731
    return as_tensor(total), {k: as_tensor(v) for k, v in per_fn.items()}


def score_groups(texts, batch, answers, cols, reward, n) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Score the n completions of each prompt in `batch` (dataset indices [G]): (total [G, n], {name: [G, n]})."""
    rep = lambda xs: [xs[i] for i in batch for _ in range(n)]  # noqa: E731  [G * n]
    total, per_fn = score(texts, rep(answers), {k: rep(v) for k, v in cols.items()}, reward)
    G = len(batch)
    return total.view(G, n), {k: v.view(G, n) for k, v in per_fn.items()}


def _warn_short(batch, B: int, rl) -> bool:
    """Say once per process that dynamic sampling ran out of rounds (metrics.jsonl: short_batch per step)."""
    did = {"partial": f"trains on those {batch.informative}" if batch.informative else
           f"trains on the last round's {batch.rollouts.num_groups} flat groups (zero advantages)",
           "top_up": f"fills up to {B} with flat groups (zero advantages)"}
    print(f"warning: dynamic sampling found {batch.informative} of {B} groups whose kept rollouts differ in "
          f"{rl.dynamic_sampling_metric} in {batch.rounds} generation rounds; rl.short_batch={rl.short_batch} "
          f"{did[rl.short_batch]} (a batch DAPO would not train; short_batch and groups_trained in metrics.jsonl "
          "say when again). Raise rl.max_generation_rounds to look further", file=sys.stderr, flush=True)
    return True


def _wandb_module(logger):
    """The wandb module when the run logs to wandb (for the samples table), else None."""
    if logger.wandb is None:
        return None
    import wandb

    return wandb


# parameter names weight decay skips: biases and norms (transformers Trainer.get_decay_parameter_names)
NO_DECAY = re.compile(r"bias|layernorm|rmsnorm|(?:^|\.)norm(?:$|\.)|_norm(?:$|\.)")


def decay_groups(named_params, weight_decay: float) -> list[dict]:
    """AdamW parameter groups: weight decay on the weights, none on biases, norms and LayerNorm modules'
    parameters (by lower-cased name, as HF's Trainer decides); an empty group is left out."""
    decay, no_decay = [], []
    for name, p in named_params:
        (no_decay if NO_DECAY.search(name.lower()) else decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


def build_optimizer(named_params, cfg):
    """(optimizer, pods.core.schedule.LRSchedule) per cfg.optim, the schedule sized by rl.max_steps or rl.max_time.

    named_params: [(name, parameter)] of the trainable parameters (biases and norms get no decay).
    """
    o = cfg.optim
    params = decay_groups(named_params, float(o.weight_decay))
    opt = None
    if o.name == "adamw_8bit":
        try:
            import bitsandbytes as bnb

            if torch.cuda.is_available():
                opt = bnb.optim.AdamW8bit(params, lr=o.lr, betas=tuple(o.betas), weight_decay=o.weight_decay)
        except ImportError:
            pass
        if opt is None:
            warnings.warn("optim.name=adamw_8bit needs CUDA and bitsandbytes; using torch AdamW")
    opt = opt or torch.optim.AdamW(params, lr=o.lr, betas=tuple(o.betas), weight_decay=o.weight_decay)
    sched = LRSchedule(opt, lr=o.lr, name=o.scheduler, warmup_ratio=o.warmup_ratio,
                       max_steps=cfg.rl.max_steps, max_time=cfg.rl.max_time)
    return opt, sched


def update(policy, kept, adv, cfg, timers=None) -> dict:
    """Accumulate the loss gradient over micro-batches of the kept rollouts; adv [G * k].

    Every micro-batch is normalised by the whole batch's count, so the accumulated gradient equals
    the full-batch gradient. Returns metrics; no optimizer step here.
    """
    rl, mb = cfg.rl, cfg.rl.micro_batch_size
    temp = rl.temperature if rl.logprob_temperature else 1.0  # current and reference log-probs alike
    prompts, comps = kept.flat_prompt_ids(), kept.completion_ids
    denom = len(comps) if rl.aggregation == "sequence" else float(sum(len(c) for c in comps))
    sums = {"loss": 0.0, "kl": 0.0, "tokens": 0.0}
    for s in range(0, len(comps), mb):
        p, c = prompts[s:s + mb], comps[s:s + mb]
        ref = None
        if rl.beta > 0:
            with timers("reference") if timers else contextlib.nullcontext():
                ref = policy.token_logprobs(p, c, reference=True, temperature=temp)[0]
        logp, mask = policy.token_logprobs(p, c, temperature=temp)
        loss, m = policy_loss(logp, adv[s:s + mb].to(logp.device), mask, ref_logp=ref, beta=rl.beta,
                              aggregation=rl.aggregation, denominator=denom)
        loss.backward()
        sums["loss"] += float(loss.detach())
        sums["tokens"] += m["completion_tokens"]
        sums["kl"] += m.get("kl", 0.0) * m["completion_tokens"]
    t = max(sums.pop("tokens"), 1.0)
    out = {"loss": sums["loss"]}
    if rl.beta > 0:
        out["kl"] = sums["kl"] / t
    return out


def train(cfg, *, on_step=None, clock=time.perf_counter) -> Path:
    """Run (or resume) training per `cfg`; return the run directory.

    `on_step(row, policy, generator) -> dict | None` runs after each step's update, outside the training
    clock; a dict it returns is added to the step's metrics row. Raises pods.run.guard.Interrupted after a
    SIGTERM / SIGINT (the step in progress checkpointed), pods.run.guard.NonFiniteError after
    rl.max_nonfinite_steps skipped steps in a row, pods.errors.RewardError (a reward failed or returned
    non-finite scores) or pods.core.collect.ShortBatchError (rl.short_batch=error) after keeping the last
    completed step, pods.io.WriteError when a file cannot be written, pods.errors.CheckpointError when every
    checkpoint is damaged, pods.io.LockedError when another process holds the run directory.
    """
    validate(cfg)
    examples = data.load_examples(cfg.dataset)  # every data file read and checked before any model loads
    if cfg.get("warmstart") and cfg.warmstart.get("enabled", True):
        cfg.model.name = str(ensure_warmstart(cfg.warmstart))  # relative to the project when cache_dir is
    rdir = get_run_dir(cfg)
    check_offline(cfg.model.name)  # a hub model that cannot load offline, before anything is written
    fits = check_memory(cfg)  # on a GPU: the memory estimate; ConfigError with its table when it cannot fit
    if fits:
        print(fits)
    rdir.mkdir(parents=True, exist_ok=True)
    with lock_run_dir(rdir):  # a second process on this run directory is refused (pods.io.LockedError)
        return _train(cfg, rdir, examples, on_step=on_step, clock=clock)


def _train(cfg, rdir: Path, examples, *, on_step, clock) -> Path:
    """`train` inside the run directory `rdir`, which this process holds."""
    rl, alg = cfg.rl, algorithm(cfg)
    check_run_dir(cfg, rdir)  # under the lock: what it reads cannot change until the run ends
    for line in ckpt.clean_stale(rdir):  # before anything else is written
        print(f"{rdir}: {line}")
    if not cfg.resume and ckpt.latest(rdir) is not None:
        raise ConfigError(f"{rdir} already holds checkpoints and resume=false; set resume=true to continue it, "
                          f"or choose another run_name=NAME (or move {rdir} aside) to start over")
    verified = ckpt.check_resumable(rdir)  # a run whose every checkpoint is damaged stops before a model loads

    seed_everything(cfg.seed)  # LoRA initialisation
    with doing(f"loading the model {cfg.model.name} ({cfg.backend.name} backend)"):
        try:
            policy, generator = backends.build(cfg)
        except (OSError, ValueError) as err:  # an unknown hub id, no network, a local directory missing files
            raise load_error(cfg.model.name, err) from err
    prompts, answers, cols = load_prompts(cfg, policy.tokenizer, examples)
    # written once the model and prompts loaded: a start that fails there (a wrong model.name) leaves no config
    # that would make the corrected command "a different run"
    atomic_write_text(rdir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    B, n, m = rl.prompts_per_step, rl.n, rl.m
    optimizer, scheduler = build_optimizer(policy.named_trainable_parameters(), cfg)
    seed_everything(cfg.seed)  # the training stream starts from the same RNG state for any model
    gens = {"select": torch.Generator().manual_seed(cfg.seed)}
    step, elapsed, position, last_saved = 0, 0.0, 0, (0, 0.0)
    with doing(f"resuming from the newest intact checkpoint of {rdir}"):
        resume_from, state = ckpt.resume(rdir, policy, optimizer, scheduler, gens, verified=verified)
    if resume_from is not None:
        generator.update_weights(policy)
        step, elapsed, position = state["step"], state["elapsed_seconds"], state["data_position"]
        last_saved = (step, elapsed)
        if ckpt.should_stop(step, elapsed, rl.max_steps, rl.max_time):
            limits = ", ".join(f"rl.{k}={rl[k]}" for k in ("max_steps", "max_time") if rl[k] is not None)
            print(f"{rdir} is already trained to its end ({resume_from.name}, {elapsed:.0f} s of training; "
                  f"{limits}): nothing to train")
        else:
            print(f"resuming {rdir} from {resume_from.name} ({elapsed:.0f} s of training)")
    stream = PromptStream(len(prompts), cfg.seed)
    schedule = ckpt.SaveSchedule(rl.save_strategy, rl.save_interval, rl.save_steps, rl.save_final)
    sampling = Sampling(max_tokens=rl.max_completion_tokens, temperature=rl.temperature, top_p=rl.top_p)
    acc_name = cfg.dataset.accuracy_reward or cfg.dataset.rewards[0]["name"]
    reward = rewards.combined(cfg.dataset.rewards)  # exactly the total training optimises (gates included)
    logger = MetricsLogger(rdir, cfg, resume_step=step, resume_row=(state or {}).get("metrics"))
    lg = cfg.logging
    samples = SampleLog(rdir, lg.samples_every, lg.samples_prompts, lg.print_samples, resume_step=step,
                        wandb=_wandb_module(logger))
    prompt_text = lambda ids: policy.tokenizer.decode(ids, skip_special_tokens=True)  # noqa: E731
    streak = NonFiniteStreak(rl.max_nonfinite_steps, (state or {}).get("nonfinite_streak", 0))
    bar = Progress(cfg.logging.progress, rl.max_steps, rl.max_time, step, elapsed)
    timers = PhaseTimers(clock)
    stop, row = StopSignals(), None  # SIGTERM / Ctrl-C: finish the step, checkpoint it, raise Interrupted
    warned_short = False  # dynamic sampling's first short batch of this process prints a warning

    def save(streak_count: int, rng=None) -> Path:  # checkpoint-<step> after the last completed step
        with timers("checkpoint"):  # the row goes into state.json too, in case its own write fails
            return ckpt.save(rdir, step, {"elapsed_seconds": elapsed, "data_position": position, "algorithm": alg,
                                          "metrics": row, "nonfinite_streak": streak_count},
                             policy, optimizer, scheduler, gens, rng=rng)

    try:
        stop.install()
        while not ckpt.should_stop(step, elapsed, rl.max_steps, rl.max_time):
            start, rng_before, updating = clock(), ckpt.rng_state(gens), False
            def sample_round(r) -> Round:  # B new prompts, generated and scored (pods.core.collect: r > 0 when
                drawn = stream(position + r * B, B)  # dynamic sampling needs more)
                with timers("generation"):  # the sampling seed depends on (seed, step, round) only: resumable
                    seeded = replace(sampling, seed=sampling_seed(cfg.seed, step, r))
                    ro = generator.generate([prompts[i] for i in drawn], n, seeded)  # G * n
                with timers("scoring"):
                    total, per_fn = score_groups(ro.texts, drawn, answers, cols, reward, n)  # [B, n]
                return Round(drawn, ro, total, per_fn, per_fn[acc_name] > 0)

            def keep_round(total):  # [B, n] -> idx [B, k]: the update's selection, made once per round
                with timers("selection"):
                    return keep(total, alg, m, rl.rule, generator=gens["select"])

            batch = collect(sample_round, B, keep_round, dynamic=rl.dynamic_sampling,
                            metric=rl.dynamic_sampling_metric, max_rounds=rl.max_generation_rounds,
                            short=rl.short_batch, stop=lambda: stop.requested)
            rollouts, total, per_fn = batch.rollouts, batch.total, batch.per_fn  # G groups: [G, n]
            if batch.short and not warned_short:
                warned_short = _warn_short(batch, B, rl)
            with timers("selection"):  # idx [G, k], adv [G, k]
                idx, adv = plan_update(total, alg, m, rl.rule, scale=rl.scale_rewards, std=rl.advantage_std,
                                       kept=batch.idx)
            if hasattr(policy, "train"):
                policy.train()
            updating = True  # from here on the step in progress changes the weights
            with timers("update"):
                stats = update(policy, rollouts.select(idx), adv.reshape(-1), cfg, timers)
                clip = cfg.optim.max_grad_norm if cfg.optim.max_grad_norm > 0 else float("inf")
                grad_norm = float(torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), clip))
                lr = scheduler.apply(elapsed)  # from the optimizer steps (or training seconds) before this one
                skipped = nonfinite_reason(stats["loss"], grad_norm)
                if skipped is None:  # a NaN/inf loss or gradient norm: no optimizer step
                    optimizer.step()
                    scheduler.step()
                optimizer.zero_grad(set_to_none=True)
            if not stop.requested:  # stopping after this step; a signal may have ended the engine process too
                with timers("weight_sync"):  # the generator takes the updated weights (backend hand-over)
                    generator.update_weights(policy)
            step, position = step + 1, position + batch.drawn
            step_seconds = clock() - start
            elapsed += step_seconds
            row = {"step": step, "elapsed_seconds": elapsed, "data_position": position,
                   "optimizer_steps": scheduler.optimizer_steps, "algorithm": alg, "lr": lr,
                   **step_metrics(rollouts, total, per_fn, batch.correct, idx, stats, grad_norm),
                   "skipped": skipped is not None, **({"skip_reason": skipped} if skipped else {}),
                   "generation_rounds": batch.rounds, "prompts_drawn": batch.drawn,
                   "frac_drawn_informative": batch.drawn_informative / batch.drawn,
                   "groups_trained": rollouts.num_groups, "groups_informative": batch.informative,
                   "short_batch": batch.short}
            if samples.due(step):  # what the model writes: samples.jsonl (and a wandb table)
                samples.log(step, [prompt_text(prompts[i]) for i in batch.prompts],
                            [answers[i] for i in batch.prompts], rollouts, total, per_fn, idx)
            if on_step is not None:
                row.update(on_step(row, policy, generator) or {})
            row.update(timers.pop())
            row["time/step"] = step_seconds  # generation .. update (time/reference is part of time/update)
            stopping = ckpt.should_stop(step, elapsed, rl.max_steps, rl.max_time)
            if schedule.due(step, elapsed, *last_saved, stopping=stopping, interrupted=stop.requested):
                resume_from, last_saved = save(streak.count + (skipped is not None)), (step, elapsed)
                row.update(timers.pop())
            logger.log(row)
            bar.update(row)
            streak.update(step, skipped, resume_from)
            if stop.requested:
                raise Interrupted(stop.signum, step, resume_from)
    except Exception as err:
        if isinstance(err, Interrupted):
            raise
        if not stop.requested and not isinstance(err, (RewardError, ShortBatchError)):
            note(err, f"training step {step + 1} of {rdir}")
            raise
        # a signal (which may also have ended e.g. vLLM's engine process), a reward that failed on this step's
        # completions, or rounds that ran out: keep the last completed step (weights untouched by this one; the
        # RNG states as they were when it began), so the rerun resumes there
        if step > last_saved[0] and not updating and schedule.due(step, elapsed, *last_saved, interrupted=True):
            resume_from = save(streak.count, rng=rng_before)
        if stop.requested:
            why = (f" (during step {step + 1}'s generation rounds: that step is dropped and runs again on resume)"
                   if isinstance(err, RoundsStopped) else
                   f" (step {step + 1} failed once the signal came: {type(err).__name__}: {err})")
            raise Interrupted(stop.signum, step, resume_from, why) from err
        resumes = resume_from if resume_from is not None else "step 0 (no checkpoint yet)"
        err.args = (f"{err}\n  (step {step + 1} of {rdir}; fix this and rerun the same command: it resumes from "
                    f"{resumes})",)
        raise
    finally:
        stop.restore()
        bar.close()
        logger.close()
    return rdir
