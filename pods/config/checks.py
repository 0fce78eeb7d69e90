"""The settings of train.py and evaluate-run.py beyond pods.config's checks: ranges, paths, open sections.

    problems = train_problems(cfg)      # after the type checks: seed, top_p, betas, limit, run_name, ...
    validate_eval(eval_cfg)             # evaluate-run.py (config/evaluate.yaml): ConfigError listing every problem

train.py calls `train_problems` through pods.config.validate; evaluate-run.py calls `validate_eval`
before `pods.evaluation.evaluate_run`. Both run before any model loads.
"""

from __future__ import annotations

import os
from pathlib import Path

from omegaconf import DictConfig, ListConfig, OmegaConf

from pods.config.fields import SEED_MAX, finite, integer, number, output_path, schema_problems, value_of
from pods.errors import ConfigError


def _text(key: str, value, *, none_ok: bool = True) -> list[str]:
    if (value is None and none_ok) or (isinstance(value, str) and value != ""):
        return []
    return [f"{key} must be a non-empty string{' or null' if none_ok else ''}, got {value!r}"]


def loose_problems(cfg) -> list[str]:
    """The fields the schema types `Any` (a value or null); safe on any config, so pods.config.validate
    reports them together with the type problems of `schema_problems`."""
    get = lambda key: OmegaConf.select(cfg, key, default=None, throw_on_missing=False)  # noqa: E731
    p = integer("rl.max_steps", get("rl.max_steps"), low=1, none_ok=True)
    p += number("rl.max_time", get("rl.max_time"), low=0, low_open=True, none_ok=True, why="seconds of training time")
    p += integer("dataset.limit", get("dataset.limit"), low=1, none_ok=True, why="null keeps every example")
    for key in ("run_name", "dataset.path", "dataset.system_prompt", "dataset.accuracy_reward", "logging.entity"):
        value = get(key)
        p += [] if key == "dataset.system_prompt" and value == "" else _text(key, value)
    return p


def train_problems(cfg) -> list[str]:
    """Ranges and combinations of config/train.yaml beyond the types (run once the types are right)."""
    rl, optim, model, data = cfg.rl, cfg.optim, cfg.model, cfg.dataset
    p = integer("seed", cfg.seed, low=0, high=SEED_MAX) + integer("model.tiny.seed", model.tiny.seed, low=0,
                                                                  high=SEED_MAX)
    p += number("rl.top_p", rl.top_p, low=0, low_open=True, high=1, why="1 samples from the whole distribution")
    p += number("optim.weight_decay", optim.weight_decay, low=0)
    betas = list(optim.betas)
    if len(betas) != 2 or not all(finite(b) and 0 <= b < 1 for b in betas):
        p.append(f"optim.betas must be two numbers in [0, 1) (Adam's beta1, beta2), got {betas}; "
                 "e.g. optim.betas=[0.9,0.99]")
    p += number("model.lora.dropout", model.lora.dropout, low=0, high=1, high_open=True)
    if model.lora.rank > 0:
        p += integer("model.lora.alpha", model.lora.alpha, low=1)
    if model.name == "tiny":
        t = model.tiny
        for key in ("hidden", "layers", "heads", "kv_heads"):
            p += integer(f"model.tiny.{key}", t[key], low=1)
        if t.heads >= 1 and t.kv_heads >= 1 and (t.hidden % t.heads or t.heads % t.kv_heads):
            p.append(f"model.tiny: hidden={t.hidden} must be a multiple of heads={t.heads}, and heads a multiple "
                     f"of kv_heads={t.kv_heads}")
    for i, item in enumerate(data.rewards):
        if isinstance(item, (dict, DictConfig)) and "weight" in item:
            p += number(f"dataset.rewards[{i}].weight", item["weight"])
    return p + model_problems(model.name) + run_dir_problems(cfg) + open_section_problems(cfg)


