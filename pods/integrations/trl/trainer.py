"""PODSTrainer: TRL's GRPOTrainer that generates n completions per prompt and trains on m, with the selection lab.

    from pods.integrations.trl import PODSTrainer
    PODSTrainer(model=..., reward_funcs=[...], args=PODSConfig(...), train_dataset=ds).train()

TRL's extension points used: `_calculate_rewards` (to read the rewards TRL gathered over all processes),
`_generate_and_score_completions` (to down-sample its output; with the lab, to generate the step in rounds through
pods.core.collect: pods/integrations/trl/rounds.py), `get_high_entropy_mask` and `compute_loss` (token masks),
`_save_checkpoint` / `_load_optimizer_and_scheduler` (the lab's state, lab.pt) and `log` (the cost ledger's
totals). The batch bookkeeping and the lab in TRL: docs/multi-gpu.md.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict, deque
from pathlib import Path

import torch
from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState
from trl import GRPOTrainer

from pods.core.advantages import group_advantages
from pods.core.algorithms import plan_update
from pods.core.collect import collect, generated, subset
from pods.core.downsample import NEEDS, select
from pods.core.lab import LAB_FILE, Lab
from pods.core.ledger_writer import step_rows
from pods.integrations.trl.books import PODSBooks
from pods.integrations.trl.lab_settings import lab_mode, lab_view
from pods.integrations.trl.rounds import TRLSampler
from pods.integrations.trl.sampler import PromptRepeatsMixin

LEFT_PADDED = ("prompt_ids", "prompt_mask")  # the prompt side is left padded, everything else right padded


def selection_generator(seed: int, round_: int) -> torch.Generator:
    """The CPU generator of the `random` rule for generation round `round_` (identical on every process)."""
    return torch.Generator().manual_seed(seed * 1_000_003 + round_)


class PODSRound(TrainerCallback, ExportableState):
    """The generation-round counter that seeds the `random` rule: saved in every checkpoint
    (trainer_state.json, `stateful_callbacks.PODSRound`) and restored when training resumes, so
    the draws continue instead of repeating those of the first rounds."""

    def __init__(self, round: int = 0):
        self.round = round

    def state(self) -> dict:
        return {"args": {"round": self.round}, "attributes": {}}

    def on_train_begin(self, args, state, control, **kwargs):
        if state.global_step > 0:  # resumed from a checkpoint
            saved = (state.stateful_callbacks or {}).get(type(self).__name__)
            if not isinstance(saved, dict):
                raise RuntimeError("this checkpoint has no PODS round counter (not written by a PODSTrainer?): "
                                   "resume it with the trainer that wrote it")
            self.round = saved["args"]["round"]


class PODSMixin:
    """Down-sampling on top of a GRPOTrainer class (TRL's, or Unsloth's patched one)."""

    def _pods_setup(self):
        args = self.args
        if args.pods_m > self.num_generations:
            raise ValueError(f"pods_m={args.pods_m} exceeds num_generations={self.num_generations}")
        self.add_callback(PODSRound())  # generation rounds so far; seeds `random` identically on all processes
        self._pods_rewards_per_func = None
        self.pods_last_selection: dict | None = None
        self._pods_accuracy = args.pods_accuracy_reward or self.reward_func_names[0]
        if self._pods_accuracy not in self.reward_func_names:
            raise ValueError(f"pods_accuracy_reward={args.pods_accuracy_reward!r} is not one of the reward functions "
                             f"{self.reward_func_names}")
        self._pods_sampler = None  # the lab's rounds (pods/integrations/trl/rounds.py), or TRL's sampler's prompts
        self._pods_lab = Lab(lab_view(args), num_prompts=max(self._pods_num_prompts(), 1), seed=args.seed)
        if lab_mode(args):
            self._pods_sampler = TRLSampler(self, self._pods_lab, self._pods_accuracy, args.seed)
        if args.pods_token_mask != "none":  # TRL computes the token entropies and calls get_high_entropy_mask
            self.top_entropy_quantile = args.pods_token_mask_quantile
        self._pods_books = PODSBooks(budget=args.pods_token_budget, weight=args.pods_token_budget_weight,
                                     metrics=self._metrics["train"], total=self._pods_sum,
                                     main=self.accelerator.is_main_process,
                                     run_dir=args.output_dir,
                                     ledger_meta=self._pods_ledger_meta() if args.pods_ledger else None)
        self.add_callback(self._pods_books)
        self._pods_advantages = None  # the micro-batch's advantages, for adv_entropy_top (compute_loss)

    def _pods_sum(self, value: float) -> float:
        """`value` summed over the processes."""
        acc = self.accelerator
        return float(acc.reduce(torch.tensor(value, device=acc.device), reduction="sum"))

    def _pods_num_prompts(self) -> int:
        """The training prompts the lab draws from by index (lab mode needs a map-style dataset)."""
        try:
            return len(self.train_dataset)
        except TypeError:
            if lab_mode(self.args):
                raise ValueError("the PODS lab (pods_prompt_rule, pods_allocation, pods_dynamic_sampling, pods_ledger, "
                                 "pods_rule_scope, pods_advantage_over) draws prompts by index: pass a map-style "
                                 "datasets.Dataset") from None
            return 0

    def _pods_ledger_meta(self) -> dict:
        """The run's settings a replay of its ledger needs (ledger/_ledger.json; the keys of train.py's)."""
        a, view = self.args, lab_view(self.args)
        keys = ("n", "m", "rule", "rule_scope", "prompts_per_step", "prompt_rule", "prompt_pool", "allocation",
                "allocation_budget", "token_mask", "m_schedule", "advantage_over", "dynamic_sampling")
        return {**{k: view[k] for k in keys}, "scale_rewards": self.scale_rewards, "advantage_std": "sample",
                "prompt_rule_options": dict(a.pods_prompt_rule_options or {}),
                "allocation_options": dict(a.pods_allocation_options or {}), "algorithm": "pods", "seed": a.seed,
                "accuracy_reward": self._pods_accuracy, "rewards": list(self.reward_func_names),
                "num_prompts": self._pods_num_prompts(), "trainer": "trl"}

    def _pods_m(self) -> int:
        """m at the step in progress (pods_m, or its schedule's value)."""
        return self._pods_lab.m(self.state.global_step)

    @property
    def _pods_counter(self) -> PODSRound:
        return next(cb for cb in self.callback_handler.callbacks if isinstance(cb, PODSRound))

    def _calculate_rewards(self, *args, **kwargs):
        rewards_per_func = super()._calculate_rewards(*args, **kwargs)  # [G * n, F], gathered over processes
        self._pods_rewards_per_func = rewards_per_func
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        if self.model.training and self._pods_sampler is not None:
            return self._pods_lab_step()
        self._pods_rewards_per_func = None
        output = super()._generate_and_score_completions(inputs)
        if not self.model.training:  # evaluation: TRL's n_eval completions, nothing dropped
            return output
        if self._pods_rewards_per_func is None:
            raise RuntimeError(
                "PODS could not read the gathered rewards: this GRPOTrainer never called _calculate_rewards "
                "(an incompatible TRL or Unsloth version?)"
            )
        return self._pods_downsample(output, len(inputs))

    # ----------------------------------------------------------------------------------------- the lab (rounds)

    def _pods_lab_step(self) -> dict:
        """One step of the lab: rounds through pods.core.collect (prompt rule, allocation, dynamic sampling), the
        prompt rule's history and group filter, the kept rows' advantages, the books; this process's output."""
        a, lab, sampler, step = self.args, self._pods_lab, self._pods_sampler, self.state.global_step
        m = self._pods_m()
        sampler.begin(step=step, m=m)
        batch = collect(sampler, sampler.B, dynamic=a.pods_dynamic_sampling, metric=a.pods_dynamic_sampling_metric,
                        max_rounds=a.pods_max_generation_rounds, short=a.pods_short_batch,
                        budget=a.pods_allocation_budget)
        lab.observe(*generated(batch))  # the prompt rule's history: every group generated, on every process alike
        batch = subset(batch, lab.keep_groups(batch.total))  # a prompt rule's group filter (RAGEN's SNR)
        idx, adv = plan_update(batch.total, "pods", m, a.pods_rule, scale=self.scale_rewards, kept=batch.idx,
                               over=a.pods_advantage_over)  # [G, k] (-1: none under pods_rule_scope=batch)
        output = sampler.output(batch, idx, adv)
        self._pods_trim(output)
        masked = a.pods_token_mask != "none"
        self._pods_books.generated(
            lengths=[rnd.rollouts.completion_lengths()[rnd.drawn()] for rnd, _, _ in batch.seen],
            rollouts_trained=int((idx >= 0).sum()), prompts_skipped=sum(len(rnd.skipped) for rnd, _, _ in batch.seen),
            rounds=batch.rounds, trained_tokens=None if masked else float(output["num_items_in_batch"]))
        if a.pods_ledger:
            start = time.perf_counter()
            rows = step_rows(step + 1, batch, accuracy=self._pods_accuracy)  # every process has the whole step
            self._pods_books.record(step + 1, rows)  # the main process writes it
            self._metrics["train"]["pods/ledger_seconds"].append(time.perf_counter() - start)
        if len(batch.prompts):  # [G, k] kept rewards of the trained groups (none: a step that trains no group)
            kept = torch.where(idx >= 0, batch.total.gather(1, idx.clamp(min=0)), torch.nan)  # NaN at -1
            self._pods_log(batch.total, idx, kept, False, step)
        metrics = self._metrics["train"]
        metrics["pods/generation_rounds"].append(float(batch.rounds))
        metrics["pods/groups_trained"].append(float(len(batch.prompts)))
        metrics["pods/prompts_skipped"].append(float(sum(len(rnd.skipped) for rnd, _, _ in batch.seen)))
        metrics["pods/short_batch"].append(float(batch.short))
        self._pods_completions_log_lab(batch, idx, adv)
        self.pods_last_batch = {"batch": batch, "idx": idx, "advantages": adv, "m": m}
        return output

    def _pods_generate(self, rows: list[dict], k: int) -> dict:
        """TRL's generation and scoring of this process's `rows`, in groups of k (TRL's num_generations for the
        call); the gathered rewards stay in _pods_rewards_per_func."""
        self._pods_rewards_per_func = None
        n, self.num_generations = self.num_generations, k
        try:
            output = super()._generate_and_score_completions(rows)
        finally:
            self.num_generations = n
        if self._pods_rewards_per_func is None:
            raise RuntimeError("PODS could not read the gathered rewards: this GRPOTrainer never called "
                               "_calculate_rewards (an incompatible TRL or Unsloth version?)")
        return output

    def _pods_lab_state(self) -> dict:
        sampler = self._pods_sampler
        ledger = self._pods_books.ledger
        return {"lab": self._pods_lab.state_dict(), "position": sampler.position,
                "select": sampler.generator.get_state(), "ledger_id": None if ledger is None else ledger.id}

    def _save_checkpoint(self, model, trial):
        if self._pods_sampler is not None and self.args.should_save:  # before trainer_state.json marks it complete
            self._pods_books.flush()  # the rollout ledger holds every checkpointed step
            folder = Path(self._get_output_dir(trial=trial)) / f"checkpoint-{self.state.global_step}"
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{LAB_FILE}.tmp"
            torch.save(self._pods_lab_state(), tmp)
            os.replace(tmp, folder / LAB_FILE)
        super()._save_checkpoint(model, trial)

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None or self._pods_sampler is None:
            return
        path = Path(checkpoint) / LAB_FILE
        if not path.is_file():
            raise RuntimeError(f"{checkpoint} has no {LAB_FILE} (the lab's prompt history, stream position and "
                               "selection generator): it was written without the PODS lab; resume it with the "
                               "settings it was written with")
        state = torch.load(path, map_location="cpu", weights_only=True)
        self._pods_lab.load_state_dict(state["lab"])
        self._pods_sampler.position = int(state["position"])
        self._pods_sampler.generator.set_state(state["select"])
        self._pods_books.ledger_id = state.get("ledger_id")  # the ledger this checkpoint was written with

    # ----------------------------------------------------------------------------------------- token masks, logs

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        self._pods_advantages = inputs.get("advantages")  # adv_entropy_top weighs each token's entropy by |A|
        return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                    num_items_in_batch=num_items_in_batch)

    def get_high_entropy_mask(self, entropies, mask, threshold):
        """TRL's entropy mask (pods_token_mask=entropy_top), or D3S's |advantage| x entropy (adv_entropy_top);
        counts the tokens kept for the cost ledger."""
        rule = self.args.pods_token_mask
        if rule == "adv_entropy_top" and self._pods_advantages is not None:
            a = self._pods_advantages.float().abs().view(-1, *[1] * (entropies.dim() - 1))
            entropies = entropies * a.to(entropies.device)
        kept = super().get_high_entropy_mask(entropies, mask, threshold)
        if rule != "none" and self.model.training:
            self._pods_books.trained(int(kept.sum()))
        return kept

    def log(self, logs: dict, start_time: float | None = None) -> None:
        if self.model.training and self._pods_books.totals and not any(k.startswith("eval_") for k in logs):
            logs = {**logs, **self._pods_books.totals}  # the cost ledger's running totals, exact
        super().log(logs, start_time)

    def _pods_rewards(self) -> torch.Tensor:
        """[G * n] weighted reward sum as TRL computes it; NaN where no reward function scored."""
        per_func = self._pods_rewards_per_func  # [N, F]
        rewards = (per_func * self.reward_weights.to(per_func.device).unsqueeze(0)).nansum(dim=1)
        rewards[torch.isnan(per_func).all(dim=1)] = torch.nan
        return rewards.float().cpu()

    def _pods_select(self, rewards: torch.Tensor, lengths: torch.Tensor | None = None, m: int | None = None):
        """rewards [G, n] (NaN: unscorable), lengths [G, n] completion tokens (rules that need them) ->
        kept [G, m], kept rewards [G, m] (NaN kept), advantages [G, m].

        The selection sees an unscorable rollout at its group's mean; the advantages leave it out of
        the kept mean and std and give it 0 (group_advantages), as TRL's nanmean / nanstd do.
        """
        m, rule, scale = m or self.args.pods_m, self.args.pods_rule, self.scale_rewards
        fill = torch.nan_to_num(torch.nanmean(rewards, dim=1, keepdim=True), nan=0.0)  # [G, 1]
        filled = torch.where(torch.isnan(rewards), fill, rewards)  # [G, n]
        generator = selection_generator(self.args.seed, self._pods_counter.round)
        kept = select(filled, m, rule, generator=generator, lengths=lengths)  # [G, m]
        kept_rewards = rewards.gather(1, kept)  # [G, m]
        adv = group_advantages(kept_rewards, scale=scale)  # TRL's scale_rewards: group | batch | none
        return kept, kept_rewards, adv

    def _pods_downsample(self, output: dict, local_rows: int) -> dict:
        acc = self.accelerator
        procs, rank, n = acc.num_processes, acc.process_index, self.num_generations
        rewards = self._pods_rewards()  # [N]
        if rewards.numel() != local_rows * procs or rewards.numel() % n:
            raise RuntimeError(
                f"PODS expected {procs} processes x {local_rows} completions = whole groups of n={n}, "
                f"but TRL gathered {rewards.numel()} rewards"
            )
        G = rewards.numel() // n
        tokens = output["completion_mask"] * output.get("tool_mask", 1)  # [local rows, T] tokens generated
        lengths = acc.gather(tokens.sum(1)).float().cpu().view(G, n)  # in the rewards' (process-major) order
        kept, kept_rewards, adv = self._pods_select(rewards.view(G, n), lengths if "lengths" in NEEDS[self.args.pods_rule]
                                                    else None, m=self._pods_m())
        rows = (torch.arange(G).unsqueeze(1) * n + kept).flatten()  # [G * m] global row of each kept rollout
        order = rows.argsort()
        rows, adv_flat = rows[order], adv.flatten()[order]
        share = rows.numel() // procs
        if share * procs != rows.numel() or share % self.args.steps_per_generation:
            raise RuntimeError(
                f"{rows.numel()} kept rollouts do not split into {procs} processes x steps_per_generation="
                f"{self.args.steps_per_generation} equal micro-batches; check per_device_train_batch_size * m / n"
            )
        mine = slice(rank * share, (rank + 1) * share)
        owner = rows // local_rows  # [G * m] process that generated each kept rollout
        local = bool((owner.view(procs, share) == torch.arange(procs).unsqueeze(1)).all())  # same on all ranks
        if local:
            new = self._pods_take_local(output, rows[mine] - rank * local_rows, local_rows)
        else:
            new = self._pods_take_gathered(output, rows[mine], local_rows)
        new["advantages"] = adv_flat[mine].to(output["advantages"].device, output["advantages"].dtype)
        mask = new["completion_mask"] if "tool_mask" not in new else new["completion_mask"] * new["tool_mask"]
        new["num_items_in_batch"] = acc.gather(mask.sum()).sum()  # tokens in the kept batch, all processes
        self._pods_trim(new)
        self._pods_log(rewards.view(G, n), kept, kept_rewards, local, self._pods_counter.round)
        self._pods_books.generated(lengths=[lengths.flatten()], rollouts_trained=kept.numel(), prompts_skipped=0,
                                   rounds=1, trained_tokens=None if self.args.pods_token_mask != "none"
                                   else float(new["num_items_in_batch"]))
        self._pods_completions_log(kept, adv)
        counter = self._pods_counter
        self.pods_last_selection = {"round": counter.round, "rewards": rewards.view(G, n), "kept": kept,
                                    "advantages": adv, "rows": rows[mine], "local": local}
        counter.round += 1
        return new

    def _pods_completions_log(self, kept: torch.Tensor, adv: torch.Tensor) -> None:
        """TRL's completions log (log_completions) shows what was trained: the round's G x n rows with pods'
        advantage for the kept m of each group (NaN for the others) and a `pods_kept` column."""
        G, n = kept.shape[0], self.num_generations
        shown = torch.full((G, n), float("nan")).scatter_(1, kept, adv.float())  # [G, n]
        flags = torch.zeros(G, n, dtype=torch.bool).scatter_(1, kept, True)
        queue = self._logs["advantages"]
        for _ in range(min(G * n, len(queue))):
            queue.pop()
        queue.extend(shown.flatten().tolist())
        self._logs["extra"]["pods_kept"].extend(flags.flatten().tolist())

    def _pods_completions_log_lab(self, batch, idx: torch.Tensor, adv: torch.Tensor) -> None:
        """The lab's completions log: every rollout generated this step (all rounds), its rewards, pods'
        advantage where it was trained (NaN elsewhere) and `pods_kept`; TRL's calls' own rows replaced."""
        if not self.log_completions:
            return
        logs = {"prompt": deque(), "completion": deque(), "advantages": deque(), "images": deque(),
                "rewards": defaultdict(deque), "extra": defaultdict(deque)}
        for rnd, _, places in batch.seen:
            drawn = rnd.drawn()  # [B, N] entries that hold a rollout
            for b, g in enumerate(places):
                prompt = self.train_dataset[rnd.prompts[b]]["prompt"]
                cols = drawn[b].nonzero().flatten().tolist()
                ids = [rnd.rollouts.completion_ids[b * rnd.rollouts.n + j] for j in cols]
                logs["prompt"].extend([prompt] * len(cols))
                logs["completion"].extend(self.processing_class.batch_decode(ids, skip_special_tokens=True))
                for name, values in rnd.per_fn.items():
                    logs["rewards"][name].extend(values[b, cols].tolist())
                trained = {int(j): float(a) for j, a in zip(idx[g], adv[g]) if j >= 0} if g >= 0 else {}
                logs["advantages"].extend(trained.get(j, float("nan")) for j in cols)
                logs["extra"]["pods_kept"].extend(j in trained for j in cols)
        self._logs = logs

    @staticmethod
    def _pods_check_key(key, value, local_rows):
        rowwise = (isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == local_rows) or (
            isinstance(value, list) and len(value) == local_rows)
        if not rowwise and not (isinstance(value, torch.Tensor) and value.dim() == 0) and value is not None:
            raise NotImplementedError(
                f"PODS cannot down-sample the generation output {key!r} (not one entry per completion); "
                "multimodal inputs are not supported"
            )
        return rowwise

    def _pods_take_local(self, output: dict, idx: torch.Tensor, local_rows: int) -> dict:
        new = {}
        for key, value in output.items():
            if self._pods_check_key(key, value, local_rows):
                new[key] = value[idx.to(value.device)] if isinstance(value, torch.Tensor) else [value[i] for i in idx]
            elif key != "num_items_in_batch":
                new[key] = value
        return new

    def _pods_take_gathered(self, output: dict, rows: torch.Tensor, local_rows: int) -> dict:
        """All processes gather every row-aligned output, then keep their share `rows` (global indices)."""
        from accelerate.utils import gather_object

        acc, new = self.accelerator, {}
        pad_id = self.processing_class.pad_token_id if hasattr(self.processing_class, "pad_token_id") else 0
        for key, value in output.items():  # same keys in the same order on every process
            if key in ("advantages", "num_items_in_batch") or not self._pods_check_key(key, value, local_rows):
                if key not in ("advantages", "num_items_in_batch"):
                    new[key] = value
                continue
            if isinstance(value, list):
                everything = gather_object(value)  # collective: called once per key on every process
                new[key] = [everything[i] for i in rows.tolist()]
                continue
            if value.dim() >= 2:
                value = acc.pad_across_processes(value, dim=1, pad_index=pad_id if key.endswith("_ids") else 0,
                                                 pad_first=key in LEFT_PADDED)
            new[key] = acc.gather(value.contiguous())[rows.to(value.device)]
        return new

    def _pods_trim(self, batch: dict):
        """Drop completion columns that are padding in every kept row (right padding: causal-safe)."""
        mask = batch["completion_mask"]  # [B, T]
        width = mask.shape[1]
        used = int(mask.any(dim=0).nonzero().max().item()) + 1 if mask.any() else 1
        multiple = getattr(self, "pad_to_multiple_of", None)
        if multiple:
            used = min(width, -(-used // multiple) * multiple)
        if used == width:
            return
        for key, value in batch.items():
            if (key not in LEFT_PADDED and isinstance(value, torch.Tensor) and value.dim() == 2
                    and value.shape[1] == width):
                batch[key] = value[:, :used]

    def _pods_log(self, rewards, kept, kept_rewards, local, round_):
        metrics = self._metrics["train"]
        metrics["pods/round"].append(float(round_))  # rounds so far (mean over a logged step's rounds)
        centred = kept_rewards - torch.nanmean(kept_rewards, dim=1, keepdim=True)  # [G, m], NaN: unscorable
        spread = torch.nanmean(centred ** 2, dim=1).sqrt().nan_to_num(0.0)  # [G] population std of the scored
        metrics["pods/kept_reward"].append(torch.nanmean(kept_rewards).nan_to_num(0.0).item())
        metrics["pods/kept_reward_std"].append(spread.mean().item())
        metrics["pods/frac_kept_zero_std"].append((spread == 0).float().mean().item())
        metrics["pods/generated_reward_std"].append(torch.nan_to_num(rewards).std(dim=1, unbiased=False).mean().item())
        metrics["pods/regrouped"].append(0.0 if local else 1.0)


def pods_trainer_class(base: type = GRPOTrainer) -> type:
    """A PODS trainer class on top of `base` (TRL's GRPOTrainer, or Unsloth's patched one)."""

    class _PODSTrainer(PODSMixin, PromptRepeatsMixin, base):
        def __init__(self, *args, **kwargs):
            config = kwargs.get("args", args[2] if len(args) > 2 else None)
            if getattr(config, "pods_m", None) is None:  # before the model loads
                raise TypeError(f"{name} needs args=PODSConfig(..., pods_m=m), got "
                                f"{type(config).__name__}; for plain GRPO use trl.GRPOTrainer")
            super().__init__(*args, **kwargs)
            self._pods_setup()

    name = "PODSTrainer" if base is GRPOTrainer else f"PODS{base.__name__}"
    _PODSTrainer.__name__ = _PODSTrainer.__qualname__ = name
    globals().setdefault(name, _PODSTrainer)
    return _PODSTrainer


PODSTrainer = pods_trainer_class(GRPOTrainer)


def grpo_ga_trainer_class(base: type = GRPOTrainer) -> type:
    """`base` (TRL's GRPOTrainer or Unsloth's) with the `prompt_repeats` sampler: the GRPO-GA baseline,
    trained on every rollout; with prompt_repeats = 1 (or a plain GRPOConfig) it is `base` unchanged."""
    name = "GRPOGATrainer" if base is GRPOTrainer else f"GRPOGA{base.__name__}"
    cls = type(name, (PromptRepeatsMixin, base), {"__module__": __name__, "__doc__": grpo_ga_trainer_class.__doc__})
    globals().setdefault(name, cls)
    return cls


GRPOGATrainer = grpo_ga_trainer_class(GRPOTrainer)
