"""Held-out accuracy before and after RL, on the same problems (the CPU demo prints it; train.py calls it).

    final_heldout(run_dir)   # {"base": {...}, "checkpoint-500": {...}}; None when the run's `evaluation` is null

Reads the run config's `evaluation` section (HeldoutConfig) and measures sampled pass@1 (mean over
`draws` samples per problem) and greedy accuracy (with `format_reward`: also the format rate of both) on the first
`size` test problems of the run's dataset, with the run's own backend and verifier (pods.evaluation samples and scores), for the run's
base model (before RL: the warm-started model in the demo) and its latest complete checkpoint, then
prints one line with both. Results go to `<run_dir>/heldout.json` with their settings, so a rerun
measures only what is missing; the run directory is held (pods.run.rundir.lock_run_dir) meanwhile.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from omegaconf import OmegaConf

from pods import backends
from pods.backends.base import Sampling
from pods.cli import progress
from pods.config.schema import HeldoutConfig
from pods.evaluation import complete_checkpoints, eval_datasets, prepare_dataset, sample_answers, score
from pods.io import atomic_write_json
from pods.run.rundir import lock_run_dir

HELDOUT_FILE = "heldout.json"  # {"settings": {...}, "results": {"base" | "checkpoint-<step>": {metric: value}}}


def heldout_problems(tokenizer, run_cfg, ev: HeldoutConfig) -> tuple:
    """The first `ev.size` test problems of the run's dataset, prepared for `heldout_accuracy`
    (pods.evaluation.prepare_dataset's tuple: prompts, answers, columns, answer function, ...)."""
    entry = {"name": run_cfg.dataset.name, "limit": ev.size, "format_reward": ev.format_reward}
    ds = eval_datasets({"datasets": [entry]}, run_cfg)[0]
    return prepare_dataset(ds, tokenizer)


def heldout_accuracy(generator, problems: tuple, ev: HeldoutConfig, max_tokens: int, bar=None) -> dict[str, float]:
    """Held-out accuracy of the current policy on `problems` (heldout_problems): sampled pass@1 = mean
    accuracy over `ev.draws` samples per problem, plus greedy accuracy when `ev.greedy`; with `ev.format_reward`
    the format rates too (`sampled_format`, `greedy_format`: share of completions it scores > 0); `problems`: how
    many there were. `bar`: a progress bar advanced by each answered prompt."""
    prompts, answers, cols, answer_fn, format_fn, _ = problems

    def measured(temperature: float, seed: int) -> dict[str, float]:
        s = Sampling(max_tokens=max_tokens, temperature=temperature, seed=seed)
        texts, lens = sample_answers(generator, prompts, s, batch_size=ev.batch_size, bar=bar)
        return score(texts, lens, answers, answer_fn=answer_fn, format_fn=format_fn, cols=cols)[0]

    draws = [measured(ev.temperature, ev.seed + 1000 * r) for r in range(ev.draws)]
    out = {"sampled_acc": sum(d["ans_acc"] for d in draws) / ev.draws}
    if format_fn is not None:
        out["sampled_format"] = sum(d["for_acc"] for d in draws) / ev.draws
    if ev.greedy:
        greedy = measured(0.0, ev.seed)
        out["greedy_acc"] = greedy["ans_acc"]
        if format_fn is not None:
            out["greedy_format"] = greedy["for_acc"]
    return {**out, "problems": len(prompts)}


def before_after_line(run_cfg, ev: HeldoutConfig, before: dict, after: dict, checkpoint: str) -> str:
    """'held-out accuracy on the same 2000 arithmetic test problems, before RL -> after RL (checkpoint-500):
    sampled pass@1 0.0490 -> 0.1754 (T=1.0, mean of 4 draws), greedy 0.1300 -> 0.3500' (with a format reward:
    '; format rate (paper_format) sampled 0.23 -> 0.61, greedy ...')."""
    line = (f"held-out accuracy on the same {after['problems']} {run_cfg.dataset.name} test problems, before RL "
            f"(the base model) -> after RL ({checkpoint}): sampled pass@1 {before['sampled_acc']:.4f} -> "
            f"{after['sampled_acc']:.4f} (T={ev.temperature}, mean of {ev.draws} draws)")
    if "greedy_acc" in after:
        line += f", greedy {before['greedy_acc']:.4f} -> {after['greedy_acc']:.4f}"
    if "sampled_format" in after:
        line += f"; format rate ({ev.format_reward}) sampled {before['sampled_format']:.4f} -> {after['sampled_format']:.4f}"
        if "greedy_format" in after:
            line += f", greedy {before['greedy_format']:.4f} -> {after['greedy_format']:.4f}"
    return line


def _settings(run_cfg, ev: HeldoutConfig) -> dict:
    """What the cached numbers depend on besides the checkpoint: the evaluation, the base model, the data."""
    d = OmegaConf.to_container(run_cfg.dataset, resolve=True)
    return {"evaluation": dataclasses.asdict(ev), "model": str(run_cfg.model.name),
            "dataset": d["name"], "options": d.get("options") or {}, "prompt_style": d.get("prompt_style"),
            "shots": d.get("shots") or [],
            "max_completion_tokens": run_cfg.rl.max_completion_tokens}


def _cached(path: Path, settings: dict) -> dict:
    """The results in `path` measured with `settings`; {} when missing, unreadable or measured otherwise."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        return dict(saved["results"]) if saved.get("settings") == settings else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def final_heldout(run_dir: str | Path, log=print) -> dict[str, dict] | None:
    """`heldout_accuracy` of the base model and the latest complete checkpoint of a run whose config has an
    `evaluation` section (the CPU demo), cached in heldout.json; None when the section is null or nothing
    was saved. For train.py to call after training; logs the before/after line."""
    run_dir = Path(run_dir)
    run_cfg = OmegaConf.load(run_dir / "config.yaml")
    ckpts = complete_checkpoints(run_dir)
    if not run_cfg.get("evaluation") or not ckpts:
        return None
    last, ev = ckpts[-1][1], HeldoutConfig(**run_cfg.evaluation)
    settings, path = _settings(run_cfg, ev), run_dir / HELDOUT_FILE
    max_tokens = ev.max_tokens or run_cfg.rl.max_completion_tokens
    with lock_run_dir(run_dir):
        results = _cached(path, settings)
        todo = [name for name in ("base", last.name) if name not in results]
        if todo:
            policy, generator = backends.build(run_cfg)
            problems = heldout_problems(policy.tokenizer, run_cfg, ev)  # the same problems before and after
            answers = len(todo) * (ev.draws + int(ev.greedy)) * len(problems[0])
            with progress(answers, f"held-out evaluation of {run_dir.name}", "problems") as bar:
                for name in todo:  # the base first, then the checkpoint loaded over it
                    if name != "base":
                        policy.load(last / "policy")
                        generator.update_weights(policy)
                    (bar.write if log is print else log)(
                        f"held-out evaluation of {run_dir.name}/{name}{' (before RL)' if name == 'base' else ''} ...")
                    results[name] = heldout_accuracy(generator, problems, ev, max_tokens, bar)
                    atomic_write_json(path, {"settings": settings, "results": results})
    log(before_after_line(run_cfg, ev, results["base"], results[last.name], last.name))
    return {"base": results["base"], last.name: results[last.name]}
