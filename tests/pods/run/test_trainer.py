"""The training loop on a tiny model (CPU, offline): PODS, GRPO, GRPO-GA, KL, full-parameter,
time-based checkpoints with a fake clock, and kill (SIGKILL) + resume == an uninterrupted run."""

import json
import math
import time
from pathlib import Path

import pytest
import torch

import pods.backends
from pods.errors import ConfigError
from pods.run import optim, prepare, trainer
from pods.run.metrics import read_metrics

from helpers import patch_task, skip_reward_check, tiny_cfg, train_killed_at, trained_adapter_rollouts

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
torch.set_num_threads(1)


class Spy:
    """Records what each `update` call trains on and the policy's weights right after loading."""

    def __init__(self, monkeypatch):
        self.updates, self.policy, self.initial, self.on_update = [], None, None, None
        real_update, real_build = trainer.update, pods.backends.build

        def update(policy, kept, adv, cfg, timers=None, **lab):
            self.updates.append({"groups": kept.num_groups, "per_prompt": kept.n, "total": len(kept),
                                 "adv": tuple(adv.shape)})
            out = real_update(policy, kept, adv, cfg, timers, **lab)
            if self.on_update is not None:
                self.on_update(policy, kept, adv, cfg)
            return out

        def build(cfg):
            policy, generator = real_build(cfg)
            self.policy = policy
            self.initial = {k: v.detach().clone() for k, v in policy.model.named_parameters()}
            return policy, generator

        monkeypatch.setattr(trainer, "update", update)
        monkeypatch.setattr(pods.backends, "build", build)

    def changed(self, lora: bool) -> list[bool]:
        """For LoRA (lora=True) or base parameters: did each one change?"""
        now = dict(self.policy.model.named_parameters())
        return [not torch.equal(now[k].detach(), v) for k, v in self.initial.items() if ("lora_" in k) == lora]


def run(tmp_path, monkeypatch, *extra, on_update=None, **kw):
    patch_task(monkeypatch)
    skip_reward_check(monkeypatch)
    spy = Spy(monkeypatch)
    spy.on_update = on_update
    run_dir = trainer.train(tiny_cfg(tmp_path, *extra), **kw)
    return run_dir, read_metrics(run_dir), spy


def test_pods_updates_lora_on_m_of_n_rollouts_per_prompt(tmp_path, monkeypatch):
    run_dir, rows, spy = run(tmp_path, monkeypatch)  # n=8, m=4, B=2, 3 steps
    assert [r["step"] for r in rows] == [1, 2, 3] and rows[0]["algorithm"] == "pods"
    assert spy.updates == [{"groups": 2, "per_prompt": 4, "total": 8, "adv": (8,)}] * 3
    assert all(math.isfinite(r["loss"]) and r["grad_norm"] > 0 for r in rows)
    assert all(spy.changed(lora=True)) and not any(spy.changed(lora=False))
    for key in ("time/generation", "time/scoring", "time/selection", "time/update", "time/weight_sync", "time/step", "reward/total",
                "reward/digits", "reward_kept/digits", "accuracy", "frac_groups_with_spread", "lr", "elapsed_seconds",
                "completion_length/mean"):
        assert key in rows[-1], key
    # max-variance keeps the extremes: the kept rewards spread at least as much as all n
    assert all(r["frac_groups_with_spread_kept"] >= r["frac_groups_with_spread"] for r in rows)
    assert rows[-1]["data_position"] == 6 and rows[-1]["optimizer_steps"] == 3
    assert (run_dir / "config.yaml").is_file()
    state = json.loads((run_dir / "checkpoint-3" / "state.json").read_text())  # the final save
    assert state["step"] == 3 and state["elapsed_seconds"] == pytest.approx(rows[-1]["elapsed_seconds"])
    assert (run_dir / "checkpoint-3" / "policy" / "adapter_model.safetensors").is_file()


