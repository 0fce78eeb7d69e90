"""evaluate-run.py and pods.evaluation.evaluate_run on a real (tiny, CPU) run directory.

The run directory is built by hand (config.yaml + checkpoints saved by the hf policy) so the test
does not depend on training; the evaluation uses the real hf backend, data and verifiers.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from pods import backends
from pods.evaluation import evaluate_run
from pods.evaluation.results import FORMAT

ROOT = Path(__file__).resolve().parent.parent
EVAL = ["repeats=2", "max_tokens=4", "batch_size=8", "examples=2",
        "datasets=[{name:arithmetic,limit:12,format_reward:null}]"]


def eval_cfg(*overrides):
    with initialize_config_dir(config_dir=str(ROOT / "config"), version_base=None):
        return compose(config_name="evaluate", overrides=["run_dir=unused", *EVAL, *overrides])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A LoRA run on the tiny model with checkpoints at steps 3 and 1 (+ an incomplete one)."""
    d = tmp_path_factory.mktemp("runs") / "tiny-run"
    with initialize_config_dir(config_dir=str(ROOT / "config"), version_base=None):
        cfg = compose(config_name="train", overrides=["model=tiny", "dataset=arithmetic", "backend.device=cpu"])
    d.mkdir(parents=True)
    OmegaConf.save(cfg, d / "config.yaml", resolve=True)
    policy, _ = backends.build(cfg)
    for step in (3, 1):
        for p in policy.trainable_parameters():  # distinct adapters per checkpoint
            p.data.add_(0.05 * step)
        policy.save(d / f"checkpoint-{step}" / "policy")
        (d / f"checkpoint-{step}" / "state.json").write_text(json.dumps({"step": step, "elapsed_seconds": 10.0 * step}))
    (d / "checkpoint-5" / "policy").mkdir(parents=True)  # no state.json: incomplete, skipped
    return d


class CountingBuild:
    def __init__(self):
        self.calls = 0

    def __call__(self, cfg):
        policy, gen = backends.build(cfg)
        outer = self

        class Counting:
            def generate(self, prompts, n, sampling):
                outer.calls += 1
                return gen.generate(prompts, n, sampling)

            def update_weights(self, p):
                gen.update_weights(p)

        return policy, Counting()


def test_sweep_layout_and_resume(run_dir, tmp_path):
    out = tmp_path / "r.json"
    first = CountingBuild()
    evaluate_run(run_dir, eval_cfg(f"output={out}", "repeats=1"), log=lambda *a: None, build=first)
    assert first.calls == 3 * 2  # base + 2 checkpoints, batches of 8 over 12 problems
    data = json.loads(out.read_text())
    assert data["format"] == FORMAT
    assert [k for k in data if k.startswith("checkpoint") or k == "base"] == ["base", "checkpoint-1", "checkpoint-3"]
    assert data["checkpoint-3"]["step"] == 3 and data["checkpoint-3"]["elapsed_seconds"] == 30.0
    assert data["base"]["step"] == 0 and data["base"]["elapsed_seconds"] == 0.0
    ds = data["checkpoint-1"]["arithmetic"]
    # the strict metrics and the paper-compatible ones (config/evaluate.yaml paper_grader: paper_answer)
    assert sorted(ds) == ["ans_acc", "both_acc", "for_acc", "lengths", "paper_ans_acc", "paper_both_acc",
                          "paper_for_acc"]
    assert all(len(v) == 1 for v in ds.values()) and 0 < ds["lengths"][0] <= 4 and ds["for_acc"] == [1.0]
    assert ds["paper_for_acc"] == [0.0]  # 4-token completions are never in the paper's think/answer format
    examples = data["examples"]["checkpoint-1"]["arithmetic"]
    assert len(examples) == 2 and all(isinstance(e["paper_correct"], bool) for e in examples)

    second = CountingBuild()  # resume: only the second repeat of each entry is computed
    evaluate_run(run_dir, eval_cfg(f"output={out}"), log=lambda *a: None, build=second)
    assert second.calls == 3 * 2
    data2 = json.loads(out.read_text())
    assert data2["checkpoint-1"]["arithmetic"]["ans_acc"][0] == ds["ans_acc"][0]
    assert all(len(v) == 2 for v in data2["checkpoint-3"]["arithmetic"].values())

    third = CountingBuild()  # nothing left: the backend is not even built
    evaluate_run(run_dir, eval_cfg(f"output={out}"), log=lambda *a: None, build=third)
    assert third.calls == 0
    with pytest.raises(ValueError, match="other evaluation settings"):
        evaluate_run(run_dir, eval_cfg(f"output={out}", "temperature=0.5"), log=lambda *a: None)


def test_same_seed_same_result_and_no_base(run_dir, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    evaluate_run(run_dir, eval_cfg(f"output={a}", "base=false"), log=lambda *a: None)
    evaluate_run(run_dir, eval_cfg(f"output={b}", "base=false"), log=lambda *a: None)
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    assert "base" not in da and da["checkpoint-3"] == db["checkpoint-3"]


def test_cli_refuses_corrupted_results_and_keeps_them(run_dir):
    res = run_dir / "eval_results.json"
    res.write_text('{"checkpoint-1": {"gsm8k": ')
    proc = subprocess.run([sys.executable, str(ROOT / "evaluate-run.py"), f"run_dir={run_dir}", *EVAL],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "not valid JSON" in proc.stderr and "left untouched" in proc.stderr
    assert res.read_text() == '{"checkpoint-1": {"gsm8k": '
    assert not (ROOT / "evaluate-run.log").exists()  # Hydra logs to stdout only
    res.unlink()


def test_cli_rejects_missing_run_dir(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "evaluate-run.py"), f"run_dir={tmp_path}", *EVAL],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2 and "no config.yaml" in proc.stderr


@pytest.mark.slow
def test_cli_reports_a_failed_results_write_and_keeps_the_previous_results(run_dir, tmp_path):
    """A write the OS refuses (a file size limit: EFBIG, like a full disk) ends with exit code 2, the cause
    and the path; the results written before stay as they were."""
    import resource
    import signal

    out = tmp_path / "results.json"
    evaluate_run(run_dir, eval_cfg(f"output={out}", "repeats=1", "base=false"), log=lambda *a: None)
    before = out.read_bytes()

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 8, len(before) + 8))

    proc = subprocess.run([sys.executable, str(ROOT / "evaluate-run.py"), f"run_dir={run_dir}", *EVAL,
                           f"output={out}", "base=false"], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          preexec_fn=limit)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"evaluate-run.py: error: file too large: {out}" in proc.stderr and "Traceback" not in proc.stderr
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]
