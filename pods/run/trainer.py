"""The training loop: one loop for PODS (m < n), GRPO (m = n) and GRPO-GA, any backend.

    run_dir = pods.run.trainer.train(cfg)     # cfg: composed config/train.yaml (see train.py)

`train` = `pods.run.prepare.prepare` then `loop`, whose `train_step` is: `generate_and_score` (pods.core.collect over
a pods.run.sampler.StepSampler: B prompts a prompt rule picks -> n completions each -> rewards [B, n]) -> the prompt rule's history -> `plan_update` (which rollouts,
their advantages) -> `optimize` (`policy_loss` over micro-batches, a token mask, clip, ONE optimizer step) -> weight
hand-over -> `record` (the rollout ledger) -> `metrics_row` (the cost ledger) -> `save` when due. The run's position
is one `RunState`. Rerunning resumes from the newest intact checkpoint; step k samples with `sampling_seed(seed, k)`.
Run directory and metrics.jsonl keys: docs/training.md; signals, non-finite steps, failed writes: docs/long-runs.md.
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from pods.cli import note
from pods.core.algorithms import plan_update
from pods.core.collect import Batch, RoundsStopped, ShortBatchError, collect, generated, subset
from pods.core.cost import cost_metrics
from pods.core.lab import LAB_FILE, Lab
from pods.core.ledger_writer import Ledger, step_rows, switch_off
from pods.core.losses import policy_loss
from pods.core.reference import runs_reference
from pods.errors import RewardError
from pods.run import budget
from pods.run import checkpoint as ckpt
from pods.run.guard import Interrupted, NonFiniteStreak, StopSignals, nonfinite_reason
from pods.run.metrics import MetricsLogger, PhaseTimers, Progress, step_metrics
from pods.run.prepare import Ready, ledger_meta, prepare
from pods.run.sampler import StepSampler
from pods.run.samples import SampleLog


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


def update(policy, kept, adv, cfg, timers=None, *, lab=None, entropy: bool = False) -> dict:
    """Accumulate the loss gradient over micro-batches of the kept rollouts; adv [G * k].

    Every micro-batch is normalised by the whole batch's count, so the accumulated gradient equals
    the full-batch gradient. `lab` (pods.core.lab.Lab): its token mask picks the tokens that carry the
    gradient; entropy=True (or a mask that needs it) measures each token's entropy in the same pass:
    "rollout_entropy" [G * k] (mean per completion) for the ledger. Returns metrics; no optimizer step here.
    """
    rl, mb = cfg.rl, cfg.rl.micro_batch_size
    temp = rl.temperature if rl.logprob_temperature else 1.0  # current and reference log-probs alike
    reference = runs_reference(rl.beta, rl.reference_pass)  # also at beta = 0 when `always`: the authors' time
    prompts, comps = kept.flat_prompt_ids(), kept.completion_ids
    denom = len(comps) if rl.aggregation == "sequence" else float(sum(len(c) for c in comps))
    want_entropy = entropy or (lab is not None and lab.needs_entropy)
    sums = {"loss": 0.0, "kl": 0.0, "tokens": 0.0, "trained": 0.0, "entropy": 0.0}
    per_rollout = []
    for s in range(0, len(comps), mb):
        p, c = prompts[s:s + mb], comps[s:s + mb]
        ref = None
        if reference:
            with timers("reference") if timers else contextlib.nullcontext():
                ref = policy.token_logprobs(p, c, reference=True, temperature=temp)[0]
        logp, mask, *ent = policy.token_logprobs(p, c, temperature=temp, **({"entropy": True} if want_entropy else {}))
        ent = ent[0] if ent else None  # [b, T]
        a = adv[s:s + mb].to(logp.device)
        token_keep = lab.token_keep(mask, ent, a) if lab is not None and rl.token_mask != "none" else None
        loss, m = policy_loss(logp, a, mask, ref_logp=ref, beta=rl.beta, aggregation=rl.aggregation,
                              denominator=denom, keep=token_keep)
        loss.backward()
        sums["loss"] += float(loss.detach())
        sums["tokens"] += m["completion_tokens"]
        sums["trained"] += m.get("trained_tokens", m["completion_tokens"])
        sums["kl"] += m.get("kl", 0.0) * m["completion_tokens"]
        if ent is not None:
            sums["entropy"] += float((ent * mask).sum())
            per_rollout.append((ent * mask).sum(1).cpu() / mask.sum(1).clamp(min=1).cpu())  # [b]
    t = max(sums["tokens"], 1.0)
    out = {"loss": sums["loss"], "trained_tokens": sums["trained"]}
    if reference:
        out["kl"] = sums["kl"] / t
    if per_rollout:
        out["entropy"] = sums["entropy"] / t  # mean token entropy of the trained completions (TRL's "entropy")
        out["rollout_entropy"] = torch.cat(per_rollout)
    return out


@dataclass
class RunState:
    """Where the run stands: what the loop advances each step and a checkpoint saves."""

    step: int = 0  # steps completed
    elapsed: float = 0.0  # training seconds (generation .. weight sync of every step)
    position: int = 0  # prompts drawn from the PromptStream
    saved: tuple[int, float] = (0, 0.0)  # (step, elapsed) of the last checkpoint
    checkpoint: Path | None = None  # the newest checkpoint: where a rerun resumes
    row: dict | None = None  # the last step's metrics row (state.json keeps it too)
    nonfinite: int = 0  # skipped (non-finite) steps in a row up to `checkpoint`
    updating: bool = False  # the step in progress has begun to change the weights
    rng_before: dict | None = None  # the RNG states when the step in progress began
    lab: Lab | None = None  # prompt rule (its history), token mask, m schedule (pods.core.lab)
    lab_before: dict | None = None  # the prompt rule's state when the step in progress began

    @classmethod
    def resumed(cls, ready: Ready) -> RunState:
        if ready.resumed is None:
            return cls()
        path, state = ready.resumed
        step, elapsed = state["step"], state["elapsed_seconds"]
        return cls(step=step, elapsed=elapsed, position=state["data_position"], saved=(step, elapsed),
                   checkpoint=path, row=state.get("metrics"), nonfinite=state.get("nonfinite_streak", 0))

    def done(self, rl) -> bool:
        return ckpt.should_stop(self.step, self.elapsed, rl.max_steps, rl.max_time) or budget.exhausted(self.row, rl)


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
    with prepare(cfg) as ready:  # settings, data, plug-ins, warm start, memory, lock, model, resume
        loop(ready, on_step=on_step, clock=clock)
        return ready.run_dir


class Books:
    """The loop's bookkeeping: timers, metrics and samples files, progress bar, save schedule, signals."""

    def __init__(self, ready: Ready, run: RunState, clock):
        cfg, rl, lg = ready.cfg, ready.cfg.rl, ready.cfg.logging
        self.timers = PhaseTimers(clock)
        self.logger = MetricsLogger(ready.run_dir, cfg, resume_step=run.step, resume_row=run.row)
        self.samples = SampleLog(ready.run_dir, lg.samples_every, lg.samples_prompts, lg.print_samples,
                                 resume_step=run.step, wandb=_wandb_module(self.logger))
        self.bar = Progress(lg.progress, rl.max_steps, rl.max_time, run.step, run.elapsed)
        self.schedule = ckpt.SaveSchedule(rl.save_strategy, rl.save_interval, rl.save_steps, rl.save_final)
        self.streak = NonFiniteStreak(rl.max_nonfinite_steps, run.nonfinite)
        self.stop = StopSignals()  # SIGTERM / SIGHUP / Ctrl-C: finish the step, checkpoint it, raise Interrupted
        self.warned_short = False  # dynamic sampling's first short batch of this process prints a warning
        self.ledger = open_ledger(ready, run.step)

    def close(self) -> None:
        self.stop.restore()
        self.bar.close()
        self.logger.close()
        if self.ledger is not None:
            self.ledger.close()


