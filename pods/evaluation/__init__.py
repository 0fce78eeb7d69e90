"""Evaluation: accuracy of a policy's sampled answers, and the sweep over a run's checkpoints.

    texts, lens = sample_answers(generator, prompt_ids, sampling)          # one sample per prompt
    m = score(texts, lens, answers, answer_fn=..., format_fn=...)        # ans/for/both acc, lengths
    results = evaluate_run(run_dir, eval_cfg)     # evaluate-run.py: -> pods.evaluation.results.ResultsFile

`evaluate_run` evaluates the base model (optional), then every complete checkpoint, with the weights
`eval_cfg.weights` names (`adapter`: the trained policy exactly; `merged_4bit`: the paper's NF4(W + dW)),
and writes `eval_results.json` (the paper's layout, pods/evaluation/results.py) after every repeat. The
metrics (strict and by the paper's grader), the weights and the file: docs/evaluation.md.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from omegaconf import OmegaConf

from pods import backends, data, rewards
from pods.backends import merged
from pods.backends.base import Sampling
from pods.backends.checks import check_offline, load_error
from pods.backends.hf import load_tokenizer
from pods.cli import doing, progress
from pods.config import read_run_config, to_container
from pods.config.checks import validate_eval
from pods.errors import CheckpointError, ConfigError
from pods.evaluation.results import METRICS, PAPER_METRICS, RESULTS_FILE, ResultsFile, checkpoint_step
from pods.io import exclusive_lock
from pods.rewards.authors.paper import NUMBER_PATTERNS
from pods.run.checkpoint import intact

ScoreFn = Callable[..., list]  # (completions, answers, **cols) -> list[float]


# ----------------------------------------------------------------------------- scoring


def score(
    texts: Sequence[str],
    lengths: Sequence[int],
    answers: Sequence[str],
    *,
    answer_fn: ScoreFn,
    format_fn: ScoreFn | None = None,
    cols: dict | None = None,
) -> tuple[dict[str, float], list[bool], list[bool]]:
    """Score one completion per problem.

    texts/lengths/answers: [N]; answer_fn returns [N] rewards (> 0 means correct), format_fn [N]
    (> 0 means strict format; None: every completion counts as formatted, for tasks without a
    format). Returns ({ans_acc, for_acc, both_acc, lengths}, correct [N], formatted [N]).
    """
    n = len(texts)
    if n == 0 or len(lengths) != n or len(answers) != n:
        raise ValueError(f"score: need equal, non-empty texts/lengths/answers, got {n}/{len(lengths)}/{len(answers)}")
    cols = cols or {}
    correct = [float(r) > 0 for r in answer_fn(list(texts), list(answers), **cols)]
    formatted = [True] * n if format_fn is None else [float(r) > 0 for r in format_fn(list(texts), list(answers), **cols)]
    if len(correct) != n or len(formatted) != n:
        raise ValueError(f"score: a verifier returned {len(correct)}/{len(formatted)} values for {n} completions")
    both = [a and f for a, f in zip(correct, formatted)]
    metrics = {
        "ans_acc": sum(correct) / n,
        "for_acc": sum(formatted) / n,
        "both_acc": sum(both) / n,
        "lengths": sum(lengths) / n,
    }
    return metrics, correct, formatted


def sample_answers(generator, prompt_ids: Sequence[list[int]], sampling: Sampling, *, batch_size: int = 256,
                   n: int = 1, bar=None) -> tuple[list[str], list[int]]:
    """n completions per prompt with `generator` in batches; returns (texts [N*n], lengths [N*n]).

    Batch b uses seed `sampling.seed + b` (when a seed is set), so results do not depend on how
    many batches ran before in this process. `bar`: a progress bar (pods.cli.progress) advanced by each batch's prompts.
    """
    texts, lengths = [], []
    for b, start in enumerate(range(0, len(prompt_ids), batch_size)):
        seed = None if sampling.seed is None else sampling.seed + b
        s = Sampling(max_tokens=sampling.max_tokens, temperature=sampling.temperature, top_p=sampling.top_p, seed=seed)
        ro = generator.generate(list(prompt_ids[start : start + batch_size]), n, s)
        texts.extend(ro.texts)
        lengths.extend(len(c) for c in ro.completion_ids)
        if bar is not None:
            bar.update(len(prompt_ids[start : start + batch_size]))
    return texts, lengths


# ----------------------------------------------------------------------------- the sweep


def complete_checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """[(step, dir)] of intact checkpoints in step order (pods.run.checkpoint.intact: damaged ones are
    skipped with a warning naming them)."""
    return [(checkpoint_step(d.name), d) for d in intact(Path(run_dir))]


def eval_datasets(eval_cfg, run_cfg) -> list[dict]:
    """The datasets to evaluate: `eval_cfg.datasets` entries filled with the run's defaults.

    Entry keys: name, split, path, limit, options, prompt_style, system_prompt, shots, reward (the
    verifier, value > 0 = correct; default: the run's accuracy reward for its own dataset unless that is
    the authors' grader (reported as paper_* instead), else the reward its declaration names,
    data.DATASETS[name].reward), format_reward
    (strict format check; null: no format), key
    (name in the results file), max_prompt_tokens (longer prompts are left out; default:
    `eval_cfg.max_prompt_tokens`). `datasets: null` = the run's own dataset, test split.
    """
    d = run_cfg.dataset
    run_reward = d.get("accuracy_reward") or d.rewards[0]["name"]
    defaults = {"name": d.name, "split": "test", "path": None, "limit": None, "options": dict(d.get("options") or {}),
                "prompt_style": d.prompt_style, "system_prompt": d.get("system_prompt"), "shots": list(d.get("shots") or []),
                "reward": None,
                "format_reward": "format", "key": None, "max_prompt_tokens": eval_cfg.get("max_prompt_tokens")}
    entries = eval_cfg.get("datasets") or [{"name": d.name, "format_reward": None}]
    out = []
    for e in entries:
        e = dict(e)
        unknown = sorted(set(e) - set(defaults))
        if unknown:
            raise ConfigError(f"evaluation dataset entry {e}: unknown key(s) {unknown}; valid: {', '.join(defaults)}")
        keep_null = ("format_reward", "path", "limit", "max_prompt_tokens")
        full = {**defaults, **{k: v for k, v in e.items() if v is not None or k in keep_null}}
        if not full["reward"]:  # the paper presets train on the authors' grader: ans_acc stays the strict verifier's
            known = data.DATASETS.get(full["name"])
            paper = run_reward in NUMBER_PATTERNS and known is not None
            same = full["name"] == d.name and not paper
            full["reward"] = run_reward if same else known.reward if known else full["name"]
        full["key"] = full["key"] or full["name"]
        out.append(full)
    return out


def prepare_dataset(ds: dict, tokenizer, examples=None):
    """(prompt ids [N], answers [N], cols, answer_fn, format_fn, prompt texts) of one dataset entry;
    `examples`: its examples already read by pods.data.load_examples (read here when None)."""
    examples = data.load_examples(ds) if examples is None else examples
    examples, prompts, _ = data.render_prompts(examples, tokenizer, style=ds["prompt_style"],
                                               system_prompt=ds["system_prompt"], shots=ds.get("shots"),
                                               max_prompt_tokens=ds.get("max_prompt_tokens"))
    if not examples:
        raise ConfigError(f"{ds['key']}: every prompt is longer than max_prompt_tokens={ds['max_prompt_tokens']}")
    cols = data.meta_columns(examples)
    fmt = rewards.get(ds["format_reward"]) if ds["format_reward"] else None
    return prompts, [ex.answer for ex in examples], cols, rewards.get(ds["reward"]), fmt, [ex.prompt for ex in examples]


# evaluation setting -> the run's config key it defaults to when left null
FROM_RUN = {"temperature": "rl.temperature", "top_p": "rl.top_p", "max_tokens": "rl.max_completion_tokens",
            "max_prompt_tokens": "rl.max_prompt_tokens"}


def with_run_defaults(eval_cfg, run_cfg):
    """(eval_cfg with every null FROM_RUN setting taken from the run's config, header lines).

    So a run is evaluated the way it sampled during training (the demo's 6-token answers are not
    given 512 tokens) unless a setting is given; the header says where each value came from.
    """
    cfg, lines = OmegaConf.create(OmegaConf.to_container(eval_cfg, resolve=True)), []
    for key, run_key in FROM_RUN.items():
        if cfg.get(key) is None:
            value = OmegaConf.select(run_cfg, run_key)
            if value is None and key != "max_prompt_tokens":
                raise ValueError(f"{key}=null means the run's {run_key}, which its config.yaml does not set; "
                                 f"give {key}=VALUE")
            cfg[key] = value
            lines.append(f"{key}={value} (the run's {run_key})")
        else:
            lines.append(f"{key}={cfg[key]} (given)")
    return cfg, lines


def settings_of(eval_cfg, datasets: list[dict]) -> dict:
    """What must not change between resumes of one results file."""
    return {"temperature": float(eval_cfg.temperature), "max_tokens": int(eval_cfg.max_tokens),
            "top_p": float(eval_cfg.get("top_p", 1.0)), "seed": int(eval_cfg.seed),
            "paper_grader": eval_cfg.get("paper_grader"), "weights": eval_cfg.get("weights") or "adapter",
            "datasets": {d["key"]: {k: d[k] for k in ("name", "split", "limit", "options", "prompt_style", "reward",
                                                       "format_reward", "max_prompt_tokens")} for d in datasets}}


def paper_graders(eval_cfg):
    """(answer_fn, format_fn) of the paper-compatible graders named by `eval_cfg.paper_grader`
    (`paper_answer` or `paper_answer_decimal`, checked by validate_eval; null: none, (None, None))."""
    name = eval_cfg.get("paper_grader")
    return (rewards.get(name), rewards.get("paper_format")) if name else (None, None)


def _checked_dataset(ds: dict):
    """An evaluation entry's examples, read (and its verifiers looked up) before any model loads."""
    for key in ("reward", "format_reward"):
        if ds[key]:
            try:
                rewards.get(ds[key])
            except ValueError as err:
                raise ConfigError(f"evaluation dataset {ds['key']}: {key}: {err}") from None
    return data.load_examples(ds)


def _elapsed(checkpoint: Path) -> float:
    """Training seconds of a checkpoint from its state.json; CheckpointError naming the file when damaged."""
    f = checkpoint / "state.json"
    try:
        return float(json.loads(f.read_text(encoding="utf-8"))["elapsed_seconds"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{f}: damaged ({type(err).__name__}: {err}); it holds no training time. Move "
                              f"{checkpoint.name} out of {checkpoint.parent} to evaluate the others") from None


def _adapter_weights(run_cfg, build):
    """(tokenizer, load, release) of weights=adapter: one policy built, each checkpoint's policy/ loaded into it."""
    with doing(f"loading the model {run_cfg.model.name} ({run_cfg.backend.name} backend)"):
        check_offline(run_cfg.model.name)
        try:
            policy, generator = (build or backends.build)(run_cfg)
        except (OSError, ValueError) as err:  # an unknown hub id, no network, a moved model directory
            raise load_error(run_cfg.model.name, err) from err

    def load(path):
        if path is not None:
            with doing(f"loading {path / 'policy'}"):
                policy.load(path / "policy")
            generator.update_weights(policy)
        return generator

    return policy.tokenizer, load, lambda generator: None


def _merged_weights(run_cfg, run_dir: Path, load_4bit):
    """(tokenizer, load, release) of weights=merged_4bit: each checkpoint merged into the 16-bit base (in a
    temporary folder of the run directory, deleted once loaded) and its merged model loaded in 4-bit."""
    check_offline(run_cfg.model.name)

    def load(path):
        what = "the base model" if path is None else f"{path.name} merged into the 16-bit base"
        with doing(f"loading {what} in 4-bit ({run_cfg.backend.name} backend)"), \
                tempfile.TemporaryDirectory(prefix=".pods-merged-", dir=run_dir) as work:
            try:
                model_dir = merged.merged_model(run_cfg, None if path is None else path / "policy", work)
                return (load_4bit or backends.build_4bit)(run_cfg, model_dir)
            except (OSError, ValueError) as err:  # an unknown hub id, no network, a moved model directory
                raise load_error(run_cfg.model.name, err) from err

    return load_tokenizer(run_cfg.model), load, merged.release


def evaluate_run(run_dir: str | Path, eval_cfg, log=print, *, build=None, load_4bit=None) -> ResultsFile:
    """Evaluate base (if `eval_cfg.base`) and every complete checkpoint of `run_dir`; resumable.

    eval_cfg keys: repeats, temperature, max_tokens, top_p, seed, batch_size, base, examples,
    datasets, max_prompt_tokens, paper_grader, weights (adapter | merged_4bit), output (null:
    <run_dir>/eval_results.json), backend (null: the run's). temperature, top_p, max_tokens and
    max_prompt_tokens left null take the run's own settings (`with_run_defaults`). Repeat r samples
    with seed `seed + 1000 * r`, the same for every checkpoint and run. build / load_4bit replace
    pods.backends.build / build_4bit (tests).
    """
    validate_eval(OmegaConf.create({**to_container(eval_cfg), "run_dir": run_dir and str(run_dir)}))  # before a model loads
    run_dir = Path(run_dir)
    run_cfg = read_run_config(run_dir / "config.yaml")
    if eval_cfg.get("backend"):
        run_cfg.backend = OmegaConf.merge(run_cfg.backend, eval_cfg.backend)
    eval_cfg, header = with_run_defaults(eval_cfg, run_cfg)
    datasets = eval_datasets(eval_cfg, run_cfg)
    log(f"{run_dir}: " + ", ".join(header) + f", repeats={eval_cfg.repeats}, datasets: "
        + ", ".join(d["key"] for d in datasets))
    out = Path(eval_cfg.get("output") or run_dir / RESULTS_FILE)
    out.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(out.parent / f".{out.name}.lock", f"results file {out}",
                        "another evaluation is writing it: wait for it to finish, or write elsewhere (output=FILE)"):
        return _evaluate(run_dir, run_cfg, eval_cfg, datasets, out, log, build, load_4bit)


def _evaluate(run_dir: Path, run_cfg, eval_cfg, datasets: list[dict], out: Path, log, build, load_4bit) -> ResultsFile:
    """`evaluate_run` once the settings are checked and the results file `out` is this process's."""
    units = [("base", 0, None)] if eval_cfg.get("base", True) else []
    checkpoints = complete_checkpoints(run_dir)
    if not checkpoints:
        if not units:
            raise CheckpointError(f"{run_dir} holds no complete checkpoint and base=false: nothing to evaluate. "
                                  "Train the run first (a run with rl.save_strategy=no and rl.save_final=false "
                                  "saves none), or set base=true to evaluate its base model")
        print(f"warning: {run_dir} holds no complete checkpoint; evaluating only the base model", file=sys.stderr)
    for step, path in checkpoints:
        units.append((path.name, step, path))
    paper_fn, paper_format_fn = paper_graders(eval_cfg)
    results = ResultsFile(out, settings_of(eval_cfg, datasets), metrics=METRICS + (PAPER_METRICS if paper_fn else ()))
    R = int(eval_cfg.repeats)
    todo = [(u, ds) for u in units for ds in datasets if results.done(u[0], ds["key"]) < R]
    if not todo:
        log(f"{run_dir}: all {len(units)} entries x {len(datasets)} datasets x {R} repeats already evaluated")
        return results
    read = {ds["key"]: _checked_dataset(ds) for ds in datasets}  # data and verifiers, before any model loads
    elapsed = {path: _elapsed(path) for (_, _, path), _ in todo if path is not None}
    if eval_cfg.get("weights") == "merged_4bit":
        if load_4bit is None:
            merged.require_bitsandbytes()
        tokenizer, load, release = _merged_weights(run_cfg, run_dir, load_4bit)
    else:
        tokenizer, load, release = _adapter_weights(run_cfg, build)
    prepared = {ds["key"]: prepare_dataset(ds, tokenizer, read[ds["key"]]) for ds in datasets}
    loaded, generator = None, None
    total = sum((R - results.done(entry, ds["key"])) * len(prepared[ds["key"]][0]) for (entry, _, _), ds in todo)
    with progress(total, f"evaluating {run_dir.name}", "problems") as bar:  # counts and an ETA on stderr
        say = bar.write if log is print else log  # a line above the bar
        for (entry, step, path), ds in todo:
            if loaded != entry:
                if loaded is not None and path is None:
                    raise RuntimeError("base model must be evaluated before any checkpoint is loaded")
                if generator is not None:
                    release(generator)
                generator, loaded = load(path), entry
            seconds = 0.0 if path is None else elapsed[path]
            prompts, answers, cols, answer_fn, format_fn, prompt_texts = prepared[ds["key"]]
            with doing(f"evaluating {entry} of {run_dir} on {ds['key']}"):
                for r in range(results.done(entry, ds["key"]), R):
                    sampling = Sampling(max_tokens=int(eval_cfg.max_tokens), temperature=float(eval_cfg.temperature),
                                        top_p=float(eval_cfg.get("top_p", 1.0)), seed=int(eval_cfg.seed) + 1000 * r)
                    texts, lens = sample_answers(generator, prompts, sampling, batch_size=int(eval_cfg.batch_size),
                                                 bar=bar)
                    metrics, correct, formatted = score(texts, lens, answers, answer_fn=answer_fn, format_fn=format_fn,
                                                        cols=cols)
                    k = int(eval_cfg.get("examples", 3))
                    examples = [{"prompt": prompt_texts[i], "completion": texts[i], "answer": answers[i],
                                 "correct": correct[i], "formatted": formatted[i]} for i in range(min(k, len(texts)))]
                    shown = ("ans_acc", "for_acc", "both_acc") if format_fn else ("ans_acc",)  # no format: no for/both
                    line = (f"{entry} {ds['key']} repeat {r}: " + " ".join(f"{m} {metrics[m]:.4f}" for m in shown)
                            + f" length {metrics['lengths']:.1f}")
                    if paper_fn:
                        paper, p_correct, p_formatted = score(texts, lens, answers, answer_fn=paper_fn,
                                                              format_fn=paper_format_fn, cols=cols)
                        metrics.update({f"paper_{m}": paper[m] for m in ("ans_acc", "for_acc", "both_acc")})
                        for ex, c, f in zip(examples, p_correct, p_formatted):
                            ex.update(paper_correct=c, paper_formatted=f)
                        line += f" | paper ({eval_cfg.paper_grader}): " + " ".join(f"{m} {paper[m]:.4f}" for m in shown)
                    results.add(entry, ds["key"], r, metrics, step=step, elapsed_seconds=seconds, examples=examples)
                    say(line)
    if generator is not None:
        release(generator)
    return results
