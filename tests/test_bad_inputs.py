"""Bad inputs through the real command lines: each ends with exit code 2, one clean message, no traceback.

Run: uv run pytest tests/test_bad_inputs.py  (every case fails before a model loads)

Every case runs a CLI (train.py, evaluate-run.py, scripts/*.py) on its command line and asserts: the exit
code (2 unless noted), that stderr names the key or file and says what to do (the fragments), and that
neither stream holds a Python traceback; train.py cases also check that nothing was written. The cases run
in one interpreter (tests/cli_runner.py: one start-up for all); a few also run as real subprocesses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from cli_runner import run_many

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", WANDB_MODE="disabled",
           TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
TRAIN = ["model=tiny", "dataset=arithmetic", "rl.n=4", "rl.m=2", "rl.max_steps=1", "rl.max_time=null",
         "rl.max_completion_tokens=4", "dataset.limit=64", "logging.progress=false", "optim.name=adamw",
         "run_name=r"]  # + output_root=<tmp>/runs
# the demo with its warm start cached in the fixture folder, a quicker one (about 200 steps instead of 500)
DEMO_WS = ["experiment=demo", "warmstart.cache_dir={d}/ws", "warmstart.lr=0.003", "warmstart.target_greedy=0.02",
           "warmstart.eval_size=64"]


def _parquet(path: Path, rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """Bad data files, a run directory with bad results / checkpoints, bad metrics logs and presets."""
    d = tmp_path_factory.mktemp("bad")
    data = d / "data"
    data.mkdir()
    (data / "empty.jsonl").write_bytes(b"")
    (data / "bad.json").write_text('[{"question": "a", "answer": "1"},\n {"question": "b", "answer": }]')
    (data / "latin1.jsonl").write_bytes(b'{"question": "a", "answer": "1"}\n{"question": "caf\xe9", "answer": "2"}\n')
    (data / "nocol.jsonl").write_text('{"text": "a", "answer": "1"}\n')
    (data / "blank.jsonl").write_text('{"question": "a", "answer": "1"}\n{"question": "b", "answer": ""}\n'
                                      '{"question": "c", "answer": " \\t"}\n')
    (data / "noprompt.jsonl").write_text('{"question": "a", "answer": "1"}\n{"question": "", "answer": "2"}\n')
    (data / "onlytest").mkdir()
    (data / "onlytest" / "test.jsonl").write_text('{"question": "a", "answer": "1"}\n')
    _parquet(data / "list.parquet", [{"question": "a", "answer": [1, 2]}])
    _parquet(data / "struct.parquet", [{"question": "a", "answer": {"value": 1, "unit": "g"}}])
    _parquet(data / "nan.parquet", [{"question": "a", "answer": 1.0}, {"question": "b", "answer": float("nan")}])
    (d / "a-file").write_text("not a directory")
    (d / "badmodel").mkdir()
    (d / "badmodel" / "config.json").write_text("{}")  # a config transformers cannot use

    with initialize_config_dir(config_dir=str(ROOT / "config"), version_base=None):
        cfg = compose(config_name="train", overrides=["model=tiny", "dataset=arithmetic"])
    for name in ("run", "run-badresults", "run-foreign", "run-badstate", "run-badconfig"):
        rd = d / name
        (rd / "checkpoint-2" / "policy").mkdir(parents=True)
        OmegaConf.save(cfg, rd / "config.yaml", resolve=True)
        (rd / "checkpoint-2" / "state.json").write_text(json.dumps({"step": 2, "elapsed_seconds": 20.0}))
    (d / "run-badresults" / "eval_results.json").write_text('{"checkpoint-2": {"arithmetic": ')
    (d / "run-foreign" / "eval_results.json").write_text("[1, 2, 3]")
    (d / "run-badstate" / "checkpoint-2" / "state.json").write_text('{"step": 2, "elapsed_')
    (d / "run-badconfig" / "config.yaml").write_text("model: {name: tiny\ndataset: [")
    (d / "run-nockpt").mkdir()  # a run that saved no checkpoint
    OmegaConf.save(cfg, d / "run-nockpt" / "config.yaml", resolve=True)

    from pods.config.schema import settings_from  # the demo's warm-start cache entry, truncated

    with initialize_config_dir(config_dir=str(ROOT / "config"), version_base=None):
        demo = compose(config_name="train", overrides=[o for o in DEMO_WS if "{d}" not in o])
    damaged = d / "ws" / settings_from(OmegaConf.to_container(demo.warmstart))[0].key()
    damaged.mkdir(parents=True)
    (damaged / "model.safetensors").write_bytes(b"\x08" * 100)
    (damaged / "warmstart.json").write_text(json.dumps({"files": {"model.safetensors": "0" * 64}}))

    res = d / "results"  # run directories of scripts/speedup.py and plot.py
    entry = {"step": 2, "elapsed_seconds": 20.0, "arithmetic": {"ans_acc": [0.5]}}
    for name, text in {"base-ok": json.dumps({"checkpoint-2": entry}),
                       "corrupt": '{"checkpoint-2": {"step": 2, "elapsed_',
                       "latin1": '{"checkpoint-2": {"caf\xe9": 1}}',
                       "list": "[1, 2]",
                       "strings": json.dumps({"checkpoint-2": {**entry, "arithmetic": {"ans_acc": ["high"]}}}),
                       "bools": json.dumps({"checkpoint-2": {**entry, "arithmetic": {"ans_acc": [True]}}}),
                       "numtext": json.dumps({"checkpoint-2": {**entry, "arithmetic": {"ans_acc": ["0.5"]}}}),
                       "above-1": json.dumps({"checkpoint-2": {**entry, "arithmetic": {"ans_acc": [51.0]}}})}.items():
        (res / name).mkdir(parents=True)
        path = res / name / "eval_results.json"
        path.write_bytes(text.encode("latin1") if name == "latin1" else text.encode())
    metrics = {"torn": b'{"step": 1, "time/step": 0.1}\n{"step": 2, "time/st\n{"step": 3, "time/step": 0.1}\n',
               "binary": b'{"step": 1, "time/step": 0.1}\n\xff\xfe\n', "rows": b'[1, 2]\n'}
    for name, raw in metrics.items():
        (res / f"m-{name}").mkdir()
        (res / f"m-{name}" / "metrics.jsonl").write_bytes(raw)

    paper = d / "paper"
    paper.mkdir()
    (paper / "Instruct-GSM8K-512-16-16-Run1.json").write_text('{"checkpoint-10": {"gsm8k": {"ans_acc": [0.')

    presets = d / "presets"
    presets.mkdir()
    (presets / "sgd.yaml").write_text("defaults: [tiny-cpu, _self_]\nalgorithm: sgd\n")  # a config/trl preset's keys
    (presets / "old.yaml").write_text("base: tiny-cpu.yaml\nalgorithm: pods\n")  # before presets were Hydra configs
    (presets / "broken.yaml").write_text("algorithm: pods\ntrl: {num_generations: [\n")
    (d / "empty-out").mkdir()
    (d / "runs-bad" / "cc").mkdir(parents=True)
    (d / "runs-bad" / "cc" / "config.yaml").write_text("rl: {n: [\n")
    _ledgers(d / "ledgers")
    trained = run("train.py", [*TRAIN, f"output_root={d / 'runs-bad'}", "run_name=dmg"])  # one real step
    assert trained.returncode == 0, trained.stderr[-2000:]
    for name in ("nomani", "midrow"):  # issue 33: copies of the intact run, each damaged in one more way
        shutil.copytree(d / "runs-bad" / "dmg", d / "runs-bad" / name)
    (d / "runs-bad" / "nomani" / "checkpoint-1" / "manifest.json").unlink()
    rows = (d / "runs-bad" / "midrow" / "metrics.jsonl").read_text()
    (d / "runs-bad" / "midrow" / "metrics.jsonl").write_text('{"step": 0, "loss": 0.\x00\x00\n' + rows)
    (d / "runs-bad" / "dmg" / "checkpoint-1" / "state.json").write_text('{"step": 1, "elap')  # truncated
    old = run("train.py", [*TRAIN, f"output_root={d / 'runs-bad'}", "run_name=ledger-old"])  # one step, its ledger
    assert old.returncode == 0, old.stderr[-2000:]
    (d / "runs-bad" / "ledger-old" / "ledger" / "_ledger.json").write_text(json.dumps({"format": "pods-ledger",
                                                                                       "version": 0}))
    return d


def _ledgers(root: Path) -> None:
    """Rollout ledgers for scripts/replay.py: ok (3 steps of 2 groups, n = 4, m = 2), cut short, a step missing,
    another format version; and a run directory without one."""
    import torch

    from pods.core import ledger as fmt
    from pods.core.ledger_writer import Ledger

    def write(name: str, steps) -> Path:
        led = Ledger(root / name, {"n": 4, "m": 2, "rule": "max_variance", "algorithm": "pods", "seed": 0})
        for s in steps:
            r = torch.tensor([[1.0, 0, 0, 1], [0, 0, 0, 1]])
            led.record(s, fmt.concat_rows([fmt.group_rows(step=s, round_=0, prompts=[0, 1], status=["trained"] * 2,
                                                          total=r, per_fn={"exact": r}, accuracy=r,
                                                          lengths=torch.ones(2, 4), kept=torch.tensor([[0, 1]] * 2))]))
            led.flush()
        led.close()
        return root / name / fmt.DIR

    write("ok", [1, 2, 3])
    cut = sorted(write("cut", [1, 2]).glob("steps-*"))[-1]
    cut.write_bytes(cut.read_bytes()[:100])
    write("gap", [1, 3])
    old = write("old", [1])
    (old / fmt.META).write_text(json.dumps({"format": fmt.FORMAT, "version": 0}))
    (root / "none").mkdir()


# (id, program, arguments with {d} for the fixture folder, fragments stderr must hold[, exit code])
CASES = [
    # ---- train.py: the command line and one config value (issue 15 point 1); every other refused value, key by
    # key, is validate's (tests/pods/config/test_config.py: test_a_bad_value_is_one_message_naming_the_key_...)
    ("n-fraction", "train.py", ["rl.n=4.5"], ["rl.n must be an integer, got 4.5"]),
    ("typo-key", "train.py", ["rl.nn=3"], ["unknown config key 'rl.nn'", "did you mean rl.n?"]),
    ("unknown-group-option", "train.py", ["model=gpt5"], ["Could not find 'model/gpt5'", "tiny"]),
    ("override-syntax", "train.py", ["rl.n=["], ["cannot parse 'rl.n=[': no viable alternative"]),
    ("eval-override-syntax", "evaluate-run.py", ["run_dir={d}/run", "datasets=[{name:gsm8k"],
     ["cannot parse 'datasets=[{name:gsm8k'"]),
    ("removed-key", "train.py", ["rl.epsilon=0.2"], ["unknown config key 'rl.epsilon'; removed: every batch is "
                                                     "trained on once", "delete the key"]),
    # ---- train.py: the ledger of a run resumed, a sweep's launcher
    ("resume-onto-a-ledger-of-another-version", "train.py", ["output_root={d}/runs-bad", "run_name=ledger-old",
                                                            "rl.max_steps=2"],
     ["{d}/runs-bad/ledger-old/ledger holds a ledger of format version 0", "move {d}/runs-bad/ledger-old/ledger "
      "aside (it is kept as it is) and rerun", "or set logging.ledger=false"]),
    ("slurm-without-slurm", "train.py", ["hydra.mode=MULTIRUN", "rl.n=4,8", "hydra/launcher=slurm",
                                         "hydra.sweep.dir={d}/slurm-sweep"],
     ["train.py: error: hydra/launcher=slurm submits the sweep's 2 jobs to Slurm, but sbatch and srun are not on "
      "this machine's PATH: run the command on a Slurm login node (or load its module), or leave hydra/launcher out "
      "to run the jobs here, one after another"]),
    # ---- train.py: your own functions by import path (issue 14), checked before any model loads
    ("plugin-dataset-no-module", "train.py", ["dataset.name=nomod_xyz:load"],
     ["dataset 'nomod_xyz:load': cannot import 'nomod_xyz'", "expected: def my_data(split: str)"]),
    ("plugin-reward-no-attribute", "train.py", ["dataset.rewards=[{name: 'os.path:nope', weight: 1.0}]",
                                                "dataset.accuracy_reward=null"],
     ["reward 'os.path:nope': 'os.path'", "has no attribute 'nope'", "expected: def my_reward("]),
    ("plugin-reward-wrong-signature", "train.py", ["dataset.rewards=[{name: 'json:dumps', weight: 1.0}]",
                                                   "dataset.accuracy_reward=null"],
     ["dataset.rewards: reward 'json:dumps' in the start-up probe on 2 completions raised TypeError"]),
    # ---- train.py: your own reward misbehaving on a real batch after passing the start-up probe (issue 23 point 3):
    # one message naming it and what it returned; these runs train a step, so they write to {d}/runs-rewards/<case>
    # and the message says the run resumes from the step they kept
    *[(f"plugin-reward-{kind}", "train.py",
       [f"dataset.rewards=[{{name: 'tests/fixtures/plugins/bad_rewards.py:{kind}_on_batch', weight: 1.0}}]",
        "dataset.accuracy_reward=null", "rl.max_steps=3", "output_root={d}/runs-rewards", f"run_name=reward-{kind}"],
       [f"reward 'tests/fixtures/plugins/bad_rewards.py:{kind}_on_batch' on 4 completions {said}",
        "expected: def my_reward(", "(step 2 of {d}/runs-rewards/reward-" + kind + "; fix this and rerun the same "
        "command: it resumes from {d}/runs-rewards/reward-" + kind + "/checkpoint-1)"])
      for kind, said in (("raises", "raised KeyError: 'score'; it passed the start-up probe"),
                         ("short", "returned 1 score ([0.0]): return one score per completion"),
                         ("strings", "returned non-numbers for 4 of them ('0.5' at 0, '0.5' at 1, '0.5' at 2, ...;"),
                         ("nan", "returned NaN/inf for 1 of them (nan at 1; first at completion 1:"),
                         # issue 33: sys.exit in a reward; scores beyond float32 (a finite float, an int beyond floats)
                         ("exits", "called sys.exit(0); it passed the start-up probe, so look at what real "
                                   "completions hold"),
                         ("huge", "returned scores too large for float32 for 1 of them (1e+308 at 0; first at "
                                  "completion 0:"),
                         ("bigint", "returned scores too large for float32 for 1 of them (10000000000000000000... at "
                                    "2; first at completion 2:"))],
    ("plugin-reward-no-columns", "train.py",
     ["dataset.name=rewards/countdown.py:countdown", "dataset.rewards=[{name: 'tests/fixtures/plugins/bad_rewards.py:"
      "no_columns', weight: 1.0}]", "dataset.accuracy_reward=null", "output_root={d}/runs-rewards", "run_name=cols"],
     ["reward 'tests/fixtures/plugins/bad_rewards.py:no_columns' on 4 completions does not accept the dataset's "
      "extra columns (start): TypeError:", "add **columns to its signature"]),
    # ---- issue 33: plug-in files that end the program when imported (sys.exit, an argparse at the top level)
    *[(f"plugin-{name}", "train.py", [f"dataset.rewards=[{{name: 'tests/fixtures/plugins/{name}.py:score', weight: 1}}]",
                                      "dataset.accuracy_reward=null"],
       ["train.py: error: invalid config:", f"reward 'tests/fixtures/plugins/{name}.py:score': importing ",
        f"tests/fixtures/plugins/{name}.py {said}: a plug-in must not end the program; code that parses a command "
        "line (argparse) or exits belongs under `if __name__ == \"__main__\":`", "expected: def my_reward("])
      for name, said in (("exits_at_import", "called sys.exit()"), ("argparse_at_import", "called sys.exit(2) (a usage or error line printed just above came from it, not from pods)"))],
    # ---- train.py: data files (point 2), read before any model loads
    ("data-empty", "train.py", ["dataset=gsm8k", "dataset.path={d}/data/empty.jsonl"], ["empty.jsonl is empty"]),
    ("data-malformed-json", "train.py", ["dataset=gsm8k", "dataset.path={d}/data/bad.json"],
     ["bad.json line 2 column", "is not valid JSON"]),
    ("data-not-utf8", "train.py", ["dataset=gsm8k", "dataset.path={d}/data/latin1.jsonl"],
     ["latin1.jsonl line 2 is not UTF-8 text (byte 0xe9", "save the file as UTF-8"]),
    ("data-dir-without-split", "train.py", ["dataset=gsm8k", "dataset.path={d}/data/onlytest"],
     ["no train split in {d}/data/onlytest", "found ['test.jsonl']"]),
    ("data-missing-column", "train.py", ["dataset=gsm8k", "dataset.path={d}/data/nocol.jsonl"],
     ["nocol.jsonl line 1: no prompt column", "dataset.options.prompt_column"]),
    ("data-parquet-list-answer", "train.py", ["dataset=gsm8k", "dataset.path={d}/data/list.parquet"],
     ["list.parquet row 1: the answer (column 'answer') is list"]),
    ("data-parquet-struct-answer", "train.py", ["dataset=gsm8k", "dataset.path={d}/data/struct.parquet"],
     ["struct.parquet row 1: the answer (column 'answer') is dict"]),
    ("data-parquet-nan-answer", "train.py", ["dataset=gsm8k", "dataset.path={d}/data/nan.parquet"],
     ["nan.parquet row 2: the answer (column 'answer') is nan (not a finite number)"]),
    # issue 33: empty or blank answers and prompts, refused like null ones, with the count and the first row
    ("data-blank-answers", "train.py", ["dataset=gsm8k", "dataset.path={d}/data/blank.jsonl"],
     ["gsm8k: {d}/data/blank.jsonl: 2 of 3 rows have an empty or blank answer (first: line 2), an answer no "
      "completion can match (reward 0); fill them in or remove those rows"]),
    ("data-empty-prompt", "train.py", ["dataset=gsm8k", "dataset.path={d}/data/noprompt.jsonl"],
     ["gsm8k: {d}/data/noprompt.jsonl: 1 of 2 rows have an empty or blank prompt (first: line 2), a model given "
      "nothing to answer; fill them in or remove those rows"]),
    ("plugin-dataset-blank-answers", "train.py", ["dataset.name=tests/fixtures/plugins/blank_rows.py:data"],
     ["dataset 'tests/fixtures/plugins/blank_rows.py:data': split 'train': 2 of 5 rows have an empty or blank "
      "answer (first: row 1), an answer no completion can match (reward 0); fill them in or remove those rows",
      "expected: def my_data(split: str)"]),
    ("data-hub-unreachable", "train.py", ["dataset=gsm8k"],
     ["could not load the hub dataset openai/gsm8k", "dataset.path=/path/to/train.jsonl"]),
    # ---- train.py: the model (TRAIN's model=tiny replaced)
    ("model-offline-not-cached", "train.py", ["model=qwen2.5-3b-instruct", "model.name=pods-test/never-downloaded"],
     ["model.name pods-test/never-downloaded: offline (HF_HUB_OFFLINE) and not in the local cache"]),
    ("model-unusable-dir", "train.py", ["model=qwen2.5-3b-instruct", "model.name={d}/badmodel",
                                        "model.load_in_4bit=false"],
     ["model.name {d}/badmodel could not be loaded (ValueError:", "check the name"]),
    ("run-dir-corrupt-config", "train.py", ["output_root={d}/runs-bad", "run_name=cc"],
     ["{d}/runs-bad/cc/config.yaml: cannot be read as YAML", "restore it, or use another run directory"]),
    ("run-dir-only-damaged-checkpoint", "train.py", ["output_root={d}/runs-bad", "run_name=dmg", "rl.max_steps=2"],
     ["checkpoint {d}/runs-bad/dmg/checkpoint-1 is damaged (state.json", "it is left in place",
      "train.py: error: every checkpoint of {d}/runs-bad/dmg is damaged"]),
    # issue 33: a checkpoint whose manifest is gone is used with a warning; a damaged row in the middle of
    # metrics.jsonl is kept aside (test_a_damaged_metrics_row_is_kept_aside checks the files)
    ("checkpoint-without-manifest", "train.py", ["output_root={d}/runs-bad", "run_name=nomani", "rl.max_steps=2"],
     ["warning: checkpoint {d}/runs-bad/nomani/checkpoint-1 has no manifest.json (lost, or written before manifests "
      "existed): its files cannot be checked against their sizes and checksums, so it is used unverified"], 0),
    ("metrics-damaged-row", "train.py", ["output_root={d}/runs-bad", "run_name=midrow", "rl.max_steps=2"],
     ["warning: {d}/runs-bad/midrow/metrics.jsonl: line 1 is not a JSON row (damaged on disk or edited); the file "
      "as it was is kept in {d}/runs-bad/midrow/metrics.damaged-", ".jsonl, and {d}/runs-bad/midrow/metrics.jsonl "
      "continues without it"], 0),
    ("data-bad-option", "train.py", ["+dataset.options.digits=0"], ["arithmetic: digits must be in 1..18, got 0"]),
    # ---- issue 23 point 6: a damaged warm-start cache is rebuilt
    ("warmstart-cache-truncated", "train.py", [*DEMO_WS, "evaluation=null", "run_name=ws"],  # rebuilt (a second warm start), then trains
     ["warning: the cached warm start {d}/ws/", "is damaged (model.safetensors does not match its checksum "
      "(100 bytes; truncated or changed)); rebuilding it"], 0),
    # ---- issue 33: a reward that sorts or rewrites its inputs in place changes nothing for the next one
    # (test_one_reward_cannot_change_what_the_next_one_scores compares the two runs' step 1; after
    # warmstart-cache-truncated, whose rebuilt warm start they reuse)
    *[(f"reward-inputs-{kind}", "train.py", [*DEMO_WS, "evaluation=null",
                                             "rl.max_steps=1", "rl.n=16", "rl.m=4", "rl.max_completion_tokens=8",
                                             f"run_name=inputs-{kind}", "dataset.accuracy_reward=arithmetic", rewards],
       [], 0)
      for kind, rewards in (("plain", "dataset.rewards=[{name: arithmetic, weight: 1.0}]"),
                            ("sorted", "dataset.rewards=[{name: 'tests/fixtures/plugins/bad_rewards.py:sorts_in_place',"
                                       " weight: 0.0}, {name: arithmetic, weight: 1.0}]"))],
    # ---- issue 33: the warm start
    ("warmstart-never-reaches-target", "train.py", ["experiment=demo", "warmstart.cache_dir={d}/ws-target",
                                                    "warmstart.max_steps=2", "warmstart.eval_every=1",
                                                    "warmstart.eval_size=8", "warmstart.target_greedy=1.0"],
     ["train.py: error: the warm start did not reach warmstart.target_greedy=1.0 in warmstart.max_steps=2 steps "
      "(greedy accuracy 0.000 at step 2); nothing was cached. Raise warmstart.max_steps or warmstart.lr, or lower "
      "warmstart.target_greedy"]),
    # ---- evaluate-run.py
    ("eval-no-run_dir", "evaluate-run.py", [], ["run_dir is required"]),
    ("eval-missing-run_dir", "evaluate-run.py", ["run_dir={d}/nope"], ["run_dir {d}/nope is not a directory"]),
    ("eval-repeats-0", "evaluate-run.py", ["run_dir={d}/run", "repeats=0"], ["repeats must be an integer >= 1"]),
    ("eval-weights-unknown", "evaluate-run.py", ["run_dir={d}/run", "weights=merged"],
     ["weights must be adapter or merged_4bit", "got 'merged'"]),
    ("eval-batch_size-0", "evaluate-run.py", ["run_dir={d}/run", "batch_size=0"],
     ["batch_size must be an integer >= 1"]),
    ("eval-negative-temperature", "evaluate-run.py", ["run_dir={d}/run", "temperature=-0.5"],
     ["temperature must be a number >= 0 or null, got -0.5"]),
    ("eval-corrupt-results", "evaluate-run.py", ["run_dir={d}/run-badresults"],
     ["run-badresults/eval_results.json: not valid JSON", "left untouched"]),
    ("eval-foreign-results", "evaluate-run.py", ["run_dir={d}/run-foreign"],
     ["run-foreign/eval_results.json: not a pods results file"]),
    # a damaged checkpoint is skipped with a warning naming it (pods.run.checkpoint.intact), the rest is evaluated
    ("eval-damaged-checkpoint", "evaluate-run.py", ["run_dir={d}/run-badstate", "repeats=1", "max_tokens=2",
                                                    "datasets=[{name:arithmetic,limit:4,format_reward:null}]"],
     ["warning: skipping damaged {d}/run-badstate/checkpoint-2"], 0),
    ("eval-corrupt-config", "evaluate-run.py", ["run_dir={d}/run-badconfig"],
     ["run-badconfig/config.yaml: cannot be read as YAML"]),
    ("eval-bad-data-file", "evaluate-run.py", ["run_dir={d}/run", "datasets=[{name:gsm8k,path:'{d}/data/bad.json'}]"],
     ["bad.json line 2 column"]),
    ("eval-datasets-not-a-list", "evaluate-run.py", ["run_dir={d}/run", "datasets=5"],
     ["datasets must be a list of {name: ...} entries or null, got 5"]),
    ("eval-unknown-entry-key", "evaluate-run.py", ["run_dir={d}/run", "datasets=[{name:arithmetic,size:3}]"],
     ["unknown key(s) ['size']"]),
    ("eval-unknown-reward", "evaluate-run.py", ["run_dir={d}/run", "datasets=[{name:arithmetic,reward:nope}]"],
     ["reward: unknown reward 'nope'; valid names:"]),
    ("eval-no-checkpoint", "evaluate-run.py", ["run_dir={d}/run-nockpt", "repeats=1", "max_tokens=2",
                                               "datasets=[{name:arithmetic,limit:4,format_reward:null}]"],
     ["warning: {d}/run-nockpt holds no complete checkpoint; evaluating only the base model"], 0),
    ("eval-no-checkpoint-no-base", "evaluate-run.py", ["run_dir={d}/run-nockpt", "base=false"],
     ["{d}/run-nockpt holds no complete checkpoint and base=false: nothing to evaluate"]),
    # ---- scripts: results and metrics files
    ("speedup-corrupt-results", "scripts/speedup.py",
     ["--results", "{d}/results", "--baseline", "base-ok", "--method", "corrupt", "--dataset", "arithmetic"],
     ["speedup.py: error: {d}/results/corrupt/eval_results.json: not valid JSON"]),
    ("speedup-not-utf8", "scripts/speedup.py",
     ["--results", "{d}/results", "--baseline", "base-ok", "--method", "latin1", "--dataset", "arithmetic"],
     ["latin1/eval_results.json: not UTF-8 text"]),
    ("speedup-json-list", "scripts/speedup.py",
     ["--results", "{d}/results", "--baseline", "list", "--method", "base-ok", "--dataset", "arithmetic"],
     ["list/eval_results.json: holds a JSON list, not an object of checkpoints"]),
    ("speedup-metric-strings", "scripts/speedup.py",
     ["--results", "{d}/results", "--baseline", "base-ok", "--method", "strings", "--dataset", "arithmetic"],
     ["strings/eval_results.json: arithmetic ans_acc holds 'high' (str), not a number", "fix or remove the file"]),
    ("speedup-hours-0", "scripts/speedup.py", ["--results", "{d}/results", "--baseline", "base-ok", "--method",
                                               "base-ok", "--hours-per-checkpoint", "0"],
     ["argument --hours-per-checkpoint: '0': hours must be positive"]),
    ("speedup-hours-negative", "scripts/speedup.py", ["--results", "{d}/results", "--baseline", "base-ok",
                                                      "--method", "base-ok", "--hours-per-checkpoint=-0.5"],
     ["argument --hours-per-checkpoint: '-0.5': hours must be positive"]),
    ("speedup-metric-bool", "scripts/speedup.py",
     ["--results", "{d}/results", "--baseline", "base-ok", "--method", "bools", "--dataset", "arithmetic"],
     ["bools/eval_results.json: arithmetic ans_acc holds True (bool), not a number"]),
    ("speedup-metric-number-as-text", "scripts/speedup.py",
     ["--results", "{d}/results", "--baseline", "base-ok", "--method", "numtext", "--dataset", "arithmetic"],
     ["numtext/eval_results.json: arithmetic ans_acc holds '0.5' (str), not a number"]),
    ("speedup-accuracy-above-1", "scripts/speedup.py",
     ["--results", "{d}/results", "--baseline", "base-ok", "--method", "above-1", "--dataset", "arithmetic"],
     ["above-1/eval_results.json: arithmetic ans_acc holds 51.0, not an accuracy in [0, 1]"]),
    ("speedup-unknown-setting", "scripts/speedup.py", ["--results", "{d}/results", "--baseline", "nope",
                                                       "--method", "base-ok"], ["setting 'nope': no directory"]),
    ("plot-torn-metrics", "scripts/plot.py", ["step-time", "--results", "{d}/results", "--setting", "m-torn",
                                              "--out", "{d}/figs"],
     ["m-torn/metrics.jsonl: line 2 is not JSON", "fix or delete that line"]),
    ("plot-binary-metrics", "scripts/plot.py", ["step-time", "--results", "{d}/results", "--setting", "m-binary",
                                                "--out", "{d}/figs"], ["m-binary/metrics.jsonl: not UTF-8 text"]),
    ("plot-metrics-not-objects", "scripts/plot.py", ["step-time", "--results", "{d}/results", "--setting", "m-rows",
                                                     "--out", "{d}/figs"],
     ["m-rows/metrics.jsonl: line 1 is a JSON list, not an object"]),
    ("plot-corrupt-results", "scripts/plot.py", ["curves", "--results", "{d}/results", "--setting", "corrupt",
                                                 "--dataset", "arithmetic", "--out", "{d}/figs"],
     ["plot.py: error: {d}/results/corrupt/eval_results.json: not valid JSON"]),
    ("plot-out-is-a-file", "scripts/plot.py", ["curves", "--results", "{d}/results", "--setting", "base-ok",
                                               "--dataset", "arithmetic", "--out", "{d}/a-file"],
     ["plot.py: error: --out {d}/a-file is a file, not a folder", "the file was left untouched"]),
    ("paper_steps-corrupt", "benchmarks/paper_steps.py", ["--results", "{d}/paper"],
     ["Instruct-GSM8K-512-16-16-Run1.json: cannot be read as a results file"]),
    ("demo_compare-nothing-to-report", "scripts/demo_compare.py", ["--report-only", "--out", "{d}/empty-out",
                                                                   "--seeds", "0", "--methods", "grpo"],
     ["eval_results.json: missing; train and evaluate this run first"]),
    ("demo_compare-eval-every-0", "scripts/demo_compare.py", ["--eval-every", "0", "--out", "{d}/empty-out"],
     ["--eval-every must be at least 1, got 0"]),
    ("gpu_check-steps-1", "scripts/gpu_check.py", ["--tiny", "--steps", "1", "--out", "{d}/gpu"],
     ["--steps must be at least 2"]),
    ("paper_data-no-results", "scripts/paper_data.py", ["--from", "{d}/data", "--dest", "{d}/paper-data-out"],
     ["no results folder with the authors' Instruct-*-Run*.json files"]),
    ("grader_agreement-missing-examples", "benchmarks/grader_agreement.py", ["--examples", "{d}/none.jsonl.gz"],
     ["none.jsonl.gz not found", "scripts/paper_data.py"]),
    # ---- scripts/replay.py (issue 30 part 5): nothing is written
    ("replay-unknown-rule", "scripts/replay.py", ["{d}/ledgers/ok", "--rule", "max_varaince"],
     ["--rule max_varaince: no such rollout or prompt rule; did you mean max_variance"]),
    ("replay-m-above-n", "scripts/replay.py", ["{d}/ledgers/ok", "--rule", "random", "--m", "5"],
     ["--m 5: the recorded groups hold 4 rollouts (n), so m must lie in 1..4"]),
    ("replay-ledger-cut-short", "scripts/replay.py", ["{d}/ledgers/cut", "--rule", "random"],
     ["steps-00000002-00000002.parquet cannot be read", "cut short or damaged"]),
    ("replay-ledger-step-missing", "scripts/replay.py", ["{d}/ledgers/gap", "--rule", "random"],
     ["{d}/ledgers/gap/ledger is truncated: step 2 is missing (1 of 3)"]),
    ("replay-ledger-other-version", "scripts/replay.py", ["{d}/ledgers/old", "--rule", "random"],
     ["a ledger of format version 0; this pods reads and writes version 1"]),
    ("replay-no-ledger", "scripts/replay.py", ["{d}/ledgers/none", "--rule", "random"],
     ["{d}/ledgers/none has no rollout ledger"]),
    ("replay-glob-matches-nothing", "scripts/replay.py", ["{d}/ledgers/zz*", "--rule", "random"],
     ["no run directory with a rollout ledger"]),
    # ---- scripts/leaderboard.py (issue 31): refused before anything is written
    ("leaderboard-unknown-arm", "scripts/leaderboard.py", ["--arms", "grpo", "podz", "--out", "{d}/lb-out"],
     ["unknown arm 'podz'; did you mean pods", "NAME:key=value"]),
    ("leaderboard-arm-unknown-rule", "scripts/leaderboard.py",
     ["--arms", "grpo", "mine:rl.n=64 rl.m=16 rl.rule=max_varianse", "--out", "{d}/lb-out"],
     ["arm mine", "max_varianse", "max_variance"]),
    ("leaderboard-budget-below-a-step", "scripts/leaderboard.py",
     ["--arms", "grpo", "pods", "--budget", "10000", "--points", "10", "--out", "{d}/lb-out"],
     ["below one step of arm pods", "raise --budget or lower --points"]),
    ("leaderboard-one-seed", "scripts/leaderboard.py", ["--seeds", "1", "--out", "{d}/lb-out"],
     ["--seeds 1: intervals over seeds need at least 2 seeds"]),
    ("leaderboard-weight-zero", "scripts/leaderboard.py", ["--weight", "0", "--out", "{d}/lb-out"],
     ["--weight 0: w must be positive", "pods gpu-check --config ... --random-weights"]),
    # ---- scripts/train_trl.py presets
    ("trl-missing-preset", "scripts/train_trl.py", ["--preset", "{d}/presets/none.yaml"],
     ["preset {d}/presets/none.yaml does not exist"]),
    ("trl-broken-yaml", "scripts/train_trl.py", ["--preset", "{d}/presets/broken.yaml"], ["is not valid YAML"]),
    ("trl-override-syntax", "scripts/train_trl.py", ["--preset", "config/trl/tiny-cpu.yaml", "trl=[1"],
     ["cannot parse the overrides ['trl=[1']"]),
    ("trl-bad-train_steps", "scripts/train_trl.py", ["--preset", "config/trl/tiny-cpu.yaml", "train_steps=-1"],
     ["train_steps must be epoch, authors_epoch, a positive integer or null, got -1"]),
    ("trl-bad-algorithm", "scripts/train_trl.py", ["--preset", "{d}/presets/sgd.yaml"],
     ["algorithm must be one of pods, grpo_ga, got 'sgd'"]),
    ("trl-unknown-preset", "scripts/train_trl.py", ["preset=tiny-cpy"],
     ["preset=tiny-cpy: no config/trl/tiny-cpy.yaml (did you mean preset=tiny-cpu?)"]),
    ("trl-two-presets", "scripts/train_trl.py", ["preset=tiny-cpu", "--preset", "config/trl/tiny-cpu.yaml"],
     ["name one preset: preset=<name> ("]),
    ("trl-base-key", "scripts/train_trl.py", ["--preset", "{d}/presets/old.yaml"],
     ["`base: tiny-cpu.yaml` is Hydra's defaults list now: write `defaults: [tiny-cpu, _self_]`"]),
    ("trl-unknown-key", "scripts/train_trl.py", ["--preset", "config/trl/tiny-cpu.yaml", "trl.num_generation=4"],
     ["unknown setting(s) trl.num_generation (did you mean trl.num_generations?): PODSConfig"]),
    # ---- issue 33: scripts/preflight.py (a fragment ("stdout", text) is looked for in stdout)
    *[(f"preflight-gpu-memory-{v}", "scripts/preflight.py", ["--gpu-memory-gib", v, "experiment=gsm8k_main"],
       [f"preflight.py: error: argument --gpu-memory-gib: '{v}': must be a positive, finite number of GiB (e.g. 80)"])
      for v in ("nan", "inf")],
    ("preflight-two-gpus", "scripts/preflight.py", ["--gpu", "L40S", "--gpu", "H100", "experiment=gsm8k_main"],
     [("stdout", "LoRA 64 on a 4-bit base, on L40S (44.99 GiB)"), ("stdout", "fits: 30.9 GiB of 45.0 GiB"),
      ("stdout", "LoRA 64 on a 4-bit base, on H100 (79.65 GiB)"), ("stdout", "fits: 48.2 GiB of 79.7 GiB")], 0),
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


def test_one_reward_cannot_change_what_the_next_one_scores(outcomes):
    """The demo's step 1 (warm-started, so some answers are right) scores the same with a plug-in listed first
    that sorts the completions, reverses the answers and the columns and overwrites an answer in place."""
    from pods.run.metrics import read_metrics

    (plain,), (mixed,) = [read_metrics(outcomes[f"reward-inputs-{kind}"][1] / "runs" / f"inputs-{kind}")
                          for kind in ("plain", "sorted")]
    assert plain["reward/arithmetic"] > 0  # else the comparison would prove nothing
    assert mixed["reward/arithmetic"] == plain["reward/arithmetic"] and mixed["accuracy"] == plain["accuracy"]


def test_every_file_of_a_run_and_of_the_warm_start_honours_the_umask(files, outcomes):
    """A teammate can read, evaluate and resume a run: no file is private (safetensors writes 0600 itself).
    The run of the fixture (one real step) and the warm start rebuilt by `warmstart-cache-truncated`."""
    import stat

    mask = os.umask(0o022)
    os.umask(mask)
    warm = [p for p in (files / "ws").iterdir() if not p.name.startswith(".")]
    for top in [files / "runs-bad" / "dmg", *warm]:
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


@pytest.mark.parametrize("name", ["n-fraction", "eval-repeats-0", "speedup-corrupt-results"])
def test_the_same_in_a_real_subprocess(name, files, tmp_path):
    """A few cases as real command lines too: what the in-process runner shows is what a user sees."""
    case = next(c for c in CASES if c[0] == name)
    command = _command(case, files, tmp_path)
    proc = subprocess.run([sys.executable, command["program"], *command["args"]], cwd=ROOT, env=command["env"],
                          capture_output=True, text=True, timeout=300)
    _check(case, files, proc.returncode, proc.stdout, proc.stderr, tmp_path)


def test_pods_threads_that_is_not_a_number(tmp_path):
    proc = run("train.py", [*TRAIN, f"output_root={tmp_path}"], env=dict(ENV, PODS_THREADS="many"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "PODS_THREADS='many': must be a positive integer" in proc.stderr


@pytest.mark.slow
def test_a_sweep_runs_every_good_job_and_reports_the_bad_one(tmp_path):
    """`-m` with three jobs of the tiny model, the second invalid: jobs 0 and 2 train, job 1 is one message."""
    proc = run("train.py", ["-m", *[a for a in TRAIN if a != "run_name=r"], f"output_root={tmp_path}",
                            "rl.n=4,4.5,2", "rl.max_completion_tokens=2", f"hydra.sweep.dir={tmp_path / 'multirun'}"],
               timeout=600)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 2
    assert "train.py: error in sweep job 1 (" in proc.stderr and "rl.n must be an integer, got 4.5" in proc.stderr
    assert "train.py: 1 of 3 sweep jobs failed: job 1" in proc.stderr
    for run_name in ("arithmetic-tiny-pods-max_variance-n4-m2-seed0", "arithmetic-tiny-grpo-n2-m2-seed0"):
        assert (tmp_path / run_name / "checkpoint-1" / "state.json").is_file(), run_name


# ----------------------------------------------------------------------------- issue 33: signals (slow tier)

HUP_TRAIN = ["model=tiny", "dataset=arithmetic", "rl.n=64", "rl.m=8", "rl.prompts_per_step=8", "rl.micro_batch_size=64",
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
