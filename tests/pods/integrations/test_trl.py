"""PODS in TRL's GRPOTrainer, one process: config checks, GRPO-GA kwargs, and two real training steps.

    uv run pytest tests/pods/integrations/test_trl.py      (~15 s: one tiny-Qwen2 run of 2 steps)

The training test checks, per generation round, that the rollouts in the loss are exactly the m
per prompt that `pods.core.downsample.select` picks from the rewards TRL logged, with advantages
recomputed over the kept m, in micro-batches of per_device_train_batch_size * m / n sequences,
and that the parameters change. The 2-process run is in test_trl_multiprocess.py.
"""

import os
from collections import Counter

import pytest
import torch

if not torch.cuda.is_available():  # TRL 1.15 patches in a Triton kernel; interpret it on CPU
    os.environ.setdefault("TRITON_INTERPRET", "1")

from pods.core.advantages import group_advantages
from pods.core.downsample import select
from pods.integrations.trl import PODSConfig, PODSTrainer, grpo_ga_kwargs, trl_reward_funcs

N, M, PER_DEVICE, GA = 4, 2, 4, 2  # n generated, m kept; 4 generated per accumulation step, 2 steps


def _config(tmp_path, **kw):
    base = dict(output_dir=str(tmp_path), num_generations=N, pods_m=M, per_device_train_batch_size=PER_DEVICE,
                gradient_accumulation_steps=GA, use_cpu=True, report_to=[], save_strategy="no")
    return PODSConfig(**{**base, **kw})


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(pods_m=3, per_device_train_batch_size=2), "multiple of 4"),  # 2 * 3 / 4 sequences per micro-batch
        (dict(pods_rule="median"), "valid rules: max_variance"),
        (dict(pods_m=None), "needs pods_m"),
        (dict(pods_m=1), "2..num_generations=4"),
        (dict(pods_m=5), "2..num_generations=4"),
        (dict(pods_rule="none"), "set pods_m = num_generations = 4"),
        (dict(multi_objective_aggregation="normalize_then_sum"), "sum_then_normalize"),
    ],
)
def test_config_rejects_bad_settings(tmp_path, kw, message):
    with pytest.raises(ValueError, match=message):
        _config(tmp_path, **kw)


def test_config_warns_about_vllm_correction_over_all_n(tmp_path):
    with pytest.warns(UserWarning, match="scores all n generated completions"):
        _config(tmp_path, use_vllm=True)  # TRL's default: correction on
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _config(tmp_path, use_vllm=True, vllm_importance_sampling_correction=False)


def test_config_micro_batch_and_generation_batch(tmp_path):
    args = _config(tmp_path, num_generations=8, pods_m=2, per_device_train_batch_size=8, gradient_accumulation_steps=3)
    assert args.pods_micro_batch_size == 2  # 8 * 2 / 8
    assert args.steps_per_generation == 3 and args.generation_batch_size == 24  # TRL's generated units
    with pytest.raises(ValueError, match="divisible by num_generations"):  # TRL's own check still applies
        _config(tmp_path, num_generations=8, pods_m=2, per_device_train_batch_size=4, gradient_accumulation_steps=1)


def test_config_pickles(tmp_path):  # the HF Trainer saves it as training_args.bin in every checkpoint
    import pickle

    args = pickle.loads(pickle.dumps(_config(tmp_path, pods_rule="random")))
    assert type(args) is PODSConfig and (args.pods_m, args.pods_rule, args.pods_micro_batch_size) == (M, "random", 2)


def test_trainer_needs_a_pods_config(tmp_path):
    from trl import GRPOConfig

    with pytest.raises(TypeError, match="needs args=PODSConfig"):
        PODSTrainer(model="never-loaded", reward_funcs=[], args=GRPOConfig(output_dir=str(tmp_path), use_cpu=True))


def test_grpo_ga_matches_paper_runs():
    pods = dict(num_generations=128, pods_m=32, per_device_train_batch_size=32, gradient_accumulation_steps=4,
                learning_rate=2e-5, pods_rule="max_variance")
    ga = grpo_ga_kwargs(pods)  # n32-m32-ga16, each prompt's 128 completions as 4 groups of 32
    assert ga == dict(num_generations=32, per_device_train_batch_size=8, gradient_accumulation_steps=16,
                      learning_rate=2e-5, prompt_repeats=4)
    generated = lambda kw: kw["per_device_train_batch_size"] * kw["gradient_accumulation_steps"]  # noqa: E731
    assert generated(ga) == generated(pods)  # same rollouts per optimizer step, all of them trained
    assert grpo_ga_kwargs(pods, group_size=128)["num_generations"] == 128
    assert grpo_ga_kwargs({**pods, "steps_per_generation": 2})["steps_per_generation"] == 8
    assert "steps_per_generation" not in grpo_ga_kwargs(pods) and grpo_ga_kwargs(
        {**pods, "steps_per_generation": None})["steps_per_generation"] is None
    with pytest.raises(ValueError, match="whole numbers"):
        grpo_ga_kwargs({**pods, "gradient_accumulation_steps": 1, "pods_m": 48})


