"""`prompt_repeats` (the authors' 8-GPU layout: one prompt per process, k groups of n of it), one process.

    uv run pytest tests/pods/integrations/test_trl_sampler.py     (~20 s: two tiny 2-step runs)

The 2-process check (each process its own single prompt) is in test_trl_multiprocess.py.
"""

import os
from collections import Counter

import pytest
import torch

if not torch.cuda.is_available():  # TRL 1.15 patches in a Triton kernel; interpret it on CPU
    os.environ.setdefault("TRITON_INTERPRET", "1")

from pods.integrations.trl import (
    GRPOGAConfig,
    GRPOGATrainer,
    PODSConfig,
    PODSTrainer,
    grpo_ga_kwargs,
    repeat_prompt_sampler,
)


def test_sampler_repeats_each_prompt_k_groups_in_a_row():
    idx = list(repeat_prompt_sampler(range(10), num_generations=2, prompt_repeats=3, generation_batch_size=12,
                                     repeat_count=2, shuffle=True, seed=5))
    rounds = [idx[i:i + 12] for i in range(0, len(idx), 12)]
    assert len(rounds) == 5 * 2  # 10 prompts, 2 per round of 12, each round given twice (accumulation reuse)
    for a, b in zip(rounds[::2], rounds[1::2]):
        assert a == b
        assert a[:6] == [a[0]] * 6 and a[6:] == [a[6]] * 6 and a[0] != a[6]  # 3 groups of 2 per prompt
    assert sorted(x for r in rounds[::2] for x in (r[0], r[6])) == list(range(10))  # each prompt once per epoch
    with pytest.raises(ValueError, match="multiple of num_generations"):
        repeat_prompt_sampler(range(10), num_generations=2, prompt_repeats=4, generation_batch_size=12,
                              repeat_count=1, shuffle=False, seed=0)


def test_config_checks_prompt_repeats(tmp_path):
    base = dict(output_dir=str(tmp_path), num_generations=4, per_device_train_batch_size=8, use_cpu=True)
    assert GRPOGAConfig(**base, prompt_repeats=2).prompt_repeats == 2
    with pytest.raises(ValueError, match="multiple of 12"):
        GRPOGAConfig(**base, prompt_repeats=3)
    with pytest.raises(ValueError, match="positive integer"):
        PODSConfig(**base, pods_m=2, prompt_repeats=0)


def test_grpo_ga_kwargs_keep_prompts_per_step():
    pods = dict(num_generations=128, pods_m=32, per_device_train_batch_size=128, gradient_accumulation_steps=4,
                prompt_repeats=4)
    ga = grpo_ga_kwargs(pods)  # the paper's GRPO-GA: n = m = 32, ga 16, one prompt x 512 per process
    assert ga == dict(num_generations=32, per_device_train_batch_size=32, gradient_accumulation_steps=16,
                      prompt_repeats=16)
    per_process = lambda kw: kw["per_device_train_batch_size"] * kw["gradient_accumulation_steps"]  # noqa: E731
    per_prompt = lambda kw: kw["num_generations"] * kw["prompt_repeats"]  # noqa: E731
    assert per_process(ga) == per_process(pods) == per_prompt(ga) == per_prompt(pods) == 512
    assert grpo_ga_kwargs({**pods, "prompt_repeats": 1})["prompt_repeats"] == 4  # same prompts per step as PODS
    assert grpo_ga_kwargs(pods, group_size=128)["prompt_repeats"] == 4


def _run(tmp_path, cls, args):
    from datasets import Dataset

    from pods.backends.tiny import byte_tokenizer, tiny_causal_lm

    seen = []  # per reward call: (prompts, rewards)

    def reward_fn(prompts, completion_ids, **kwargs):
        rewards = [float(sum(ids) % 3) for ids in completion_ids]
        seen.append((list(prompts), rewards))
        return rewards

    class Recorder(cls):
        def _compute_loss(self, model, inputs):
            self.batches.append(inputs["advantages"].tolist())
            return super()._compute_loss(model, inputs)

    tok = byte_tokenizer()
    trainer = Recorder(model=tiny_causal_lm(tok), reward_funcs=[reward_fn], args=args, processing_class=tok,
                       train_dataset=Dataset.from_dict({"prompt": [f"{i}-{i}=" for i in range(20)]}))
    trainer.batches = []
    trainer.train()
    return trainer, seen


def _common(tmp_path):
    return dict(output_dir=str(tmp_path), max_steps=2, max_completion_length=6, learning_rate=1e-2, use_cpu=True,
                report_to=[], save_strategy="no", seed=0, logging_steps=1)


def test_pods_one_prompt_per_step_groups_selected_separately(tmp_path):
    from pods.core.advantages import group_advantages
    from pods.core.downsample import select

    args = PODSConfig(**_common(tmp_path), num_generations=4, pods_m=2, per_device_train_batch_size=4,
                      gradient_accumulation_steps=2, prompt_repeats=2)  # 1 prompt x 8 = 2 groups of 4 per step
    trainer, seen = _run(tmp_path, PODSTrainer, args)
    assert len(seen) == 2 and len({p for prompts, _ in seen for p in prompts}) == 2  # a new prompt each step
    assert [len(b) for b in trainer.batches] == [2] * 4  # 2 steps x 2 micro-batches of 4 * 2 / 4 sequences
    for step, (prompts, rewards) in enumerate(seen):
        assert len(prompts) == 8 and len(set(prompts)) == 1
        r = torch.tensor(rewards).view(2, 4)  # [G=2, n=4]: the two groups of the one prompt
        expected = group_advantages(r.gather(1, select(r, 2, "max_variance")))  # each group on its own
        trained = Counter(round(a, 4) for batch in trainer.batches[2 * step:2 * step + 2] for a in batch)
        assert trained == Counter(round(a, 4) for a in expected.flatten().tolist())


def test_grpo_ga_one_prompt_per_step_all_trained(tmp_path):
    kw = grpo_ga_kwargs(dict(num_generations=4, pods_m=2, per_device_train_batch_size=4,
                             gradient_accumulation_steps=2, prompt_repeats=2))
    args = GRPOGAConfig(**_common(tmp_path), **kw)  # groups of 2, 4 accumulation steps, 1 prompt x 8 per step
    trainer, seen = _run(tmp_path, GRPOGATrainer, args)
    assert (args.num_generations, args.gradient_accumulation_steps, args.prompt_repeats) == (2, 4, 4)
    assert len(seen) == 2
    for step, (prompts, rewards) in enumerate(seen):
        assert len(prompts) == 8 and len(set(prompts)) == 1
        r = torch.tensor(rewards).view(4, 2)  # four groups of 2 of the same prompt, normalised separately
        expected = (r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)
        trained = Counter(round(a, 4) for b in trainer.batches[4 * step:4 * step + 4] for a in b)
        assert trained == Counter(round(a, 4) for a in expected.flatten().tolist())  # all 8 trained
