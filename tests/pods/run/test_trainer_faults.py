"""The training loop under faults (tiny model, CPU, in-process): non-finite steps, NaN weights, failed
writes of checkpoints and metrics.jsonl, damaged checkpoints, stale temp dirs, runs that save nothing.
Signals and real write failures through the CLI: tests/test_train_cli.py."""

import errno
import math
import os
from pathlib import Path

import pytest
import torch

from pods.errors import ConfigError, RewardError
from pods.io import WriteError
from pods.run import checkpoint as ck
from pods.run import prepare, trainer
from pods.run.guard import NonFiniteError
from pods.run.metrics import MetricsLogger, read_metrics

from helpers import fake_prompts, patch_task, skip_reward_check, tiny_cfg

torch.set_num_threads(1)
NO_SPACE = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def run(tmp_path, monkeypatch, *extra, **kw):
    patch_task(monkeypatch)
    skip_reward_check(monkeypatch)
    return trainer.train(tiny_cfg(tmp_path, *extra), **kw)


def nan_update_at(monkeypatch, bad_calls):
    """The loss turns NaN (NaN advantages) on the given (1-based) update calls, i.e. training steps of this process."""
    real, calls = trainer.update, []

    def update(policy, kept, adv, cfg, *rest, **lab):
        calls.append(1)
        return real(policy, kept, adv * math.nan if len(calls) in bad_calls else adv, cfg, *rest, **lab)

    patch_task(monkeypatch)
    monkeypatch.setattr(trainer, "update", update)


def weights(policy):
    return torch.cat([p.detach().flatten().clone() for p in policy.trainable_parameters()])


def test_a_nan_step_is_skipped_and_says_so(tmp_path, monkeypatch):
    seen = []
    skip_reward_check(monkeypatch)
    nan_update_at(monkeypatch, {2})  # the model's loss turns NaN during step 2's update
    run_dir = trainer.train(tiny_cfg(tmp_path, "rl.max_steps=3"),
                            on_step=lambda row, policy, gen: seen.append(weights(policy)))
    rows = read_metrics(run_dir)
    assert [r["skipped"] for r in rows] == [False, True, False]
    assert rows[1]["skip_reason"] == "loss is nan; grad_norm is nan" and "skip_reason" not in rows[0]
    assert [r["optimizer_steps"] for r in rows] == [1, 1, 2]
    assert torch.equal(seen[0], seen[1]) and not torch.equal(seen[1], seen[2])  # step 2 changed nothing
    assert torch.isfinite(seen[2]).all() and ck.verify(run_dir / "checkpoint-3") == []


FLAKY = """
calls = []

def flaky(completions, answers, **columns):  # passes the start-up probe; NaN for one completion of step 2
    if len(completions) > 2:
        calls.append(1)
    return [float("nan") if len(calls) == 2 and i == 3 else float(c[:1].isdigit()) for i, c in enumerate(completions)]
"""


def test_a_nan_reward_stops_the_run_naming_it_and_keeps_the_last_step(tmp_path, monkeypatch):
    """A reward's NaN is refused like any other unusable output (one rule, the probe's): the run stops with a
    message naming the function, the value and the completion, after saving the last completed step."""
    (tmp_path / "flaky.py").write_text(FLAKY)
    monkeypatch.setattr(prepare, "load_prompts", fake_prompts)  # the real scoring path: pods.rewards.combined
    name = f"{tmp_path / 'flaky.py'}:flaky"
    cfg = tiny_cfg(tmp_path, "rl.max_steps=4", f"dataset.rewards=[{{name: '{name}', weight: 1.0}}]",
                   f"dataset.accuracy_reward='{name}'")
    with pytest.raises(RewardError) as err:
        trainer.train(cfg)
    run_dir = tmp_path / "t"
    text = str(err.value)
    assert f"reward '{name}' on 16 completions returned NaN/inf for 1 of them (nan at 3; first at completion 3:" in text
    resumes = run_dir / "checkpoint-1"
    assert f"(step 2 of {run_dir}; fix this and rerun the same command: it resumes from {resumes})" in text
    assert [r["step"] for r in read_metrics(run_dir)] == [1]
    assert [p.name for p in ck.intact(run_dir)] == ["checkpoint-1"]


