"""A machine profile measured here: generation at several batch sizes and lengths, the update from training steps.

    sweep = GenerationSweep(batches=(16, 64, 256), lengths=(128, 512), prompt_tokens=512, last_step=3)
    trainer.train(cfg, on_step=sweep)            # after the last step: one timed generate call per batch and length
    prof = measured_profile(sweep.points, rows, cfg=cfg, arch=arch, name="my-gpu-hf", machine="NVIDIA H100")
    pods.core.profiles.save(prof)                # `--profile my-gpu-hf` finds it

Contract: the sweep runs outside the training clock on the run's own generator (random weights of the real
architecture: every completion runs to its length). Generation's constants are fitted to the sweep (non-negative
least squares of the relative error: a batch's set-up, a decoding step, a sequence token -- `token` for an engine
that drops finished sequences, `padded_token` for HF generate --, the prefill, the KV context); the update's per
trained token and the reference pass's from the steps' time/update and time/reference; the fixed part is what
the steps' time/step leaves after both (median, >= 0). docs/gpu.md "A real-size step with no download".
"""

from __future__ import annotations

import statistics
import time

import torch

from pods.backends import facts
from pods.backends.base import Sampling
from pods.core.cost import decoded_batches, step_counts
from pods.core.profiles import Profile
from pods.core.timing import CONSTANTS, fit, step_seconds

REFERENCE_SHARE = 0.2  # of update + reference where no reference pass ran: one forward of the update's four passes


class GenerationSweep:
    """The trainer's on_step hook: after step `last_step`, time one generation call per (batch size, length)."""

    def __init__(self, *, batches, lengths, prompt_tokens: int, last_step: int, then=None):
        self.batches, self.lengths, self.P, self.last = tuple(batches), tuple(lengths), int(prompt_tokens), last_step
        self.then = then  # another on_step hook to call first (e.g. sizecheck.StepMemory)
        self.points: list[tuple[dict, float]] = []  # (cost-ledger counts of the call, seconds)

    def __call__(self, row, policy, generator):
        out = self.then(row, policy, generator) if self.then else None
        if row["step"] != self.last:
            return out
        prompt = [int(t) for t in policy.tokenizer("7" * self.P, add_special_tokens=False)["input_ids"]][: self.P]
        size = getattr(generator, "batch_size", None)
        for L in self.lengths:
            for S in self.batches:
                sampling = Sampling(max_tokens=int(L), temperature=1.0, top_p=1.0, seed=0)
                _sync()
                start = time.perf_counter()
                ro = generator.generate([prompt], int(S), sampling)
                _sync()
                seconds = time.perf_counter() - start
                batches = decoded_batches([len(prompt)] * len(ro), [len(c) for c in ro.completion_ids], size)
                counts = {"generation_batches": len(batches), "decode_steps": sum(b.longest for b in batches),
                          "tokens_padded": sum(b.sequences * b.longest for b in batches),
                          "tokens_generated": sum(len(c) for c in ro.completion_ids),
                          "prompt_tokens": sum(b.prompt_tokens for b in batches),
                          "context_tokens": sum(b.context_tokens for b in batches)}
                self.points.append((counts, seconds))
        return out


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def generation_terms(backend: str) -> tuple[str, ...]:
    """The generation constants fitted for a backend: per sequence token `token` where an engine drops finished
    sequences (vLLM, Unsloth), `padded_token` where HF generate keeps them."""
    seq = "token" if facts(backend).engine else "padded_token"
    return ("batch", "decode_step", seq, "prompt_token", "context_token")


def measured_profile(points: list[tuple[dict, float]], rows: list[dict], *, backend: str, device: str, name: str,
                     machine: str, model: str, params: float, kv_bytes_per_token: float, kept: int,
                     date: str, gpu: str = "") -> Profile:
    """The profile of the sweep's `points` and the training steps' metrics `rows` (the first, warm-up, left out)."""
    if len(points) < 3:
        raise ValueError(f"a profile needs generation at 3 or more batch sizes and lengths, got {len(points)} points")
    terms = generation_terms(backend)
    c = fit([(k, t) for k, t in points], terms, {"fixed": 0.0}, reference=False)
    later = rows[1:] or rows
    counts = [step_counts(r) for r in later]
    ref = [r.get("time/reference", 0.0) for r in later]
    upd = [r["time/update"] - x for r, x in zip(later, ref)]
    per = lambda secs: statistics.median(s / max(k["tokens_updated"], 1.0) for s, k in zip(secs, counts))  # noqa: E731
    c["update_token"] = per(upd)
    ran = any(x > 0 for x in ref)
    c["reference_token"] = per(ref) if ran else c["update_token"] * REFERENCE_SHARE / (1 - REFERENCE_SHARE)
    modelled = [step_seconds(k, {**c, "fixed": 0.0}, reference=ran) for k in counts]
    c["fixed"] = max(0.0, statistics.median(r["time/step"] - m for r, m in zip(later, modelled)))
    fitted = f"fitted to {len(points)} timed generation calls"
    origin = {t: fitted for t in terms}
    origin.update({t: f"0: not a term of backend={backend}" for t in CONSTANTS if t not in origin})
    origin.update({"update_token": f"measured: median time/update per prompt + completion token, {len(later)} steps",
                   "reference_token": "measured: time/reference per token" if ran else
                   "from the update: a quarter of it (no reference pass ran)",
                   "fixed": "measured: median of time/step less the modelled generation and update"})
    lengths = sorted({k["decode_steps"] / k["generation_batches"] for k, _ in points})
    seqs = sorted({k["tokens_padded"] / max(k["decode_steps"], 1) for k, _ in points})
    return Profile(name=name, machine=machine, backend=backend, device=device, model=model, model_params=params,
                   kv_bytes_per_token=kv_bytes_per_token, constants={k: c[k] for k in CONSTANTS}, origin=origin,
                   fitted_range={"sequences": [seqs[0], seqs[-1]], "completion_tokens": [lengths[0], lengths[-1]],
                                 "kept": [kept, kept]},
                   source=f"pods gpu-check --random-weights: {len(points)} generation calls, {len(later)} steps",
                   date=date, gpu=gpu)
