"""Shared helpers for the trainer tests: a tiny config and an in-test task (no pods.data needed).

The task: "a+b=" prompts; the reward is the fraction of digit characters in the completion
(dense, so even a random tiny model gets reward spread within a group).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import torch

from pods.config import files
from pods.run import prepare, sampler

ROOT = Path(__file__).resolve().parents[1]  # the repository


def compose(overrides=(), *, hydra: bool = False, name: str = "train"):
    """pods.config.files.compose for the tests (each set of group choices composed by Hydra once a session; a test
    gets its own copy to change)."""
    return files.compose(list(overrides), hydra=hydra, name=name)


def tiny_cfg(tmp_path, *extra: str):
    """A tiny CPU run: 2 prompts/step, n=8, m=4, 3-token completions, steps-based saving."""
    cfg = compose([
        "model=tiny", "dataset=arithmetic", f"output_root={tmp_path}", "run_name=t",
        "rl.n=8", "rl.m=4", "rl.prompts_per_step=2", "rl.micro_batch_size=4", "rl.max_completion_tokens=3",
        "rl.max_steps=3", "rl.max_time=null", "rl.save_strategy=steps", "rl.save_steps=100",
        "rl.temperature=1.0", "optim.name=adamw", "optim.lr=1e-2", "optim.warmup_ratio=0",
        "optim.max_grad_norm=1.0", "logging.progress=false", "dataset.rewards=[{name: digits, weight: 1.0}]",
        "dataset.accuracy_reward=digits", *extra])
    return cfg


def fake_prompts(cfg, tokenizer, examples=None):
    rng = random.Random(0)
    pairs = [(rng.randrange(100), rng.randrange(100)) for _ in range(40)]
    prompts = [tokenizer.encode(f"{a}+{b}=", add_special_tokens=False) for a, b in pairs]
    return prompts, [str(a + b) for a, b in pairs], {}


def digits_reward(completions, answers, **columns):
    """The in-test reward `digits`: the fraction of digit characters of each completion."""
    return [sum(ch.isdigit() for ch in t) / max(len(t), 1) for t in completions]


def fake_score(texts, answers, cols, reward_cfg):
    r = torch.tensor(digits_reward(texts, answers))
    return r, {"digits": r}


def patch_task(monkeypatch=None):
    """Use the in-test task in pods.run.prepare and pods.run.sampler (pytest monkeypatch, or permanently in a subprocess); the reward
    `digits` is registered, so pods.rewards.combined(cfg.dataset.rewards) finds it."""
    from pods import rewards

    if monkeypatch is None:
        prepare.load_prompts, sampler.score = fake_prompts, fake_score
        rewards.REGISTRY["digits"] = digits_reward
    else:
        monkeypatch.setattr(prepare, "load_prompts", fake_prompts)
        monkeypatch.setattr(sampler, "score", fake_score)
        monkeypatch.setitem(rewards.REGISTRY, "digits", digits_reward)


def skip_reward_check(monkeypatch):
    """The in-test reward `digits` is not in the rewards registry: skip that part of validate."""
    from pods.config import checks

    monkeypatch.setattr(checks, "reward_problems", lambda data: [])


_KILLER = """
import os, signal, sys
sys.path.insert(0, {helpers!r})
import torch
torch.set_num_threads(1)
import helpers as th
import pods.config.checks
pods.config.checks.reward_problems = lambda data: []
th.patch_task()
from pods.run.trainer import train
def on_step(row, policy, generator):
    if row["step"] == {kill_at}:
        os.kill(os.getpid(), signal.SIGKILL)
train(th.tiny_cfg({out!r}, *{extra!r}), on_step=on_step)
"""


def train_killed_at(out: Path, extra: list[str], step: int, timeout: int = 600) -> subprocess.CompletedProcess:
    """Train tiny_cfg(out, *extra) in a child process on the in-test task; SIGKILL it when step `step` ends."""
    script = _KILLER.format(helpers=str(ROOT / "tests"), kill_at=step, out=str(out), extra=list(extra))
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def trained_adapter_rollouts(cfg):
    """(policy, generator, rollouts, advantages): an hf policy whose LoRA B is non-zero (so the reference, adapter
    off, differs from the policy), 2 prompts x 4 sampled completions of 5 tokens, advantages linspace(-1, 1, 8)."""
    from pods.backends import hf
    from pods.backends.base import Sampling

    policy, generator = hf.build(cfg)
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.1)
    tok = policy.tokenizer
    prompts = [tok.encode(t, add_special_tokens=False) for t in ("1+2=", "30+40=")]
    kept = generator.generate(prompts, 4, Sampling(max_tokens=5, temperature=1.0, seed=0))
    return policy, generator, kept, torch.linspace(-1, 1, 8)


def exits(main, argv: list[str], capsys, **kwargs) -> tuple[int, str, str]:
    """An entry point's `main(argv)` run in this process -> (exit code, stdout, stderr), neither stream holding a
    traceback (the command-line contract without a subprocess: tests/test_bad_inputs.py keeps a few of those)."""
    try:
        code = main(argv, **kwargs)
    except SystemExit as stop:  # argparse's usage errors
        code = stop.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, (out + err)[-3000:]
    return (0 if code is None else code), out, err
