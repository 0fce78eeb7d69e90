"""`pods trl` (and scripts/train_trl.py): multi-GPU PODS / GRPO-GA with TRL's GRPOTrainer on accelerate
(DDP or DeepSpeed ZeRO-2); resumable.

    uv run pods trl preset=tiny-cpu                                   # CPU run, no download
    accelerate launch --config_file config/accelerate/zero2-8gpu.yaml scripts/train_trl.py \\
        preset=pods-qwen2.5-3b [key=value ...]                        # e.g. max_train_seconds=600
    accelerate launch ... -m pods.commands.trl preset=pods-qwen2.5-3b # the same from an installed wheel
    uv run pods trl --preset my/preset.yaml                           # a preset file of your own

A preset is a Hydra config in config/trl/ (`preset=<name>`), or any YAML file (`--preset PATH`), a
comment above every key (docs/multi-gpu.md); Hydra composes it: its `defaults:` list takes the keys of
other presets (its own folder first, then config/trl/) and `_self_` overrides them; the overrides are
Hydra's (key=value; a key the preset lacks is added, as `++key=value`). It names the algorithm (`pods`:
PODSTrainer keeps m of n per prompt; `grpo_ga`: GRPOGATrainer trains on all), the model, the
pods.data dataset and held-out split, the `rewards` registry functions, the time budget, the
evaluation and checkpoint intervals (seconds of training time), the schedule length and the TRL
config keyword arguments.

Rerunning the same command continues the run from its latest complete checkpoint (clock, PODS
round counter, metrics and evaluations continue; pods/integrations/trl/resume.py); a finished run
is left alone; other settings are refused with the differing keys; `overwrite=true` starts over.
Writes to the run directory (rank 0): `config.yaml` (the resolved preset), `metrics.jsonl` and
`eval_results.json` (pods/integrations/trl/runlog.py), `checkpoint-<step>/` (TRL), `finished.json`.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import sys
from pathlib import Path

from pods.cli import quiet_openmp, run_script, set_cpu_threads
from pods.config.files import CONFIG_DIR

quiet_openmp()  # before torch loads: idle OpenMP threads sleep (pods/cli.py, CPU threads)

from omegaconf import OmegaConf  # noqa: E402

from pods.commands import parser  # noqa: E402
from pods.errors import ConfigError  # noqa: E402

ALGORITHMS = ("pods", "grpo_ga")
REQUIRED = ("algorithm", "model", "dataset", "eval", "rewards", "accuracy_reward", "trl")
OPTIONAL = ("warmstart", "run_dir", "overwrite", "max_train_seconds", "eval_every_seconds", "save_every_seconds",
            "train_steps", "format_reward")


PRESETS = CONFIG_DIR / "trl"  # the presets, a Hydra config directory: preset=<file name without .yaml>


def preset_file(name: str | None, path: str | Path | None) -> Path:
    """The preset's file: `preset=<name>` (config/trl/<name>.yaml) or `--preset PATH`, exactly one of them."""
    if (name is None) == (path is None):
        raise ConfigError("name one preset: preset=<name> (" + ", ".join(sorted(p.stem for p in PRESETS.glob("*.yaml")))
                          + ") or --preset PATH")
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"preset {path} does not exist; presets live in config/trl/ (e.g. config/trl/tiny-cpu.yaml)")
        return path
    known = sorted(p.stem for p in PRESETS.glob("*.yaml"))
    if name not in known:
        close = difflib.get_close_matches(str(name), known, n=1)
        raise ConfigError(f"preset={name}: no config/trl/{name}.yaml" + (f" (did you mean preset={close[0]}?)" if close
                          else "") + f"; presets: {', '.join(known)}")
    return PRESETS / f"{name}.yaml"


