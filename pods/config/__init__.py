"""The training config: what a run is called, where it goes, which algorithm it runs.

    from pods import config
    config.algorithm(cfg)          # "pods" (m < n) | "grpo" (m == n) | "grpo_ga" (explicit)
    config.run_dir(cfg)            # Path("<output_root>/<run_name>"), the name derived when run_name is null
    config.read_run_config(path)   # a run directory's config.yaml, or a ConfigError naming it

The config is config/train.yaml composed by Hydra. Its schema (every key, its type and its comment)
is `pods.config.schema`, its start-up checks `pods.config.checks`, TRL's names for its keys
`pods.config.aliases`. Nothing here loads a model or touches the network.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from pods.errors import ConfigError


def to_container(cfg) -> dict:
    """A plain dict of a (resolved) DictConfig, or of a mapping."""
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)


def algorithm(cfg) -> str:
    """The algorithm the run uses: pods (m < n), grpo (m == n) or grpo_ga (explicit)."""
    alg = cfg.rl.algorithm
    if alg == "auto":
        return "pods" if cfg.rl.m < cfg.rl.n else "grpo"
    return alg


def default_run_name(cfg) -> str:
    """e.g. `gsm8k-qwen2.5-3b-instruct-pods-max_variance-n64-m16-seed0`."""
    alg = algorithm(cfg)
    parts = [cfg.dataset.name, cfg.model.short_name, alg]
    if alg == "pods":
        parts.append(cfg.rl.rule)
    parts += [f"n{cfg.rl.n}", f"m{cfg.rl.m}"]
    if cfg.rl.prompts_per_step != 1:
        parts.append(f"b{cfg.rl.prompts_per_step}")
    if cfg.rl.beta:
        parts.append(f"beta{cfg.rl.beta:g}")
    parts.append(f"seed{cfg.seed}")
    return "-".join(str(p).replace("/", "_") for p in parts)


def run_dir(cfg) -> Path:
    return Path(cfg.output_root) / (cfg.run_name or default_run_name(cfg))


def read_run_config(path: Path):
    """A run directory's config.yaml (written by train.py), or a ConfigError naming it when it cannot be read."""
    try:
        cfg = OmegaConf.load(path)
    except Exception as err:  # noqa: BLE001 - YAML syntax or I/O: OmegaConf/yaml raise several types
        raise ConfigError(f"{path}: cannot be read as YAML ({type(err).__name__}: {str(err).splitlines()[0]}); it "
                          "records the run train.py started there: restore it, or use another run directory "
                          "(run_name=NAME)") from None
    missing = [k for k in ("dataset.name", "dataset.rewards", "backend.name", "model.name", "rl.n")
               if OmegaConf.select(cfg, k, default=None) is None] if isinstance(cfg, DictConfig) else ["every key"]
    if missing:
        raise ConfigError(f"{path}: lacks {', '.join(missing)}; not a config.yaml written by train.py: restore it, "
                          "or use another run directory (run_name=NAME)")
    return cfg
