"""The command-line contract through the real entry points: a bad input ends with exit code 2, one clean message
and no traceback, and train.py writes nothing.

Run: uv run pytest tests/test_bad_inputs.py

A few cases per entry point, for what only a whole command line shows: Hydra's own parsing, the unknown-key
check, a resume onto a damaged run directory, a reward that fails mid-run (the step, and the checkpoint the rerun
resumes from), a model that fails to load. Every other bad-input case is tested in-process beside the module
that raises it (tests mirror pods/): validate in tests/pods/config/test_config.py, the data loader in
tests/pods/data/test_data.py, the reward check in tests/pods/rewards/test_registry.py, plug-ins in
tests/pods/test_plugins.py, evaluate_run in tests/pods/evaluation/test_evaluation.py, the scripts' main() in
tests/pods/commands/ and tests/pods/analysis/. The cases here run in one interpreter (tests/cli_runner.py: one
start-up for all); a few also as real subprocesses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pods.config.files import quote
from pods.run.trainer import train

from cli_runner import run_many
from helpers import compose

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", WANDB_MODE="disabled",
           TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
TRAIN = ["model=tiny", "dataset=arithmetic", "rl.n=4", "rl.m=2", "rl.max_steps=1", "rl.max_time=null",
         "rl.max_completion_tokens=4", "dataset.limit=64", "logging.progress=false", "optim.name=adamw",
         "run_name=r"]  # + output_root=<tmp>/runs


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """A run of one real step and copies of it each damaged in one way, a model directory transformers cannot
    use, a run directory for evaluate-run.py, results files for speedup.py."""
    d = tmp_path_factory.mktemp("bad")
    (d / "badmodel").mkdir()
    (d / "badmodel" / "config.json").write_text("{}")  # a config transformers cannot use
    cfg = compose(["model=tiny", "dataset=arithmetic"])
    (d / "run" / "checkpoint-2" / "policy").mkdir(parents=True)
    OmegaConf.save(cfg, d / "run" / "config.yaml", resolve=True)
    (d / "run" / "checkpoint-2" / "state.json").write_text(json.dumps({"step": 2, "elapsed_seconds": 20.0}))
    entry = {"step": 2, "elapsed_seconds": 20.0, "arithmetic": {"ans_acc": [0.5]}}
    for name, text in {"base-ok": json.dumps({"checkpoint-2": entry}),
                       "corrupt": '{"checkpoint-2": {"step": 2, "elapsed_'}.items():
        (d / "results" / name).mkdir(parents=True)
        (d / "results" / name / "eval_results.json").write_text(text)
    (d / "runs-bad" / "cc").mkdir(parents=True)
    (d / "runs-bad" / "cc" / "config.yaml").write_text("rl: {n: [\n")
    train(compose([*TRAIN, f"output_root={quote(d / 'runs-bad')}", "run_name=dmg"]))  # one real step, in this process
    for name in ("nomani", "midrow", "ledger-old"):  # copies of the intact run, each damaged in one more way
        shutil.copytree(d / "runs-bad" / "dmg", d / "runs-bad" / name)
    (d / "runs-bad" / "nomani" / "checkpoint-1" / "manifest.json").unlink()
    rows = (d / "runs-bad" / "midrow" / "metrics.jsonl").read_text()
    (d / "runs-bad" / "midrow" / "metrics.jsonl").write_text('{"step": 0, "loss": 0.\x00\x00\n' + rows)
    (d / "runs-bad" / "ledger-old" / "ledger" / "_ledger.json").write_text(json.dumps({"format": "pods-ledger",
                                                                                       "version": 0}))
    (d / "runs-bad" / "dmg" / "checkpoint-1" / "state.json").write_text('{"step": 1, "elap')  # truncated
    return d


# (id, program, arguments with {d} for the fixture folder, fragments stderr must hold[, exit code])
CASES = [
    # ---- train.py: the command line and one config value (issue 15 point 1); every other refused value, key by
    # key, is validate's (tests/pods/config/test_config.py: test_a_bad_value_is_one_message_naming_the_key_...)
    ("n-fraction", "train.py", ["rl.n=4.5"], ["rl.n must be an integer, got 4.5"]),
    ("typo-key", "train.py", ["rl.nn=3"], ["unknown config key 'rl.nn'", "did you mean rl.n?"]),
    ("unknown-group-option", "train.py", ["model=gpt5"], ["unknown config group option 'model=gpt5': config/model/ "
                                                          "has no gpt5.yaml; the options: ", "tiny"]),
    ("override-syntax", "train.py", ["rl.n=["], ["cannot parse 'rl.n=[': no viable alternative"]),
    ("removed-key", "train.py", ["rl.epsilon=0.2"], ["unknown config key 'rl.epsilon'; removed: every batch is "
                                                     "trained on once", "delete the key"]),
    ("slurm-without-slurm", "train.py", ["hydra.mode=MULTIRUN", "rl.n=4,8", "hydra/launcher=slurm",
                                         "hydra.sweep.dir={d}/slurm-sweep"],
     ["train.py: error: hydra/launcher=slurm submits the sweep's 2 jobs to Slurm, but sbatch and srun are not on "
      "this machine's PATH: run the command on a Slurm login node (or load its module), or leave hydra/launcher out "
      "to run the jobs here, one after another"]),
    # ---- train.py: your own reward misbehaving on a real batch after passing the start-up probe (issue 23 point 3):
    # one message naming it, and the step and checkpoint the rerun resumes from (each kind of misbehaviour:
    # tests/pods/rewards/test_registry.py)
    ("plugin-reward-raises", "train.py",
     ["dataset.rewards=[{name: 'tests/fixtures/plugins/bad_rewards.py:raises_on_batch', weight: 1.0}]",
      "dataset.accuracy_reward=null", "rl.max_steps=3", "output_root={d}/runs-rewards", "run_name=reward-raises"],
     ["reward 'tests/fixtures/plugins/bad_rewards.py:raises_on_batch' on 4 completions raised KeyError: 'score'; it "
      "passed the start-up probe", "expected: def my_reward(", "(step 2 of {d}/runs-rewards/reward-raises; fix this "
      "and rerun the same command: it resumes from {d}/runs-rewards/reward-raises/checkpoint-1)"]),
    # ---- train.py: the model (TRAIN's model=tiny replaced): its run directory stays empty
    ("model-unusable-dir", "train.py", ["model=qwen2.5-3b-instruct", "model.name={d}/badmodel",
                                        "model.load_in_4bit=false"],
     ["model.name {d}/badmodel could not be loaded (ValueError:", "check the name"]),
    # ---- train.py: a run directory resumed
    ("run-dir-corrupt-config", "train.py", ["output_root={d}/runs-bad", "run_name=cc"],
     ["{d}/runs-bad/cc/config.yaml: cannot be read as YAML", "restore it, or use another run directory"]),
    ("run-dir-only-damaged-checkpoint", "train.py", ["output_root={d}/runs-bad", "run_name=dmg", "rl.max_steps=2"],
     ["checkpoint {d}/runs-bad/dmg/checkpoint-1 is damaged (state.json", "it is left in place",
      "train.py: error: every checkpoint of {d}/runs-bad/dmg is damaged"]),
    ("resume-onto-a-ledger-of-another-version", "train.py", ["output_root={d}/runs-bad", "run_name=ledger-old",
                                                            "rl.max_steps=2"],
     ["{d}/runs-bad/ledger-old/ledger holds a ledger of format version 0", "move {d}/runs-bad/ledger-old/ledger "
      "aside (it is kept as it is) and rerun", "or set logging.ledger=false"]),
    # issue 33: a checkpoint whose manifest is gone is used with a warning; a damaged row in the middle of
    # metrics.jsonl is kept aside (test_a_damaged_metrics_row_is_kept_aside checks the files)
    ("checkpoint-without-manifest", "train.py", ["output_root={d}/runs-bad", "run_name=nomani", "rl.max_steps=2"],
     ["warning: checkpoint {d}/runs-bad/nomani/checkpoint-1 has no manifest.json (lost, or written before manifests "
      "existed): its files cannot be checked against their sizes and checksums, so it is used unverified"], 0),
    ("metrics-damaged-row", "train.py", ["output_root={d}/runs-bad", "run_name=midrow", "rl.max_steps=2"],
     ["warning: {d}/runs-bad/midrow/metrics.jsonl: line 1 is not a JSON row (damaged on disk or edited); the file "
      "as it was is kept in {d}/runs-bad/midrow/metrics.damaged-", ".jsonl, and {d}/runs-bad/midrow/metrics.jsonl "
      "continues without it"], 0),
    # ---- evaluate-run.py (every other refusal: tests/pods/evaluation/test_evaluation.py)
    ("eval-override-syntax", "evaluate-run.py", ["run_dir={d}/run", "datasets=[{name:gsm8k"],
     ["cannot parse 'datasets=[{name:gsm8k'"]),
    ("eval-repeats-0", "evaluate-run.py", ["run_dir={d}/run", "repeats=0"], ["repeats must be an integer >= 1"]),
    # ---- the scripts: one (every other: tests/pods/commands/, tests/pods/analysis/, tests/benchmarks/)
    ("speedup-corrupt-results", "scripts/speedup.py",
     ["--results", "{d}/results", "--baseline", "base-ok", "--method", "corrupt", "--dataset", "arithmetic"],
     ["speedup.py: error: {d}/results/corrupt/eval_results.json: not valid JSON"]),
]


def run(program: str, args: list[str], env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / program), *args], cwd=ROOT, env=env or ENV,
                          capture_output=True, text=True, timeout=timeout)


def _command(case, files: Path, out: Path) -> dict:
    """The command line of a case; train.py cases write under `out` (a fresh directory per case)."""
    name, program, args, *_ = case
    args = [a.replace("{d}", str(files)) for a in args]
    if program == "train.py":
        args = [*TRAIN, f"output_root={out / 'runs'}", *args]
    return {"program": str(ROOT / program), "args": args,
            "env": dict(ENV, HF_HOME=str(out / "hf"))}  # no cached hub datasets: the hub case cannot succeed


@pytest.fixture(scope="module")
def outcomes(files, tmp_path_factory) -> dict:
    """{case id: (result, its output folder)}, every case run in one interpreter (tests/cli_runner.py)."""
    outs = {case[0]: tmp_path_factory.mktemp(case[0]) for case in CASES}
    results = run_many([_command(case, files, outs[case[0]]) for case in CASES], cwd=ROOT)
    return {case[0]: (result, outs[case[0]]) for case, result in zip(CASES, results)}


def _check(case, files: Path, code: int, stdout: str, stderr: str, out: Path) -> None:
    name, program, args, fragments, *expected = case
    both = stdout + stderr
    assert "Traceback" not in both, both[-3000:]
    assert code == (expected[0] if expected else 2), both[-3000:]
    for fragment in fragments:
        stream, text = fragment if isinstance(fragment, tuple) else ("stderr", fragment)
        shown = stdout if stream == "stdout" else stderr
        assert text.replace("{d}", str(files)) in shown, shown[-3000:]
    if program == "train.py":
        run_dir = out / "runs" / "r"  # refused before any file was written (a model that fails to load:
        assert not run_dir.exists() or not any(run_dir.iterdir())  # its run directory stays empty)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_clean_message(case, files, outcomes):
    result, out = outcomes[case[0]]
    _check(case, files, result["code"], result["stdout"], result["stderr"], out)


def test_a_damaged_metrics_row_is_kept_aside(files, outcomes):
    from pods.run.metrics import read_metrics

    run_dir = files / "runs-bad" / "midrow"
    (kept,) = run_dir.glob("metrics.damaged-*.jsonl")
    assert kept.read_text().startswith('{"step": 0, "loss": 0.\x00\x00\n{"step": 1,')  # the file as it was
    assert [r["step"] for r in read_metrics(run_dir)] == [1, 2]


def test_every_file_of_a_run_honours_the_umask(files, outcomes):
    """A teammate can read, evaluate and resume a run: no file is private (safetensors writes 0600 itself).
    The fixture's run (one real step); the warm start's files: tests/pods/run/test_warmstart.py."""
    import stat

    mask = os.umask(0o022)
    os.umask(mask)
    top = files / "runs-bad" / "dmg"
    paths = [top, *top.rglob("*")]
    assert any(p.name.endswith(".safetensors") for p in paths)
    wrong = {str(p.relative_to(files)): oct(stat.S_IMODE(p.stat().st_mode)) for p in paths
             if p.name != ".lock" and stat.S_IMODE(p.stat().st_mode) != (0o777 if p.is_dir() else 0o666) & ~mask}
    assert wrong == {}


@pytest.mark.slow
def test_a_full_disk_while_caching_the_warm_start_is_one_message_and_caches_nothing(tmp_path):
    """A file size limit (EFBIG, the same path through safetensors as ENOSPC) hit by the warm start's weights."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    cache = tmp_path / "ws"
    proc = subprocess.run([sys.executable, "train.py", "experiment=demo", f"warmstart.cache_dir={cache}",
                           "warmstart.target_greedy=0.01", f"output_root={tmp_path / 'runs'}"], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=900, preexec_fn=limit)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"train.py: error: file too large: {cache}/" in proc.stderr
    assert list(cache.iterdir()) == []  # the partial cache entry was removed


