"""Checkpoints: when to save (pure), atomic save, verified resume from the newest intact one.

    SaveSchedule("time", interval=1800, steps=100, final=True).due(12, 1805.0, 0, 0.0)   # -> True
    save(run_dir, step, state, policy, optimizer, scheduler)                 # checkpoint-<step>/
    path, state = resume(run_dir, policy, optimizer, scheduler)              # newest intact; RNGs too
    verify(path) -> [problems]; intact(run_dir) -> [paths]; clean_stale(run_dir) at start-up

`checkpoint-<step>/` holds state.json, policy/ (adapter or full model, and the tokenizer), trainer.pt,
rng.pt and manifest.json (written last); it is renamed into place only when complete. One that fails
`verify` is skipped by `resume` for the next older one. The layout, a contract: docs/long-runs.md.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from pods.errors import CheckpointError  # also importable as pods.run.checkpoint.CheckpointError
from pods.io import honour_umask, writing
from pods.run import manifest
from pods.run.guard import NonFiniteError, nonfinite_count

_NAME = re.compile(r"^checkpoint-(\d+)$")


@dataclass(frozen=True)
class SaveSchedule:
    """When to save: every `interval` seconds of training time, or every `steps` steps, or never
    periodically (strategy "no"); plus the last step when `final`, and the step a signal stopped."""

    strategy: str = "time"  # time | steps | no
    interval: float = 1800.0
    steps: int = 100
    final: bool = True

    def due(self, step: int, elapsed: float, last_step: int, last_elapsed: float, *, stopping: bool = False,
            interrupted: bool = False) -> bool:
        """True when a save boundary was crossed since the last save (at last_step / last_elapsed),
        when the run stops here and `final` is set, or when a signal stops it here (unless the run
        saves nothing at all: strategy "no" without `final`).

        Time boundaries are multiples of `interval` (1800, 3600, ...), so a resumed run saves at
        the same training times as an uninterrupted one.
        """
        if interrupted and (self.final or self.strategy != "no"):
            return True
        if stopping and self.final:
            return True
        if self.strategy == "no":
            return False
        if self.strategy == "steps":
            return step // self.steps > last_step // self.steps
        if self.strategy == "time":
            return math.floor(elapsed / self.interval) > math.floor(last_elapsed / self.interval)
        raise ValueError(f"unknown save strategy {self.strategy!r}; valid: time, steps, no")


def should_stop(step: int, elapsed: float, max_steps: int | None, max_time: float | None) -> bool:
    return (max_steps is not None and step >= max_steps) or (max_time is not None and elapsed >= max_time)


def checkpoints(run_dir: Path) -> list[Path]:
    """Every `checkpoint-<step>` directory of a run, ordered by step (intact or not: see `verify`)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in run_dir.iterdir() if (m := _NAME.match(p.name)) and p.is_dir()]
    return [p for _, p in sorted(found)]


def latest(run_dir: Path) -> Path | None:
    """The newest checkpoint that looks complete (manifest.json or state.json present; not verified)."""
    found = [p for p in checkpoints(run_dir) if (p / manifest.MANIFEST).is_file() or (p / "state.json").is_file()]
    return found[-1] if found else None


def rng_state(extra: dict[str, torch.Generator] | None = None) -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
             "extra": {k: g.get_state() for k, g in (extra or {}).items()}}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict, extra: dict[str, torch.Generator] | None = None) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    for k, g in (extra or {}).items():
        if k in state["extra"]:
            g.set_state(state["extra"][k])