def test_grpo_uses_all_n(tmp_path, monkeypatch):
    _, rows, spy = run(tmp_path, monkeypatch, "rl.n=4", "rl.m=4", "rl.max_steps=2")
    assert rows[0]["algorithm"] == "grpo"
    assert spy.updates == [{"groups": 2, "per_prompt": 4, "total": 8, "adv": (8,)}] * 2
    assert rows[0]["reward/total"] == pytest.approx(rows[0]["reward_kept/total"])


def test_grpo_ga_is_one_optimizer_step_whose_accumulated_gradient_is_the_full_batch_gradient(tmp_path, monkeypatch):
    """The paper's GRPO-GA: all n rollouts, advantages over all n, one optimizer step; the gradient
    accumulated over micro-batches of 3 equals one backward pass over all G * n = 16 rollouts."""
    from pods.core.losses import policy_loss

    checked = []

    def full_batch_check(policy, kept, adv, cfg):
        accumulated = [p.grad.clone() for p in policy.trainable_parameters()]
        policy.model.zero_grad()
        logp, mask = policy.token_logprobs(kept.flat_prompt_ids(), kept.completion_ids)  # all 16 at once
        policy_loss(logp, adv, mask)[0].backward()
        full = [p.grad.clone() for p in policy.trainable_parameters()]
        checked.append(all(torch.allclose(a, f, atol=1e-6) for a, f in zip(accumulated, full)))
        assert any(f.abs().sum() > 0 for f in full)
        for p, a in zip(policy.trainable_parameters(), accumulated):  # training goes on from the accumulated one
            p.grad = a

    steps = []
    real_step = torch.optim.AdamW.step
    monkeypatch.setattr(torch.optim.AdamW, "step", lambda self, *a, **k: steps.append(1) or real_step(self, *a, **k))
    _, rows, spy = run(tmp_path, monkeypatch, "rl.algorithm=grpo_ga", "rl.m=8", "rl.micro_batch_size=3",
                       "rl.max_steps=2", on_update=full_batch_check)  # n = m = 8, B = 2
    assert rows[0]["algorithm"] == "grpo_ga"
    assert spy.updates == [{"groups": 2, "per_prompt": 8, "total": 16, "adv": (16,)}] * 2
    assert checked == [True, True]
    assert len(steps) == 2 and [r["optimizer_steps"] for r in rows] == [1, 2]  # one per training step
    assert rows[0]["reward/total"] == pytest.approx(rows[0]["reward_kept/total"])  # all n used
    assert all(spy.changed(lora=True))


@pytest.mark.parametrize("scale, std", [("group", "sample"), ("batch", "population"), ("none", "sample")])
def test_advantage_scale_and_std_come_from_the_config(tmp_path, monkeypatch, scale, std):
    from pods.core.advantages import group_advantages

    seen, real = [], trainer.plan_update

    def plan(rewards, *a, **kw):
        idx, adv = real(rewards, *a, **kw)
        seen.append(torch.allclose(adv, group_advantages(rewards.gather(1, idx), scale=scale, std=std)))
        return idx, adv

    monkeypatch.setattr(trainer, "plan_update", plan)
    run(tmp_path, monkeypatch, f"rl.scale_rewards={scale}", f"rl.advantage_std={std}", "rl.max_steps=2")
    assert seen == [True, True]


@pytest.mark.parametrize("divide, expected", [("true", 0.7), ("false", 1.0)])
def test_loss_logprobs_use_the_sampling_temperature_unless_told_not_to(tmp_path, monkeypatch, divide, expected):
    from pods.backends.hf import HFPolicy

    seen, real = [], HFPolicy.token_logprobs
    monkeypatch.setattr(HFPolicy, "token_logprobs", lambda self, p, c, **kw: seen.append(
        (kw.get("reference", False), kw.get("temperature", 1.0))) or real(self, p, c, **kw))
    run(tmp_path, monkeypatch, "rl.temperature=0.7", f"rl.logprob_temperature={divide}", "rl.beta=0.1",
        "rl.max_steps=1")
    assert sorted(set(seen)) == [(False, expected), (True, expected)]  # current and reference alike


