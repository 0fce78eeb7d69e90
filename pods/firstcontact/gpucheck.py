"""The first-contact check behind scripts/gpu_check.py: one backend variant, a few real training steps.

    r = run_variant("vllm", tiny=False, model="Qwen/Qwen2.5-0.5B-Instruct", out_dir=Path("checkpoints/gpu-check"))
    r["ok"], r["reasons"]              # PASS / FAIL and why; also loss, moved, greedy, probe, peak_memory_gib, seconds
    run_config(["experiment=gsm8k_main"], out_dir=Path("checkpoints/gpu-check"))   # estimate vs measured peak
    cpu_refusal(["experiment=gsm8k_main"])   # why a GPU-sized step is not run here (no CUDA), or None

`run_variant` trains a variant (`VARIANTS`, from each backend's declared variants: a backend, LoRA or full) for `steps` steps of `pods.run.trainer.train`,
then checks: finite loss and gradient, trainable weights moved, the generator's greedy output is the trainee's
(`greedy_agreement`, near-ties within `tol` nats forgiven), also after a hand-over of perturbed weights
(`probe_handover`). `tiny=True`: the CPU demo's warm-started tiny model. The checks: docs/gpu.md "First contact".
"""

from __future__ import annotations

import importlib.util
import math
import resource
from dataclasses import replace
from pathlib import Path

import torch

from pods.backends import BACKENDS, facts
from pods.backends import memory as mem
from pods.backends.base import Sampling
from pods.backends.checks import model_architecture, no_cuda_reason
from pods.config.files import compose, quote
from pods.errors import ConfigError
from pods.run import trainer
from pods.run.metrics import read_metrics
from pods.run.prepare import load_prompts

# variant -> (backend, LoRA?), as each backend declares them (pods.backends.base.Facts.variants)
VARIANTS = {variant: (name, lora) for name in BACKENDS for variant, lora in facts(name).variants}
PROBE_PROMPTS = 4
PHASES = ("generation", "scoring", "update", "weight_sync", "step")


def cpu_refusal(overrides_: list[str]) -> str | None:
    """Why the step of config/train.yaml with `overrides_` is not run here: it is sized for a GPU (backend.device
    auto or cuda) and this machine has no CUDA, so it would train a GPU-sized model on the CPU (a 3B model: a
    12 GB checkpoint, hours a step); None when CUDA is here or the config says backend.device=cpu."""
    if torch.cuda.is_available():
        return None
    try:
        cfg = compose(list(overrides_))
    except Exception as err:  # noqa: BLE001 - Hydra's composition errors: an unknown group option, a bad value
        raise ConfigError(f"--config {' '.join(overrides_)}: cannot compose it: {str(err).splitlines()[0]}") from None
    if str((cfg.get("backend") or {}).get("device", "auto")) == "cpu":
        return None
    given = " ".join(overrides_)
    return (f"--config {given} measures a step on a CUDA GPU, and {no_cuda_reason()}; nothing was written. On this "
            f"machine: `pods preflight --gpu L40S {given}` prints the memory estimate; `bash scripts/offline_gpu_check.sh "
            "--dry-run` runs the same steps at a CPU size (backend.device=cpu, a small model.architecture: "
            "docs/gpu.md); `pods gpu-check --tiny` checks the loop on the CPU")