def test_consecutive_nonfinite_steps_stop_the_run_with_a_message(tmp_path, monkeypatch):
    skip_reward_check(monkeypatch)
    nan_update_at(monkeypatch, {2, 3, 4})
    with pytest.raises(NonFiniteError, match=r"after step 4: the last 3 steps had a non-finite loss or "
                                             r"gradient norm .*latest checkpoint: .*checkpoint-4\).*max_nonfinite"):
        trainer.train(tiny_cfg(tmp_path, "rl.max_steps=10", "rl.save_steps=1"))
    run_dir = tmp_path / "t"
    assert [r["skipped"] for r in read_metrics(run_dir)] == [False, True, True, True]
    assert [p.name for p in ck.intact(run_dir)] == [f"checkpoint-{s}" for s in (1, 2, 3, 4)]  # finite, unchanged
    w1 = (run_dir / "checkpoint-1" / "policy" / "adapter_model.safetensors").read_bytes()
    assert (run_dir / "checkpoint-4" / "policy" / "adapter_model.safetensors").read_bytes() == w1


def test_the_limit_is_configurable_and_counts_on_across_a_resume(tmp_path, monkeypatch):
    skip_reward_check(monkeypatch)
    nan_update_at(monkeypatch, {2})
    trainer.train(tiny_cfg(tmp_path, "rl.max_steps=2", "rl.save_steps=1", "rl.max_nonfinite_steps=2"))
    nan_update_at(monkeypatch, {1})  # the resumed process: its first step (step 3) is NaN again
    with pytest.raises(NonFiniteError, match="the last 2 steps"):
        trainer.train(tiny_cfg(tmp_path, "rl.max_steps=5", "rl.save_steps=1", "rl.max_nonfinite_steps=2"))
    assert [r["step"] for r in read_metrics(tmp_path / "t")] == [1, 2, 3]


def test_weights_with_nan_are_never_saved(tmp_path, monkeypatch):
    def poison(row, policy, generator):
        if row["step"] == 2:
            with torch.no_grad():
                policy.trainable_parameters()[0].fill_(math.nan)

    with pytest.raises(NonFiniteError, match=r"refusing to save .*checkpoint-2: 1 trainable weight tensor"):
        run(tmp_path, monkeypatch, "rl.max_steps=3", "rl.save_steps=1", on_step=poison)
    assert [p.name for p in ck.checkpoints(tmp_path / "t")] == ["checkpoint-1"]


def test_a_failed_checkpoint_write_keeps_the_previous_one_and_the_rerun_resumes(tmp_path, monkeypatch):
    real, calls = ck.manifest.write, []

    def second_fails(directory):
        calls.append(directory)
        if len(calls) == 2:
            raise NO_SPACE
        return real(directory)

    monkeypatch.setattr(ck.manifest, "write", second_fails)
    with pytest.raises(WriteError) as err:
        run(tmp_path, monkeypatch, "rl.max_steps=6", "rl.save_steps=2")
    run_dir = tmp_path / "t"
    assert str(err.value) == f"no space left on device: {run_dir / 'checkpoint-4' / 'manifest.json'}"
    assert sorted(p.name for p in run_dir.iterdir()) == ["checkpoint-2", "config.yaml", "ledger", "metrics.jsonl"]
    assert [r["step"] for r in read_metrics(run_dir)] == [1, 2, 3]  # step 4's row is logged after its save
    monkeypatch.setattr(ck.manifest, "write", real)  # space freed: the same command resumes
    run(tmp_path, monkeypatch, "rl.max_steps=6", "rl.save_steps=2")
    assert [r["step"] for r in read_metrics(run_dir)] == [1, 2, 3, 4, 5, 6]
    assert [p.name for p in ck.intact(run_dir)] == ["checkpoint-2", "checkpoint-4", "checkpoint-6"]


