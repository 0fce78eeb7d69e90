"""pods.run.metrics: phase timers, metrics.jsonl (append, truncate on resume), progress ETA."""

import json
import os

import pytest

from pods.run.metrics import METRICS_FILE, MetricsLogger, PhaseTimers, Progress, read_metrics, truncate_metrics


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_phase_timers_accumulate_and_reset():
    clock = FakeClock()
    timers = PhaseTimers(clock)
    with timers("generation"):
        clock.t += 2.0
    with timers("update"):
        clock.t += 0.5
    with timers("generation"):
        clock.t += 1.0
    assert timers.pop() == {"time/generation": 3.0, "time/update": 0.5}
    assert timers.pop() == {}
    with pytest.raises(KeyError):
        with timers("scoring"):
            clock.t += 4.0
            raise KeyError("boom")
    assert timers.pop() == {"time/scoring": 4.0}  # timed even when the phase fails


def test_metrics_file_one_json_per_step_and_truncated_on_resume(tmp_path):
    log = MetricsLogger(tmp_path)
    for step in range(1, 6):
        log.log({"step": step, "loss": step * 0.1})
    log.close()
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 3, 4, 5]
    with open(tmp_path / METRICS_FILE, "a") as f:
        f.write('{"step": 6, "lo')  # a line cut short by a crash
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 3, 4, 5]
    log = MetricsLogger(tmp_path, resume_step=3)  # resumed from checkpoint-3
    log.log({"step": 4, "loss": 9.0})
    log.close()
    rows = read_metrics(tmp_path)
    assert [r["step"] for r in rows] == [1, 2, 3, 4] and rows[-1]["loss"] == 9.0
    assert all(json.loads(line) for line in (tmp_path / METRICS_FILE).read_text().splitlines())
    truncate_metrics(tmp_path / "missing", 1)  # no file: nothing to do


def test_eta_is_the_sooner_of_the_step_and_time_budgets():
    assert Progress.eta(10, 100.0, max_steps=20, max_time=None) == pytest.approx(100.0)
    assert Progress.eta(10, 100.0, max_steps=None, max_time=150.0) == pytest.approx(50.0)
    assert Progress.eta(10, 100.0, max_steps=20, max_time=1000.0) == pytest.approx(100.0)
    assert Progress.eta(0, 0.0, max_steps=20, max_time=None) is None
    assert Progress.eta(5, 200.0, max_steps=None, max_time=150.0) == 0.0


def test_progress_bar_shows_reward_accuracy_and_eta(capsys):
    bar = Progress(True, max_steps=4, max_time=None)
    bar.update({"step": 1, "elapsed_seconds": 2.0, "reward/total": 0.25, "accuracy": 0.125})
    text = str(bar.bar)
    bar.close()
    assert "reward=0.250" in text and "acc=0.125" in text and "eta=00:00:06" in text
    Progress(False, None, 10.0).update({"step": 1, "elapsed_seconds": 1.0})  # disabled: no-op


@pytest.mark.slow
def test_wandb_runs_offline_without_an_api_key(tmp_path, monkeypatch):
    from omegaconf import OmegaConf

    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    cfg = OmegaConf.create({"logging": {"wandb": True, "project": "pods-test", "entity": None}, "rl": {"n": 4}})
    (tmp_path / "run").mkdir()
    log = MetricsLogger(tmp_path / "run", cfg)
    log.log({"step": 1, "reward/total": 0.5})
    log.close()
    assert os.environ["WANDB_MODE"] == "offline"
    assert list((tmp_path / "run" / "wandb").glob("offline-run-*"))
    assert [r["step"] for r in read_metrics(tmp_path / "run")] == [1]


def test_training_again_from_step_0_keeps_the_earlier_attempts_rows(tmp_path, capsys):
    log = MetricsLogger(tmp_path)
    for step in (1, 2):
        log.log({"step": step})
    log.close()
    log = MetricsLogger(tmp_path, resume_step=0)  # no checkpoint was written: training restarts
    log.log({"step": 1, "new": True})
    log.close()
    kept = list(tmp_path.glob("metrics.restarted-*.jsonl"))
    assert len(kept) == 1 and [json.loads(x)["step"] for x in kept[0].read_text().splitlines()] == [1, 2]
    assert read_metrics(tmp_path) == [{"step": 1, "new": True}]
    assert "the 2 rows an earlier attempt logged (steps up to 2) were moved to" in capsys.readouterr().out


def test_a_row_whose_write_failed_after_its_checkpoint_is_restored_on_resume(tmp_path):
    log = MetricsLogger(tmp_path)
    for step in (1, 2, 3):
        log.log({"step": step})
    log.close()
    truncate_metrics(tmp_path, 2)  # as if step 3's row never reached the disk; checkpoint-3 holds it
    log = MetricsLogger(tmp_path, resume_step=3, resume_row={"step": 3, "loss": 0.5})
    log.log({"step": 4})
    log.close()
    assert read_metrics(tmp_path) == [{"step": 1}, {"step": 2}, {"step": 3, "loss": 0.5}, {"step": 4}]
    log = MetricsLogger(tmp_path, resume_step=3, resume_row={"step": 3, "loss": 0.5})  # present: not repeated
    log.close()
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 3]


def test_a_failed_metrics_write_names_the_file_and_keeps_the_rows_before(tmp_path):
    import errno

    from pods.io import WriteError

    log = MetricsLogger(tmp_path)
    log.log({"step": 1})

    class FullDisk:
        def write(self, text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def close(self):
            pass

    log.file.close()
    log.file = FullDisk()
    with pytest.raises(WriteError, match=f"^no space left on device: {tmp_path / METRICS_FILE}$"):
        log.log({"step": 2})
    log.close()
    assert read_metrics(tmp_path) == [{"step": 1}]
