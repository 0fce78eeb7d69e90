"""RunLog: the launcher's TrainerCallback: training clock, metrics.jsonl, eval_results.json, time triggers.

    log = RunLog(run_dir, "gsm8k", "openr1_accuracy", format_reward="openr1_format",
                 max_train_seconds=2400, eval_every_seconds=120, save_every_seconds=600)
    trainer = PODSTrainer(..., callbacks=[log]); trainer.train()

The clock `elapsed_seconds` sums the optimizer steps' wall time (no evaluation, logging or saving), rank 0's
on every rank. Training stops past max_train_seconds, evaluates after the first step past 0, T, 2T, ... and
saves past T, 2T, ... and at the last step. metrics.jsonl: one row per step (rank 0), written as the next
begins; the clock, the next times and the unwritten row are saved in each checkpoint. docs/multi-gpu.md.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState

from pods.io import atomic_write_json, honour_umask

SAVED = ("elapsed", "eval_seconds", "next_eval", "next_save", "row")  # restored on resume


def rank0_value(value):
    """`value` as rank 0 has it, on every process (unchanged without torch.distributed)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]
    return value


class RunLog(TrainerCallback, ExportableState):
    """Training clock, metrics.jsonl, eval_results.json, time-based evaluation and checkpoints, budget."""

    def __init__(self, run_dir: str | Path, dataset: str, accuracy_reward: str, format_reward: str | None = None,
                 max_train_seconds: float | None = None, eval_every_seconds: float | None = None,
                 save_every_seconds: float | None = None, clock=time.perf_counter):
        for name, v in (("max_train_seconds", max_train_seconds), ("eval_every_seconds", eval_every_seconds),
                        ("save_every_seconds", save_every_seconds)):
            if v is not None and not v > 0:
                raise ValueError(f"{name} must be positive or null, got {v!r}")
        self.run_dir, self.dataset, self.acc, self.fmt = Path(run_dir), dataset, accuracy_reward, format_reward
        self.max_seconds, self.eval_every, self.save_every, self.clock = (max_train_seconds, eval_every_seconds,
                                                                          save_every_seconds, clock)
        self.elapsed, self.eval_seconds = 0.0, 0.0
        self.next_eval = 0.0 if eval_every_seconds else None  # the authors' first evaluation: after step 1
        self.next_save = save_every_seconds
        self.row: dict | None = None  # this step's metrics, written when the next step begins
        self._begin = self._pause = None

    def state(self) -> dict:
        return {"args": {}, "attributes": {k: getattr(self, k) for k in SAVED}}

    def on_train_begin(self, args, state, control, **kwargs):
        saved = (state.stateful_callbacks or {}).get(type(self).__name__)
        if state.global_step > 0 and isinstance(saved, dict):  # resumed from a checkpoint: continue
            for key in SAVED:
                if key != "row" or state.is_world_process_zero:  # only rank 0 writes rows
                    setattr(self, key, saved["attributes"][key])
        self._pause = self.clock()  # eval_on_start runs before the first step

    def on_step_begin(self, args, state, control, **kwargs):
        self._flush()
        self._begin = self.clock()

    def on_step_end(self, args, state, control, **kwargs):
        now = self.clock()
        self.elapsed = rank0_value(self.elapsed + now - self._begin)  # identical decisions on every rank
        self._pause = now  # from here to the next step: logging, evaluation, saving (not training)
        over = self.max_seconds is not None and self.elapsed >= self.max_seconds
        if over:
            control.should_training_stop = True
        if self.next_eval is not None and self.elapsed >= self.next_eval:
            control.should_evaluate = True
            self.next_eval += self.eval_every
        if self.next_save is not None and (self.elapsed >= self.next_save or over
                                           or state.global_step >= state.max_steps):
            control.should_save = True
            while self.next_save <= self.elapsed:
                self.next_save += self.save_every

    def on_train_end(self, args, state, control, **kwargs):
        self._flush()

    def on_save(self, args, state, control, **kwargs):
        saved = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and saved.is_dir():
            honour_umask(saved)  # TRL's safetensors files are 0600: teammates could not evaluate or resume

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
        if self.row is not None and self.row["step"] != step:
            self._flush()
        if self.row is None:
            self.row = {"step": step}
        self.row.update(elapsed_seconds=self.elapsed, eval_seconds=self.eval_seconds)
        return self.row

    def _flush(self):
        if self.row is not None:
            with open(self.run_dir / "metrics.jsonl", "a") as f:
                f.write(json.dumps(self.row) + "\n")
            self.row = None

    def _write_eval(self, step: int, metrics: dict):
        key = f"eval_rewards/{self.acc}/mean"
        if key not in metrics:
            raise KeyError(f"evaluation metrics lack {key!r}; got {sorted(metrics)}")
        acc = float(metrics[key])
        evals = {f"eval/{k[5:]}": v for k, v in metrics.items() if k.startswith("eval_")}
        self._row_of(step).update({"eval/accuracy": acc, **evals})
        entry = {"ans_acc": [acc]}
        if self.fmt and f"eval_rewards/{self.fmt}/mean" in metrics:
            entry["for_acc"] = [float(metrics[f"eval_rewards/{self.fmt}/mean"])]
        if "eval_completions/mean_length" in metrics:
            entry["lengths"] = [float(metrics["eval_completions/mean_length"])]
        path = self.run_dir / "eval_results.json"
        results = json.loads(path.read_text()) if path.is_file() else {}
        results[f"checkpoint-{step}"] = {"step": step, "elapsed_seconds": self.elapsed, self.dataset: entry}
        atomic_write_json(path, results)  # a killed run never leaves a torn results file