def overrides(variant: str, *, tiny: bool, model: str, out_dir: Path, steps: int, cache_dir: str | Path | None,
              real_cpu: bool = False) -> list[str]:
    """Hydra overrides of config/train.yaml for one variant of the check (`cache_dir`: the tiny model's warm-start
    cache; None: the demo's)."""
    backend, lora = VARIANTS[variant]
    run = [f"backend={backend}", f"rl.max_steps={steps}", "rl.max_time=null", "rl.save_strategy=no",
           "rl.save_final=false", "logging.progress=false", "resume=false",
           f"output_root={quote(out_dir)}", f"run_name={variant}", "rl.n=8", "rl.m=4", "rl.temperature=1.0"]
    if real_cpu:  # SmolLM2-135M-Instruct from the real-cpu extra (pods.backends.gguf), on CPU, no download
        # one-digit sums in the chat template: a 135M model gets some right in 16 tokens, so rewards differ within
        # a group and the update has a gradient (on word problems every reward was 0)
        run += ["model=smollm2-135m-instruct", "dataset=arithmetic", "dataset.prompt_style=instruct",
                "+dataset.options.digits=1", "dataset.limit=64", "dataset.accuracy_reward=gsm8k",
                "dataset.rewards=[{name: gsm8k, weight: 1.0}, {name: tags, weight: 0.1}]", "backend.device=cpu",
                "rl.prompts_per_step=2", "rl.micro_batch_size=8", "rl.max_prompt_tokens=400",
                "rl.max_completion_tokens=16", "optim.name=adamw"]
        run += ["model.lora.rank=8", "model.lora.alpha=16"] if lora else ["model.lora.rank=0"]
        if backend == "vllm":
            run += ["backend.enforce_eager=true", "backend.gpu_memory_utilization=null", "backend.max_lora_rank=8"]
        return run
    if tiny:  # the CPU demo's warm-started tiny model (heads=2: a head size vLLM's CPU kernels have)
        run += ["experiment=demo", "evaluation=null", "warmstart.heads=2", "warmstart.kv_heads=1",
                "dataset.limit=256", "rl.prompts_per_step=4", "rl.micro_batch_size=16"]
        run += [f"warmstart.cache_dir={quote(cache_dir)}"] if cache_dir is not None else []
        run += ["model.lora.rank=8", "model.lora.alpha=16"] if lora else []
        return run + list(facts(backend).tiny_overrides)
    run += [f"model.name={quote(model)}", "model.short_name=gpu-check", "dataset=arithmetic",
            "dataset.prompt_style=instruct", "dataset.limit=256", "dataset.accuracy_reward=gsm8k",
            "dataset.rewards=[{name: gsm8k, weight: 1.0}, {name: tags, weight: 0.1}]",
            "rl.prompts_per_step=2", "rl.micro_batch_size=8", "rl.max_prompt_tokens=256",
            "rl.max_completion_tokens=128"]
    run += ["model.lora.rank=16", "model.lora.alpha=32"] if lora else ["model.lora.rank=0", "model.load_in_4bit=false"]
    return run


def unavailable(variant: str, *, tiny: bool, cuda: bool) -> str | None:
    """None if the variant can run here, else why not (a SKIP reason), from its backend's declaration."""
    f = facts(VARIANTS[variant][0])
    if f.library and importlib.util.find_spec(f.library) is None:
        return f"{f.library} is not installed (uv sync --extra gpu)"
    if f.always_cuda and (tiny or not cuda) or tiny and not f.tiny_ok:
        return f"{f.label} needs a CUDA GPU and a hub model"
    return None


def fingerprint(params) -> torch.Tensor:
    """[P, 2] float64 (sum, abs-sum) per tensor: changes when any element of the tensor changes."""
    with torch.no_grad():
        return torch.tensor([[float(p.double().sum()), float(p.double().abs().sum())] for p in params],
                            dtype=torch.float64)


@torch.no_grad()
def greedy_agreement(policy, prompts: list[list[int]], completions: list[list[int]], tol: float) -> dict:
    """Is each completion the trainee's greedy output? Teacher-forced, one prompt at a time (no padding).

    Per completion: the first token where the trainee's argmax differs; it is a disagreement when the
    trainee's logit margin over the completion's token exceeds `tol`, otherwise a tie (and the rest of
    that completion is not compared: the two greedy paths part there).
    """
    model, was_training = policy.model, policy.model.training
    model.eval()
    agree, ties, worst, first = 0, 0, 0.0, []
    try:
        for p, c in zip(prompts, completions):
            ids = torch.tensor([list(p) + list(c)], device=policy.device)
            with policy.autocast():
                logits = model(input_ids=ids).logits
            logits = logits[0, len(p) - 1:len(p) - 1 + len(c)].float()  # [len(c), V]: position t predicts c[t]
            target = torch.tensor(c, device=logits.device)
            top = logits.argmax(-1)
            diff = (top != target).nonzero()
            if len(diff) == 0:
                agree += 1
                continue
            t = int(diff[0])
            margin = float(logits[t, top[t]] - logits[t, target[t]])
            if margin <= tol:
                agree, ties = agree + 1, ties + 1
            else:
                worst = max(worst, margin)
                first.append(t)
    finally:
        model.train(was_training)
    return {"agree": agree, "total": len(prompts), "ties": ties, "worst_margin": worst, "first_mismatch": first}


