"""RunLog (the TRL launcher's callback): training clock, time-based evaluation and checkpoints, budget,
metrics rows, and its state in checkpoints. Run: uv run pytest tests/pods/integrations/test_trl_runlog.py
(fake clock and trainer state: no model)."""

import json
from types import SimpleNamespace

import pytest

from pods.integrations.trl.runlog import RunLog

METRICS = {"eval_rewards/arithmetic/mean": 0.25, "eval_completions/mean_length": 3.0, "epoch": 0.1}


def _state(step=0, max_steps=100, saved=None):
    return SimpleNamespace(is_world_process_zero=True, global_step=step, max_steps=max_steps,
                           stateful_callbacks=saved or {})


def _control():
    return SimpleNamespace(should_training_stop=False, should_evaluate=False, should_save=False)


def _steps(log, state, now, seconds, evaluate_every_step=False):
    """Run optimizer steps of the given wall times; returns the controls set after each."""
    controls = []
    for sec in seconds:
        control = _control()
        log.on_step_begin(None, state, control)
        now[0] += sec
        state.global_step += 1
        log.on_step_end(None, state, control)
        log.on_log(None, state, control, logs={"loss": 0.1, "step_time": sec})
        if control.should_evaluate or evaluate_every_step:
            now[0] += 10.0  # evaluation: off the clock
            log.on_evaluate(None, state, control, metrics=METRICS)
        controls.append(control)
    return controls


def test_clock_excludes_evaluation_and_stops_on_budget(tmp_path):
    now = [0.0]
    log = RunLog(tmp_path, "arithmetic", "arithmetic", max_train_seconds=2.5, clock=lambda: now[0])
    state = _state()
    log.on_train_begin(None, state, _control())
    now[0] = 5.0  # evaluation at start: 5 s
    log.on_evaluate(None, state, _control(), metrics=METRICS)
    controls = _steps(log, state, now, [1.5, 1.5], evaluate_every_step=True)
    log.on_train_end(None, state, _control())
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["elapsed_seconds"], r["eval_seconds"]) for r in rows] == [(0, 0.0, 5.0), (1, 1.5, 15.0),
                                                                                    (2, 3.0, 25.0)]
    assert all(r["eval/accuracy"] == 0.25 for r in rows) and "eval/" not in rows[0]  # logs and evaluation merged
    assert [r.get("time/step") for r in rows] == [None, 1.5, 1.5] and rows[2]["loss"] == 0.1
    assert [c.should_training_stop for c in controls] == [False, True]  # 3.0 s of training > 2.5 s budget
    results = json.loads((tmp_path / "eval_results.json").read_text())
    assert results["checkpoint-2"] == {"step": 2, "elapsed_seconds": 3.0,
                                       "arithmetic": {"ans_acc": [0.25], "lengths": [3.0]}}


def test_evaluation_and_checkpoints_by_training_time(tmp_path):
    now = [0.0]
    log = RunLog(tmp_path, "arithmetic", "arithmetic", max_train_seconds=300, eval_every_seconds=120,
                 save_every_seconds=100, clock=lambda: now[0])
    state = _state()
    log.on_train_begin(None, state, _control())
    controls = _steps(log, state, now, [50.0] * 7)  # clock after each step: 50, 100, ..., 350
    evaluated = [s for s, c in enumerate(controls, 1) if c.should_evaluate]
    saved = [s for s, c in enumerate(controls, 1) if c.should_save]
    assert evaluated == [1, 3, 5]  # as the authors: after step 1 (clock > 0), then past 120 s and 240 s
    assert saved == [2, 4, 6, 7]  # past 100, 200, 300 s; and the step that hits the budget (350 >= 300)
    assert controls[5].should_training_stop and controls[6].should_training_stop


def test_state_resumes_clock_and_pending_row(tmp_path):
    now = [0.0]
    first = RunLog(tmp_path, "arithmetic", "arithmetic", eval_every_seconds=120, save_every_seconds=100,
                   clock=lambda: now[0])
    state = _state()
    first.on_train_begin(None, state, _control())
    _steps(first, state, now, [60.0, 60.0])
    saved = {"RunLog": json.loads(json.dumps(first.state()))}  # as in trainer_state.json
    assert saved["RunLog"]["attributes"]["row"]["step"] == 2  # not yet written: it belongs to the checkpoint
    (tmp_path / "metrics.jsonl").write_text("")  # resume.py trims the file to the rows before step 2
    second = RunLog(tmp_path, "arithmetic", "arithmetic", eval_every_seconds=120, save_every_seconds=100,
                    clock=lambda: now[0])
    state = _state(step=2, saved=saved)
    second.on_train_begin(None, state, _control())
    assert (second.elapsed, second.next_eval, second.next_save) == (120.0, 240.0, 200.0)
    controls = _steps(second, state, now, [60.0, 60.0])  # clock 180, then 240
    second.on_train_end(None, state, _control())
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["elapsed_seconds"]) for r in rows] == [(2, 120.0), (3, 180.0), (4, 240.0)]
    assert [(c.should_evaluate, c.should_save) for c in controls] == [(False, False), (True, True)]


def test_other_ranks_never_write_rows(tmp_path):
    log = RunLog(tmp_path, "arithmetic", "arithmetic")
    state = _state(step=3, saved={"RunLog": {"args": {}, "attributes": {
        "elapsed": 1.0, "eval_seconds": 0.0, "next_eval": None, "next_save": None, "row": {"step": 3}}}})
    state.is_world_process_zero = False
    log.on_train_begin(None, state, _control())
    log.on_train_end(None, state, _control())
    assert log.elapsed == 1.0 and not (tmp_path / "metrics.jsonl").exists()


def test_bad_intervals_are_refused(tmp_path):
    with pytest.raises(ValueError, match="eval_every_seconds must be positive"):
        RunLog(tmp_path, "a", "a", eval_every_seconds=0)