def test_reward_adapter_takes_trl_calls():
    funcs, weights = trl_reward_funcs([{"name": "arithmetic", "weight": 1.0}, {"name": "tags", "weight": 0.1}])
    assert [f.__name__ for f in funcs] == ["arithmetic", "tags"] and weights == [1.0, 0.1]
    trl_kwargs = dict(prompts=["1+2=", "1+2="], completion_ids=[[1], [2]], answer=["0003", "0003"], digits=[1, 1],
                      trainer_state=None, log_extra=print, log_metric=print)
    assert funcs[0](completions=["0003", "0004"], **trl_kwargs) == [1.0, 0.0]
    chat = [[{"role": "assistant", "content": "0003"}], [{"role": "assistant", "content": "<think>x</think>"}]]
    assert funcs[0](completions=chat, **trl_kwargs) == [1.0, 0.0]
    assert funcs[1](completions=chat, **trl_kwargs) == [0.0, 0.5]
    with pytest.raises(ValueError, match="'answer' column"):
        funcs[0](completions=["1"], prompts=["p"])


def test_reward_adapters_gate_and_check_like_train_py(monkeypatch):
    from pods.errors import ConfigError, RewardError

    funcs, _ = trl_reward_funcs([{"name": "arithmetic"}, {"name": "tags", "weight": 0.1, "unless": "arithmetic"}])
    kw = dict(prompts=["1+2="] * 2, answer=["0003", "0003"])
    assert funcs[1](completions=["0003<think>", "0004<think>"], **kw) == [0.0, 0.25]  # credit for the wrong one only
    with pytest.raises(ConfigError, match=r"rewards\[0\] \(tags\): unknown key\(s\) unles"):
        trl_reward_funcs([{"name": "tags", "unles": "arithmetic"}])
    from pods import rewards

    monkeypatch.setitem(rewards.REGISTRY, "tags", lambda c, a, **k: [float("nan")] * len(c))
    bad, _ = trl_reward_funcs([{"name": "tags"}])
    with pytest.raises(RewardError, match="reward 'tags' on 2 completions returned NaN/inf"):
        bad[0](completions=["a", "b"], **kw)


def test_an_unscorable_rollout_is_left_out_of_the_kept_mean_and_std():
    """A NaN reward (no reward function scored it) enters neither the kept mean nor the std (TRL 1.15:
    nanmean, nanstd) and gets advantage 0."""
    from types import SimpleNamespace

    from trl.trainer.utils import nanstd

    nan = float("nan")
    rewards = torch.tensor([[1.0, nan, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0]])  # [G, n]
    fake = SimpleNamespace(args=SimpleNamespace(pods_m=4, pods_rule="max_variance", seed=0), scale_rewards="group",
                           _pods_counter=SimpleNamespace(round=0))
    kept, kept_rewards, adv = PODSTrainer._pods_select(fake, rewards)  # m = n: every rollout kept
    assert torch.isnan(kept_rewards[0]).sum() == 1 and not torch.isnan(adv).any()
    mean, sd = torch.nanmean(kept_rewards[0]), nanstd(kept_rewards[:1], dim=1)[0]  # over the scored [1, 0, 0]
    want = torch.nan_to_num((kept_rewards[0] - mean) / (sd + 1e-4), nan=0.0)
    assert torch.allclose(adv[0], want) and adv[0][torch.isnan(kept_rewards[0])].item() == 0.0
    assert adv[0].max().item() == pytest.approx((2 / 3) / (1 / 3 ** 0.5 + 1e-4), rel=1e-5)  # not [1, 1/3, 0, 0]'s


class _Recorder(PODSTrainer):
    """Records what the reward saw, what TRL logged, and every loss batch."""

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        if self.model.training:
            self.rounds.append(dict(logged=list(self._logs["rewards"]["reward_fn"])[-len(inputs):],
                                    losses=[], tokens=[], num_items=[]))
        return out

    def _compute_loss(self, model, inputs):
        ids = [tuple(r[m.bool()].tolist()) for r, m in zip(inputs["completion_ids"], inputs["completion_mask"])]
        self.rounds[-1]["losses"].append(list(zip(ids, inputs["advantages"].tolist())))
        self.rounds[-1]["tokens"].append(int(inputs["completion_mask"].sum()))
        self.rounds[-1]["num_items"].append(int(inputs["num_items_in_batch"]))
        return super()._compute_loss(model, inputs)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from datasets import Dataset

    from pods.backends.tiny import byte_tokenizer, tiny_causal_lm

    scored = []  # per reward call: [(completion ids, reward)] in row order

    def reward_fn(completions, completion_ids, **kwargs):
        rewards = [float(sum(ids) % 3) for ids in completion_ids]  # deterministic, spread within groups
        scored.append([(tuple(ids), r) for ids, r in zip(completion_ids, rewards)])
        return rewards

    tok = byte_tokenizer()
    model = tiny_causal_lm(tok)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    args = _config(tmp_path_factory.mktemp("trl"), max_steps=2, max_completion_length=8, learning_rate=1e-2,
                   logging_steps=1, seed=0)
    trainer = _Recorder(model=model, reward_funcs=[reward_fn], args=args, processing_class=tok,
                        train_dataset=Dataset.from_dict({"prompt": [f"{i}+{i}=" for i in range(32)]}))
    trainer.rounds = []
    trainer.train()
    return trainer, scored, before


