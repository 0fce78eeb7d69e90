"""scripts/train_trl.py: presets, the training clock (evaluation excluded), and a 2-step CPU run.

    uv run pytest tests/scripts/test_train_trl.py     (~15 s: tiny Qwen2, arithmetic task)
"""

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("train_trl", ROOT / "scripts" / "train_trl.py")
train_trl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(train_trl)
TINY = ROOT / "config" / "trl" / "tiny-cpu.yaml"


def test_preset_checks():
    cfg = train_trl.load_preset(TINY, ["trl.max_steps=7"])
    assert cfg["trl"]["max_steps"] == 7 and cfg["algorithm"] == "pods"
    assert train_trl.run_name(cfg) == "trl-pods-n4-m2-ga1-s0"
    assert train_trl.load_preset(TINY, ["trl.eval_strategy=no"])["trl"]["eval_strategy"] == "no"  # not False
    with pytest.raises(ValueError, match="pods, grpo_ga"):
        train_trl.load_preset(TINY, ["algorithm=ppo"])
    with pytest.raises(ValueError, match="not among the rewards"):
        train_trl.load_preset(TINY, ["accuracy_reward=gsm8k"])
    with pytest.raises(ValueError, match="remove the trl.pods_"):
        train_trl.load_preset(TINY, ["algorithm=grpo_ga"])


def test_as_grpo_ga_gives_the_ga_preset():
    pods = train_trl.load_preset(ROOT / "config/trl/pods-qwen2.5-3b.yaml")
    assert train_trl.as_grpo_ga(pods) == train_trl.load_preset(ROOT / "config/trl/grpo-ga-qwen2.5-3b.yaml")


def test_clock_excludes_evaluation_and_stops_on_budget(tmp_path):
    now = [0.0]
    log = train_trl.RunLog(tmp_path, "arithmetic", "arithmetic", max_train_seconds=2.5, clock=lambda: now[0])
    state = SimpleNamespace(is_world_process_zero=True, global_step=0)
    control = SimpleNamespace(should_training_stop=False)
    metrics = {"eval_rewards/arithmetic/mean": 0.25, "eval_completions/mean_length": 3.0}
    log.on_train_begin(None, state, control)
    now[0] = 5.0  # evaluation at start: 5 s
    log.on_evaluate(None, state, control, metrics=metrics)
    for step in (1, 2):
        log.on_step_begin(None, state, control)
        now[0] += 1.5  # one optimizer step
        state.global_step = step
        log.on_step_end(None, state, control)
        log.on_log(None, state, control, logs={"loss": 0.1, "step_time": 1.5})
        now[0] += 10.0  # evaluation
        log.on_evaluate(None, state, control, metrics=metrics)
    log.on_train_end(None, state, control)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["elapsed_seconds"], r["eval_seconds"]) for r in rows] == [(0, 0.0, 5.0), (1, 1.5, 15.0),
                                                                                    (2, 3.0, 25.0)]
    assert all(r["eval/accuracy"] == 0.25 for r in rows)  # one row per step: logs and evaluation merged
    assert [r.get("time/step") for r in rows] == [None, 1.5, 1.5] and rows[2]["loss"] == 0.1
    assert control.should_training_stop  # 3.0 s of training > 2.5 s budget
    results = json.loads((tmp_path / "eval_results.json").read_text())
    assert results["checkpoint-2"] == {"step": 2, "elapsed_seconds": 3.0,
                                       "arithmetic": {"ans_acc": [0.25], "lengths": [3.0]}}


def test_two_step_cpu_run_writes_readable_metrics(tmp_path):
    import time

    from pods.analysis.loaders import load_run_dir

    start = time.perf_counter()
    trainer, run_dir = train_trl.main(["--preset", str(TINY), f"run_dir={tmp_path}"])
    wall = time.perf_counter() - start
    assert trainer.state.global_step == 2 and (run_dir / "config.yaml").is_file()
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]  # one row per step (step 0: the evaluation at start)
    assert all(0.0 <= r["eval/accuracy"] <= 1.0 for r in rows) and all("loss" in r for r in rows[1:])
    assert rows[0]["elapsed_seconds"] == 0.0 and rows[0]["eval_seconds"] > 0
    assert 0 < rows[1]["elapsed_seconds"] < rows[2]["elapsed_seconds"]
    assert rows[-1]["elapsed_seconds"] + rows[-1]["eval_seconds"] < wall  # evaluation is off the clock
    assert all(k in rows[1] for k in ("time/step", "pods/kept_reward", "pods/regrouped", "reward"))
    with pytest.raises(ValueError, match="overwrite=true"):  # never silently replaces a finished run
        train_trl.main(["--preset", str(TINY), f"run_dir={tmp_path}"])
    run = load_run_dir(run_dir)  # the analysis scripts read it
    assert run.steps.tolist() == [0, 1, 2] and run.metric("arithmetic", "ans_acc").shape == (3,)
