"""pods.evaluation: metrics on known completions, the results file (resume, atomicity, foreign files)."""

import json

import pytest
import torch

from pods.backends.base import Sampling
from pods.core.rollouts import Rollouts
from pods.evaluation import complete_checkpoints, sample_answers, score
from pods.evaluation.results import FORMAT, ResultsFile

from helpers import compose


def exact(completions, answers, **cols):
    return [1.0 if c.strip() == a else 0.0 for c, a in zip(completions, answers)]


def tagged(completions, answers, **cols):
    return [1.0 if c.startswith("<answer>") else 0.0 for c in completions]


def test_score_known_completions():
    texts = ["12", "<answer>7", "<answer>3", "x"]
    metrics, correct, formatted = score(texts, [2, 4, 6, 8], ["12", "7", "4", "1"], answer_fn=exact, format_fn=tagged)
    assert correct == [True, False, False, False]
    assert formatted == [False, True, True, False]
    assert metrics == {"ans_acc": 0.25, "for_acc": 0.5, "both_acc": 0.0, "lengths": 5.0}
    metrics, _, _ = score(["7", "8"], [1, 1], ["7", "9"], answer_fn=exact)  # no format check
    assert metrics["for_acc"] == 1.0 and metrics["both_acc"] == 0.5


def test_score_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="equal, non-empty"):
        score(["a"], [1, 2], ["a"], answer_fn=exact)
    with pytest.raises(ValueError, match="returned"):
        score(["a", "b"], [1, 1], ["a", "b"], answer_fn=lambda c, a: [1.0])


class EchoGenerator:
    """Completion = the prompt's ids reversed; records the sampling seeds it was called with."""

    def __init__(self):
        self.seeds = []

    def generate(self, prompts, n, sampling):
        self.seeds.append(sampling.seed)
        comps = [list(reversed(p)) for p in prompts for _ in range(n)]
        return Rollouts(prompt_ids=prompts, completion_ids=comps, texts=[str(c) for c in comps], n=n)

    def update_weights(self, policy):
        pass


def test_sample_answers_batches_in_order_with_per_batch_seeds():
    gen = EchoGenerator()
    prompts = [[i, i + 1] for i in range(5)]
    texts, lens = sample_answers(gen, prompts, Sampling(max_tokens=4, seed=10), batch_size=2)
    assert texts == [str([i + 1, i]) for i in range(5)] and lens == [2] * 5
    assert gen.seeds == [10, 11, 12]


M = {"ans_acc": 0.5, "for_acc": 1.0, "both_acc": 0.5, "lengths": 3.0}


def test_results_resume_and_layout(tmp_path):
    path = tmp_path / "eval_results.json"
    r = ResultsFile(path, {"temperature": 0.9})
    r.add("base", "arith", 0, M, step=0, elapsed_seconds=0.0, examples=[{"completion": "1"}])
    r.add("checkpoint-25", "arith", 0, M, step=25, elapsed_seconds=12.5)
    r.add("checkpoint-25", "arith", 1, dict(M, ans_acc=0.7), step=25, elapsed_seconds=12.5)
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT
    assert data["checkpoint-25"] == {"step": 25, "elapsed_seconds": 12.5,
                                     "arith": {"ans_acc": [0.5, 0.7], "for_acc": [1.0, 1.0],
                                               "both_acc": [0.5, 0.5], "lengths": [3.0, 3.0]}}
    assert data["examples"]["base"]["arith"] == [{"completion": "1"}]
    again = ResultsFile(path, {"temperature": 0.9})  # resume: picks up what is stored
    assert again.done("checkpoint-25", "arith") == 2 and again.done("base", "arith") == 1
    assert again.done("checkpoint-50", "arith") == 0
    assert again.entries() == ["base", "checkpoint-25"]
    assert again.mean("checkpoint-25", "arith") == pytest.approx(0.6)
    with pytest.raises(ValueError, match="repeats go in order"):
        again.add("base", "arith", 3, M, step=0, elapsed_seconds=0.0)


