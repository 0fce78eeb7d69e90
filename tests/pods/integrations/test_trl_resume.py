"""pods/integrations/trl/resume.py on hand-made run directories: what a rerun does and what it keeps.

    uv run pytest tests/pods/integrations/test_trl_resume.py       (no model; the real kill -9 runs are in
    tests/pods/commands/test_trl_resume.py)
"""

import json

import pytest
from omegaconf import OmegaConf

from pods.integrations.trl.resume import apply_plan, checkpoint_step, config_diff, mark_finished, plan_run

CFG = {"algorithm": "pods", "trl": {"learning_rate": 1e-3, "seed": 0}, "max_train_seconds": 60}


def _run(tmp_path, steps=(2, 4), broken=(6,), rows=7):
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(CFG)))
    for s in steps:
        (tmp_path / f"checkpoint-{s}").mkdir()
        (tmp_path / f"checkpoint-{s}" / "trainer_state.json").write_text(json.dumps({"global_step": s}))
    for s in broken:  # killed while saving: weights but no trainer_state.json yet
        (tmp_path / f"checkpoint-{s}").mkdir()
        (tmp_path / f"checkpoint-{s}" / "model.safetensors").write_text("x")
    lines = [json.dumps({"step": s, "loss": s}) for s in range(rows)]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + '\n{"step": 7, "lo')  # torn last line
    evals = {f"checkpoint-{s}": {"step": s, "elapsed_seconds": s} for s in (0, 3, 6)}
    (tmp_path / "eval_results.json").write_text(json.dumps(evals))
    return tmp_path


def test_fresh_directory(tmp_path):
    plan = plan_run(tmp_path / "new", CFG)
    assert plan.mode == "fresh" and plan.checkpoint is None
    apply_plan(tmp_path / "new", plan, {**CFG, "overwrite": False})
    assert OmegaConf.to_container(OmegaConf.load(tmp_path / "new" / "config.yaml")) == CFG  # overwrite not saved


def test_resume_from_the_latest_complete_checkpoint(tmp_path):
    run = _run(tmp_path)
    assert [checkpoint_step(run / f"checkpoint-{s}") for s in (2, 4, 6)] == [2, 4, None]
    plan = plan_run(run, CFG)
    assert (plan.mode, plan.checkpoint, plan.step) == ("resume", run / "checkpoint-4", 4)
    assert plan.stale == [run / "checkpoint-6"]
    apply_plan(run, plan, CFG)
    assert not (run / "checkpoint-6").exists() and (run / "checkpoint-2").exists()
    assert [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [0, 1, 2, 3]
    assert sorted(json.loads((run / "eval_results.json").read_text())) == ["checkpoint-0", "checkpoint-3"]


def test_other_settings_are_refused_and_nothing_changes(tmp_path):
    run = _run(tmp_path)
    before = (run / "metrics.jsonl").read_text()
    other = {**CFG, "trl": {"learning_rate": 2e-3, "seed": 0}, "max_train_seconds": None}
    with pytest.raises(ValueError, match=r"max_train_seconds: 60 -> None; trl.learning_rate: 0.001 -> 0.002"):
        plan_run(run, other)
    assert (run / "metrics.jsonl").read_text() == before and (run / "checkpoint-6").exists()
    assert config_diff(CFG, {**CFG, "overwrite": True}) == []  # overwrite may differ


def test_overwrite_starts_over(tmp_path):
    run = _run(tmp_path)
    plan = plan_run(run, {**CFG, "trl": {"learning_rate": 5.0}, "overwrite": True})  # any settings
    assert plan.mode == "fresh"
    apply_plan(run, plan, {**CFG, "overwrite": True})
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml"]


def test_finished_run_is_left_alone(tmp_path):
    run = _run(tmp_path)
    mark_finished(run, 4, 12.5)
    assert plan_run(run, CFG).mode == "finished"
    assert json.loads((run / "finished.json").read_text()) == {"step": 4, "elapsed_seconds": 12.5}


def test_killed_before_the_first_checkpoint_starts_over(tmp_path):
    run = _run(tmp_path, steps=(), broken=(2,))
    plan = plan_run(run, CFG)
    assert plan.mode == "fresh" and plan.stale == [run / "checkpoint-2"]
    apply_plan(run, plan, CFG)
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml"]


def test_files_without_config_are_refused(tmp_path):
    (tmp_path / "metrics.jsonl").write_text("{}\n")
    with pytest.raises(ValueError, match="without config.yaml; pass overwrite=true"):
        plan_run(tmp_path, CFG)
