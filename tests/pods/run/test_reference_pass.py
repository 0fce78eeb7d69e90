"""rl.reference_pass=always: the authors' adapter-disabled forward pass at beta = 0 (their
trainer/maxvargrpo_trainer.py:543-552 at 3fc107e) costs time and changes neither the loss nor the gradient."""

import math

import pytest
import torch

from pods.config.checks import validate
from pods.errors import ConfigError
from pods.run import trainer
from pods.run.metrics import PhaseTimers

from helpers import compose, tiny_cfg, trained_adapter_rollouts


class Ticks:
    """A clock that advances one second per reading."""

    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


@pytest.mark.parametrize("aggregation", ["sequence", "token"])
def test_the_reference_pass_at_beta_0_leaves_loss_and_gradients_identical(tmp_path, aggregation):
    cfg = tiny_cfg(tmp_path, f"rl.aggregation={aggregation}", "rl.micro_batch_size=3")
    policy, generator, kept, adv = trained_adapter_rollouts(cfg)  # the reference differs from the policy
    out, grads, timed = {}, {}, {}
    for mode in ("auto", "always"):
        cfg.rl.reference_pass = mode
        policy.model.zero_grad()
        timers = PhaseTimers(Ticks())
        out[mode] = trainer.update(policy, kept, adv, cfg, timers)
        grads[mode] = [p.grad.clone() for p in policy.trainable_parameters()]
        timed[mode] = timers.pop()
    assert out["auto"]["loss"] == out["always"]["loss"]  # bit for bit
    assert all(torch.equal(a, b) for a, b in zip(grads["auto"], grads["always"]))
    assert sum(float(g.abs().sum()) for g in grads["auto"]) > 0
    # the pass ran (once per micro-batch: 8 completions in micro-batches of 3) and its KL is logged, as the authors did
    assert "time/reference" not in timed["auto"] and timed["always"]["time/reference"] == 3.0
    assert "kl" not in out["auto"] and math.isfinite(out["always"]["kl"]) and out["always"]["kl"] > 0


def test_the_paper_presets_run_the_reference_pass_and_the_default_does_not():
    assert compose([]).rl.reference_pass == "auto"
    for preset in ("gsm8k_main", "math_main", "llama_main", "n_scaling", "m_scaling", "rules"):
        assert compose([f"experiment={preset}"]).rl.reference_pass == "always", preset
    assert compose(["experiment=demo"]).rl.reference_pass == "auto"


def test_an_unknown_reference_pass_is_refused():
    with pytest.raises(ConfigError, match="rl.reference_pass"):
        validate(compose(["rl.reference_pass=sometimes"]), cuda=False)