@pytest.mark.parametrize("name", [pytest.param("n-fraction", marks=pytest.mark.slow),
                                  pytest.param("eval-repeats-0", marks=pytest.mark.slow), "speedup-corrupt-results"])
def test_the_same_in_a_real_subprocess(name, files, tmp_path):
    """A few cases as real command lines too: what the in-process runner shows is what a user sees (a script's in the
    default tier; train.py's and evaluate-run.py's, each a 5-second start of torch and transformers, in the slow one)."""
    case = next(c for c in CASES if c[0] == name)
    command = _command(case, files, tmp_path)
    proc = subprocess.run([sys.executable, command["program"], *command["args"]], cwd=ROOT, env=command["env"],
                          capture_output=True, text=True, timeout=300)
    _check(case, files, proc.returncode, proc.stdout, proc.stderr, tmp_path)


@pytest.mark.slow  # the message itself: tests/pods/test_cli.py (cpu_threads); here, through train.py
def test_pods_threads_that_is_not_a_number(tmp_path):
    proc = run("train.py", [*TRAIN, f"output_root={tmp_path}"], env=dict(ENV, PODS_THREADS="many"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "PODS_THREADS='many': must be a positive integer" in proc.stderr


@pytest.mark.slow
def test_a_sweep_runs_every_good_job_and_reports_the_bad_one(tmp_path):
    """`-m` with three jobs of the tiny model, the second invalid: jobs 0 and 2 train, job 1 is one message."""
    proc = run("train.py", ["-m", *[a for a in TRAIN if a != "run_name=r"], f"output_root={tmp_path}",
                            "+dataset.options.size=64", "rl.n=4,4.5,2", "rl.max_completion_tokens=2", f"hydra.sweep.dir={tmp_path / 'multirun'}"],
               timeout=600)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 2
    assert "train.py: error in sweep job 1 (" in proc.stderr and "rl.n must be an integer, got 4.5" in proc.stderr
    assert "train.py: 1 of 3 sweep jobs failed: job 1" in proc.stderr
    for run_name in ("arithmetic-tiny-pods-max_variance-n4-m2-seed0", "arithmetic-tiny-grpo-n2-m2-seed0"):
        assert (tmp_path / run_name / "checkpoint-1" / "state.json").is_file(), run_name


# ----------------------------------------------------------------------------- issue 33: signals (slow tier)

HUP_TRAIN = ["model=tiny", "dataset=arithmetic", "+dataset.options.size=512", "rl.n=64", "rl.m=8", "rl.prompts_per_step=8", "rl.micro_batch_size=64",
             "rl.max_steps=6", "rl.max_time=null", "rl.max_completion_tokens=6", "rl.save_strategy=steps",
             "rl.save_steps=100", "optim.name=adamw", "logging.progress=false", "run_name=hup"]


@pytest.mark.slow
def test_closing_the_terminal_saves_the_step_in_progress_and_exits_129(tmp_path):
    """train.py in the foreground of a real terminal (a pty, its session leader); closing the terminal (its
    master side) hangs it up: SIGHUP finishes the step, saves it, exits 129, and the same command resumes."""
    import pty
    import select
    import time

    from pods.run import checkpoint as ck
    from pods.run.metrics import read_metrics

    command = [sys.executable, "train.py", *HUP_TRAIN, f"output_root={tmp_path}"]
    env = {k: v for k, v in ENV.items() if k != "UV_RUN_RECURSION_DEPTH"} | {"PODS_THREADS": "1"}
    pid, master = pty.fork()
    if pid == 0:  # the child: a new session whose controlling terminal is the pty
        os.chdir(ROOT)
        os.execve(sys.executable, command, env)
    run_dir, seen, end = tmp_path / "hup", b"", time.time() + 300
    while len(read_metrics(run_dir)) < 1:  # the terminal is read, as a terminal would be
        assert time.time() < end, seen.decode(errors="replace")[-3000:]
        if select.select([master], [], [], 0.05)[0]:
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
    os.close(master)  # the terminal window closes
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 129, seen.decode(errors="replace")[-3000:]
    rows = read_metrics(run_dir)
    k = rows[-1]["step"]
    assert [r["step"] for r in rows] == list(range(1, k + 1)) and k < 6  # nothing but the step in progress lost
    assert [p.name for p in ck.intact(run_dir)] == [f"checkpoint-{k}"]
    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and f"from checkpoint-{k}" in again.stdout, again.stderr[-3000:]
    assert [r["step"] for r in read_metrics(run_dir)] == list(range(1, 7))


@pytest.mark.slow
def test_preflight_presets_honour_gpu_memory_gib():
    """--presets --gpu-memory-gib 1: one column of 1 GiB (it used to show L40S and H100 regardless)."""
    proc = run("scripts/preflight.py", ["--presets", "--gpu-memory-gib", "1"], timeout=600)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "| preset | job | backend | 1 GiB (1.0 GiB) | generation |"
    cells = [line.split(" | ")[3] for line in lines[2:] if line.startswith("| ")]  # "8.4 GiB DOES NOT FIT"
    verdicts = {cell: cell.endswith(" fits") for cell in cells}
    assert verdicts and "L40S" not in proc.stdout and any(not fits for fits in verdicts.values())
    assert all(fits == (float(cell.split()[0]) <= 1.0) for cell, fits in verdicts.items())  # judged on 1 GiB