def test_kl_penalty_against_the_adapter_free_reference(tmp_path, monkeypatch):
    _, rows, spy = run(tmp_path, monkeypatch, "rl.beta=0.1", "rl.max_steps=2")
    assert rows[0]["kl"] == pytest.approx(0.0, abs=1e-6)  # LoRA B starts at zero: policy == reference
    assert rows[1]["kl"] > 0 and rows[1]["loss"] > 0 and "time/reference" in rows[1]


def test_full_parameter_training_when_lora_rank_is_zero(tmp_path, monkeypatch):
    run_dir, rows, spy = run(tmp_path, monkeypatch, "model.lora.rank=0", "rl.max_steps=1", "optim.lr=1e-3")
    assert not any("lora_" in k for k in spy.initial)
    assert any(spy.changed(lora=False))
    assert (run_dir / "checkpoint-1" / "policy" / "model.safetensors").is_file()


def test_full_parameter_runs_decay_weights_but_not_biases_and_norms(tmp_path):
    """The decay/no-decay split is HF Trainer's (get_decay_parameter_names), and a step shows it."""
    from transformers import Trainer

    from pods.backends.hf import load_policy

    cfg = tiny_cfg(tmp_path, "model.lora.rank=0", "optim.weight_decay=0.5", "optim.lr=0.1")
    policy = load_policy(cfg)
    named = policy.named_trainable_parameters()
    decay, no_decay = optim.decay_groups(named, 0.5)
    ids = lambda group: {id(p) for p in group["params"]}  # noqa: E731
    hf_decay = set(Trainer.get_decay_parameter_names(None, policy.model))
    assert ids(decay) == {id(p) for k, p in named if k in hf_decay}
    assert (decay["weight_decay"], no_decay["weight_decay"]) == (0.5, 0.0)
    exempt = sorted(k for k, p in named if id(p) in ids(no_decay))
    assert "model.norm.weight" in exempt and any(k.endswith("q_proj.bias") for k in exempt)
    assert any(k.endswith("input_layernorm.weight") for k in exempt)
    assert exempt == sorted(k for k, _ in named if k not in hf_decay)
    optimizer, _ = optim.build_optimizer(named, cfg)
    before = {k: p.detach().clone() for k, p in named}
    for _, p in named:
        p.grad = torch.zeros_like(p)  # no gradient: only decay moves a parameter
    optimizer.step()
    moved = {k for k, p in named if not torch.equal(p.detach(), before[k])}
    assert moved == {k for k in before if k in hf_decay}  # weights shrink by lr * wd; biases and norms stay
    assert optim.decay_groups([(k, p) for k, p in named if "lora_" in k], 0.1) == []  # nothing trainable: no group