def test_a_failed_metrics_write_loses_no_row(tmp_path, monkeypatch):
    real, failed = MetricsLogger.log, []

    def log(self, row):
        if row["step"] == 3 and not failed:
            failed.append(row)
            raise WriteError(self.path, NO_SPACE)
        real(self, row)

    monkeypatch.setattr(MetricsLogger, "log", log)
    with pytest.raises(WriteError, match=f"^no space left on device: .*{os.sep}metrics.jsonl$"):
        run(tmp_path, monkeypatch, "rl.max_steps=4", "rl.save_steps=1")
    run_dir = tmp_path / "t"
    assert [r["step"] for r in read_metrics(run_dir)] == [1, 2] and (run_dir / "checkpoint-3").is_dir()
    run(tmp_path, monkeypatch, "rl.max_steps=4", "rl.save_steps=1")  # step 3's row comes from checkpoint-3
    rows = read_metrics(run_dir)
    assert [r["step"] for r in rows] == [1, 2, 3, 4] and rows[2]["data_position"] == 6 and "loss" in rows[2]


def test_resume_skips_a_damaged_latest_checkpoint_and_cleans_stale_temp_dirs(tmp_path, monkeypatch, capsys):
    straight = read_metrics(run(tmp_path / "straight", monkeypatch, "rl.max_steps=4", "rl.save_steps=2"))
    run_dir = run(tmp_path, monkeypatch, "rl.max_steps=4", "rl.save_steps=2")
    trainer_pt = run_dir / "checkpoint-4" / "trainer.pt"
    trainer_pt.write_bytes(trainer_pt.read_bytes()[:100])
    (run_dir / ".tmp-checkpoint-6" / "policy").mkdir(parents=True)  # a save killed half-way
    capsys.readouterr()
    run(tmp_path, monkeypatch, "rl.max_steps=6", "rl.save_steps=2")
    out = capsys.readouterr()
    assert "removed .tmp-checkpoint-6, left by a save that did not finish" in out.out
    assert f"warning: checkpoint {run_dir / 'checkpoint-4'} is damaged (trainer.pt: 100 bytes" in out.err
    assert "resuming" in out.out and "from checkpoint-2" in out.out
    rows = read_metrics(run_dir)
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    for a, b in zip(rows[:4], straight):  # steps 3 and 4 trained again, exactly as before
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5, abs=1e-7)
    assert (run_dir / "checkpoint-4.damaged" / "trainer.pt").stat().st_size == 100  # kept for inspection
    assert [p.name for p in ck.intact(run_dir)] == ["checkpoint-2", "checkpoint-4", "checkpoint-6"]


def test_every_checkpoint_damaged_stops_before_touching_the_run(tmp_path, monkeypatch):
    run_dir = run(tmp_path, monkeypatch, "rl.max_steps=2", "rl.save_steps=1")
    for step in (1, 2):
        (run_dir / f"checkpoint-{step}" / "state.json").write_text("{")
    before = (run_dir / "metrics.jsonl").read_text()
    with pytest.raises(ck.CheckpointError, match="every checkpoint of .* is damaged"):
        run(tmp_path, monkeypatch, "rl.max_steps=3", "rl.save_steps=1")
    assert (run_dir / "metrics.jsonl").read_text() == before