def save(run_dir: Path, step: int, state: dict, policy, optimizer=None, scheduler=None,
         generators: dict[str, torch.Generator] | None = None, rng: dict | None = None,
         extra: dict[str, object] | None = None) -> Path:
    """Write checkpoint-<step> atomically; `state` must hold elapsed_seconds (+ anything JSON-able).
    rng: RNG states to store (`rng_state(generators)` taken earlier); None: the current ones.
    extra: {file name: object} written with torch.save beside them (read back with `load_extra`).

    Refuses (NonFiniteError) when a trainable weight holds NaN/inf. A failed write raises
    pods.io.WriteError naming the file ("no space left on device: <run>/checkpoint-5/trainer.pt"),
    removes the partial temp dir (freeing its space) and leaves every earlier checkpoint as it was.
    """
    run_dir = Path(run_dir)
    final = run_dir / f"checkpoint-{step}"
    tmp = run_dir / f".tmp-checkpoint-{step}"
    bad = nonfinite_count(policy.trainable_parameters())
    if bad:
        raise NonFiniteError(f"refusing to save {final}: {bad} trainable weight tensor(s) hold NaN or inf; "
                             f"the earlier checkpoints are kept as they are")
    clean_stale(run_dir)
    try:
        with writing(final):
            tmp.mkdir(parents=True)
        with writing(final / "policy"):
            policy.save(tmp / "policy")
        _torch_save({"optimizer": optimizer.state_dict() if optimizer is not None else None,
                     "scheduler": scheduler.state_dict() if scheduler is not None else None},
                    tmp / "trainer.pt", final / "trainer.pt")
        _torch_save(rng if rng is not None else rng_state(generators), tmp / "rng.pt", final / "rng.pt")
        for name, obj in (extra or {}).items():
            _torch_save(obj, tmp / name, final / name)
        with writing(final / "state.json"):
            (tmp / "state.json").write_text(json.dumps({"step": step, **state, "saved_at": time.time()}, indent=1))
        with writing(final / manifest.MANIFEST):
            manifest.write(tmp)  # last: its presence means every file above is complete
            honour_umask(tmp)  # safetensors writes 0600: teammates could not evaluate or resume the run
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    with writing(final):
        if final.exists() and verify(final):  # damaged (a resume skipped it): keep it for inspection
            os.replace(final, _free_name(run_dir, f"{final.name}.damaged"))
        if final.exists():  # re-saving the same step (e.g. a resumed run's final save): replace it
            old = run_dir / f".old-checkpoint-{step}"
            os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
    return final


def _free_name(run_dir: Path, name: str) -> Path:
    path, i = run_dir / name, 1
    while path.exists():
        path, i = run_dir / f"{name}-{i}", i + 1
    return path


def _torch_save(obj, path: Path, name: Path) -> None:
    """torch.save through a Python file, so a failing disk surfaces as an OSError (WriteError naming `name`)."""
    with writing(name), open(path, "wb") as f:
        torch.save(obj, f)


def clean_stale(run_dir: Path) -> list[str]:
    """Clear what a crashed save left behind; returns one line per thing done (for the log).

    `.tmp-checkpoint-*` (a save cut short) is removed. `.old-checkpoint-<step>` (a re-save of that
    step cut short between its two renames) is the complete previous copy: it is renamed back when
    `checkpoint-<step>` is missing, removed otherwise.
    """
    run_dir, done = Path(run_dir), []
    if not run_dir.is_dir():
        return done
    for p in sorted(run_dir.glob(".tmp-checkpoint-*")):
        shutil.rmtree(p, ignore_errors=True)
        done.append(f"removed {p.name}, left by a save that did not finish")
    for p in sorted(run_dir.glob(".old-checkpoint-*")):
        final = run_dir / p.name.replace(".old-", "", 1)
        if final.exists():
            shutil.rmtree(p, ignore_errors=True)
        else:
            os.replace(p, final)
            done.append(f"restored {final.name} from {p.name}, left by a re-save that did not finish")
    return done


def load_extra(checkpoint: Path, name: str, default=None):
    """An `extra` object `save` wrote into `checkpoint` (tensors and plain values); `default` when absent."""
    path = Path(checkpoint) / name
    if not path.is_file():
        return default
    return torch.load(path, map_location="cpu", weights_only=True)


def read_state(checkpoint: Path) -> dict:
    return json.loads((Path(checkpoint) / "state.json").read_text())


def verify(checkpoint: Path) -> list[str]:
    """Problems that make `checkpoint` unusable ([] = intact): files differing from its manifest, or,
    for checkpoints written before manifests existed, a missing file or unreadable state.json."""
    checkpoint = Path(checkpoint)
    problems = manifest.check(checkpoint)
    if problems is None:  # no manifest: an older checkpoint (or its manifest was lost); resume also loads it
        problems = [f"{name} is missing" for name in ("state.json", "policy") if not (checkpoint / name).exists()]
        if not problems and not list((checkpoint / "policy").glob("*.safetensors")):
            problems.append("policy/ holds no *.safetensors weights")
    if not problems:
        try:
            step = read_state(checkpoint)["step"]
            if f"checkpoint-{step}" != checkpoint.name:
                problems.append(f"state.json says step {step}")
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            problems.append(f"state.json is unreadable ({e})")
    return problems


