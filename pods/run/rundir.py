"""Is this run directory the same run? `check_run_dir(cfg, path)` before train.py writes anything.

    from pods.run.rundir import check_run_dir, lock_run_dir
    check_run_dir(cfg, Path("checkpoints/my-run"))   # ConfigError when it holds a different run
    with lock_run_dir(Path("checkpoints/my-run")): ...  # pods.io.LockedError while another process has it

Refused, with the changed keys and nothing touched: settings other than the run's (the schema's resume_safe
keys, such as the length, logging and saving, may change), continuing a run that saved nothing, a new length for
a schedule sized by it. One process at a time holds `<run_dir>/.lock` (pods.io.exclusive_lock); docs/long-runs.md.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from pods.config import read_run_config, to_container
from pods.config.fields import declared
from pods.config.schema import TrainConfig
from pods.errors import ConfigError
from pods.io import exclusive_lock
from pods.run.checkpoint import latest
from pods.run.metrics import read_metrics

RUN_NAME_IRRELEVANT = tuple(key for key, f, _ in declared(TrainConfig)  # may change between resumes
                            if f.metadata.get("resume_safe"))


ASKED = "asked"  # config.yaml: the settings you gave that the start-up step resolved (pods.run.prepare.record)
LOCK_FILE = ".lock"  # in the run directory while a process writes it (removed when it ends)


def lock_run_dir(path: Path):
    """Context manager: the run directory `path` (existing) is this process's until the block ends."""
    return exclusive_lock(path / LOCK_FILE, f"run directory {path}",
                          "two processes writing one run directory would mix their files: wait for that one to "
                          "finish (or stop it), or train this one under another run_name=NAME")


def differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two plain config dicts (ignoring RUN_NAME_IRRELEVANT)."""
    out = []
    for key in sorted(set(old) | set(new)):
        dotted = f"{prefix}{key}"
        if dotted in RUN_NAME_IRRELEVANT:
            continue
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, dotted + ".")
        elif a != b:
            out.append(f"{dotted}: {a!r} -> {b!r}")
    return out


def _comparable(cfg: dict) -> dict:
    """A run's config for `check_run_dir`: a warm start's model.name (its cache dir, derived from the
    compared `warmstart` section) counts by its content hash (the dir name), not its absolute path; the
    `asked` record of what it was resolved from is not compared (it follows from the compared keys)."""
    cfg = {k: v for k, v in cfg.items() if k != ASKED}
    warm = cfg.get("warmstart")
    if isinstance(warm, dict) and warm.get("enabled", True) and isinstance(cfg.get("model"), dict):
        cfg = {**cfg, "model": {**cfg["model"], "name": Path(str(cfg["model"].get("name"))).name}}
    return cfg


def check_run_dir(cfg, path: Path) -> None:
    """Raise ConfigError if `path` already holds a different run's config, or (with resume=true) a run
    that saved nothing (rl.save_strategy=no, rl.save_final=false) and so cannot be continued."""
    saved = path / "config.yaml"
    if not saved.exists():
        return
    old = OmegaConf.to_container(read_run_config(saved), resolve=True)
    diff = differences(_comparable(old), _comparable(to_container(cfg)))
    if diff:
        raise ConfigError(
            f"{path} already holds a different run (changed: {'; '.join(diff[:8])}); nothing in it was touched. "
            f"To continue that run, rerun it with its own settings (they are in {saved}); to train this "
            f"configuration, choose another run_name=NAME or output_root=DIR."
        )
    rl = cfg.rl
    rows = read_metrics(path)
    if cfg.resume and rl.save_strategy == "no" and not rl.save_final and rows and latest(path) is None:
        raise ConfigError(
            f"{path} holds {len(rows)} logged steps of a run that saved no checkpoint (rl.save_strategy=no, "
            "rl.save_final=false), so it cannot be continued. Choose another run_name=NAME, or set "
            "resume=false to train it again from step 0 (its metrics.jsonl is kept as metrics.restarted-<time>.jsonl)."
        )
    if cfg.optim.scheduler != "constant":  # its curve is sized by the run length (pods.core.schedule)
        new = to_container(cfg)["rl"]
        moved = [f"rl.{k}: {old['rl'].get(k)!r} -> {new[k]!r}" for k in ("max_steps", "max_time")
                 if old.get("rl", {}).get(k) != new[k]]
        if moved:
            raise ConfigError(f"{path} was started with optim.scheduler={cfg.optim.scheduler} sized by its run "
                              f"length; changing it ({'; '.join(moved)}) would bend the schedule mid-run. Restore "
                              "the run's length or start a new run (run_name=NAME)")