def open_ledger(ready: Ready, step: int) -> Ledger | None:
    """The rollout ledger resumed at `step` (read back against the run and the id its checkpoint recorded), or
    None under logging.ledger=false (an existing ledger's index then records the steps as not recorded)."""
    if not ready.cfg.logging.ledger:
        switch_off(ready.run_dir, step)
        return None
    state = ready.resumed[1] if ready.resumed is not None else {}
    meta = ledger_meta(ready.cfg, ready.algorithm, ready.accuracy, len(ready.prompts))
    return Ledger(ready.run_dir, meta, resume_step=step, ledger_id=state.get("ledger_id"))


def start_lab(ready: Ready) -> Lab:
    """The run's Lab, with the prompt rule's history of the checkpoint it resumes from."""
    lab = Lab(ready.cfg.rl, num_prompts=len(ready.prompts), seed=ready.cfg.seed)
    if ready.resumed is not None:
        lab.load_state_dict(ckpt.load_extra(ready.resumed[0], LAB_FILE, default={}))
    return lab


def loop(ready: Ready, *, on_step=None, clock=time.perf_counter) -> None:
    """Train from `ready` (pods.run.prepare) until rl.max_steps / rl.max_time / rl.token_budget: one `train_step`
    per step."""
    run = RunState.resumed(ready)
    run.lab = start_lab(ready)
    books = Books(ready, run, clock)
    sampler = StepSampler(ready, run.lab, books.timers, books.stop)  # prompts, rollouts, rewards, selection
    try:
        books.stop.install()
        while not run.done(ready.cfg.rl):
            train_step(ready, run=run, books=books, sampler=sampler, on_step=on_step, clock=clock)
    except Exception as err:
        if isinstance(err, Interrupted):
            raise
        keep_last_step(err, ready=ready, run=run, books=books)
        raise
    finally:
        books.close()