class FakeClock:
    """Advances 1.5 s on every reading."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 1.5
        return self.t


def test_time_based_checkpoints_and_time_budget_with_a_fake_clock(tmp_path, monkeypatch):
    run_dir, rows, _ = run(tmp_path, monkeypatch, "rl.max_steps=null", "rl.max_time=100", "rl.save_strategy=time",
                           "rl.save_interval=25", clock=FakeClock())
    elapsed = [0.0] + [r["elapsed_seconds"] for r in rows]
    assert elapsed[-2] < 100 <= elapsed[-1]  # stopped by the time budget
    crossed = [i for i in range(1, len(elapsed)) if elapsed[i] // 25 > elapsed[i - 1] // 25]
    saved = sorted(json.loads((p / "state.json").read_text())["step"] for p in run_dir.glob("checkpoint-*"))
    assert saved == sorted(set(crossed) | {len(rows)}) and len(crossed) >= 3
    for step in saved:
        state = json.loads((run_dir / f"checkpoint-{step}" / "state.json").read_text())
        assert state["elapsed_seconds"] == pytest.approx(elapsed[step])


def record_lrs(monkeypatch) -> list[float]:
    """The learning rate every optimizer step actually uses."""
    lrs, real_step = [], torch.optim.AdamW.step
    monkeypatch.setattr(torch.optim.AdamW, "step",
                        lambda self, *a, **k: lrs.append(self.param_groups[0]["lr"]) or real_step(self, *a, **k))
    return lrs


def test_default_constant_schedule_uses_the_full_lr_from_step_1(tmp_path, monkeypatch):
    from helpers import compose

    lrs = record_lrs(monkeypatch)
    default = compose([]).optim  # train.yaml's schedule: the authors' constant, no warm-up
    _, rows, _ = run(tmp_path, monkeypatch, f"optim.scheduler={default.scheduler}",
                     f"optim.warmup_ratio={default.warmup_ratio}")
    assert lrs == [1e-2] * 3 and [r["lr"] for r in rows] == lrs


class CrashAt(Exception):
    pass


def test_time_sized_cosine_follows_the_training_clock_and_resumes_exactly(tmp_path, monkeypatch):
    """rl.max_steps=null: the cosine spans rl.max_time of training time (not one epoch of 20 steps), each
    step's lr is the cosine at the training seconds before it, and a crash + resume continues the curve."""
    from pods.core.schedule import lr_factor

    extra = ("rl.max_steps=null", "rl.max_time=400", "rl.save_strategy=time", "rl.save_interval=100",
             "optim.scheduler=cosine", "logging.ledger=false")  # the ledger's timer would read the fake clock too
    lrs = record_lrs(monkeypatch)
    _, rows, _ = run(tmp_path / "straight", monkeypatch, *extra, clock=FakeClock())
    before = [0.0] + [r["elapsed_seconds"] for r in rows[:-1]]  # training seconds before each step
    assert len(rows) > 20 and rows[-1]["elapsed_seconds"] >= 400 > before[-1]  # longer than one epoch
    assert lrs == [r["lr"] for r in rows]
    assert [r["lr"] for r in rows] == pytest.approx([1e-2 * lr_factor("cosine", t / 400, 0.0) for t in before])
    half = min(range(len(rows)), key=lambda i: abs(before[i] - 200))
    assert rows[half]["lr"] == pytest.approx(0.5e-2, abs=0.1e-2) and rows[-1]["lr"] > 0

    def crash(row, policy, generator):
        if row["step"] == 15:
            raise CrashAt()

    with pytest.raises(CrashAt):
        run(tmp_path / "crashed", monkeypatch, *extra, clock=FakeClock(), on_step=crash)
    from pods.run.checkpoint import latest, read_state

    assert 5 < read_state(latest(tmp_path / "crashed" / "t"))["step"] < 15  # resumes mid-curve
    _, resumed, _ = run(tmp_path / "crashed", monkeypatch, *extra, clock=FakeClock())
    assert [r["step"] for r in resumed] == [r["step"] for r in rows]
    assert [r["lr"] for r in resumed] == pytest.approx([r["lr"] for r in rows], rel=1e-12)
    assert [r["optimizer_steps"] for r in resumed] == list(range(1, len(rows) + 1))


def test_rerun_with_a_different_config_in_the_same_dir_is_refused(tmp_path, monkeypatch, capsys):
    run_dir, rows, _ = run(tmp_path, monkeypatch, "rl.max_steps=1")
    capsys.readouterr()
    again_dir, again, spy = run(tmp_path, monkeypatch, "rl.max_steps=1")  # finished run: nothing to do
    assert again_dir == run_dir and again == rows and spy.updates == []
    out = capsys.readouterr().out
    assert f"{run_dir} is already trained to its end (checkpoint-1" in out and "nothing to train" in out
    assert "resuming" not in out
    _, longer, _ = run(tmp_path, monkeypatch, "rl.max_steps=2")  # a longer budget continues the run
    assert [r["step"] for r in longer] == [1, 2] and longer[0] == rows[0]
    assert f"resuming {run_dir} from checkpoint-1" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="already holds a different run"):
        run(tmp_path, monkeypatch, "rl.max_steps=1", "rl.n=16")


def test_warm_start_model_becomes_the_runs_base_model(tmp_path, monkeypatch, tiny_model_dir):
    seen = []
    monkeypatch.setattr(prepare, "ensure_warmstart", lambda ws: seen.append(dict(ws)) or tiny_model_dir)
    run_dir, rows, spy = run(tmp_path, monkeypatch, "rl.max_steps=1", "+warmstart.target_greedy=0.1")
    assert seen == [{"target_greedy": 0.1}]
    from omegaconf import OmegaConf

    assert OmegaConf.load(run_dir / "config.yaml").model.name == str(Path(tiny_model_dir).resolve())
    assert type(spy.policy.model.get_base_model()).__name__ == "Qwen2ForCausalLM" and len(rows) == 1