def model_problems(name: str) -> list[str]:
    """model.name is "tiny", a local model directory (with config.json) or a hub id (see also `check_offline`;
    a hub id that does not exist online is only found when loading: `load_error`)."""
    if name == "tiny":
        return []
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            return [f"model.name {name}: a local model is a directory holding config.json (save_pretrained's "
                    "output); this one has none"]
        return []
    if name.startswith(("/", ".", "~")) or name.count("/") > 1:
        return [f"model.name {name!r}: no such directory, and not a hub id (like Qwen/Qwen2.5-3B-Instruct); "
                "point model.name at a local model directory or a hub id"]
    return []


def check_offline(name: str) -> None:
    """Offline (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE), a hub id must be in the local cache: ConfigError
    otherwise. Called right before a model loads (pods.config.validate stays independent of the cache)."""
    offline = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    if name == "tiny" or Path(name).expanduser().exists():
        return
    if any(os.environ.get(v, "").lower() in ("1", "true", "yes", "on") for v in offline):
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(name, "config.json"), str):
            raise ConfigError(f"model.name {name}: offline (HF_HUB_OFFLINE) and not in the local cache; download "
                              f"it first (`hf download {name}`) or point model.name at a local model directory")


def load_error(name: str, err: Exception) -> ConfigError:
    """The ConfigError for a model that transformers / huggingface_hub could not load (an unknown hub id,
    no network, files missing from a local directory, a config.json transformers does not know): OSError or
    ValueError from transformers / huggingface_hub."""
    first = (str(err).strip().splitlines() or [type(err).__name__])[0][:400]
    return ConfigError(f"model.name {name} could not be loaded ({type(err).__name__}: {first}); check the name "
                       "(a hub id such as Qwen/Qwen2.5-3B-Instruct, or a local model directory) and the network")


HELDOUT = {  # the `evaluation` section (pods.evaluation.heldout): key -> check
    "size": lambda k, v: integer(k, v, low=1), "draws": lambda k, v: integer(k, v, low=1),
    "temperature": lambda k, v: number(k, v, low=0), "max_tokens": lambda k, v: integer(k, v, low=1),
    "seed": lambda k, v: integer(k, v, low=0, high=SEED_MAX), "batch_size": lambda k, v: integer(k, v, low=1),
    "greedy": lambda k, v: [] if isinstance(v, bool) else [f"{k} must be true or false, got {v!r}"],
}


def open_section_problems(cfg) -> list[str]:
    """`warmstart` (pods.run.warmstart.WarmStartSettings) and `evaluation` (pods.evaluation.heldout) when they are set."""
    p = []
    warm = cfg.get("warmstart")
    if warm is not None and not isinstance(warm, (dict, DictConfig)):
        p.append(f"warmstart must be a section of keys or null, got {warm!r}")
    elif warm is not None and warm.get("enabled", True):
        from pods.run.warmstart import WarmStartSettings, settings_from

        found = schema_problems(warm, WarmStartSettings, "warmstart.", partial=True)
        if not found:
            try:
                settings_from(warm)
            except (ValueError, TypeError) as err:
                found.append(str(err))
        p += found
    ev = cfg.get("evaluation")
    if ev is not None and not isinstance(ev, (dict, DictConfig)):
        p.append(f"evaluation must be a section of keys or null, got {ev!r}")
    elif ev is not None:
        unknown = sorted(set(ev) - set(HELDOUT))
        if unknown:
            p.append(f"unknown key(s) evaluation.{', evaluation.'.join(unknown)}; valid: {', '.join(HELDOUT)}")
        for key in set(ev) & set(HELDOUT):
            p += HELDOUT[key](f"evaluation.{key}", ev[key])
    return p