def train_step(ready: Ready, *, run: RunState, books: Books, sampler: StepSampler, on_step, clock) -> None:
    """One step: generate and score (rounds), select and weigh, update, hand the weights over, log, save."""
    rl, timers = ready.cfg.rl, books.timers
    start, run.rng_before, run.updating = clock(), ckpt.rng_state(ready.gens), False
    run.lab_before = run.lab.state_dict()
    m = run.lab.m(run.step)  # rl.m, or its schedule's value at this step
    batch, advance = generate_and_score(ready, run=run, m=m, sampler=sampler)
    run.lab.observe(*generated(batch))  # the prompt rule's history: every group generated
    batch = subset(batch, run.lab.keep_groups(batch.total))  # a prompt rule's group filter (RAGEN's SNR)
    if batch.short and not books.warned_short:
        books.warned_short = _warn_short(batch, rl.prompts_per_step, rl)
    with timers("selection"):  # idx [G, k], adv [G, k]
        idx, adv = plan_update(batch.total, ready.algorithm, m, rl.rule, scale=rl.scale_rewards,
                               std=rl.advantage_std, kept=batch.idx, over=rl.advantage_over)
    run.updating = True  # from here on the step in progress changes the weights
    with timers("update"):
        stats, grad_norm, lr, skipped = optimize(ready, kept=batch.rollouts.select(idx), adv=adv[idx >= 0],
                                                 elapsed=run.elapsed, timers=timers, lab=run.lab,
                                                 entropy=books.ledger is not None)
    if not books.stop.requested:  # stopping after this step; a signal may have ended the engine process too
        with timers("weight_sync"):  # the generator takes the updated weights (backend hand-over)
            ready.generator.update_weights(ready.policy)
    record(books, step=run.step + 1, batch=batch, accuracy=ready.accuracy, entropy=stats.pop("rollout_entropy", None))
    run.step, run.position = run.step + 1, run.position + advance
    step_seconds = clock() - start
    run.elapsed += step_seconds
    row = metrics_row(ready, run=run, batch=batch, idx=idx, stats=stats, grad_norm=grad_norm, lr=lr,
                      skipped=skipped, batches=sampler.batches)
    budget_point = budget.crossed(run.row, row, rl)  # the leaderboard's budget points: the same for every arm
    run.row = row
    if books.samples.due(run.step):  # what the model writes: samples.jsonl (and a wandb table)
        prompt_text = lambda i: ready.policy.tokenizer.decode(ready.prompts[i], skip_special_tokens=True)  # noqa: E731
        books.samples.log(run.step, [prompt_text(i) for i in batch.prompts], [ready.answers[i] for i in batch.prompts],
                          batch.rollouts, batch.total, batch.per_fn, idx, counts=batch.counts)
    if on_step is not None:
        row.update(on_step(row, ready.policy, ready.generator) or {})
    row.update(timers.pop())
    row["time/step"] = step_seconds  # generation .. update (time/reference is part of time/update)
    stopping = run.done(rl)
    if budget_point or books.schedule.due(run.step, run.elapsed, *run.saved, stopping=stopping,
                                          interrupted=books.stop.requested):
        save(ready, run=run, timers=timers, nonfinite=books.streak.count + (skipped is not None), ledger=books.ledger)
        row.update(timers.pop())
    books.logger.log(row)
    books.bar.update(row)
    books.streak.update(run.step, skipped, run.checkpoint)
    if books.stop.requested:
        raise Interrupted(books.stop.signum, run.step, run.checkpoint)