def warn_stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def intact(run_dir: Path, warn=warn_stderr) -> list[Path]:
    """The run's checkpoints that pass `verify`, by step; `warn` is called for each damaged one, and for each
    one without a manifest (used unverified)."""
    out = []
    for path in checkpoints(run_dir):
        problems = verify(path)
        if problems:
            warn(f"skipping damaged {path}: {'; '.join(problems)}")
        else:
            if not (path / manifest.MANIFEST).is_file():
                warn(_unverified(path))
            out.append(path)
    return out


def _unverified(path: Path) -> str:
    return (f"checkpoint {path} has no {manifest.MANIFEST} (lost, or written before manifests existed): its files "
            "cannot be checked against their sizes and checksums, so it is used unverified")


def _damaged(path: Path, problems: list[str], oldest: bool) -> str:
    older = "no older checkpoint" if oldest else "trying the next older checkpoint"
    return f"checkpoint {path} is damaged ({'; '.join(problems)}); it is left in place for inspection; {older}"


def _all_damaged(run_dir: Path, found: list[Path]) -> CheckpointError:
    return CheckpointError(
        f"every checkpoint of {run_dir} is damaged ({', '.join(p.name for p in found)}; see the warnings above), "
        "so there is nothing to resume from. They are left in place. To train this run from step 0 again, "
        f"move them out of {run_dir}; or start under another run_name=NAME")


def check_resumable(run_dir: Path, warn=warn_stderr) -> dict[Path, list[str]]:
    """Before any model loads: verify the checkpoints newest first up to the first intact one and return
    {path: problems} for `resume(verified=...)`; CheckpointError (each named in a warning) when every
    checkpoint fails `verify`, so a run with nothing to resume from stops in seconds."""
    found, verified = checkpoints(run_dir), {}
    for path in reversed(found):
        verified[path] = verify(path)
        if not verified[path]:
            return verified
    for path in reversed(found):
        warn(_damaged(path, verified[path], path == found[0]))
    if found:
        raise _all_damaged(run_dir, found)
    return verified


def resume(run_dir: Path, policy, optimizer=None, scheduler=None, generators=None,
           warn=warn_stderr, verified: dict[Path, list[str]] | None = None) -> tuple[Path | None, dict | None]:
    """Load the newest intact checkpoint: (its path, state.json), or (None, None) when the run has none.

    A damaged checkpoint (see `verify`; one without a manifest also when it fails to load) is
    named in a warning, left in place for inspection, and the next older one is tried. Raises
    CheckpointError when every checkpoint is damaged. `verified`: `check_resumable`'s results
    (not verified again).
    """
    found = checkpoints(run_dir)
    for path in reversed(found):
        problems = verified[path] if verified and path in verified else verify(path)
        if not problems:
            try:
                state = load(path, policy, optimizer, scheduler, generators)
                if not (path / manifest.MANIFEST).is_file():
                    warn(_unverified(path))
                return path, state
            except Exception as e:
                if (path / manifest.MANIFEST).is_file():
                    raise  # verified intact: the error is not damage, it must be seen as it is
                problems = [f"loading failed: {type(e).__name__}: {e}"]
        warn(_damaged(path, problems, path == found[0]))
    if found:
        raise _all_damaged(run_dir, found)
    return None, None


def load(checkpoint: Path, policy, optimizer=None, scheduler=None,
         generators: dict[str, torch.Generator] | None = None, restore_rng: bool = True) -> dict:
    """Restore policy weights, optimizer, scheduler and RNG states; return state.json."""
    checkpoint = Path(checkpoint)
    policy.load(checkpoint / "policy")
    trainer = torch.load(checkpoint / "trainer.pt", map_location="cpu", weights_only=False)
    if optimizer is not None and trainer["optimizer"] is not None:
        optimizer.load_state_dict(trainer["optimizer"])
    if scheduler is not None and trainer["scheduler"] is not None:
        scheduler.load_state_dict(trainer["scheduler"])
    if restore_rng:
        set_rng_state(torch.load(checkpoint / "rng.pt", map_location="cpu", weights_only=False), generators)
    return read_state(checkpoint)