def test_each_loss_holds_m_per_prompt(trained):
    trainer, scored, _ = trained
    assert len(trainer.rounds) == 2 and len(scored) == 2  # one generation round per optimizer step
    for rnd, calls in zip(trainer.rounds, scored):
        assert len(rnd["losses"]) == GA  # steps_per_generation micro-batches
        assert all(len(batch) == PER_DEVICE * M // N for batch in rnd["losses"])  # 2 = m per prompt
        group_of = {ids: i // N for i, (ids, _) in enumerate(calls)}
        counts = Counter(group_of[ids] for batch in rnd["losses"] for ids, _ in batch)
        assert counts == {g: M for g in range(PER_DEVICE * GA // N)}  # every prompt: exactly m rollouts


def test_kept_rollouts_are_select_of_logged_rewards(trained):
    trainer, scored, _ = trained
    for rnd, calls in zip(trainer.rounds, scored):
        logged = torch.tensor(rnd["logged"]).view(-1, N)  # [G, n] as TRL logged them
        assert logged.flatten().tolist() == [r for _, r in calls]
        kept = select(logged, M, "max_variance")  # [G, m]
        adv = group_advantages(logged.gather(1, kept))  # [G, m], over the kept m only
        expected = Counter((calls[g * N + j][0], round(adv[g, k].item(), 4))
                           for g in range(logged.shape[0]) for k, j in enumerate(kept[g].tolist()))
        trained_rows = Counter((ids, round(a, 4)) for batch in rnd["losses"] for ids, a in batch)
        assert trained_rows == expected
    assert trainer.pods_last_selection["local"]  # one process holds whole groups: no regrouping


def test_token_count_is_of_the_kept_rollouts(trained):
    trainer, _, _ = trained
    assert trainer.args.loss_type == "dapo"  # TRL's default: normalised by num_items_in_batch
    for rnd in trainer.rounds:  # the round's kept tokens, not the n generated
        assert rnd["num_items"] == [sum(rnd["tokens"])] * len(rnd["tokens"])


def test_parameters_change(trained):
    trainer, _, before = trained
    after = dict(trainer.model.named_parameters())
    changed = [k for k, v in before.items() if not torch.equal(v, after[k].detach())]
    assert len(changed) == len(before)


def test_a_rule_that_needs_lengths_gets_them():
    from types import SimpleNamespace

    rewards = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
    fake = SimpleNamespace(args=SimpleNamespace(pods_m=2, pods_rule="gfpo_length", seed=0), scale_rewards="group",
                           _pods_counter=SimpleNamespace(round=0))
    kept, _, _ = PODSTrainer._pods_select(fake, rewards, torch.tensor([[9.0, 3.0, 1.0, 5.0]]))
    assert kept.tolist() == [[2, 1]]
    with pytest.raises(ValueError, match="needs lengths"):
        PODSTrainer._pods_select(fake, rewards)


@pytest.mark.slow
def test_gfpo_length_in_trl_keeps_the_shortest_completions(tmp_path):
    """The lengths PODSTrainer gathers line up with TRL's rewards: the trained rollouts are the m shortest."""
    from datasets import Dataset

    from pods.backends.tiny import byte_tokenizer, tiny_causal_lm

    scored = []

    def reward_fn(completions, completion_ids, **kwargs):
        scored.append([tuple(ids) for ids in completion_ids])
        return [float(sum(ids) % 3) for ids in completion_ids]

    tok = byte_tokenizer()
    model = tiny_causal_lm(tok)
    with torch.no_grad():  # a random model rarely ends early: make EOS likely where its logit is positive
        model.lm_head.weight[tok.eos_token_id] *= 10
    args = _config(tmp_path, max_steps=1, max_completion_length=12, learning_rate=1e-2, seed=0,
                   pods_rule="gfpo_length")
    trainer = _Recorder(model=model, reward_funcs=[reward_fn], args=args, processing_class=tok,
                        train_dataset=Dataset.from_dict({"prompt": [f"{i}+{i}=" for i in range(32)]}))
    trainer.rounds = []
    trainer.train()
    for rnd, calls in zip(trainer.rounds, scored):
        lengths = torch.tensor([len(ids) for ids in calls], dtype=torch.float32).view(-1, N)  # [G, n]
        kept = select(torch.tensor(rnd["logged"]).view(-1, N), M, "gfpo_length", lengths=lengths)
        want = Counter(calls[g * N + j] for g in range(lengths.shape[0]) for j in kept[g].tolist())
        assert Counter(ids for batch in rnd["losses"] for ids, _ in batch) == want
        assert len(set(lengths.flatten().tolist())) > 1  # the lengths did differ