def generate_and_score(ready: Ready, *, run: RunState, m: int, sampler: StepSampler) -> tuple[Batch, int]:
    """B prompts (a prompt rule's pick) with n completions each, scored: one round, rounds until B informative
    groups (dynamic sampling), an allocation rule's rounds of more for the same prompts; and the stream positions
    they used (the data position advances by that)."""
    rl = ready.cfg.rl
    sampler.begin(step=run.step, position=run.position, m=m)
    batch = collect(sampler, rl.prompts_per_step, dynamic=rl.dynamic_sampling, metric=rl.dynamic_sampling_metric,
                    max_rounds=rl.max_generation_rounds, short=rl.short_batch, budget=rl.allocation_budget)
    return batch, sampler.position - run.position


def record(books: Books, *, step: int, batch: Batch, accuracy: str, entropy) -> None:
    """The step's rows into the rollout ledger (when it is on): every group generated, the prompts skipped."""
    if books.ledger is not None:
        with books.timers("ledger"):
            ent = None if entropy is None else torch.full(batch.idx.shape, float("nan"))  # [G, k] at batch.idx
            if ent is not None:
                ent[batch.idx >= 0] = entropy.float().cpu()  # -1: a batch-level rule's row keeps fewer
            books.ledger.record(step, step_rows(step, batch, accuracy=accuracy, entropy=ent))


def optimize(ready: Ready, *, kept, adv, elapsed: float, timers, lab=None,
             entropy: bool = False) -> tuple[dict, float, float, str | None]:
    """The loss gradient of the kept rollouts (adv [G * k]), clipped, and one optimizer and scheduler step
    unless the loss or the gradient norm is not finite: (stats, grad_norm, lr, why skipped or None)."""
    policy, optimizer, scheduler, o = ready.policy, ready.optimizer, ready.scheduler, ready.cfg.optim
    if not len(kept):  # no group to train (an allocation rule or a group filter kept none): no optimizer step
        return {"loss": 0.0, "trained_tokens": 0.0}, 0.0, scheduler.apply(elapsed), None
    if hasattr(policy, "train"):
        policy.train()
    stats = update(policy, kept, adv, ready.cfg, timers, lab=lab, entropy=entropy)
    clip = o.max_grad_norm if o.max_grad_norm > 0 else float("inf")
    grad_norm = float(torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), clip))
    lr = scheduler.apply(elapsed)  # from the optimizer steps (or training seconds) before this one
    skipped = nonfinite_reason(stats["loss"], grad_norm)
    if skipped is None:  # a NaN/inf loss or gradient norm: no optimizer step
        optimizer.step()
        scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return stats, grad_norm, lr, skipped


