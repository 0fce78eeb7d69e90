"""Seconds per step from metrics.jsonl (totals, phase timers, torn last line) and from paper checkpoints."""

import json

import numpy as np
import pytest

from pods.analysis.loaders import Run
from pods.analysis.steptime import paper_step_seconds, phases, run_step_seconds


def write_metrics(path, records, torn=False):
    path.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(r) for r in records) + "\n"
    (path / "metrics.jsonl").write_text(text + ('{"step": 9, "elaps' if torn else ""))


def test_total_from_elapsed_and_phase_means(tmp_path):
    recs = [{"step": s, "elapsed_seconds": 2.0 * s, "time/generate": 0.5 + 0.1 * (s % 2), "time/update": 1.0,
             "time/step_seconds": 2.0, "loss": 0.1} for s in range(1, 6)]
    recs[3]["time/checkpoint"] = 1.5  # logged only on the step that saved a checkpoint
    write_metrics(tmp_path / "r", recs, torn=True)
    out = run_step_seconds(tmp_path / "r")
    assert out["total"] == pytest.approx(2.0)  # 10 s of training clock over 5 steps
    assert out["time/generate"] == pytest.approx(0.56) and out["time/update"] == pytest.approx(1.0)
    assert out["time/checkpoint"] == pytest.approx(0.3)  # 1.5 s over 5 steps
    assert sorted(phases(out)) == ["time/checkpoint", "time/generate", "time/update"]  # totals not stacked


def test_total_from_timers_without_elapsed(tmp_path):
    write_metrics(tmp_path / "r", [{"step": 1, "time/generate": 1.0, "time/update": 2.0}])
    assert run_step_seconds(tmp_path / "r")["total"] == pytest.approx(3.0)
    write_metrics(tmp_path / "e", [{"step": 1, "loss": 0.0}])
    with pytest.raises(ValueError, match="neither elapsed_seconds nor time"):
        run_step_seconds(tmp_path / "e")
    with pytest.raises(ValueError, match="no metrics.jsonl"):
        run_step_seconds(tmp_path / "missing")


def test_paper_step_seconds():
    r = Run("x", "S", np.array([0.5, 6.0]), np.array([100.0, 2400.0]), {})
    assert paper_step_seconds(r) == pytest.approx(9.0)  # 6 h * 3600 s / 2400 steps


def test_step_seconds_within_horizon_and_global_steps_for_csv_runs():
    r = Run("x", "S", np.array([0.25, 0.5, 0.75]), np.array([100.0, 200.0, 300.0]), {})
    assert paper_step_seconds(r, max_hours=0.5) == pytest.approx(9.0)  # 1800 s / 200 steps
    csv = Run("G-s1-p8-n32-m32-ga16", "h:x", np.array([0.5]), np.array([160.0]), {}, meta={"time_unit": "seconds"})
    assert paper_step_seconds(csv) == pytest.approx(180.0)  # 1800 s / (160 / 16) global steps
    with pytest.raises(ValueError, match="by 0.1 h"):
        paper_step_seconds(r, max_hours=0.1)
