"""`prompt_repeats`: each sampled prompt fills k consecutive groups of n completions (the authors' 8-GPU layout).

    args = PODSConfig(..., num_generations=128, pods_m=32, per_device_train_batch_size=128,
                      gradient_accumulation_steps=4, prompt_repeats=4)   # 1 prompt x 512 per process

TRL's sampler gives every group of n = num_generations completions its own prompt. The authors'
8-GPU fork gave each process ONE prompt per optimizer step and generated n x ga completions of it
(open-r1/src/open_r1/grpo_trainer.py:771-780 at 3fc107e: RepeatSampler(mini_repeat_count=n*gas,
batch_size=num_procs); :721 loader batch n*gas), which it split into ga groups of n, each selected
and normalised on its own (:1104-1136). With `prompt_repeats = k` the sampler repeats every drawn
prompt k * n times in a row, so TRL's consecutive groups of n hold k groups of that prompt; when
per_device_train_batch_size * steps_per_generation == k * n each process holds exactly one prompt.
Everything after the sampler (generation, grouping, advantages, PODS selection) is unchanged:
each group is still one prompt's n completions.

The sampler is TRL's own `RepeatSampler` with k * n in place of n; repeats across the
steps_per_generation * num_iterations accumulation steps stay TRL's (the authors' fork drew a fresh
batch at every accumulation step and used only the first: see docs/multi-gpu.md "Schedule").
"""

from __future__ import annotations

from torch.utils.data import IterableDataset as TorchIterableDataset
from trl.trainer.utils import RepeatSampler


def repeat_prompt_sampler(dataset, *, num_generations: int, prompt_repeats: int, generation_batch_size: int,
                          repeat_count: int, shuffle: bool, seed: int) -> RepeatSampler:
    """Indices of `dataset`: each drawn prompt k * n times in a row, generation_batch_size / (k * n)
    prompts per generation round, each round repeated `repeat_count` times (TRL's accumulation reuse)."""
    per_prompt = num_generations * prompt_repeats
    if generation_batch_size % per_prompt:
        raise ValueError(f"generation_batch_size={generation_batch_size} is not a multiple of "
                         f"num_generations * prompt_repeats = {per_prompt}")
    return RepeatSampler(data_source=dataset, mini_repeat_count=per_prompt,
                         batch_size=generation_batch_size // per_prompt, repeat_count=repeat_count,
                         shuffle=shuffle, seed=seed)


class PromptRepeatsMixin:
    """GRPOTrainer mixin: TRL's training sampler with `args.prompt_repeats` groups per prompt."""

    def _get_train_sampler(self, dataset=None):
        k = getattr(self.args, "prompt_repeats", 1)
        if k == 1:
            return super()._get_train_sampler(dataset)
        return repeat_prompt_sampler(self.train_dataset if dataset is None else dataset,
                                     num_generations=self.num_generations, prompt_repeats=k,
                                     generation_batch_size=self.args.generation_batch_size,
                                     repeat_count=self.num_iterations * self.args.steps_per_generation,
                                     shuffle=self.shuffle_dataset, seed=self.args.seed)

    def get_train_dataloader(self):
        import datasets

        k = getattr(self.args, "prompt_repeats", 1)
        if k > 1 and isinstance(self.train_dataset, (datasets.IterableDataset, TorchIterableDataset)):
            raise ValueError(f"prompt_repeats={k} needs a map-style training dataset (TRL streams iterable "
                             "datasets without a sampler): pass a datasets.Dataset or set prompt_repeats=1")
        return super().get_train_dataloader()
