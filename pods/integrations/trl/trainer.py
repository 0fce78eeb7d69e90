"""PODSTrainer: TRL's GRPOTrainer that generates n completions per prompt and trains on m.

    from pods.integrations.trl import PODSTrainer
    PODSTrainer(model=..., reward_funcs=[...], args=PODSConfig(...), train_dataset=ds).train()

Only TRL's extension points are used: `_calculate_rewards` (to read the rewards TRL gathered
over all processes) and `_generate_and_score_completions` (to down-sample its output). The batch
bookkeeping: docs/multi-gpu.md.
"""

from __future__ import annotations

import torch
from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState
from trl import GRPOTrainer

from pods.core.advantages import group_advantages
from pods.core.downsample import NEEDS, select
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
        if self.args.pods_m > self.num_generations:
            raise ValueError(f"pods_m={self.args.pods_m} exceeds num_generations={self.num_generations}")
        self.add_callback(PODSRound())  # generation rounds so far; seeds `random` identically on all processes
        self._pods_rewards_per_func = None
        self.pods_last_selection: dict | None = None

    @property
    def _pods_counter(self) -> PODSRound:
        return next(cb for cb in self.callback_handler.callbacks if isinstance(cb, PODSRound))

    def _calculate_rewards(self, *args, **kwargs):
        rewards_per_func = super()._calculate_rewards(*args, **kwargs)  # [G * n, F], gathered over processes
        self._pods_rewards_per_func = rewards_per_func
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
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

    def _pods_rewards(self) -> torch.Tensor:
        """[G * n] weighted reward sum as TRL computes it; NaN where no reward function scored."""
        per_func = self._pods_rewards_per_func  # [N, F]
        rewards = (per_func * self.reward_weights.to(per_func.device).unsqueeze(0)).nansum(dim=1)
        rewards[torch.isnan(per_func).all(dim=1)] = torch.nan
        return rewards.float().cpu()

    def _pods_select(self, rewards: torch.Tensor, lengths: torch.Tensor | None = None):
        """rewards [G, n] (NaN: unscorable), lengths [G, n] completion tokens (rules that need them) ->
        kept [G, m], kept rewards [G, m] (NaN kept), advantages [G, m].

        The selection sees an unscorable rollout at its group's mean; the advantages leave it out of
        the kept mean and std and give it 0 (group_advantages), as TRL's nanmean / nanstd do.
        """
        m, rule, scale = self.args.pods_m, self.args.pods_rule, self.scale_rewards
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
        lengths = None
        if "lengths" in NEEDS[self.args.pods_rule]:  # gathered in the rewards' (process-major) order
            lengths = acc.gather(output["completion_mask"].sum(1)).float().cpu().view(G, n)
        kept, kept_rewards, adv = self._pods_select(rewards.view(G, n), lengths)  # [G, m] each
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
        counter = self._pods_counter
        self.pods_last_selection = {"round": counter.round, "rewards": rewards.view(G, n), "kept": kept,
                                    "advantages": adv, "rows": rows[mine], "local": local}
        counter.round += 1
        return new

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