def metrics_row(ready: Ready, *, run: RunState, batch: Batch, idx, stats, grad_norm, lr, skipped,
                batches=None) -> dict:
    """The step's metrics.jsonl row (keys: docs/training.md); `batches`: the step's decoded generation batches."""
    rollouts = batch.rollouts
    kept = rollouts.select(idx)
    return {"step": run.step, "elapsed_seconds": run.elapsed, "data_position": run.position,
            "optimizer_steps": ready.scheduler.optimizer_steps, "algorithm": ready.algorithm, "lr": lr,
            **step_metrics(rollouts, batch.total, batch.per_fn, batch.correct, idx, stats, grad_norm,
                           counts=batch.counts),
            "skipped": skipped is not None, **({"skip_reason": skipped} if skipped else {}),
            "generation_rounds": batch.rounds, "prompts_drawn": batch.drawn,
            "frac_drawn_informative": batch.drawn_informative / batch.drawn,
            "groups_trained": rollouts.num_groups, "groups_informative": batch.informative,
            "short_batch": batch.short,
            **cost_metrics(generated=[rnd.rollouts.completion_lengths()[rnd.drawn()] for rnd, _, _ in batch.seen],
                           trained_tokens=stats["trained_tokens"], rollouts_trained=int((idx >= 0).sum()),
                           prompts_skipped=sum(len(rnd.skipped) for rnd, _, _ in batch.seen), rounds=batch.rounds,
                           batches=batches, tokens_updated=sum(len(p) + len(c) for p, c in
                                                               zip(kept.flat_prompt_ids(), kept.completion_ids)),
                           previous=run.row)}


def save(ready: Ready, *, run: RunState, timers, nonfinite: int, rng=None, ledger=None) -> None:
    """checkpoint-<step> after the last completed step (the row goes into state.json too, in case its own
    write fails); `rng`: the RNG states to save (default: as they are now; given: the prompt rule's as the
    step began too). The rollout ledger is flushed first, so it holds every checkpointed step."""
    with timers("checkpoint"):
        if ledger is not None:
            ledger.flush()
        lab = run.lab_before if rng is not None else run.lab.state_dict()
        run.checkpoint = ckpt.save(ready.run_dir, run.step,
                                   {"elapsed_seconds": run.elapsed, "data_position": run.position,
                                    "algorithm": ready.algorithm, "metrics": run.row, "nonfinite_streak": nonfinite,
                                    **({"ledger_id": ledger.id} if ledger is not None else {})},
                                   ready.policy, ready.optimizer, ready.scheduler, ready.gens, rng=rng,
                                   extra={LAB_FILE: lab} if lab else None)
    run.saved = (run.step, run.elapsed)


def keep_last_step(err: Exception, *, ready: Ready, run: RunState, books: Books) -> None:
    """After a step failed: keep the last completed step when the failure allows a clean resume, and say so.

    A signal (which may also have ended e.g. vLLM's engine process), a reward that failed on this step's
    completions, or rounds that ran out: the last completed step is checkpointed (weights untouched by this
    one; the RNG states as they were when it began), so the rerun resumes there. Raises Interrupted after a
    signal; otherwise adds where to resume to `err`'s message (the caller re-raises it)."""
    rdir, step = ready.run_dir, run.step
    requested = books.stop.requested
    if not requested and not isinstance(err, (RewardError, ShortBatchError)):
        note(err, f"training step {step + 1} of {rdir}")
        return
    if step > run.saved[0] and not run.updating and books.schedule.due(step, run.elapsed, *run.saved,
                                                                       interrupted=True):
        save(ready, run=run, timers=books.timers, nonfinite=books.streak.count, rng=run.rng_before,
             ledger=books.ledger)
    if requested:
        why = (f" (during step {step + 1}'s generation rounds: that step is dropped and runs again on resume)"
               if isinstance(err, RoundsStopped) else
               f" (step {step + 1} failed once the signal came: {type(err).__name__}: {err})")
        raise Interrupted(books.stop.signum, step, run.checkpoint, why) from err
    resumes = run.checkpoint if run.checkpoint is not None else "step 0 (no checkpoint yet)"
    err.args = (f"{err}\n  (step {step + 1} of {rdir}; fix this and rerun the same command: it resumes from "
                f"{resumes})",)
