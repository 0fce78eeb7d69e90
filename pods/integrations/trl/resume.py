"""Rerunning a scripts/train_trl.py command continues its run: plan (every process), then apply (rank 0).

    plan = plan_run(run_dir, cfg)            # read-only: fresh | resume | finished; ValueError on a config change
    check_ledger(run_dir, plan, cfg)         # read-only: a resume's rollout ledger read back (CheckpointError)
    if trainer.accelerator.is_main_process: apply_plan(run_dir, plan, cfg)   # once the trainer is built
    trainer.accelerator.wait_for_everyone()
    trainer.train(resume_from_checkpoint=plan.checkpoint)   # None when fresh

Resumes from the latest complete checkpoint (its trainer_state.json names its step; incomplete ones are
deleted), refuses settings other than config.yaml's, leaves a finished run (finished.json) alone and trims
metrics.jsonl / eval_results.json to the checkpoint's step; overwrite=true starts over. A resume with the rollout
ledger (trl.pods_ledger) reads it back before a model loads, as train.py's prepare does. docs/multi-gpu.md.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pods.core.lab import LAB_FILE
from pods.core.ledger_writer import check_resume
from pods.errors import CheckpointError
from pods.integrations.trl.lab_settings import in_trl_names
from pods.io import atomic_write_json, atomic_write_text

LOGS = ("metrics.jsonl", "eval_results.json", "finished.json")
IGNORED_KEYS = ("overwrite",)  # settings that may differ between a run and its rerun


@dataclass
class Plan:
    mode: str  # "fresh", "resume" or "finished"
    checkpoint: Path | None = None  # the checkpoint to resume from
    step: int = 0  # its optimizer step
    stale: list[Path] = field(default_factory=list)  # checkpoint directories to delete first
    note: str = ""  # what happens, for the log


def checkpoint_step(path: Path) -> int | None:
    """The step of a complete checkpoint directory, None if it is incomplete (no valid trainer_state.json)."""
    try:
        step = int(path.name.rsplit("-", 1)[1])
        state = json.loads((path / "trainer_state.json").read_text())  # HF writes it last: trainer.py _save_checkpoint
    except (IndexError, ValueError, OSError):
        return None
    return step if state.get("global_step") == step else None


def _flat(d, prefix=""):
    out = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def config_diff(saved: dict, now: dict) -> list[str]:
    """`key: saved -> now` for every setting that differs (dotted keys; IGNORED_KEYS left out)."""
    a, b = _flat(saved), _flat(now)
    keys = sorted(k for k in set(a) | set(b) if k.split(".")[0] not in IGNORED_KEYS and a.get(k) != b.get(k))
    return [f"{k}: {a.get(k, '<unset>')!r} -> {b.get(k, '<unset>')!r}" for k in keys]


def plan_run(run_dir: str | Path, cfg: dict) -> Plan:
    """What a (re)run of `cfg` in `run_dir` does; reads only. ValueError if the saved settings differ."""
    from omegaconf import OmegaConf

    run_dir = Path(run_dir)
    dirs = sorted(run_dir.glob("checkpoint-*")) if run_dir.is_dir() else []
    if cfg.get("overwrite", False):
        return Plan("fresh", stale=dirs, note="overwrite=true: deleting its checkpoints and logs, starting over")
    if not (run_dir / "config.yaml").is_file():
        if (run_dir / "metrics.jsonl").is_file() or dirs:
            raise ValueError(f"{run_dir} holds files of a run without config.yaml; pass overwrite=true to start "
                             "over there, or choose another run_dir=...")
        return Plan("fresh")
    saved = OmegaConf.to_container(OmegaConf.load(run_dir / "config.yaml"), resolve=True)
    diff = config_diff(saved, cfg)
    if diff:
        raise ValueError(f"{run_dir} holds a run with other settings ({'; '.join(diff)}): rerun it with its own "
                         "settings to resume it, pass overwrite=true to start over, or choose another run_dir=...")
    if (run_dir / "finished.json").is_file():
        return Plan("finished", note="already finished (finished.json); overwrite=true starts it over")
    complete = sorted((s, d) for d in dirs if (s := checkpoint_step(d)) is not None)
    if not complete:
        return Plan("fresh", stale=dirs, note="no complete checkpoint yet: starting over")
    step, path = complete[-1]
    return Plan("resume", path, step, stale=[d for d in dirs if d != path and checkpoint_step(d) is None],
                note=f"resuming from {path.name}")


def check_ledger(run_dir: str | Path, plan: Plan, cfg: dict) -> None:
    """Every process, before a model loads: a resume's rollout ledger read back against the id its checkpoint's
    lab.pt recorded (pods.core.ledger_writer.check_resume; PODSTrainer's writer checks again on the main process).
    CheckpointError naming the file and what to do when it is damaged or another run's; nothing is written."""
    if plan.mode != "resume" or not (cfg.get("trl") or {}).get("pods_ledger"):
        return
    import torch

    lab = plan.checkpoint / LAB_FILE
    state = torch.load(lab, map_location="cpu", weights_only=True) if lab.is_file() else {}
    try:
        check_resume(Path(run_dir), {}, plan.step, state.get("ledger_id"))
    except CheckpointError as err:  # train.py's sentence, in TRL's names
        raise CheckpointError(in_trl_names(str(err)).replace("pods_ledger=false", "trl.pods_ledger=false")) from None


def _trim_metrics(path: Path, step: int) -> None:
    if not path.is_file():
        return
    rows = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # the last line of a killed write
            continue
        if row.get("step", 0) < step:
            rows.append(line)
    atomic_write_text(path, "".join(f"{r}\n" for r in rows))


def _trim_evals(path: Path, step: int) -> None:
    if path.is_file():
        results = json.loads(path.read_text())
        atomic_write_json(path, {k: v for k, v in results.items() if v.get("step", 0) <= step})


def apply_plan(run_dir: str | Path, plan: Plan, cfg: dict) -> None:
    """Rank 0, before training: delete stale checkpoints, start or trim the logs, write config.yaml."""
    from omegaconf import OmegaConf

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for d in plan.stale:
        shutil.rmtree(d)
    if plan.mode == "fresh":
        for name in LOGS:
            (run_dir / name).unlink(missing_ok=True)
        kept = {k: v for k, v in cfg.items() if k not in IGNORED_KEYS}
        atomic_write_text(run_dir / "config.yaml", OmegaConf.to_yaml(OmegaConf.create(kept)))
    elif plan.mode == "resume":
        _trim_metrics(run_dir / "metrics.jsonl", plan.step)
        _trim_evals(run_dir / "eval_results.json", plan.step)


def mark_finished(run_dir: str | Path, step: int, elapsed: float) -> None:
    """Rank 0, after training returned: a rerun of the command is then a no-op."""
    atomic_write_json(Path(run_dir) / "finished.json", {"step": step, "elapsed_seconds": elapsed})
