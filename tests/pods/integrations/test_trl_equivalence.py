"""PODSTrainer with m = n and rule `none` trains exactly like trl.GRPOTrainer (issue 10.2).

    uv run pytest tests/pods/integrations/test_trl_equivalence.py     (~30 s: 8 tiny 2-step runs)

Same seed, same tiny Qwen2 built in code, same data and rewards, two optimizer steps of two
accumulation micro-batches each: every parameter must agree within 1e-6, in each of TRL's
`scale_rewards` modes (group, batch, none) and for the token-normalised losses `dapo` (TRL's
default: normalised by the generation batch's token count, which PODS recomputes) and `bnpo` (the
paper presets' loss: normalised per micro-batch). Any difference in advantages, token counts,
column trimming, row order or random-number consumption shows up here.
"""

import os

import pytest
import torch

if not torch.cuda.is_available():  # TRL 1.15 patches in a Triton kernel; interpret it on CPU
    os.environ.setdefault("TRITON_INTERPRET", "1")

from pods.integrations.trl import PODSConfig, PODSTrainer

N = 4  # n = m: every rollout kept


LENGTHS: list[int] = []  # completion lengths the rewards saw


def _reward(completions, completion_ids, **kwargs):
    # deterministic, spread within groups and uneven across them (so group and batch std differ)
    LENGTHS.extend(len(ids) for ids in completion_ids)
    return [float(sum(ids) % 5) + 0.5 * len(ids) for ids in completion_ids]


def _train(tmp_path, pods: bool, **kw) -> dict:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from pods.backends.tiny import byte_tokenizer, tiny_causal_lm

    tok = byte_tokenizer()
    model = tiny_causal_lm(tok, seed=3)
    common = dict(output_dir=str(tmp_path), num_generations=N, per_device_train_batch_size=4,
                  gradient_accumulation_steps=2, max_steps=2, max_completion_length=8, learning_rate=1e-2,
                  use_cpu=True, report_to=[], save_strategy="no", seed=11, logging_steps=1, **kw)
    args = PODSConfig(**common, pods_m=N, pods_rule="none") if pods else GRPOConfig(**common)
    cls = PODSTrainer if pods else GRPOTrainer
    trainer = cls(model=model, reward_funcs=[_reward], args=args, processing_class=tok,
                  train_dataset=Dataset.from_dict({"prompt": [f"{i}+{i}=" for i in range(16)]}))
    trainer.train()
    return {k: v.detach().clone() for k, v in trainer.model.named_parameters()}


SLOW = pytest.mark.slow  # the other pairs: each scale and each loss is in the default tier once


@pytest.mark.parametrize("scale, loss_type", [
    ("group", "dapo"), ("batch", "bnpo"), ("none", "dapo"),
    pytest.param("group", "bnpo", marks=SLOW), pytest.param("batch", "dapo", marks=SLOW),
    pytest.param("none", "bnpo", marks=SLOW)], ids=lambda v: v)
def test_pods_keeping_all_trains_like_grpo(tmp_path, scale, loss_type):
    grpo = _train(tmp_path / "grpo", pods=False, scale_rewards=scale, loss_type=loss_type)
    pods = _train(tmp_path / "pods", pods=True, scale_rewards=scale, loss_type=loss_type)
    assert grpo.keys() == pods.keys()
    worst = max((grpo[k] - pods[k]).abs().max().item() for k in grpo)
    assert worst <= 1e-6, f"largest parameter difference {worst:.3g}"
    before = _initial()
    assert any(not torch.equal(before[k], grpo[k]) for k in grpo)  # the runs did train
    assert min(LENGTHS) < max(LENGTHS) == 8  # padded rows: token counts and masks matter


def _initial() -> dict:
    from pods.backends.tiny import byte_tokenizer, tiny_causal_lm

    return {k: v.detach() for k, v in tiny_causal_lm(byte_tokenizer(), seed=3).named_parameters()}