def probe_handover(policy, generator, prompts, *, max_tokens: int, tol: float, seed: int = 0,
                   served: list[list[int]] | None = None) -> dict:
    """Perturb the trainee until its greedy output leaves what the generator serves, hand over, re-check.
    `served`: the generator's greedy completions of `prompts` (`max_tokens`) at its current weights, when the caller
    has them (the greedy check's); None: generated here."""
    greedy = Sampling(max_tokens=max_tokens, temperature=0.0)
    stale = served if served is not None else generator.generate(prompts, 1, greedy).completion_ids
    params = policy.trainable_parameters()
    g = torch.Generator().manual_seed(seed)
    scale = 0.1
    for _ in range(6):
        with torch.no_grad():
            for p in params:
                rms = max(float(p.detach().float().pow(2).mean().sqrt()), 1e-2)
                p.add_((torch.randn(p.shape, generator=g) * (scale * rms)).to(p.device, p.dtype))
        if greedy_agreement(policy, prompts, stale, tol)["agree"] < len(prompts):
            break
        scale *= 4
    else:
        return {"ok": False, "scale": scale, "reason": "perturbing the trainee did not change its greedy output"}
    generator.update_weights(policy)
    fresh = greedy_agreement(policy, prompts, generator.generate(prompts, 1, greedy).completion_ids, tol)
    ok = fresh["agree"] == len(prompts)
    return {"ok": ok, "scale": scale, "agreement": fresh,
            "reason": "" if ok else "after a hand-over of perturbed weights the generator still disagrees "
                                    f"with the trainee ({fresh['agree']}/{fresh['total']} agree)"}


class LastStepChecks:
    """The trainer's on_step hook: weight fingerprints every step, greedy checks after the last one."""

    def __init__(self, cfg, steps: int, tol: float | None, max_tokens: int):
        self.cfg, self.steps, self.tol, self.max_tokens = cfg, steps, tol, max_tokens
        self.first = self.last = None
        self.greedy = self.probe = None

    def __call__(self, row, policy, generator):
        fp = fingerprint(policy.trainable_parameters())
        self.first = fp if self.first is None else self.first
        self.last = fp
        if row["step"] < self.steps:
            return None
        tol = self.tol if self.tol is not None else (1e-3 if policy.precision.compute == torch.float32 else 0.5)
        self.tol = tol
        prompts = load_prompts(self.cfg, policy.tokenizer)[0][:PROBE_PROMPTS]
        served = generator.generate(prompts, 1, Sampling(max_tokens=self.max_tokens, temperature=0.0))
        self.greedy = greedy_agreement(policy, prompts, served.completion_ids, tol)
        self.probe = probe_handover(policy, generator, prompts, max_tokens=self.max_tokens, tol=tol,
                                    seed=int(self.cfg.seed), served=served.completion_ids)
        return None

    def moved(self) -> float:
        """Fraction of trainable tensors that changed between the first and the last step."""
        return float((self.first != self.last).any(1).double().mean())


def peak_memory() -> tuple[float, str]:
    """(GiB, what was measured)."""
    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**30, "GPU"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "RSS"


def verdict(rows: list[dict], hook: LastStepChecks, steps: int) -> list[str]:
    """Reasons to FAIL (empty: PASS)."""
    reasons = []
    if len(rows) < steps:
        reasons.append(f"only {len(rows)} of {steps} steps logged")
    if not all(math.isfinite(r.get("loss", math.nan)) and math.isfinite(r.get("grad_norm", math.nan)) for r in rows):
        reasons.append("non-finite loss or gradient norm: " + ", ".join(
            f"step {r.get('step')}: loss {r.get('loss')}, grad {r.get('grad_norm')}" for r in rows))
    elif not any(r["grad_norm"] > 0 for r in rows):
        reasons.append("no gradient in any step (every group's rewards were equal); try more steps")
    if hook.first is not None and hook.moved() < 0.5:
        reasons.append(f"only {hook.moved():.0%} of the trainable tensors changed over steps 2-{steps}")
    if hook.greedy is None:
        reasons.append("the greedy checks did not run")
    else:
        g = hook.greedy
        if g["agree"] < g["total"]:
            reasons.append(f"generator's greedy output differs from the trainee's on {g['total'] - g['agree']} "
                           f"of {g['total']} prompts (trainee margin up to {g['worst_margin']:.3g} nats > "
                           f"tol {hook.tol:g})")
        if not hook.probe["ok"]:
            reasons.append(hook.probe["reason"])
    return reasons