@pytest.mark.slow
def test_sigkill_between_checkpoints_then_resume_matches_an_uninterrupted_run(tmp_path, monkeypatch):
    extra = ["rl.max_steps=6", "rl.save_steps=2", "rl.beta=0.05", "rule=random"]
    killed = tmp_path / "killed"
    proc = train_killed_at(killed, extra, 5, timeout=600)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert sorted(p.name for p in (killed / "t").glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    assert [r["step"] for r in read_metrics(killed / "t")] == [1, 2, 3, 4]

    resumed_dir, resumed, _ = run(killed, monkeypatch, *extra)  # the same command again
    straight_dir, straight, _ = run(tmp_path / "straight", monkeypatch, *extra)
    assert [r["step"] for r in resumed] == [1, 2, 3, 4, 5, 6]
    for a, b in zip(resumed, straight):
        assert a["data_position"] == b["data_position"]
        for key in ("reward/total", "reward_kept/total", "loss", "kl", "grad_norm", "completion_length/mean", "lr"):
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6), (a["step"], key)
    state_a = json.loads((resumed_dir / "checkpoint-6" / "state.json").read_text())
    assert state_a["elapsed_seconds"] > resumed[3]["elapsed_seconds"]  # training time continued, not reset
    from safetensors.torch import load_file

    wa = load_file(resumed_dir / "checkpoint-6" / "policy" / "adapter_model.safetensors")
    wb = load_file(straight_dir / "checkpoint-6" / "policy" / "adapter_model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.allclose(wa[k], wb[k], atol=1e-5) for k in wa)


@pytest.mark.bench
@pytest.mark.parametrize("n", [16, 64])
def test_bench_seconds_per_step_grpo_16_vs_pods_64_to_16(tmp_path, monkeypatch, n):
    """`uv run pytest -m bench tests/pods/run/test_trainer.py -s`: tiny model, demo shape (16 prompts,
    m = 16 kept, 8-token completions, one update on 256 completions), mean of steps 2..8, timed in
    CPU seconds of this process (time.process_time, 1 thread) so other load on the machine does not count."""
    _, rows, _ = run(tmp_path, monkeypatch, f"rl.n={n}", "rl.m=16", "rl.prompts_per_step=16", "rl.micro_batch_size=256",
                     "rl.max_completion_tokens=8", "rl.max_steps=8", "model.lora.rank=0", "optim.lr=2e-4",
                     clock=time.process_time)
    rows = rows[1:]
    mean = {k: sum(r[k] for r in rows) / len(rows) for k in ("time/step", "time/generation", "time/update")}
    print(f"\nn={n} m=16: {mean['time/step']:.3f} s/step (generation {mean['time/generation']:.3f}, "
          f"update {mean['time/update']:.3f}) CPU s over {len(rows)} steps, {torch.get_num_threads()} thread(s)")


@pytest.mark.parametrize("aggregation", ["sequence", "token"])
def test_micro_batches_accumulate_to_the_full_batch_gradient(tmp_path, aggregation):
    cfg = tiny_cfg(tmp_path, f"rl.aggregation={aggregation}", "rl.beta=0.1")
    policy, generator, kept, adv = trained_adapter_rollouts(cfg)  # a non-zero adapter: the KL term has a gradient
    grads = []
    for mb in (8, 3, 1):
        cfg.rl.micro_batch_size = mb
        policy.model.zero_grad()
        metrics = trainer.update(policy, kept, adv, cfg)
        grads.append(torch.cat([p.grad.flatten() for p in policy.trainable_parameters()]))
        assert math.isfinite(metrics["loss"]) and metrics["kl"] > 0
    assert grads[0].abs().sum() > 0
    assert torch.allclose(grads[0], grads[1], atol=1e-6) and torch.allclose(grads[0], grads[2], atol=1e-6)