def compose_preset(path: Path, overrides: list[str]):
    """The preset at `path` composed by Hydra (its defaults list: its folder, then config/trl/) with the overrides."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        raw = OmegaConf.load(path)
    except Exception as err:  # noqa: BLE001 - YAML syntax: OmegaConf/yaml raise several types
        raise ConfigError(f"preset {path} is not valid YAML: {err}") from None
    if "base" in raw:  # the hand-written inheritance Hydra's defaults list replaced
        raise ConfigError(f"preset {path}: `base: {raw.base}` is Hydra's defaults list now: write `defaults: "
                          f"[{Path(str(raw.base)).stem}, _self_]` (docs/multi-gpu.md)")
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception as err:  # noqa: BLE001 - Hydra's grammar errors: several types
        raise ConfigError(f"cannot parse the overrides {list(overrides)}: {str(err).splitlines()[0]}; "
                          "write key=value, e.g. max_train_seconds=600") from None
    # a plain key=value may also add a key the preset lacks (Hydra's ++); the checks below name unknown ones
    added = [f"++{o}" if p.key_or_group and not o.startswith(("+", "~")) else o for o, p in zip(overrides, parsed)]
    searchpath = f"hydra.searchpath=['file://{PRESETS.resolve()}']"
    try:
        with initialize_config_dir(config_dir=str(path.resolve().parent), version_base=None):
            return compose(config_name=path.stem, overrides=[*added, searchpath])
    except Exception as err:  # noqa: BLE001 - Hydra's composition errors: a missing default, a bad override
        raise ConfigError(f"preset {path}: cannot compose it: {str(err).splitlines()[0]}") from None


def load_preset(path: str | Path, overrides: list[str] = ()) -> dict:
    """The preset merged with Hydra overrides, as plain containers; checks the top-level keys."""
    cfg = compose_preset(Path(path), list(overrides))
    cfg = OmegaConf.to_container(cfg, resolve=True)
    for key, value in cfg.get("trl", {}).items():  # YAML reads a bare `no` as false: trl.eval_strategy=no
        if key.endswith("_strategy") and value is False:
            cfg["trl"][key] = "no"
    if cfg.get("algorithm") not in ALGORITHMS:
        raise ConfigError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {cfg.get('algorithm')!r}")
    missing = [k for k in REQUIRED if k not in cfg]
    unknown = sorted(set(cfg) - set(REQUIRED) - set(OPTIONAL))
    if missing or unknown:
        raise ConfigError(f"preset {path}: missing keys {missing}, unknown keys {unknown}; valid top-level keys: "
                          f"{', '.join(REQUIRED + OPTIONAL)}")
    from pods import rewards

    problems = rewards.entry_problems(cfg["rewards"], where="rewards")  # {name, weight, unless} items
    if problems:
        raise ConfigError(f"preset {path}: " + "; ".join(problems))
    names = [r["name"] for r in cfg["rewards"]]

    for name in names:  # registry names, or your own package.module:function (imported and probed here)
        rewards.probe(name)
    for key in ("accuracy_reward", "format_reward"):
        if cfg.get(key) is not None and cfg[key] not in names:
            raise ConfigError(f"{key} {cfg[key]!r} is not among the rewards {names}")
    if cfg["algorithm"] == "grpo_ga" and any(k.startswith("pods_") for k in cfg["trl"]):
        raise ConfigError("algorithm grpo_ga trains on every rollout: remove the trl.pods_* keys")
    check_trl_keys(cfg["trl"], cfg["algorithm"], path)
    if cfg["algorithm"] == "pods":
        check_pods_settings(cfg["trl"], path, cfg.get("train_steps"))
    steps = cfg.get("train_steps")
    if steps is not None and "max_steps" in cfg["trl"]:
        raise ConfigError("give either train_steps or trl.max_steps, not both")
    if steps is not None and steps not in ("epoch", "authors_epoch") and not (isinstance(steps, int) and steps > 0):
        raise ConfigError(f"train_steps must be epoch, authors_epoch, a positive integer or null, got {steps!r}")
    return cfg


def check_trl_keys(trl_kwargs: dict, algorithm: str, preset) -> None:
    """ConfigError naming every `trl.<key>` that the algorithm's config class (TRL's GRPOConfig plus the
    pods fields) does not have, each with the closest field name."""
    import trl

    from pods.integrations.trl import GRPOGAConfig, PODSConfig  # first: on a CPU, Triton interpreted (TRL's kernel)

    cls = PODSConfig if algorithm == "pods" else GRPOGAConfig
    valid = sorted(f.name for f in dataclasses.fields(cls) if f.init)
    unknown = []
    for key in sorted(set(trl_kwargs) - set(valid)):
        close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
        unknown.append(f"trl.{key}" + (f" (did you mean trl.{close[0]}?)" if close else ""))
    if unknown:
        raise ConfigError(f"preset {preset}: unknown setting(s) {', '.join(unknown)}: {cls.__name__} (TRL {trl.__version__}'s "
                          "GRPOConfig plus pods_m, pods_rule, prompt_repeats and the lab's pods_* keys) has no such "
                          "field; fix the name or remove it (TRL's fields: https://huggingface.co/docs/trl/grpo_trainer)")


def check_pods_settings(trl_kwargs: dict, preset, train_steps=None) -> None:
    """ConfigError (exit 2, before any model loads) for the PODS settings of a preset: each lab key checked by
    train.py's schema walker (its sentences, the key in TRL's spelling), then PODSConfig's own checks (the lab's
    combinations, m and the batch shape) on a config built from the preset alone."""
    import warnings

    import torch

    from pods.config.aliases import CONFIG_ALIASES
    from pods.config.fields import declared, field_problems
    from pods.config.schema import TrainConfig
    from pods.integrations.trl import PODSConfig

    fields = {key: (f, annotation) for key, f, annotation in declared(TrainConfig)}
    problems = []
    for name, value in trl_kwargs.items():
        if name.startswith("pods_") and name in CONFIG_ALIASES:
            key = CONFIG_ALIASES[name].target
            problems += [p.replace(key, f"trl.{name}") for p in field_problems(key, value, *fields[key])]
    if not problems:
        kwargs = {**trl_kwargs, "output_dir": "unused", "report_to": []}
        if not torch.cuda.is_available():
            kwargs.update(use_cpu=True, bf16=False, use_vllm=False)
        if isinstance(train_steps, int) and "max_steps" not in trl_kwargs:
            kwargs["max_steps"] = train_steps
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the real config, built later, warns
                PODSConfig(**kwargs)
        except ValueError as err:
            problems.append(str(err))
    if problems:
        raise ConfigError(f"preset {preset}: " + "; ".join(problems))


def as_grpo_ga(cfg: dict) -> dict:
    """The GRPO-GA run matching a PODS preset: same prompts, rollouts per step and micro-batch, all trained."""
    from pods.integrations.trl import grpo_ga_kwargs

    if cfg["algorithm"] != "pods":
        raise ConfigError("--as-grpo-ga converts a PODS preset (algorithm: pods)")
    return {**cfg, "algorithm": "grpo_ga", "trl": grpo_ga_kwargs(cfg["trl"])}


def run_name(cfg: dict) -> str:
    t = cfg["trl"]
    n = t["num_generations"]
    return (f"trl-{cfg['algorithm']}-n{n}-m{t.get('pods_m', n)}-ga{t.get('gradient_accumulation_steps', 1)}"
            f"-s{t.get('seed', 42)}{'-vllm' if t.get('use_vllm') else ''}")


def schedule_kwargs(train_steps, num_prompts: int, processes: int, accumulation: int) -> dict:
    """TRL kwargs sizing the learning-rate schedule (and the step limit) from the preset's `train_steps`.

    epoch: one pass over the training prompts (TRL's own sizing from the data loader's length);
    authors_epoch: one epoch of the authors' fork, whose loader drew a fresh batch at every
    accumulation step but generated from the first only (open-r1/src/open_r1/grpo_trainer.py:721,
    :771-777, :911-918): floor(ceil(prompts / processes) / gradient_accumulation_steps) steps
    (transformers then floored the per-epoch update count); an integer: that many steps.
    """
    if train_steps is None:
        return {}
    if train_steps == "epoch":
        return {"max_steps": -1, "num_train_epochs": 1}
    if train_steps == "authors_epoch":
        return {"max_steps": max(math.ceil(num_prompts / processes) // accumulation, 1)}
    return {"max_steps": int(train_steps)}


def _dataset(cfg: dict, tok, split: str, path, limit):
    """A datasets.Dataset with `prompt` (rendered text) and `answer`, plus meta columns all rows share."""
    from datasets import Dataset

    from pods import data

    d = cfg["dataset"]
    examples = data.load_dataset(d["name"], split=split, path=path, limit=limit, **(d.get("options") or {}))
    kept, _, _ = data.render_prompts(examples, tok, style=d.get("prompt_style", "instruct"), shots=d.get("shots"),
                                     system_prompt=d.get("system_prompt"), max_prompt_tokens=d.get("max_prompt_tokens"))
    columns = {"prompt": [data.prompt_text(e, tok, d.get("prompt_style", "instruct"), d.get("system_prompt"),
                                           d.get("shots"))
                          for e in kept],
               "answer": [e.answer for e in kept]}
    shared = set.intersection(*(set(e.meta) for e in kept)) if kept else set()
    for key in sorted(shared - set(columns)):
        columns[key] = [e.meta[key] for e in kept]
    return Dataset.from_dict(columns)


def _model(cfg: dict):
    """(model or path for TRL, tokenizer)."""
    from transformers import AutoTokenizer

    if cfg["model"] == "tiny":  # random-initialised, built in code
        from pods.backends.tiny import byte_tokenizer, tiny_causal_lm

        tok = byte_tokenizer()
        return tiny_causal_lm(tok, seed=cfg["trl"].get("seed", 0)), tok
    path = cfg["model"]
    if path == "warmstart":  # the CPU demo's supervised warm start (cached; built on first use)
        from pods.run.warmstart import ensure_warmstart

        path = str(ensure_warmstart(cfg.get("warmstart") or {}))
    return path, AutoTokenizer.from_pretrained(path)  # TRL loads it (dtype etc. from trl.model_init_kwargs)


def build(cfg: dict, run_dir: Path, plan, callbacks=()):
    """The trainer for a loaded preset, its run directory prepared by `plan` (rank 0)."""
    import torch

    from pods.integrations.trl import GRPOGAConfig, GRPOGATrainer, PODSConfig, PODSTrainer, trl_reward_funcs
    from pods.integrations.trl.resume import apply_plan
    from pods.integrations.trl.runlog import RunLog

    model, tok = _model(cfg)
    d, e = cfg["dataset"], cfg["eval"]
    train = _dataset(cfg, tok, d.get("split", "train"), d.get("path"), d.get("limit"))
    held_out = _dataset(cfg, tok, e.get("split", "test"), e.get("path") or d.get("path"), e.get("limit"))
    funcs, weights = trl_reward_funcs(cfg["rewards"])
    kwargs = dict(cfg["trl"], output_dir=str(run_dir), reward_weights=weights)
    processes = int(os.environ.get("WORLD_SIZE", "1"))
    kwargs.update(schedule_kwargs(cfg.get("train_steps"), len(train), processes,
                                  kwargs.get("gradient_accumulation_steps", 1)))
    if plan.mode == "resume":
        kwargs["eval_on_start"] = False  # the step-0 evaluation is already in the logs
    if not torch.cuda.is_available():
        changed = {k: v for k, v in dict(use_cpu=True, bf16=False, use_vllm=False).items() if kwargs.get(k, v) != v}
        if changed:
            print(f"no CUDA: running on CPU with {changed} (preset values overridden)", file=sys.stderr)
        kwargs.update(use_cpu=True, bf16=False, use_vllm=False)
    args = (PODSConfig if cfg["algorithm"] == "pods" else GRPOGAConfig)(**kwargs)
    trainer_cls = PODSTrainer if cfg["algorithm"] == "pods" else GRPOGATrainer
    log = RunLog(run_dir, d["name"], cfg["accuracy_reward"], cfg.get("format_reward"), cfg.get("max_train_seconds"),
                 cfg.get("eval_every_seconds"), cfg.get("save_every_seconds"))
    trainer = trainer_cls(model=model, reward_funcs=funcs, args=args, train_dataset=train, eval_dataset=held_out,
                          processing_class=tok, callbacks=[log, *callbacks])
    if trainer.accelerator.num_processes != processes:
        raise RuntimeError(f"WORLD_SIZE={processes} but accelerate runs {trainer.accelerator.num_processes} processes")
    trainer.accelerator.wait_for_everyone()  # every process has planned before rank 0 changes files
    if trainer.accelerator.is_main_process:
        apply_plan(run_dir, plan, cfg)
    trainer.accelerator.wait_for_everyone()
    return trainer


def train(argv: list[str] | None = None, prog: str = "train_trl.py", *, threads: bool = False):
    """Run (or resume) a preset; returns (trainer or None when already finished, run_dir). threads: apply
    PODS_THREADS (pods.cli.set_cpu_threads) once the arguments are read, as the command line does."""
    p = parser(prog, __doc__, usage="%(prog)s [options] preset=<name> [key=value ...]",
               epilog="Presets: config/trl/ (a comment above every key); docs/multi-gpu.md.")
    p.add_argument("--preset", help="a preset file of your own (YAML); config/trl/'s by name: preset=<name>")
    p.add_argument("--as-grpo-ga", action="store_true", help="run the GRPO-GA comparison of a PODS preset")
    p.add_argument("overrides", nargs="*", help="preset=<name> of config/trl/, then Hydra overrides, e.g. "
                   "max_train_seconds=600")
    a = p.parse_args(argv)
    if threads:
        set_cpu_threads()
    from pods.integrations.trl.resume import check_ledger, mark_finished, plan_run  # TRL (CPU: Triton interpreted)

    names = [o.split("=", 1)[1] for o in a.overrides if o.startswith("preset=")]
    if len(names) > 1:
        raise ConfigError(f"one preset=<name>, got {len(names)}")
    path = preset_file(names[0] if names else None, a.preset)
    cfg = load_preset(path, [o for o in a.overrides if not o.startswith("preset=")])
    if a.as_grpo_ga:
        cfg = as_grpo_ga(cfg)
    run_dir = Path(cfg.get("run_dir") or Path("checkpoints") / run_name(cfg))
    plan = plan_run(run_dir, cfg)  # every process reads the same files before any is changed
    check_ledger(run_dir, plan, cfg)  # a damaged or another run's rollout ledger: refused before a model loads
    if plan.note and int(os.environ.get("RANK", "0")) == 0:
        print(f"{run_dir}: {plan.note}", file=sys.stderr)
    if plan.mode == "finished":
        return None, run_dir
    trainer = build(cfg, run_dir, plan)
    trainer.train(resume_from_checkpoint=str(plan.checkpoint) if plan.checkpoint else None)
    if trainer.accelerator.is_main_process:
        log = next(cb for cb in trainer.callback_handler.callbacks if type(cb).__name__ == "RunLog")
        mark_finished(run_dir, trainer.state.global_step, log.elapsed)
        print(f"done: {trainer.state.global_step} steps; metrics in {run_dir / 'metrics.jsonl'}")
    return trainer, run_dir


def main(argv: list[str] | None = None, prog: str = "train_trl.py") -> int:
    """`train` for the command line: a preset or data problem is one message and exit code 2 (pods.cli)."""
    def run(args):
        train(args, prog, threads=True)  # PODS_THREADS, else as pods.cli.cpu_threads chooses

    return run_script(run, argv, program=prog, interrupted="rerun the same command to continue from the latest "
                      "complete checkpoint")


if __name__ == "__main__":  # accelerate launch -m pods.commands.trl ... (one process per GPU)
    sys.exit(main())
