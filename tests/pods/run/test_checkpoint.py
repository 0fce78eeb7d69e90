"""pods.run.checkpoint: save scheduling with a fake clock, atomic saves, verified resume, RNG resume."""

import errno
import json
import os

import pytest
import torch
from safetensors.torch import load_file, save_file

from pods.io import WriteError
from pods.run import checkpoint as ck
from pods.run.guard import NonFiniteError


class FakePolicy:
    """Saves / loads one tensor (safetensors, as a real policy); can be told to crash half-way through a save."""

    def __init__(self, value=0.0, crash=False):
        self.w = torch.tensor([value])
        self.crash = crash

    def trainable_parameters(self):
        return [self.w]

    def save(self, path):
        path.mkdir(parents=True)
        save_file({"w": self.w}, path / "model.safetensors")
        if self.crash:
            raise RuntimeError("disk full")

    def load(self, path):
        self.w = load_file(path / "model.safetensors")["w"]


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
    assert {p.name for p in path.iterdir()} == {"state.json", "policy", "trainer.pt", "rng.pt", "manifest.json"}
    state = json.loads((path / "state.json").read_text())
    assert (state["step"], state["elapsed_seconds"], state["data_position"]) == (7, 12.5, 14)
    ck.save(tmp_path, 12, {"elapsed_seconds": 20.0, "data_position": 24}, FakePolicy(4.0), opt)
    assert [p.name for p in ck.checkpoints(tmp_path)] == ["checkpoint-7", "checkpoint-12"]  # numeric order
    assert ck.latest(tmp_path).name == "checkpoint-12"


def test_extra_state_is_saved_in_the_manifest_and_read_back(tmp_path):
    state = {"rule": {"pass_rate": torch.tensor([0.5, float("nan")]), "p_easy": 0.4}, "generator": torch.Generator().get_state()}
    path = ck.save(tmp_path, 3, {"elapsed_seconds": 1.0}, FakePolicy(1.0), extra={"lab.pt": state})
    assert "lab.pt" in json.loads((path / "manifest.json").read_text())["files"] and not ck.verify(path)
    back = ck.load_extra(path, "lab.pt")
    assert back["rule"]["p_easy"] == 0.4 and torch.equal(back["generator"], state["generator"])
    assert torch.allclose(back["rule"]["pass_rate"], state["rule"]["pass_rate"], equal_nan=True)
    assert ck.load_extra(path, "none.pt", default={}) == {}


def test_a_crash_during_save_never_leaves_a_complete_looking_checkpoint(tmp_path):
    ck.save(tmp_path, 1, {"elapsed_seconds": 1.0}, FakePolicy(1.0))
    with pytest.raises(RuntimeError, match="disk full"):
        ck.save(tmp_path, 2, {"elapsed_seconds": 2.0}, FakePolicy(2.0, crash=True))
    assert not (tmp_path / "checkpoint-2").exists()
    assert ck.latest(tmp_path).name == "checkpoint-1"
    (tmp_path / "checkpoint-3").mkdir()  # no state.json: incomplete, ignored by latest (resume warns)
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


def test_schedule_strategy_no_final_save_and_the_step_a_signal_stopped():
    no = ck.SaveSchedule("no", final=False)
    assert simulate(no, lambda s: 1.0, until=50) == []
    assert not no.due(5, 5.0, 0, 0.0, stopping=True)
    assert not no.due(5, 5.0, 0, 0.0, stopping=True, interrupted=True)  # saves nothing at all, by choice
    assert ck.SaveSchedule("no", final=True).due(5, 5.0, 0, 0.0, stopping=True)  # "only the last step"
    steps = ck.SaveSchedule("steps", steps=100, final=False)
    assert not steps.due(7, 7.0, 0, 0.0, stopping=True)
    assert steps.due(7, 7.0, 0, 0.0, stopping=True, interrupted=True)  # preemption keeps the work


def _two_checkpoints(tmp_path):
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.ones(2))], lr=0.1)
    ck.save(tmp_path, 2, {"elapsed_seconds": 2.0}, FakePolicy(2.0), opt)
    ck.save(tmp_path, 4, {"elapsed_seconds": 4.0}, FakePolicy(4.0), opt)
    return opt