def run_dir_problems(cfg) -> list[str]:
    """output_root must be (or become) a writable directory; run_name a name inside it (a string: loose_problems)."""
    root = Path(cfg.output_root)
    name = cfg.run_name
    if name is not None:
        parts = Path(name).parts
        if Path(name).is_absolute() or ".." in parts or not parts or name.strip() != name:
            return [f"run_name {name!r} must be a name inside output_root (no absolute path, no '..', no "
                    f"surrounding spaces): the run would land outside {root}; set output_root=DIR to choose "
                    "the parent directory and run_name=NAME for the run"]
    p = output_path("output_root", root)
    if not p and name is not None and (root / name).exists() and not (root / name).is_dir():
        p.append(f"run directory {root / name} is a file: choose another run_name")
    return p


# ----------------------------------------------------------------------------- evaluate-run.py


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


def eval_problems(cfg) -> list[str]:
    """The settings of config/evaluate.yaml (keys this module does not know are left to their owners)."""
    if OmegaConf.is_missing(cfg, "run_dir") or cfg.get("run_dir") in (None, ""):
        return ["run_dir is required: the run directory written by train.py, e.g. "
                "`evaluate-run.py run_dir=checkpoints/<run>`"]
    p = []
    run_dir = Path(str(cfg.run_dir))
    if not run_dir.is_dir():
        p.append(f"run_dir {run_dir} is not a directory; give the run directory written by train.py "
                 "(checkpoints/<run_name>)")
    elif not (run_dir / "config.yaml").is_file():
        p.append(f"{run_dir}: no config.yaml - not a run directory written by train.py")
    checks = {
        "repeats": lambda v: integer("repeats", v, low=1),
        "temperature": lambda v: number("temperature", v, low=0, none_ok=True,
                                        why="0 is greedy decoding, null the run's own"),
        "top_p": lambda v: number("top_p", v, low=0, low_open=True, high=1, none_ok=True),
        "max_tokens": lambda v: integer("max_tokens", v, low=1, none_ok=True),
        "seed": lambda v: integer("seed", v, low=0, high=SEED_MAX),
        "batch_size": lambda v: integer("batch_size", v, low=1),
        "examples": lambda v: integer("examples", v, low=0),
        "max_prompt_tokens": lambda v: integer("max_prompt_tokens", v, low=1, none_ok=True, why="null: the run's own"),
        "paper_grader": lambda v: [] if v in (None, "paper_answer", "paper_answer_decimal") else
        [f"paper_grader must be paper_answer, paper_answer_decimal or null, got {v!r}"],
        "base": lambda v: [] if isinstance(v, bool) else [f"base must be true or false, got {v!r}"],
        "output": lambda v: [] if v is None or (isinstance(v, str) and v) else
        [f"output must be a file path or null, got {v!r}"],
        "backend": lambda v: [] if v is None or isinstance(v, (dict, DictConfig)) else
        [f"backend must be a mapping such as {{name: vllm}} or null, got {v!r}"],
        "datasets": lambda v: [] if v is None or isinstance(v, (list, ListConfig)) else
        [f"datasets must be a list of {{name: ...}} entries or null, got {v!r}"],
    }
    for key, check in checks.items():
        if key in cfg:
            p += check(value_of(cfg, key))
    out = cfg.get("output")
    if isinstance(out, str) and out and Path(out).is_dir():
        p.append(f"output {out} is a directory; give a file path such as {Path(out) / 'eval_results.json'}")
    entries = cfg.get("datasets")
    for i, entry in enumerate(entries if isinstance(entries, (list, ListConfig)) else []):
        if not isinstance(entry, (dict, DictConfig)) or not entry.get("name"):
            p.append(f"datasets[{i}] must be a mapping with at least a name, e.g. {{name: gsm8k}}; got {entry!r}")
        else:
            p += integer(f"datasets[{i}].limit", entry.get("limit"), low=1, none_ok=True)
    return p


def validate_eval(cfg) -> None:
    """Raise ConfigError listing every problem of an evaluate-run.py config."""
    problems = eval_problems(cfg)
    if problems:
        raise ConfigError("invalid evaluation settings:\n  - " + "\n  - ".join(problems))