def test_a_run_that_saves_nothing_is_explicit_and_a_rerun_never_replaces_its_metrics(tmp_path, monkeypatch):
    explicit = ["rl.max_steps=2", "rl.save_strategy=no", "rl.save_final=false"]
    run_dir = run(tmp_path, monkeypatch, *explicit)
    assert not ck.checkpoints(run_dir) and [r["step"] for r in read_metrics(run_dir)] == [1, 2]
    before = (run_dir / "metrics.jsonl").read_text()
    with pytest.raises(ConfigError, match="saved no checkpoint"):
        run(tmp_path, monkeypatch, *explicit)
    assert (run_dir / "metrics.jsonl").read_text() == before
    run(tmp_path, monkeypatch, *explicit, "resume=false")  # starting over on purpose keeps the old rows aside
    assert [p.read_text() for p in run_dir.glob("metrics.restarted-*.jsonl")] == [before]
    with pytest.raises(ConfigError, match="the trained model would be thrown away"):
        run(tmp_path / "b", monkeypatch, "rl.max_steps=2", "rl.save_final=false")  # save_steps=100 > 2


def test_training_again_from_step_0_keeps_the_rows_of_an_attempt_that_saved_nothing(tmp_path, monkeypatch):
    def crash(row, policy, generator):
        if row["step"] == 2:
            raise RuntimeError("node died")

    with pytest.raises(RuntimeError, match="node died"):
        run(tmp_path, monkeypatch, "rl.max_steps=3", on_step=crash)  # no checkpoint yet (save_steps=100)
    run_dir = run(tmp_path, monkeypatch, "rl.max_steps=3")
    assert [r["step"] for r in read_metrics(run_dir)] == [1, 2, 3]
    kept = list(run_dir.glob("metrics.restarted-*.jsonl"))
    assert len(kept) == 1 and len(kept[0].read_text().splitlines()) == 1  # step 1 of the first attempt


def test_a_warm_start_is_stored_relative_to_the_project(tmp_path, monkeypatch, tiny_model_dir):
    from omegaconf import OmegaConf

    monkeypatch.chdir(tiny_model_dir.parent)
    monkeypatch.setattr(prepare, "ensure_warmstart", lambda ws: Path(tiny_model_dir.name))
    run_dir = run(tmp_path, monkeypatch, "rl.max_steps=1", "+warmstart.target_greedy=0.1")
    assert OmegaConf.load(run_dir / "config.yaml").model.name == tiny_model_dir.name


def test_a_step_that_fails_after_the_signal_loses_only_itself(tmp_path, monkeypatch):
    """Slurm and Ctrl-C signal every process of the job: vLLM's engine process then shuts down and the
    step in progress fails. The last completed step is checkpointed and the resumed run is exact."""
    import signal

    import pods.backends
    from pods.run.guard import Interrupted

    straight = read_metrics(run(tmp_path / "straight", monkeypatch, "rl.max_steps=5", "rule=random"))
    build, calls = pods.backends.build, []

    def dying_engine(cfg):
        policy, generator = build(cfg)
        real = generator.generate

        def generate(prompts, n, sampling):
            calls.append(1)
            if len(calls) == 3:
                os.kill(os.getpid(), signal.SIGTERM)
                raise RuntimeError("EngineDeadError: the engine process got the signal too")
            return real(prompts, n, sampling)

        generator.generate = generate
        return policy, generator

    monkeypatch.setattr(pods.backends, "build", dying_engine)
    with pytest.raises(Interrupted, match=r"stopped by SIGTERM after step 2 \(step 3 failed once the signal came: "
                                          r"RuntimeError: EngineDeadError.*the run resumes from .*checkpoint-2") as err:
        run(tmp_path, monkeypatch, "rl.max_steps=5", "rule=random")
    assert err.value.exit_code == 143 and [p.name for p in ck.intact(tmp_path / "t")] == ["checkpoint-2"]
    monkeypatch.setattr(pods.backends, "build", build)
    resumed = read_metrics(run(tmp_path, monkeypatch, "rl.max_steps=5", "rule=random"))
    assert [r["step"] for r in resumed] == [1, 2, 3, 4, 5]
    for a, b in zip(resumed, straight):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5, abs=1e-7) and a["data_position"] == b["data_position"]
