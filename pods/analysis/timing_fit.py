"""The step-time model held against measured steps: the paper's single-GPU runs (L40S), our runs' metrics rows.

    settings = paper_settings(results_dir, sizes={"qwen": (3.09e9, 36864), "llama": (3.21e9, 114688)})
    constants = fit_paper(settings)                    # l40s-unsloth's fitted constants
    rows = validate_paper(settings)                    # per setting: measured, in-sample and leave-one-out prediction
    print(validation_table(rows))
    points = row_points([metrics_rows(d) for d in run_dirs]); fit(points, free=...)   # cpu: our own rows

Contract: a paper setting's steps come from its checkpoint names (every 30 min; Llama 10), its completion lengths
from the evaluation outputs at each checkpoint (`lengths`, the mean tokens of the test answers at temperature 0.9:
the proxy for what training generated), its prompt tokens are estimates (PROMPT_TOKENS), one prompt per step
(the authors' per_device_train_batch_size=1), n and m from the name. Each 30-minute stretch is one point (mean
over the setting's regular runs); a setting's mean seconds per step is total time over steps. docs/leaderboard.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pods.analysis.loaders import load_base, load_paper_file, paper_run_files
from pods.core.cost import step_counts
from pods.core.timing import CONSTANTS, harmonic_step_seconds, planned_counts, step_seconds
from pods.core.timing import fit as fit_constants
from pods.errors import ResultsError

NAME = re.compile(r"^Instruct-(GSM8K|MATH-NF|Llama)(?:-(MaxR|Rand))?-(\d+)-(\d+)-(\d+)(?:-([\d.]+))?$")
TASKS = {  # task -> (evaluation dataset whose lengths stand in, model, minutes per checkpoint, base file)
    "GSM8K": ("gsm8k", "qwen", 30, "base-qwen.json"),
    "MATH-NF": ("math500", "qwen", 30, "base-qwen.json"),
    "Llama": ("gsm8k", "llama", 10, "base-llama.json"),
}
# prompt tokens per step: the authors' system prompt (~60 tokens) and chat template around a question; estimates
# (no tokenizer here): GSM8K questions ~60 tokens, MATH ~80, Llama 3.2's template adds its date header (~25)
PROMPT_TOKENS = {"GSM8K": 150, "MATH-NF": 170, "Llama": 175}
FREE = ("fixed", "decode_step", "token", "context_token", "update_token")  # fitted to the authors' step rates
HELD = {"batch": 0.0, "padded_token": 0.0, "prompt_token": 0.0}  # one vLLM call per step; see docs
REFERENCE_SHARE = 0.2  # of the update: the reference forward of 4 passes (forward, checkpointed recompute, 2 x back)


@dataclass
class Setting:
    name: str
    task: str
    n: int
    m: int
    max_tokens: int
    model: str  # qwen | llama
    runs: int  # regular runs used
    measured: float  # mean seconds per step over the regular runs (total time / final step, averaged)
    stretches: list[tuple[float, float]]  # [(seconds per step in a checkpoint interval, mean completion tokens)]
    scale: tuple[float, float] = (1.0, 1.0)  # (parameters, KV bytes per token) relative to the profile's model

    def counts(self, completion_tokens: float) -> dict[str, float]:
        """One step's planned counts at this mean completion length, in the profile model's sizes."""
        c = planned_counts(prompts=1, n=self.n, m=self.m, prompt_tokens=PROMPT_TOKENS[self.task],
                           completion_tokens=completion_tokens, max_tokens=self.max_tokens)
        p, kv = self.scale
        return {k: v * (kv if k == "context_tokens" else 1.0 if k == "generation_batches" else p) for k, v in c.items()}


def paper_settings(results, sizes: dict[str, tuple[float, float]], reference: str = "qwen") -> list[Setting]:
    """Every single-GPU setting in `results` (a folder of <setting>-Run<k>.json); sizes: model -> (parameters,
    KV bytes per token), the profile's model `reference`."""
    from pathlib import Path

    results = Path(results)
    names = sorted({m.group(1) for p in results.glob("Instruct-*-Run*.json")
                    if (m := re.match(r"(.+)-Run\d+\.json$", p.name))})
    out = []
    for name in names:
        got = NAME.match(name)
        if not got:
            continue
        task, _, max_tokens, n, m, _ = got.groups()
        dataset, model, minutes, base_file = TASKS[task]
        runs = [load_paper_file(p, name, minutes / 60) for _, p in paper_run_files(results, name)]
        usual = int(np.median([len(r.steps) for r in runs]))
        regular = [r for r in runs if len(r.steps) == usual]  # a restarted run's extra checkpoints carry no rate
        base = load_base(results / base_file).metric(dataset, "lengths")[0] if (results / base_file).is_file() else None
        steps = np.stack([r.steps for r in regular])  # [R, C]
        lengths = np.stack([r.metric(dataset, "lengths") for r in regular]).mean(0)  # [C]
        before = np.concatenate([[base if base is not None else lengths[0]], lengths[:-1]])
        per_step = minutes * 60 / np.diff(np.concatenate([np.zeros((len(regular), 1)), steps], 1), axis=1).mean(0)
        measured = float(np.mean([r.hours[-1] * 3600 / r.steps[-1] for r in regular]))
        p0, kv0 = sizes[reference]
        p, kv = sizes[model]
        out.append(Setting(name, task, int(n), int(m), int(max_tokens), model, len(regular), measured,
                           [(float(t), float(L)) for t, L in zip(per_step, (before + lengths) / 2)],
                           scale=(p / p0, kv / kv0)))
    if not out:
        raise ResultsError(f"{results}: no single-GPU Instruct-<task>-512-<n>-<m>-Run<k>.json files")
    return out