def test_manifest_lists_every_file_with_size_and_hash(tmp_path):
    _two_checkpoints(tmp_path)
    man = json.loads((tmp_path / "checkpoint-4" / "manifest.json").read_text())
    assert sorted(man["files"]) == ["policy/model.safetensors", "rng.pt", "state.json", "trainer.pt"]
    assert man["files"]["trainer.pt"]["size"] == (tmp_path / "checkpoint-4" / "trainer.pt").stat().st_size
    assert ck.verify(tmp_path / "checkpoint-4") == [] and ck.intact(tmp_path) == ck.checkpoints(tmp_path)


@pytest.mark.parametrize("name, damage", [(name, damage) for name in ("state.json", "trainer.pt", "rng.pt",
                                                                      "policy/model.safetensors")
                                          for damage in ("truncated", "missing")] + [("manifest.json", "truncated")])
def test_a_damaged_latest_checkpoint_falls_back_to_the_previous_one(tmp_path, name, damage):
    _two_checkpoints(tmp_path)
    target = tmp_path / "checkpoint-4" / name
    if damage == "truncated":
        target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    else:
        target.unlink()
    warnings = []
    policy, opt = FakePolicy(), torch.optim.AdamW([torch.nn.Parameter(torch.ones(2))], lr=0.1)
    path, state = ck.resume(tmp_path, policy, opt, warn=warnings.append)
    assert path.name == "checkpoint-2" and state["step"] == 2 and float(policy.w) == 2.0
    assert len(warnings) == 1 and "checkpoint-4 is damaged" in warnings[0] and "left in place" in warnings[0]
    assert name.split("/")[-1] in warnings[0]
    assert (tmp_path / "checkpoint-4").is_dir()  # kept for inspection
    skipped = []
    assert ck.intact(tmp_path, warn=skipped.append) == [tmp_path / "checkpoint-2"] and len(skipped) == 1


def test_every_checkpoint_damaged_is_an_error_that_keeps_them(tmp_path):
    _two_checkpoints(tmp_path)
    for step in (2, 4):
        (tmp_path / f"checkpoint-{step}" / "rng.pt").write_bytes(b"")
    with pytest.raises(ck.CheckpointError, match="every checkpoint .* is damaged .*checkpoint-2, checkpoint-4"):
        ck.resume(tmp_path, FakePolicy(), warn=lambda msg: None)
    assert len(ck.checkpoints(tmp_path)) == 2
    assert ck.resume(tmp_path / "fresh", FakePolicy()) == (None, None)


def test_a_checkpoint_without_manifest_is_used_when_it_loads_and_skipped_when_it_does_not(tmp_path):
    _two_checkpoints(tmp_path)
    for step in (2, 4):
        (tmp_path / f"checkpoint-{step}" / "manifest.json").unlink()  # as written by older versions
    policy, warnings = FakePolicy(), []
    assert ck.resume(tmp_path, policy, warn=warnings.append)[0].name == "checkpoint-4" and float(policy.w) == 4.0
    assert warnings == [f"checkpoint {tmp_path / 'checkpoint-4'} has no manifest.json (lost, or written before "
                        "manifests existed): its files cannot be checked against their sizes and checksums, so it "
                        "is used unverified"]  # once: not for checkpoint-2, which it did not use
    trainer = tmp_path / "checkpoint-4" / "trainer.pt"
    trainer.write_bytes(trainer.read_bytes()[:20])
    warnings = []
    path, _ = ck.resume(tmp_path, policy, torch.optim.AdamW([torch.nn.Parameter(torch.ones(2))]),
                        warn=warnings.append)
    assert path.name == "checkpoint-2" and "loading failed" in warnings[0] and float(policy.w) == 2.0
    assert "checkpoint-2 has no manifest.json" in warnings[1] and len(warnings) == 2


