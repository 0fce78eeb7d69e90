"""evaluate-run.py and pods.evaluation.evaluate_run on a real (tiny, CPU) run directory.

The run directory is built by hand (config.yaml + checkpoints saved by the hf policy) so the test
does not depend on training; the evaluation uses the real hf backend, data and verifiers.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from pods import backends
from pods.evaluation import evaluate_run
from pods.evaluation.results import FORMAT

from cli_runner import run_many
from helpers import compose

ROOT = Path(__file__).resolve().parent.parent
EVAL = ["repeats=2", "max_tokens=4", "batch_size=8", "examples=2",
        "datasets=[{name:arithmetic,limit:12,format_reward:null}]"]


def eval_cfg(*overrides):
    return compose(["run_dir=unused", *EVAL, *overrides], name="evaluate")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A LoRA run on the tiny model with checkpoints at steps 3 and 1 (+ an incomplete one)."""
    d = tmp_path_factory.mktemp("runs") / "tiny-run"
    cfg = compose(["model=tiny", "dataset=arithmetic", "backend.device=cpu"])
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



class MergedLoads:
    """Stands in for the 4-bit load (bitsandbytes is not a CPU test dependency): loads the merged model
    unquantized and records what it was given, with its logits against the run's adapter policy."""

    def __init__(self, run_dir):
        self.run_dir, self.dirs, self.gaps = run_dir, [], {}

    def __call__(self, cfg, model_dir):
        from transformers import AutoModelForCausalLM

        from pods.backends.hf import HFGenerator, HFPolicy, load_policy, load_tokenizer

        model_dir = Path(model_dir)
        self.dirs.append(model_dir)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        if model_dir.parent == self.run_dir:  # written for this sweep: the tiny base, a merged checkpoint
            ids = torch.tensor([[49, 50, 43, 51, 52, 61]])
            for step in (1, 3):
                policy = load_policy(cfg, weights=self.run_dir / f"checkpoint-{step}" / "policy")
                with torch.no_grad():
                    gap = (model(input_ids=ids).logits - policy.model(input_ids=ids).logits).abs().max().item()
                self.gaps.setdefault(len(self.dirs), {})[step] = gap
        return HFGenerator(HFPolicy(model, load_tokenizer(cfg.model), torch.device("cpu"), lora=False))


def test_merged_4bit_sweep_merges_each_checkpoint_and_never_mixes_with_adapter_results(run_dir, tmp_path):
    out = tmp_path / "merged.json"
    loads = MergedLoads(run_dir)
    evaluate_run(run_dir, eval_cfg(f"output={out}", "repeats=1", "weights=merged_4bit"), log=lambda *a: None,
                 load_4bit=loads)
    assert len(loads.dirs) == 3  # base, checkpoint-1, checkpoint-3: one model each
    assert all(d.parent == run_dir and d.name.startswith(".pods-merged-") for d in loads.dirs)
    assert not list(run_dir.glob(".pods-merged-*"))  # every merged copy deleted once loaded
    # the merged model of checkpoint k is the adapter policy of checkpoint k (float16 merge: small gaps only)
    (base, first, second) = (loads.gaps[k] for k in (1, 2, 3))  # max |logit gap| to checkpoint 1 and 3's policy
    assert first[1] < 3e-4 < 1e-3 < first[3] and second[3] < 3e-4 < 1e-3 < second[1] and min(base.values()) > 0.1
    data = json.loads(out.read_text())
    assert json.loads(data["settings"])["weights"] == "merged_4bit"
    assert sorted(k for k in data if k.startswith("checkpoint") or k == "base") == ["base", "checkpoint-1",
                                                                                   "checkpoint-3"]
    before = out.read_text()
    with pytest.raises(ValueError, match="other evaluation settings"):  # the adapter mode refuses the file
        evaluate_run(run_dir, eval_cfg(f"output={out}", "repeats=1"), log=lambda *a: None)
    assert out.read_text() == before
    adapter = tmp_path / "adapter.json"
    evaluate_run(run_dir, eval_cfg(f"output={adapter}", "repeats=1", "base=false"), log=lambda *a: None)
    assert json.loads(json.loads(adapter.read_text())["settings"])["weights"] == "adapter"


@pytest.fixture(scope="module")
def refusals(run_dir, tmp_path_factory):
    """evaluate-run.py's refusals as real command lines, run in one interpreter (tests/cli_runner.py):
    {case: (result, its folder)} for merged weights without bitsandbytes, corrupted results, no run directory."""
    folders = {name: tmp_path_factory.mktemp(name) for name in ("merged", "corrupt", "missing")}
    corrupt = folders["corrupt"] / "run"
    shutil.copytree(run_dir, corrupt)
    (corrupt / "eval_results.json").write_text('{"checkpoint-1": {"gsm8k": ')
    args = {"corrupt": [f"run_dir={corrupt}", *EVAL], "missing": [f"run_dir={folders['missing']}", *EVAL]}
    if importlib.util.find_spec("bitsandbytes") is None:  # else it would merge and evaluate
        args["merged"] = [f"run_dir={run_dir}", *EVAL, "weights=merged_4bit", f"output={folders['merged'] / 'none.json'}"]
    results = run_many([{"program": str(ROOT / "evaluate-run.py"), "args": a, "env": dict(os.environ)}
                        for a in args.values()], cwd=ROOT)
    return {name: (result, folders[name]) for name, result in zip(args, results)}


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is not None, reason="bitsandbytes is installed")
def test_merged_4bit_without_bitsandbytes_is_refused_before_a_model_loads(run_dir, refusals):
    proc, folder = refusals["merged"]
    assert proc["code"] == 2 and "Traceback" not in proc["stderr"], proc["stderr"][-2000:]
    assert "bitsandbytes, which is not installed" in proc["stderr"] and "weights=adapter" in proc["stderr"]
    assert not (folder / "none.json").exists() and not list(run_dir.glob(".pods-merged-*"))


def test_same_seed_same_result_and_no_base(run_dir, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    evaluate_run(run_dir, eval_cfg(f"output={a}", "base=false"), log=lambda *a: None)
    evaluate_run(run_dir, eval_cfg(f"output={b}", "base=false"), log=lambda *a: None)
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    assert "base" not in da and da["checkpoint-3"] == db["checkpoint-3"]


def test_cli_refuses_corrupted_results_and_keeps_them(refusals):
    proc, folder = refusals["corrupt"]
    assert proc["code"] == 2, proc["stderr"][-2000:]
    assert "not valid JSON" in proc["stderr"] and "left untouched" in proc["stderr"]
    assert (folder / "run" / "eval_results.json").read_text() == '{"checkpoint-1": {"gsm8k": '
    assert not (ROOT / "evaluate-run.log").exists()  # Hydra logs to stdout only


def test_cli_rejects_missing_run_dir(refusals):
    proc, _ = refusals["missing"]
    assert proc["code"] == 2 and "no config.yaml" in proc["stderr"]


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