def _points(settings: list[Setting]) -> list[tuple[dict, float]]:
    return [(s.counts(L), t) for s in settings for t, L in s.stretches]


def fit_paper(settings: list[Setting]) -> dict[str, float]:
    """The constants fitted to the settings' stretches (relative least squares, every constant >= 0): FREE fitted,
    HELD as given; the update's fit (the reference pass included) split by REFERENCE_SHARE."""
    c = fit_constants(_points(settings), FREE, HELD, reference=False)
    both = c["update_token"]
    c["update_token"], c["reference_token"] = both * (1 - REFERENCE_SHARE), both * REFERENCE_SHARE
    return c


def predict(s: Setting, constants: dict[str, float]) -> float:
    """A setting's mean seconds per step: total time over steps of its modelled stretches."""
    return harmonic_step_seconds([step_seconds(s.counts(L), constants, reference=True) for _, L in s.stretches])


def validate_paper(settings: list[Setting]) -> list[dict]:
    """Per setting: measured, predicted in-sample and leave-one-out (fitted without the setting), errors."""
    full = fit_paper(settings)
    rows = []
    for s in settings:
        loo = fit_paper([o for o in settings if o is not s])
        p, q = predict(s, full), predict(s, loo)
        rows.append({"setting": s.name, "n": s.n, "m": s.m, "runs": s.runs,
                     "completion_tokens": float(np.mean([L for _, L in s.stretches])), "measured": s.measured,
                     "predicted": p, "error": p / s.measured - 1, "loo": q, "loo_error": q / s.measured - 1})
    return rows


def validation_table(rows: list[dict]) -> str:
    lines = ["| setting | n -> m | mean completion tokens (eval) | measured s/step | predicted (in-sample) | error | "
             "leave-one-out | error |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['setting']} | {r['n']} -> {r['m']} | {r['completion_tokens']:.0f} | {r['measured']:.2f} | "
                     f"{r['predicted']:.2f} | {100 * r['error']:+.1f} % | {r['loo']:.2f} | "
                     f"{100 * r['loo_error']:+.1f} % |")
    return "\n".join(lines)


def row_points(runs: list[dict[int, dict]], skip_first: bool = True) -> list[tuple[dict, float]]:
    """[(step counts, time/step)] of runs' metrics rows ({step: row} each); the first step of each run (warm-up)
    left out unless it is the only one."""
    out = []
    for rows in runs:
        steps = sorted(rows)
        for s in steps[1:] if skip_first and len(steps) > 1 else steps:
            r = rows[s]
            if r.get("time/step", 0) > 0 and "cost/tokens_generated" in r:
                out.append((step_counts(r), float(r["time/step"])))
    if not out:
        raise ResultsError("no metrics rows with time/step and the cost ledger to fit a profile to")
    return out


def run_points(runs: list[dict[int, dict]]) -> list[tuple[dict, float]]:
    """One point per run: the median of each count and of time/step over its rows (row_points' steps): robust to
    steps slowed by other jobs on a shared machine."""
    out = []
    for rows in runs:
        pts = row_points([rows])
        counts = {k: float(np.median([c[k] for c, _ in pts])) for k in pts[0][0]}
        out.append((counts, float(np.median([t for _, t in pts]))))
    return out


def errors(points: list[tuple[dict, float]], constants: dict[str, float], reference: bool) -> np.ndarray:
    """[P] relative error of the modelled step against each point's measured seconds."""
    return np.array([step_seconds(c, constants, reference=reference) / t - 1 for c, t in points])


assert set(FREE) | set(HELD) | {"reference_token"} == set(CONSTANTS)


def h100_constants(check: dict, *, sequences: int, kept: int, prompt_token: float) -> dict[str, float]:
    """Constants from the offline node's random-weight step (docs/data/h100-offline-gpu-check.json's
    `random_weights`; `sequences` generated and `kept` trained per step by its config): one batch run to the token
    limit, so its decoding steps are the limit; the prefill priced `prompt_token` (from sizes), the rest of
    generation per decoding step; the update (its reference pass included) per prompt + completion token, split by
    REFERENCE_SHARE; scoring and hand-over the fixed part."""
    r = check["random_weights"]
    sec, P, C = r["seconds"], r["prompt_tokens"], r["completion_tokens"]
    if not str(r.get("generation_plan", "")).startswith(f"{sequences} sequences in 1 "):
        raise ResultsError(f"random_weights.generation_plan {r.get('generation_plan')!r}: expected {sequences} "
                           "sequences in one generate call")
    out = {c: 0.0 for c in CONSTANTS}
    out["prompt_token"] = prompt_token
    out["decode_step"] = (sec["generation"] - prompt_token * sequences * P) / C
    upd = sec["update"] / (kept * (P + C))
    out["update_token"], out["reference_token"] = upd * (1 - REFERENCE_SHARE), upd * REFERENCE_SHARE
    out["fixed"] = max(0.0, sec["step"] - sec["generation"] - sec["update"])
    return out