def test_clean_stale_removes_temp_dirs_and_restores_an_interrupted_resave(tmp_path):
    _two_checkpoints(tmp_path)
    (tmp_path / ".tmp-checkpoint-6" / "policy").mkdir(parents=True)
    os.replace(tmp_path / "checkpoint-4", tmp_path / ".old-checkpoint-4")  # crash between the two renames
    done = ck.clean_stale(tmp_path)
    assert len(done) == 2 and sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2", "checkpoint-4"]
    assert ck.verify(tmp_path / "checkpoint-4") == []


def test_weights_with_nan_are_never_saved(tmp_path):
    _two_checkpoints(tmp_path)
    with pytest.raises(NonFiniteError, match="refusing to save .*checkpoint-6: 1 trainable weight tensor"):
        ck.save(tmp_path, 6, {"elapsed_seconds": 6.0}, FakePolicy(float("nan")))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2", "checkpoint-4"]


@pytest.mark.parametrize("failing", ["policy", "trainer.pt", "manifest.json"])
def test_a_full_disk_during_a_save_names_the_file_and_keeps_the_previous_checkpoint(tmp_path, monkeypatch, failing):
    opt = _two_checkpoints(tmp_path)
    no_space = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fail(*a, **k):
        raise no_space

    if failing == "policy":
        monkeypatch.setattr(FakePolicy, "save", fail)
    elif failing == "trainer.pt":
        real = torch.save
        monkeypatch.setattr(torch, "save", lambda obj, f: fail() if "optimizer" in obj else real(obj, f))
    else:
        monkeypatch.setattr(ck.manifest, "write", fail)
    with pytest.raises(WriteError) as err:
        ck.save(tmp_path, 6, {"elapsed_seconds": 6.0}, FakePolicy(6.0), opt)
    assert str(err.value) == f"no space left on device: {tmp_path / 'checkpoint-6' / failing}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2", "checkpoint-4"]  # temp dir removed
    policy = FakePolicy()
    assert ck.resume(tmp_path, policy, warn=pytest.fail)[0].name == "checkpoint-4" and float(policy.w) == 4.0


def test_saving_over_a_damaged_checkpoint_keeps_the_damaged_copy(tmp_path):
    _two_checkpoints(tmp_path)
    (tmp_path / "checkpoint-4" / "rng.pt").write_bytes(b"x")
    ck.save(tmp_path, 4, {"elapsed_seconds": 4.5}, FakePolicy(4.5))  # the resumed run reaches step 4 again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2", "checkpoint-4", "checkpoint-4.damaged"]
    assert ck.verify(tmp_path / "checkpoint-4") == [] and ck.read_state(tmp_path / "checkpoint-4")["elapsed_seconds"] == 4.5
    assert (tmp_path / "checkpoint-4.damaged" / "rng.pt").read_bytes() == b"x"
    assert [p.name for p in ck.checkpoints(tmp_path)] == ["checkpoint-2", "checkpoint-4"]


def test_check_resumable_stops_a_run_with_only_damaged_checkpoints_before_a_model_loads(tmp_path):
    """No model needed: train() calls it before building the backend (was: after loading the model)."""
    import json

    from pods.errors import CheckpointError

    def fake(step, weights=True):  # a checkpoint of the pre-manifest layout: state.json + policy/*.safetensors
        d = tmp_path / f"checkpoint-{step}"
        (d / "policy").mkdir(parents=True)
        (d / "state.json").write_text(json.dumps({"step": step, "elapsed_seconds": 1.0}))
        if weights:
            (d / "policy" / "adapter_model.safetensors").write_bytes(b"x")
        return d

    assert ck.check_resumable(tmp_path) == {}  # no checkpoints: nothing to check
    good, bad = fake(1), fake(2, weights=False)
    warnings = []
    assert ck.check_resumable(tmp_path, warn=warnings.append) == {bad: ["policy/ holds no *.safetensors weights"],
                                                                    good: []}
    assert warnings == []  # resume() warns about the damaged newer one when it passes it
    (good / "state.json").write_text('{"step": 1, "elap')
    with pytest.raises(CheckpointError, match="every checkpoint of .* is damaged \\(checkpoint-1, checkpoint-2"):
        ck.check_resumable(tmp_path, warn=warnings.append)
    assert len(warnings) == 2 and "checkpoint-2 is damaged" in warnings[0] and "no older checkpoint" in warnings[1]
