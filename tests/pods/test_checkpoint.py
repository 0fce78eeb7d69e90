"""pods.checkpoint: save scheduling with a fake clock, atomic saves, latest-complete lookup, RNG resume."""

import json

import pytest
import torch

from pods import checkpoint as ck


class FakePolicy:
    """Saves / loads one tensor; can be told to crash half-way through a save."""

    def __init__(self, value=0.0, crash=False):
        self.w = torch.tensor([value])
        self.crash = crash

    def save(self, path):
        path.mkdir(parents=True)
        torch.save(self.w, path / "w.pt")
        if self.crash:
            raise RuntimeError("disk full")

    def load(self, path):
        self.w = torch.load(path / "w.pt")


def simulate(schedule, step_seconds, start_step=0, start_elapsed=0.0, last=(0, 0.0), until=20):
    """Steps with a fake clock; returns [(step, elapsed)] at which the schedule saves."""
    saves, step, elapsed = [], start_step, start_elapsed
    while step < until:
        step += 1
        elapsed += step_seconds(step)
        if schedule.due(step, elapsed, *last):
            saves.append((step, round(elapsed, 6)))
            last = (step, elapsed)
    return saves


def test_time_based_saving_at_every_interval_of_training_time():
    sched = ck.SaveSchedule("time", interval=30.0)
    assert simulate(sched, lambda s: 7.0) == [(5, 35.0), (9, 63.0), (13, 91.0), (18, 126.0)]
    # uneven steps: one long step crossing two boundaries saves once
    assert simulate(sched, lambda s: 65.0 if s == 2 else 1.0, until=5) == [(2, 66.0)]


def test_time_based_schedule_continues_identically_after_a_resume():
    sched = ck.SaveSchedule("time", interval=30.0)
    full = simulate(sched, lambda s: 7.0)
    step, elapsed = full[1]  # resume from the 2nd checkpoint
    resumed = simulate(sched, lambda s: 7.0, start_step=step, start_elapsed=elapsed, last=(step, elapsed))
    assert resumed == full[2:]


def test_step_based_saving_and_stop_conditions():
    assert simulate(ck.SaveSchedule("steps", steps=4), lambda s: 1.0, until=10) == [(4, 4.0), (8, 8.0)]
    with pytest.raises(ValueError, match="unknown save strategy"):
        ck.SaveSchedule("epochs").due(1, 1.0, 0, 0.0)
    assert ck.should_stop(10, 5.0, max_steps=10, max_time=None)
    assert ck.should_stop(3, 3600.0, max_steps=None, max_time=3600)
    assert not ck.should_stop(3, 10.0, max_steps=10, max_time=3600)


def test_save_writes_the_layout_and_latest_finds_it(tmp_path):
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.ones(2))], lr=0.1)
    path = ck.save(tmp_path, 7, {"elapsed_seconds": 12.5, "data_position": 14}, FakePolicy(3.0), opt)
    assert path == tmp_path / "checkpoint-7"
    assert {p.name for p in path.iterdir()} == {"state.json", "policy", "trainer.pt", "rng.pt"}
    state = json.loads((path / "state.json").read_text())
    assert (state["step"], state["elapsed_seconds"], state["data_position"]) == (7, 12.5, 14)
    ck.save(tmp_path, 12, {"elapsed_seconds": 20.0, "data_position": 24}, FakePolicy(4.0), opt)
    assert [p.name for p in ck.checkpoints(tmp_path)] == ["checkpoint-7", "checkpoint-12"]  # numeric order
    assert ck.latest(tmp_path).name == "checkpoint-12"


def test_a_crash_during_save_never_leaves_a_complete_looking_checkpoint(tmp_path):
    ck.save(tmp_path, 1, {"elapsed_seconds": 1.0}, FakePolicy(1.0))
    with pytest.raises(RuntimeError, match="disk full"):
        ck.save(tmp_path, 2, {"elapsed_seconds": 2.0}, FakePolicy(2.0, crash=True))
    assert not (tmp_path / "checkpoint-2").exists()
    assert ck.latest(tmp_path).name == "checkpoint-1"
    (tmp_path / "checkpoint-3").mkdir()  # no state.json: incomplete, ignored
    assert ck.latest(tmp_path).name == "checkpoint-1"
    ck.save(tmp_path, 4, {"elapsed_seconds": 4.0}, FakePolicy(4.0))  # cleans the stale temp dir
    assert not list(tmp_path.glob(".tmp-*"))


def test_resaving_a_step_replaces_it(tmp_path):
    ck.save(tmp_path, 5, {"elapsed_seconds": 1.0}, FakePolicy(1.0))
    ck.save(tmp_path, 5, {"elapsed_seconds": 2.0}, FakePolicy(2.0))
    assert ck.read_state(tmp_path / "checkpoint-5")["elapsed_seconds"] == 2.0
    assert ck.latest(tmp_path) == tmp_path / "checkpoint-5" and len(list(tmp_path.iterdir())) == 1


def test_load_restores_weights_optimizer_scheduler_and_rngs(tmp_path):
    param = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.AdamW([param], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    param.grad = torch.ones(3)
    opt.step()
    sched.step()
    gen = torch.Generator().manual_seed(5)
    torch.manual_seed(1)
    ck.save(tmp_path, 3, {"elapsed_seconds": 9.0}, FakePolicy(7.0), opt, sched, {"select": gen})
    expected = (torch.rand(4), torch.rand(4, generator=gen))
    torch.rand(100), torch.rand(100, generator=gen)  # move every stream on

    policy = FakePolicy(0.0)
    opt2 = torch.optim.AdamW([torch.nn.Parameter(torch.ones(3))], lr=0.1)
    sched2 = torch.optim.lr_scheduler.StepLR(opt2, step_size=1, gamma=0.5)
    gen2 = torch.Generator()
    state = ck.load(tmp_path / "checkpoint-3", policy, opt2, sched2, {"select": gen2})
    assert state["step"] == 3 and state["elapsed_seconds"] == 9.0
    assert float(policy.w) == 7.0
    assert sched2.last_epoch == 1 and opt2.param_groups[0]["lr"] == pytest.approx(0.05)
    assert torch.equal(opt2.state_dict()["state"][0]["exp_avg"], opt.state_dict()["state"][0]["exp_avg"])
    assert torch.equal(torch.rand(4), expected[0]) and torch.equal(torch.rand(4, generator=gen2), expected[1])
