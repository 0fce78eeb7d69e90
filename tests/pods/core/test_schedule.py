"""Learning-rate schedules: step-sized ones equal HF transformers' schedulers, time-sized ones follow the clock."""

import math

import pytest
import torch
from transformers import get_scheduler

from pods.core.schedule import SCHEDULERS, LRSchedule, lr_factor
from pods.errors import ConfigError


def optimizer(lr=1e-3):
    return torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], lr=lr)


@pytest.mark.parametrize("name", SCHEDULERS)
@pytest.mark.parametrize("warmup_ratio", [0.0, 0.1, 0.25])
def test_step_sized_schedules_equal_hf_transformers(name, warmup_ratio):
    total, lr = 37, 1e-3
    hf_opt = optimizer(lr)
    hf = get_scheduler(name, hf_opt, num_warmup_steps=math.ceil(warmup_ratio * total), num_training_steps=total)
    ours = LRSchedule(optimizer(lr), lr=lr, name=name, warmup_ratio=warmup_ratio, max_steps=total, max_time=None)
    for _ in range(total):
        expected = hf_opt.param_groups[0]["lr"]  # the lr HF's next optimizer step uses
        assert ours.apply(elapsed=1e9) == pytest.approx(expected, abs=1e-15)  # step-sized: the clock is ignored
        assert ours.optimizer.param_groups[0]["lr"] == ours.last_lr
        hf_opt.step()
        hf.step()
        ours.step()
    assert ours.optimizer_steps == total


def test_hf_constant_ignores_warmup_so_constant_starts_at_the_peak():
    hf_opt = optimizer(5e-6)
    get_scheduler("constant", hf_opt, num_warmup_steps=80, num_training_steps=8000)  # the authors' 0.01 x 8000
    assert hf_opt.param_groups[0]["lr"] == 5e-6
    ours = LRSchedule(optimizer(5e-6), lr=5e-6, name="constant", warmup_ratio=0.0, max_steps=None, max_time=21600)
    assert ours.apply(0.0) == 5e-6 and ours.sizing() is None


def test_factors():
    assert lr_factor("cosine", 0.5, 0.0) == pytest.approx(0.5)
    assert lr_factor("cosine", 0.0, 0.0) == 1.0 and lr_factor("cosine", 1.0, 0.0) == pytest.approx(0.0)
    assert lr_factor("linear", 0.75, 0.0) == pytest.approx(0.25)
    assert lr_factor("linear", 0.05, 0.1) == pytest.approx(0.5)  # half-way through the warm-up
    assert lr_factor("cosine", 0.55, 0.1) == pytest.approx(0.5)  # half-way through the decay after it
    assert lr_factor("constant_with_warmup", 0.02, 0.1) == pytest.approx(0.2)
    assert lr_factor("constant_with_warmup", 0.9, 0.1) == 1.0
    assert lr_factor("cosine", 1.3, 0.0) == 0.0  # past the end it stays at 0, never climbs back
    with pytest.raises(ValueError, match="valid: constant, constant_with_warmup, linear, cosine"):
        lr_factor("exp", 0.5, 0.0)


def test_time_sized_cosine_at_half_the_budget_is_half_the_peak():
    s = LRSchedule(optimizer(), lr=2e-5, name="cosine", warmup_ratio=0.0, max_steps=None, max_time=2400)
    assert s.apply(0.0) == pytest.approx(2e-5)
    assert s.apply(1200.0) == pytest.approx(1e-5)
    assert s.apply(2400.0) == pytest.approx(0.0, abs=1e-20)
    for _ in range(10_000):  # the optimizer step count does not matter when sized by time
        s.step()
    assert s.apply(600.0) == pytest.approx(2e-5 * 0.5 * (1 + math.cos(math.pi / 4)))


def test_time_sized_warmup_is_a_fraction_of_the_budget():
    s = LRSchedule(optimizer(), lr=1.0, name="linear", warmup_ratio=0.1, max_steps=None, max_time=1000)
    assert [round(s.apply(t), 6) for t in (0, 50, 100, 550, 1000)] == [0.0, 0.5, 1.0, 0.5, 0.0]


def test_state_round_trip_and_a_resized_schedule_is_refused():
    s = LRSchedule(optimizer(), lr=1.0, name="cosine", warmup_ratio=0.0, max_steps=None, max_time=100)
    for _ in range(7):
        s.step()
    again = LRSchedule(optimizer(), lr=1.0, name="cosine", warmup_ratio=0.0, max_steps=None, max_time=100)
    again.load_state_dict(s.state_dict())
    assert again.optimizer_steps == 7
    longer = LRSchedule(optimizer(), lr=1.0, name="cosine", warmup_ratio=0.0, max_steps=None, max_time=200)
    with pytest.raises(ConfigError, match="cannot be resized mid-run"):
        longer.load_state_dict(s.state_dict())
    constant = LRSchedule(optimizer(), lr=1.0, name="constant", warmup_ratio=0.0, max_steps=None, max_time=200)
    constant.load_state_dict({"optimizer_steps": 3, "sizing": None})  # constant: a longer budget is fine
    assert constant.optimizer_steps == 3
