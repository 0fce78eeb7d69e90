"""Multi-GPU PODS / GRPO-GA with TRL's GRPOTrainer on accelerate (DDP or DeepSpeed ZeRO-2).

    accelerate launch --config_file config/accelerate/zero2-8gpu.yaml scripts/train_trl.py \\
        --preset config/trl/pods-qwen2.5-3b.yaml [key=value ...]      # e.g. trl.max_steps=50
    uv run python scripts/train_trl.py --preset config/trl/tiny-cpu.yaml   # CPU smoke run

The preset (YAML, a comment above every key) names the algorithm (`pods`: PODSTrainer keeps m
of n per prompt; `grpo_ga`: plain trl.GRPOTrainer), the model, the pods.data dataset and
held-out split, the `rewards` registry functions, and the TRL config keyword arguments.
Overrides are OmegaConf dot-list items. A run directory that already holds metrics.jsonl is
refused unless `overwrite=true` (no resume). Writes to the run directory (rank 0):
- `config.yaml`: the resolved preset;
- `metrics.jsonl`: one row per optimizer step (and one for the step-0 evaluation): `step`,
  `elapsed_seconds`, `eval_seconds`, TRL's logged metrics, `time/step`, and on evaluated steps
  `eval/accuracy` and `eval/<metric>`;
- `eval_results.json`: the evaluations in the layout of pods.analysis.loaders.load_run_dir
  (`checkpoint-<step>: {step, elapsed_seconds, <dataset>: {ans_acc, for_acc, lengths}}`).
`elapsed_seconds` is the training clock: the sum of the optimizer steps' wall time (generation,
scoring, update), excluding evaluation, logging and saving; `max_train_seconds` stops on it.
Evaluation is TRL's eval loop on the held-out split (num_generations_eval sampled completions per
prompt, vLLM when enabled); eval/accuracy is the mean of `accuracy_reward` over them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

from pods.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
if not torch.cuda.is_available():  # TRL 1.15 patches in a Triton kernel; interpret it on CPU
    os.environ.setdefault("TRITON_INTERPRET", "1")

from omegaconf import OmegaConf  # noqa: E402
from transformers import TrainerCallback  # noqa: E402

ALGORITHMS = ("pods", "grpo_ga")


def load_preset(path: str | Path, overrides: list[str] = ()) -> dict:
    """The preset merged with dot-list overrides, as plain containers; checks the top-level keys."""
    cfg = OmegaConf.merge(OmegaConf.load(path), OmegaConf.from_dotlist(list(overrides)))
    cfg = OmegaConf.to_container(cfg, resolve=True)
    for key, value in cfg.get("trl", {}).items():  # YAML reads a bare `no` as false: trl.eval_strategy=no
        if key.endswith("_strategy") and value is False:
            cfg["trl"][key] = "no"
    if cfg.get("algorithm") not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {cfg.get('algorithm')!r}")
    for key in ("model", "dataset", "eval", "rewards", "accuracy_reward", "trl"):
        if key not in cfg:
            raise ValueError(f"preset {path}: missing key {key!r}")
    names = [r["name"] for r in cfg["rewards"]]
    if cfg["accuracy_reward"] not in names:
        raise ValueError(f"accuracy_reward {cfg['accuracy_reward']!r} is not among the rewards {names}")
    if cfg["algorithm"] == "grpo_ga" and any(k.startswith("pods_") for k in cfg["trl"]):
        raise ValueError("algorithm grpo_ga is plain GRPO: remove the trl.pods_* keys")
    return cfg


def as_grpo_ga(cfg: dict) -> dict:
    """The GRPO-GA run matching a PODS preset: same rollouts per step and micro-batch, all trained."""
    from pods.integrations.trl import grpo_ga_kwargs

    if cfg["algorithm"] != "pods":
        raise ValueError("--as-grpo-ga converts a PODS preset (algorithm: pods)")
    return {**cfg, "algorithm": "grpo_ga", "trl": grpo_ga_kwargs(cfg["trl"])}


def run_name(cfg: dict) -> str:
    t = cfg["trl"]
    n = t["num_generations"]
    return (f"trl-{cfg['algorithm']}-n{n}-m{t.get('pods_m', n)}-ga{t.get('gradient_accumulation_steps', 1)}"
            f"-s{t.get('seed', 42)}")


class RunLog(TrainerCallback):
    """Training clock (optimizer steps only), metrics.jsonl (one row per step), eval_results.json, budget."""

    def __init__(self, run_dir: Path, dataset: str, accuracy_reward: str, max_train_seconds: float | None = None,
                 clock=time.perf_counter):
        self.run_dir, self.dataset, self.acc = Path(run_dir), dataset, accuracy_reward
        self.max_seconds, self.clock = max_train_seconds, clock
        self.elapsed, self.eval_seconds, self._begin, self._pause = 0.0, 0.0, None, None
        self._row: dict | None = None  # this step's metrics, written when the next step begins

    def on_train_begin(self, args, state, control, **kwargs):
        self._pause = self.clock()  # eval_on_start runs before the first step

    def on_step_begin(self, args, state, control, **kwargs):
        self._flush()
        self._begin = self.clock()

    def on_step_end(self, args, state, control, **kwargs):
        now = self.clock()
        self.elapsed += now - self._begin
        self._pause = now  # from here to the next step: logging, evaluation, saving (not training)
        if self.max_seconds is not None and self.elapsed >= self.max_seconds:
            control.should_training_stop = True

    def on_train_end(self, args, state, control, **kwargs):
        self._flush()

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if self._pause is not None:
            now = self.clock()
            self.eval_seconds += now - self._pause
            self._pause = now  # a second evaluation in the same pause (several eval sets) counts once
        if state.is_world_process_zero and metrics:
            self._write_eval(state.global_step, metrics)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs or any(k.startswith("eval_") for k in logs):
            return  # evaluation metrics are added by on_evaluate
        row = self._row_of(state.global_step)
        row.update(logs)
        if "step_time" in logs:
            row["time/step"] = logs["step_time"]

    def _row_of(self, step: int) -> dict:
        if self._row is not None and self._row["step"] != step:
            self._flush()
        if self._row is None:
            self._row = {"step": step}
        self._row.update(elapsed_seconds=self.elapsed, eval_seconds=self.eval_seconds)
        return self._row

    def _flush(self):
        if self._row is not None:
            with open(self.run_dir / "metrics.jsonl", "a") as f:
                f.write(json.dumps(self._row) + "\n")
            self._row = None

    def _write_eval(self, step: int, metrics: dict):
        key = f"eval_rewards/{self.acc}/mean"
        if key not in metrics:
            raise KeyError(f"evaluation metrics lack {key!r}; got {sorted(metrics)}")
        acc = float(metrics[key])
        self._row_of(step).update({"eval/accuracy": acc, **{f"eval/{k[5:]}": v for k, v in metrics.items()}})
        entry = {"ans_acc": [acc]}
        if "eval_rewards/format/mean" in metrics:
            entry["for_acc"] = [float(metrics["eval_rewards/format/mean"])]
        if "eval_completions/mean_length" in metrics:
            entry["lengths"] = [float(metrics["eval_completions/mean_length"])]
        path = self.run_dir / "eval_results.json"
        results = json.loads(path.read_text()) if path.is_file() else {}
        results[f"checkpoint-{step}"] = {"step": step, "elapsed_seconds": self.elapsed, self.dataset: entry}
        atomic_write_json(path, results)  # a killed run never leaves a torn results file

def _dataset(cfg: dict, tok, split: str, path, limit):
    """A datasets.Dataset with `prompt` (rendered text) and `answer`, plus meta columns all rows share."""
    from datasets import Dataset

    from pods import data

    d = cfg["dataset"]
    examples = data.load_dataset(d["name"], split=split, path=path, limit=limit, **(d.get("options") or {}))
    kept, _, _ = data.render_prompts(examples, tok, style=d.get("prompt_style", "instruct"),
                                     system_prompt=d.get("system_prompt"), max_prompt_tokens=d.get("max_prompt_tokens"))
    columns = {"prompt": [data.prompt_text(e, tok, d.get("prompt_style", "instruct"), d.get("system_prompt"))
                          for e in kept],
               "answer": [e.answer for e in kept]}
    shared = set.intersection(*(set(e.meta) for e in kept)) if kept else set()
    for key in sorted(shared - set(columns)):
        columns[key] = [e.meta[key] for e in kept]
    return Dataset.from_dict(columns)


def build(cfg: dict, callbacks=()):
    """(trainer, run_dir) for a loaded preset."""
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from pods.integrations.trl import PODSConfig, PODSTrainer, trl_reward_funcs

    run_dir = Path(cfg.get("run_dir") or ROOT / "checkpoints" / run_name(cfg))
    if (run_dir / "metrics.jsonl").is_file() and not cfg.get("overwrite", False):
        raise ValueError(f"{run_dir} already holds a run (metrics.jsonl); choose another run_dir=... or pass "
                         "overwrite=true to replace its metrics (this launcher does not resume)")
    run_dir.mkdir(parents=True, exist_ok=True)
    if cfg["model"] == "tiny":
        from pods.models import byte_tokenizer, tiny_causal_lm

        tok = byte_tokenizer()
        model = tiny_causal_lm(tok, seed=cfg["trl"].get("seed", 0))
    else:
        tok = AutoTokenizer.from_pretrained(cfg["model"])
        model = cfg["model"]  # TRL loads it (device placement and dtype from trl.model_init_kwargs)
    d, e = cfg["dataset"], cfg["eval"]
    train = _dataset(cfg, tok, d.get("split", "train"), d.get("path"), d.get("limit"))
    held_out = _dataset(cfg, tok, e.get("split", "test"), e.get("path") or d.get("path"), e.get("limit"))
    funcs, weights = trl_reward_funcs(cfg["rewards"])
    kwargs = dict(cfg["trl"], output_dir=str(run_dir), reward_weights=weights)
    if not torch.cuda.is_available():
        changed = {k: v for k, v in dict(use_cpu=True, bf16=False, use_vllm=False).items() if kwargs.get(k, v) != v}
        if changed:
            print(f"no CUDA: running on CPU with {changed} (preset values overridden)", file=sys.stderr)
        kwargs.update(use_cpu=True, bf16=False, use_vllm=False)
    args = (PODSConfig if cfg["algorithm"] == "pods" else GRPOConfig)(**kwargs)
    trainer_cls = PODSTrainer if cfg["algorithm"] == "pods" else GRPOTrainer
    log = RunLog(run_dir, d["name"], cfg["accuracy_reward"], cfg.get("max_train_seconds"))
    trainer = trainer_cls(model=model, reward_funcs=funcs, args=args, train_dataset=train, eval_dataset=held_out,
                          processing_class=tok, callbacks=[log, *callbacks])
    if trainer.accelerator.is_main_process:
        (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(cfg)))
        (run_dir / "metrics.jsonl").unlink(missing_ok=True)  # overwrite=true: a fresh run
        (run_dir / "eval_results.json").unlink(missing_ok=True)
    return trainer, run_dir


def main(argv: list[str] | None = None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", required=True, help="YAML preset, e.g. config/trl/pods-qwen2.5-3b.yaml")
    p.add_argument("--as-grpo-ga", action="store_true", help="run the GRPO-GA comparison of a PODS preset")
    p.add_argument("overrides", nargs="*", help="OmegaConf dot-list overrides, e.g. trl.max_steps=10")
    a = p.parse_args(argv)
    cfg = load_preset(a.preset, a.overrides)
    if a.as_grpo_ga:
        cfg = as_grpo_ga(cfg)
    trainer, run_dir = build(cfg)
    trainer.train()
    if trainer.accelerator.is_main_process:
        print(f"done: {trainer.state.global_step} steps; metrics in {run_dir / 'metrics.jsonl'}")
    return trainer, run_dir


if __name__ == "__main__":
    main()