@pytest.mark.parametrize("content, match", [
    ("{not json", "not valid JSON"),
    (json.dumps({"checkpoint-1": {"gsm8k": {"ans_acc": [0.5]}}}), "not a pods results file"),
    (json.dumps({"format": FORMAT, "settings": json.dumps({"temperature": 0.9}), "weird": {}}), "unexpected entry"),
    (json.dumps({"format": FORMAT, "settings": json.dumps({"temperature": 0.0})}), "other evaluation settings"),
])
def test_foreign_or_corrupted_file_is_refused_and_untouched(tmp_path, content, match):
    path = tmp_path / "eval_results.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        ResultsFile(path, {"temperature": 0.9})
    assert path.read_text() == content


def test_failed_write_keeps_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "eval_results.json"
    r = ResultsFile(path, {})
    r.add("base", "arith", 0, M, step=0, elapsed_seconds=0.0)
    before = path.read_text()
    monkeypatch.setattr(json, "dump", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        r.add("base", "arith", 1, M, step=0, elapsed_seconds=0.0)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["eval_results.json"]  # no temp file left


def test_a_full_disk_names_the_results_file_and_keeps_it(tmp_path, monkeypatch):
    import errno
    import os

    from pods.io import WriteError

    path = tmp_path / "eval_results.json"
    r = ResultsFile(path, {})
    r.add("base", "arith", 0, M, step=0, elapsed_seconds=0.0)
    before = path.read_text()

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(WriteError, match=f"^no space left on device: {path}$"):
        r.add("base", "arith", 1, M, step=0, elapsed_seconds=0.0)
    assert path.read_text() == before and [p.name for p in tmp_path.iterdir()] == ["eval_results.json"]


def test_complete_checkpoints_skips_partial_and_damaged_ones_with_a_warning(tmp_path, capsys):
    from safetensors.torch import save_file

    from pods.run import checkpoint as ck

    class Policy:
        def trainable_parameters(self):
            return [torch.ones(2)]

        def save(self, path):
            path.mkdir(parents=True)
            save_file({"w": torch.ones(2)}, path / "model.safetensors")

    for step in (50, 5, 20):
        ck.save(tmp_path, step, {"elapsed_seconds": float(step)}, Policy())
    (tmp_path / "checkpoint-20" / "policy" / "model.safetensors").write_bytes(b"")  # damaged later
    (tmp_path / "checkpoint-75" / "policy").mkdir(parents=True)  # no state.json: incomplete
    (tmp_path / ".tmp-checkpoint-100").mkdir()
    assert [s for s, _ in complete_checkpoints(tmp_path)] == [5, 50]
    err = capsys.readouterr().err
    assert "skipping damaged" in err and "checkpoint-20: policy/model.safetensors: 0 bytes" in err
    assert "checkpoint-75: state.json is missing" in err


def test_nan_metric_rejected(tmp_path):
    r = ResultsFile(tmp_path / "r.json", {})
    with pytest.raises(ValueError, match="nan"):
        r.add("base", "a", 0, dict(M, lengths=float(torch.nan)), step=0, elapsed_seconds=0)


# ----------------------------------------------------------------------------- paper-compatible metrics

FIX = __import__("pathlib").Path(__file__).resolve().parents[2] / "fixtures" / "gsm8k"


def test_results_file_with_paper_metrics(tmp_path):
    from pods.evaluation.results import PAPER_METRICS

    metrics = ("ans_acc", "for_acc", "both_acc", "lengths") + PAPER_METRICS
    path = tmp_path / "r.json"
    r = ResultsFile(path, {}, metrics=metrics)
    r.add("base", "gsm8k", 0, dict(M, paper_ans_acc=0.75, paper_for_acc=0.5, paper_both_acc=0.25), step=0,
          elapsed_seconds=0.0)
    assert json.loads(path.read_text())["base"]["gsm8k"]["paper_ans_acc"] == [0.75]
    with pytest.raises(KeyError):  # a file with paper metrics needs them in every repeat
        r.add("base", "gsm8k", 1, M, step=0, elapsed_seconds=0.0)
    # an entry written without the paper metrics counts as not done for a file that wants them
    old = ResultsFile(tmp_path / "old.json", {})
    old.add("base", "gsm8k", 0, M, step=0, elapsed_seconds=0.0)
    assert ResultsFile(tmp_path / "old.json", {}, metrics=metrics).done("base", "gsm8k") == 0
    assert ResultsFile(tmp_path / "old.json", {}).done("base", "gsm8k") == 1


class ScriptedGenerator:
    """Answers each prompt with a fixed completion chosen by a word of its question."""

    def __init__(self, tokenizer, script):
        self.tok, self.script, self.prompts = tokenizer, script, []

    def generate(self, prompts, n, sampling):
        self.prompts.extend(prompts)
        texts = [next(t for key, t in self.script.items() if key in self.tok.decode(p))
                 for p in prompts for _ in range(n)]
        return Rollouts(prompt_ids=prompts, completion_ids=[[1] * 4 for _ in texts], texts=texts, n=n)

    def update_weights(self, policy):
        pass


@pytest.fixture
def gsm8k_run(tmp_path):
    """A run directory (config only, no checkpoint) on the GSM8K fixture and a scripted backend."""
    from pathlib import Path

    from omegaconf import OmegaConf

    from pods.backends.tiny import byte_tokenizer

    root = Path(__file__).resolve().parents[3]
    cfg = compose(["model=tiny", "dataset=gsm8k", f"dataset.path={root}/tests/fixtures/gsm8k"])
    ev = lambda *o: compose(["run_dir=x", "repeats=1", "max_prompt_tokens=null", *o], name="evaluate")  # noqa: E731
    OmegaConf.save(cfg, tmp_path / "config.yaml")
    tok = byte_tokenizer()
    script = {  # the strict verifier rejects the first (its answer block states no number), the paper's accepts it
        "cows": "<think>It is 20</think><answer>I am not sure</answer> 20",
        "rope": "<think>7.5 / 3</think>\n<answer>2.5</answer>",
    }

    class Policy:
        tokenizer = tok

        def load(self, path):
            pass

    gen = ScriptedGenerator(tok, script)
    return tmp_path, ev, (lambda run_cfg: (Policy(), gen)), gen


def test_sweep_reports_strict_and_paper_accuracy(gsm8k_run):
    from pods.evaluation import evaluate_run

    run_dir, ev, build, _ = gsm8k_run
    lines = []
    results = evaluate_run(run_dir, ev(f"datasets=[{{name:gsm8k,path:{FIX},format_reward:format}}]"),
                           log=lines.append, build=build)
    got = results.data["base"]["gsm8k"]
    assert got["ans_acc"] == [0.5] and got["paper_ans_acc"] == [1.0]
    assert got["for_acc"] == [0.5] and got["paper_for_acc"] == [0.5] and got["paper_both_acc"] == [0.5]
    assert [(e["correct"], e["paper_correct"]) for e in results.data["examples"]["base"]["gsm8k"]] == [
        (False, True), (True, True)]
    assert "ans_acc 0.5000" in lines[1] and "paper (paper_answer): ans_acc 1.0000" in lines[1]
    # null: no paper metrics at all
    off = evaluate_run(run_dir, ev(f"datasets=[{{name:gsm8k,path:{FIX}}}]", "paper_grader=null",
                                   f"output={run_dir}/off.json"), log=lambda *a: None, build=build)
    assert sorted(off.data["base"]["gsm8k"]) == ["ans_acc", "both_acc", "for_acc", "lengths"]


def test_a_task_without_a_format_prints_no_format_accuracy(gsm8k_run, capsys):
    """for_acc / both_acc (ours and the paper's) mean nothing where the task has no format: not printed; a progress
    bar counts the problems answered."""
    from pods.evaluation import evaluate_run

    run_dir, ev, build, _ = gsm8k_run
    lines = []
    evaluate_run(run_dir, ev(f"datasets=[{{name:gsm8k,path:{FIX},format_reward:null}}]"), log=lines.append, build=build)
    assert "base gsm8k repeat 0: ans_acc 0.5000 length 4.0 | paper (paper_answer): ans_acc 1.0000" == lines[1]
    err = capsys.readouterr().err
    assert "warning: " + f"{run_dir} holds no complete checkpoint; evaluating only the base model" in err
    assert f"evaluating {run_dir.name}: 100%|" in err and "| 2/2 problems [" in err  # the progress line: counts, ETA
    assert (run_dir / "eval_results.json").is_file()


def test_a_results_file_another_evaluation_writes_is_refused(gsm8k_run):
    """A real second process holding the results file: refused with its PID; free again once it is gone."""
    import subprocess
    import sys

    from pods.evaluation import evaluate_run
    from pods.io import LockedError

    run_dir, ev, build, _ = gsm8k_run
    hold = ("import sys, time; from pathlib import Path; from pods.io import exclusive_lock\n"
            "with exclusive_lock(Path(sys.argv[1]), 'x', ''):\n    print('held', flush=True); time.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-c", hold, str(run_dir / ".eval_results.json.lock")],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(LockedError, match=rf"results file {run_dir / 'eval_results.json'} is in use by another "
                                              rf"process \(pid {proc.pid} on host"):
            evaluate_run(run_dir, ev(f"datasets=[{{name:gsm8k,path:{FIX}}}]"), log=lambda *a: None, build=build)
        assert not (run_dir / "eval_results.json").exists()
    finally:
        proc.kill()
        proc.wait()
    evaluate_run(run_dir, ev(f"datasets=[{{name:gsm8k,path:{FIX}}}]"), log=lambda *a: None, build=build)
    assert (run_dir / "eval_results.json").is_file() and not (run_dir / ".eval_results.json.lock").exists()


def test_paper_grader_must_be_a_paper_grader(gsm8k_run):
    from pods.evaluation import evaluate_run

    run_dir, ev, build, _ = gsm8k_run
    with pytest.raises(ValueError, match="paper_grader must be paper_answer, paper_answer_decimal or null"):
        evaluate_run(run_dir, ev("paper_grader=gsm8k", f"datasets=[{{name:gsm8k,path:{FIX}}}]"), log=lambda *a: None,
                     build=build)
    assert not (run_dir / "eval_results.json").exists()  # refused before anything was written


def test_long_test_prompts_are_left_out_like_the_paper(gsm8k_run):
    from pods import data
    from pods.evaluation import evaluate_run

    run_dir, ev, build, gen = gsm8k_run
    examples = data.load_dataset("gsm8k", split="test", path=FIX)
    run_cfg = __import__("omegaconf").OmegaConf.load(run_dir / "config.yaml")  # the run's prompt and system prompt
    _, ids, _ = data.render_prompts(examples, build(None)[0].tokenizer, style=run_cfg.dataset.prompt_style,
                                    system_prompt=run_cfg.dataset.system_prompt)
    shortest = min(len(p) for p in ids)  # the rope question
    one = f"datasets=[{{name:gsm8k,path:{FIX}}}]"
    results = evaluate_run(run_dir, ev(f"max_prompt_tokens={shortest}", one), log=lambda *a: None, build=build)
    assert len(gen.prompts) == 1 and results.data["base"]["gsm8k"]["ans_acc"] == [1.0]
    with pytest.raises(ValueError, match="every prompt is longer than max_prompt_tokens=5"):
        evaluate_run(run_dir, ev("max_prompt_tokens=5", one, f"output={run_dir}/x.json"), log=lambda *a: None,
                     build=build)


def _compose(*overrides):
    return compose(["run_dir=x", *overrides], name="evaluate")


def test_generation_settings_default_to_the_runs_own():
    from omegaconf import OmegaConf

    from pods.evaluation import with_run_defaults

    run = OmegaConf.create({"rl": {"temperature": 1.0, "top_p": 0.95, "max_completion_tokens": 6,
                                   "max_prompt_tokens": 64}})
    cfg, header = with_run_defaults(_compose(), run)  # the demo's 6-token answers get 6 tokens, not 512
    assert (cfg.temperature, cfg.top_p, cfg.max_tokens, cfg.max_prompt_tokens) == (1.0, 0.95, 6, 64)
    assert "max_tokens=6 (the run's rl.max_completion_tokens)" in header
    cfg, header = with_run_defaults(_compose("max_tokens=32", "temperature=0"), run)
    assert (cfg.max_tokens, cfg.temperature, cfg.top_p) == (32, 0, 0.95)
    assert "max_tokens=32 (given)" in header and "temperature=0 (given)" in header
    with pytest.raises(ValueError, match="give max_tokens=VALUE"):
        with_run_defaults(_compose(), OmegaConf.create({"rl": {"temperature": 1.0, "top_p": 1.0}}))


def test_the_paper_protocols_are_explicit_presets():
    paper = _compose("protocol=paper")
    assert (paper.repeats, paper.temperature, paper.max_tokens, paper.max_prompt_tokens) == (5, 0.9, 512, 512)
    assert [d["name"] for d in paper.datasets] == ["amc23", "gsm8k", "math500"]
    assert paper.paper_grader == "paper_answer" and paper.weights == "merged_4bit"  # merged, then NF4
    llama = _compose("protocol=paper_llama")
    assert [d["name"] for d in llama.datasets] == ["gsm8k"] and llama.paper_grader == "paper_answer_decimal"
    assert llama.weights == "merged_4bit"
    assert _compose("protocol=paper", "repeats=2").repeats == 2  # still overridable
    assert _compose("protocol=paper", "weights=adapter").weights == "adapter"  # the exact policy instead
    plain = _compose()
    assert plain.repeats == 1 and plain.max_tokens is None and plain.temperature is None
    assert plain.weights == "adapter"


@pytest.mark.parametrize("dataset, want", [("gsm8k_paper", "gsm8k"), ("gsm8k", "gsm8k"), ("arithmetic", "arithmetic")])
def test_ans_acc_of_the_runs_own_dataset_is_the_strict_verifier_even_for_a_paper_preset(dataset, want):
    """A paper preset trains on the authors' grader (reported as paper_ans_acc); ans_acc stays the strict one."""
    from omegaconf import OmegaConf

    from pods.evaluation import eval_datasets

    run_cfg = compose([f"dataset={dataset}"])
    both = OmegaConf.create({"datasets": [{"name": run_cfg.dataset.name}, {"name": "math500"}]})
    assert [e["reward"] for e in eval_datasets(both, run_cfg)] == [want, "math"]
    run_cfg.dataset.accuracy_reward = "rewards/countdown.py:exact_number"  # your own accuracy reward is kept
    assert eval_datasets(both, run_cfg)[0]["reward"] == "rewards/countdown.py:exact_number"


# ----------------------------------------------------------------------------- bad settings and run directories


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run directories as train.py leaves them (config.yaml, checkpoint-2 with a state.json; no weights: nothing
    here loads a checkpoint), each damaged in one way, and a data file that is not JSON."""
    d = tmp_path_factory.mktemp("eval-runs")
    cfg = compose(["model=tiny", "dataset=arithmetic"])
    from omegaconf import OmegaConf

    for name in ("run", "run-badresults", "run-foreign", "run-badstate", "run-badconfig"):
        (d / name / "checkpoint-2" / "policy").mkdir(parents=True)
        OmegaConf.save(cfg, d / name / "config.yaml", resolve=True)
        (d / name / "checkpoint-2" / "state.json").write_text(json.dumps({"step": 2, "elapsed_seconds": 20.0}))
    (d / "run-badresults" / "eval_results.json").write_text('{"checkpoint-2": {"arithmetic": ')
    (d / "run-foreign" / "eval_results.json").write_text("[1, 2, 3]")
    (d / "run-badstate" / "checkpoint-2" / "state.json").write_text('{"step": 2, "elapsed_')
    (d / "run-badconfig" / "config.yaml").write_text("model: {name: tiny\ndataset: [")
    (d / "run-nockpt").mkdir()  # a run that saved no checkpoint
    OmegaConf.save(cfg, d / "run-nockpt" / "config.yaml", resolve=True)
    (d / "data").mkdir()
    (d / "data" / "bad.json").write_text('[{"question": "a", "answer": "1"},\n {"question": "b", "answer": }]')
    return d


ONE = ["repeats=1", "max_tokens=2", "datasets=[{name:arithmetic,limit:4,format_reward:null}]"]


@pytest.mark.parametrize("run, overrides, said", [
    (None, [], ["run_dir is required"]),
    ("nope", [], ["run_dir {d}/nope is not a directory"]),
    ("run", ["repeats=0"], ["repeats must be an integer >= 1"]),
    ("run", ["weights=merged"], ["weights must be adapter or merged_4bit", "got 'merged'"]),
    ("run", ["batch_size=0"], ["batch_size must be an integer >= 1"]),
    ("run", ["temperature=-0.5"], ["temperature must be a number >= 0 or null, got -0.5"]),
    ("run-badresults", [], ["run-badresults/eval_results.json: not valid JSON", "left untouched"]),
    ("run-foreign", [], ["run-foreign/eval_results.json: not a pods results file"]),
    ("run-badconfig", [], ["run-badconfig/config.yaml: cannot be read as YAML"]),
    ("run", ["datasets=[{name:gsm8k,path:'{d}/data/bad.json'}]"], ["bad.json line 2 column"]),
    ("run", ["datasets=5"], ["datasets must be a list of {name: ...} entries or null, got 5"]),
    ("run", ["datasets=[{name:arithmetic,size:3}]"], ["unknown key(s) ['size']"]),
    ("run", ["datasets=[{name:arithmetic,reward:nope}]"], ["reward: unknown reward 'nope'; valid names:"]),
    ("run-nockpt", ["base=false"], ["{d}/run-nockpt holds no complete checkpoint and base=false: nothing to "
                                    "evaluate"]),
], ids=["no-run_dir", "missing-run_dir", "repeats-0", "weights-unknown", "batch_size-0", "negative-temperature",
        "corrupt-results", "foreign-results", "corrupt-config", "bad-data-file", "datasets-not-a-list",
        "unknown-entry-key", "unknown-reward", "no-checkpoint-no-base"])
def test_a_bad_setting_or_run_directory_is_one_message_before_a_model_loads(runs, run, overrides, said):
    """What evaluate-run.py refuses (exit 2 there, tests/test_bad_inputs.py): one PodsError naming the key or file;
    a results file already there is left as it was, none is written."""
    from pods.errors import PodsError
    from pods.evaluation import evaluate_run

    before = {p: p.read_bytes() for p in runs.rglob("*") if p.is_file()}
    cfg = compose([o.replace("{d}", str(runs)) for o in overrides], name="evaluate")

    def build(*args, **kwargs):
        raise AssertionError("a model was loaded")

    with pytest.raises(PodsError) as err:
        evaluate_run(run and runs / run, cfg, log=lambda *a: None, build=build)
    assert all(text.replace("{d}", str(runs)) in str(err.value) for text in said), str(err.value)
    assert {p: p.read_bytes() for p in runs.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("run, said", [
    ("run-badstate", "warning: skipping damaged {d}/run-badstate/checkpoint-2"),
    ("run-nockpt", "warning: {d}/run-nockpt holds no complete checkpoint; evaluating only the base model"),
], ids=["damaged-checkpoint", "no-checkpoint"])
def test_a_run_without_a_usable_checkpoint_evaluates_its_base_model_with_a_warning(runs, tmp_path, capsys, run, said):
    from pods.evaluation import evaluate_run

    results = evaluate_run(runs / run, compose([*ONE, f"output={tmp_path / 'r.json'}"], name="evaluate"),
                           log=lambda *a: None)
    assert said.replace("{d}", str(runs)) in capsys.readouterr().err
    saved = json.loads((tmp_path / "r.json").read_text())
    assert "base" in saved and not [key for key in saved if key.startswith("checkpoint-")] and results is not None