def run_variant(variant: str, *, tiny: bool, model: str, out_dir: Path, steps: int = 3,
                cache_dir: str | Path | None = None, tol: float | None = None,
                real_cpu: bool = False) -> dict:
    """Train `steps` steps of one variant and check it; returns the result row (see the module docstring).
    `real_cpu`: SmolLM2-135M-Instruct on CPU (the real-cpu extra) instead of the tiny model."""
    if steps < 2:
        raise ValueError(f"steps={steps}: the weight check compares the first and the last step; use >= 2")
    cfg = compose(overrides(variant, tiny=tiny, model=model, out_dir=Path(out_dir), steps=steps,
                            cache_dir=cache_dir, real_cpu=real_cpu))
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    hook = LastStepChecks(cfg, steps, tol, max_tokens=8 if tiny and not real_cpu else 16 if real_cpu else 32)
    run_dir = trainer.train(cfg, on_step=hook)
    rows = read_metrics(run_dir)
    memory, kind = peak_memory()
    reasons = verdict(rows, hook, steps)
    return {"variant": variant, "ok": not reasons, "reasons": reasons,
            "loss": rows[-1].get("loss") if rows else None,
            "grad_norm_max": max((r.get("grad_norm", 0.0) for r in rows), default=None),
            "moved": hook.moved() if hook.first is not None else None,
            "greedy": hook.greedy, "probe": hook.probe, "tol": hook.tol,
            "peak_memory_gib": memory, "memory_kind": kind,
            "seconds": {ph: sum(r.get(f"time/{ph}", 0.0) for r in rows) / max(len(rows), 1) for ph in PHASES}}


def like_with_like(est: mem.Estimate) -> dict:
    """The estimate as torch's allocator sees it: allocated = less the CUDA context and the fragmentation slack,
    reserved = less the CUDA context (neither counts the context, which lives outside the allocator)."""
    outside = {r.item: r.gib for r in est.rows}
    context, slack = outside.get("CUDA context", 0.0), outside.get("allocator slack", 0.0)
    return {"estimate_allocated_gib": est.total_gib - context - slack, "estimate_reserved_gib": est.total_gib - context}


def run_config(overrides_: list[str], *, out_dir: Path) -> dict:
    """One training step of config/train.yaml with `overrides_`: the memory estimate and the measured peak.

    The estimate counts the limits (rl.max_prompt_tokens, rl.max_completion_tokens); `estimate_at_step_gib`
    counts the step's longest completion instead, the fairer comparison. CUDA: torch's peak allocation
    (vLLM's weights and KV cache included, its engine runs in this process) and reservation; CPU: peak RSS.
    """
    cfg = compose([*overrides_, "rl.max_steps=1", "rl.max_time=null", "rl.save_strategy=no", "rl.save_final=false",
                   "logging.progress=false", "resume=false", f"output_root={quote(out_dir)}", "run_name=config-check",
                   "check_memory=false"])
    cuda = torch.cuda.is_available()
    total = torch.cuda.mem_get_info()[1] / mem.GIB if cuda else mem.GPUS["L40S"]
    arch, w = model_architecture(cfg.model), mem.workload(cfg)
    est = mem.estimate(arch, w, total_gib=total)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    rows = read_metrics(trainer.train(cfg))
    longest = int(rows[-1].get("completion_length/max", w.completion_tokens)) if rows else w.completion_tokens
    at_step = mem.estimate(arch, replace(w, completion_tokens=max(longest, 1)), total_gib=total)
    peak, kind = peak_memory()
    device = torch.cuda.get_device_name() if cuda else "CPU (estimated as on an L40S; RSS is not comparable)"
    return {"config": list(overrides_), "device": device,
            "total_gib": total, "estimate_gib": est.total_gib, "estimate_at_step_gib": at_step.total_gib,
            "longest_completion": longest, "table": est.table(), "generation": est.generation,
            "measured_gib": peak, "measured_kind": kind,
            "reserved_gib": torch.cuda.max_memory_reserved() / mem.GIB if cuda else None,
            **like_with_like(at_step)}
