"""A size-faithful training step with nothing downloaded: random weights of the real architecture, a stand-in tokenizer.

    r = run_random(["experiment=gsm8k_main"], out_dir=Path("checkpoints/gpu-check"), steps=3)
    r["seconds"], r["tokens_per_second"]      # per phase (mean over steps after the first), generated / trained
    r["memory"]                               # measured terms beside the preflight's estimate of the same terms
    r["cost_weight"]                          # w: a trained token's seconds over a generated token's (leaderboard)
    r["profile"]                              # the machine profile measured (pods.firstcontact.speedcheck), saved

The model is built from `model.architecture` (config/model/*.yaml: layers, hidden, intermediate, heads, kv heads,
vocab, tied embeddings) with random weights, saved once per architecture under out_dir/models/ and loaded by the
backend as a checkpoint would be (4-bit, LoRA, dtypes as configured). The tokenizer has the real vocabulary size
and an end-of-sequence id outside the model's vocabulary, so every completion runs to `completion_tokens`; the
prompts are `prompt_tokens` tokens each (default: rl.max_prompt_tokens, the preflight's worst case). Rewards are
the config's own verifiers on meaningless text (all zero). After the last step, generation is timed at each of
`profile_batches` x `profile_lengths` and a machine profile is fitted and saved where `--profile` finds it
(pods.core.profiles.profile_dir(); None: no sweep). docs/gpu.md "A real-size step with no download".
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import re
from dataclasses import asdict
from pathlib import Path

import torch

from pods.backends import memory as mem
from pods.backends.checks import driver_version, model_architecture
from pods.config.files import compose, quote
from pods.core import profiles
from pods.core.cost import measure_weight
from pods.firstcontact.gpucheck import PHASES, like_with_like, peak_memory
from pods.firstcontact.speedcheck import GenerationSweep, measured_profile
from pods.run import trainer
from pods.run.metrics import read_metrics

DATASET_FILE = "standin_prompts.py"
STACK = ("torch", "triton", "transformers", "peft", "accelerate", "trl", "datasets", "bitsandbytes", "hydra-core", "pods")
PROMPTS = 256  # distinct stand-in prompts (the loop draws rl.prompts_per_step of them per step)


def standin_tokenizer(vocab: int):
    """A byte-level BPE tokenizer of `vocab` ids (the 256 byte symbols, then fillers `<t256>`..) plus `<eos>` at id
    `vocab`: a model of `vocab` logits never samples it, so generation always runs to its token limit. A digit is
    one token, under this tokenizer and under the Qwen2 / Llama classes transformers substitutes for it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    if vocab <= len(alphabet):
        raise ValueError(f"a stand-in tokenizer needs a vocabulary above {len(alphabet)}, got {vocab}")
    words = {c: i for i, c in enumerate(alphabet)} | {f"<t{i}>": i for i in range(len(alphabet), vocab)}
    tok = Tokenizer(models.BPE(vocab={**words, "<eos>": vocab}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token=alphabet[0])
    fast.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    return fast


def hf_config(arch: mem.Architecture):
    """A transformers config with the architecture's numbers: Qwen2 when q/k/v have biases, else Llama."""
    from transformers import LlamaConfig, Qwen2Config

    kind = Qwen2Config if arch.attention_bias else LlamaConfig
    return kind(vocab_size=arch.vocab, hidden_size=arch.hidden, intermediate_size=arch.intermediate,
                num_hidden_layers=arch.layers, num_attention_heads=arch.heads, num_key_value_heads=arch.kv_heads,
                tie_word_embeddings=arch.tied, max_position_embeddings=32768, eos_token_id=None,
                pad_token_id=0, bos_token_id=None)


def random_model(arch: mem.Architecture, root: Path, dtype: torch.dtype = torch.bfloat16) -> Path:
    """A checkpoint directory of `arch` with random weights and the stand-in tokenizer, made once per architecture
    (root/<hash>/); built on the GPU when there is one (seconds), else on the CPU."""
    key = hashlib.sha256(json.dumps(asdict(arch), sort_keys=True).encode()).hexdigest()[:12]
    path = Path(root) / f"random-{key}"
    if (path / "done").exists():
        return path
    from transformers import AutoModelForCausalLM

    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(hf_config(arch), dtype=dtype)
    model.generation_config.eos_token_id = arch.vocab  # never sampled: completions run to max_tokens
    model.save_pretrained(path)
    standin_tokenizer(arch.vocab).save_pretrained(path)
    del model
    if device == "cuda":  # give the build's blocks back: the step's memory must be measured like a real run's
        torch.cuda.empty_cache()
    (path / "done").write_text("")  # a build cut short is rebuilt
    return path


def write_prompts(out_dir: Path, prompt_tokens: int) -> Path:
    """A dataset plug-in file of PROMPTS prompts of `prompt_tokens` digits each (a digit is one token)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / DATASET_FILE
    path.write_text(
        f'"""Stand-in prompts of {prompt_tokens} tokens (pods.firstcontact.sizecheck)."""\n\n\n'
        "def prompts(split):\n"
        f"    return [{{'prompt': ''.join(str((7 * i + 3 * j) % 10) for j in range({prompt_tokens})), 'answer': '0'}}\n"
        f"            for i in range({PROMPTS})]\n")
    return path


class StepMemory:
    """The trainer's on_step hook: what the trainee holds once a step is done (weights, trainable, the rest)."""

    def __init__(self):
        self.rows = []

    @staticmethod
    def _bytes(t: torch.Tensor) -> int:
        state = getattr(t, "quant_state", None)  # bitsandbytes NF4: packed uint8 plus its absmax
        extra = state.absmax.numel() * state.absmax.element_size() if state is not None else 0
        return t.numel() * t.element_size() + extra

    def __call__(self, row, policy, generator):
        params = list(policy.model.parameters())
        trainable = sum(self._bytes(p) for p in params if p.requires_grad)
        frozen = sum(self._bytes(p) for p in params if not p.requires_grad)
        after = torch.cuda.memory_allocated() if torch.cuda.is_available() else None
        self.rows.append({"step": row["step"], "weights": frozen, "trainable": trainable, "allocated": after})
        return None


def term(est: mem.Estimate, prefix: str) -> float:
    """GiB of the estimate's rows whose item starts with `prefix`."""
    return sum(r.gib for r in est.rows if r.item.startswith(prefix))


def memory_report(est: mem.Estimate, probe: StepMemory, total_gib: float) -> dict:
    """Measured beside estimated, like with like: tensors by term, allocated peak vs the estimate less what torch's
    allocator does not hold (the CUDA context, fragmentation slack), reserved peak vs the estimate less the context."""
    last = probe.rows[-1]
    out = {"weights": {"measured_gib": last["weights"] / mem.GIB, "estimate_gib": term(est, "base weights")},
           "trainable": {"measured_gib": last["trainable"] / mem.GIB,
                         "estimate_gib": term(est, "LoRA") + term(est, "fp32 master")}}
    peak, kind = peak_memory()
    if kind == "GPU":
        like = like_with_like(est)
        out["after_step_allocated_gib"] = last["allocated"] / mem.GIB
        out["peak_allocated"] = {"measured_gib": peak, "estimate_gib": like["estimate_allocated_gib"]}
        out["peak_reserved"] = {"measured_gib": torch.cuda.max_memory_reserved() / mem.GIB,
                                "estimate_gib": like["estimate_reserved_gib"]}
    else:
        out["peak_rss_gib"] = peak
    out["estimate_total_gib"], out["card_gib"] = est.total_gib, total_gib
    return out


def run_random(overrides_: list[str], *, out_dir: Path, steps: int = 3, prompt_tokens: int | None = None,
               completion_tokens: int | None = None, profile_batches: tuple[int, ...] | None = (16, 64, 256),
               profile_lengths: tuple[int, ...] | None = None, profile_name: str | None = None) -> dict:
    """`steps` training steps of the config with random weights and stand-in prompts, then the profile's generation
    sweep (profile_lengths default: a quarter, half and all of the completion length); the result row."""
    out_dir = Path(out_dir)
    base = compose(list(overrides_))
    arch = model_architecture(base.model)
    P = int(prompt_tokens or base.rl.max_prompt_tokens)
    C = int(completion_tokens or base.rl.max_completion_tokens)
    dtype = torch.float32 if str(base.model.dtype) == "float32" or not torch.cuda.is_available() else torch.bfloat16
    model_dir = random_model(arch, out_dir / "models", dtype)
    data = write_prompts(out_dir, P)
    run = [*overrides_, f"model.name={quote(model_dir)}", f"dataset.name={quote(f'{data}:prompts')}", "dataset.path=null",
           "dataset.limit=null", "dataset.options={}", "dataset.prompt_style=base", "dataset.system_prompt=null",
           "dataset.shuffle_seed=null", f"rl.max_prompt_tokens={P}", f"rl.max_completion_tokens={C}",
           f"rl.max_steps={steps}", "rl.max_time=null", "rl.save_strategy=no", "rl.save_final=false",
           "rl.dynamic_sampling=false", "evaluation=null", "warmstart=null", "logging.progress=false",
           "resume=false", f"output_root={quote(out_dir)}", "run_name=random-weights", "check_memory=false"]
    cfg = compose(run)
    cuda = torch.cuda.is_available()
    total = torch.cuda.mem_get_info()[1] / mem.GIB if cuda else mem.GPUS["L40S"]
    est = mem.estimate(arch, mem.workload(cfg), total_gib=total)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_reserved() / mem.GIB if cuda else None  # held by this process before the run: ~0
    probe = StepMemory()
    lengths = tuple(profile_lengths or sorted({max(1, C // 4), max(1, C // 2), C}))
    sweep = (GenerationSweep(batches=profile_batches, lengths=lengths, prompt_tokens=P, last_step=steps, then=probe)
             if profile_batches else None)
    rows = read_metrics(trainer.train(cfg, on_step=sweep or probe))
    later = rows[1:] or rows  # the first step pays for compilation, warm-up and allocator growth
    seconds = {ph: sum(r.get(f"time/{ph}", 0.0) for r in later) / len(later) for ph in PHASES}
    generated = int(cfg.rl.prompts_per_step) * int(cfg.rl.n) * C
    trained = int(cfg.rl.prompts_per_step) * int(cfg.rl.m) * (P + C)
    return {"config": list(overrides_), "device": torch.cuda.get_device_name() if cuda else "CPU",
            "architecture": asdict(arch), "params": arch.params(), "prompt_tokens": P, "completion_tokens": C,
            "completion_length_seen": [r.get("completion_length/mean") for r in rows], "steps": len(rows),
            "first_step_seconds": {ph: rows[0].get(f"time/{ph}", 0.0) for ph in PHASES} if rows else None,
            "seconds": seconds,
            "tokens_per_second": {"generated": generated / max(seconds["generation"], 1e-9),
                                  "trained": trained / max(seconds["update"], 1e-9)},
            "cost_weight": measure_weight([{r["step"]: r for r in later}]),
            "memory": {**memory_report(est, probe, total), "reserved_before_gib": before},
            "estimate_table": est.table(),
            "generation_plan": est.generation,
            "profile": save_profile(sweep, rows, cfg, arch, profile_name) if sweep else None}


def save_profile(sweep: GenerationSweep, rows: list[dict], cfg, arch: mem.Architecture, name: str | None) -> dict:
    """Fit the sweep's and the steps' profile, save it (profiles.profile_dir()): {name, path, constants, ...}."""
    import datetime

    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name() if cuda else "CPU"
    backend = str(cfg.backend.name)
    name = name or "-".join(re.findall(r"[a-z0-9]+", device.lower()) + [backend])
    compute = 2 if cuda and str(cfg.model.dtype) != "float32" else 4
    prof = measured_profile(sweep.points, rows, backend=backend, device="cuda" if cuda else "cpu", name=name,
                            machine=device, model=f"{cfg.model.name} (random weights)", params=float(arch.params()),
                            kv_bytes_per_token=float(arch.kv_bytes_per_token(compute)), kept=int(cfg.rl.m),
                            date=datetime.date.today().isoformat(), gpu=gpu_name(device) if cuda else "")
    path = profiles.save(prof)
    return {"name": prof.name, "path": str(path), "constants": prof.constants,
            "points": [{**k, "seconds": t} for k, t in sweep.points]}


def gpu_name(device: str) -> str:
    """`pods preflight --gpu`'s name of a CUDA device name ("NVIDIA H100 80GB HBM3" -> "H100"), else the name."""
    compact = device.upper().replace(" ", "")
    for known in sorted(mem.GPUS, key=len, reverse=True):
        if known.replace("-", "") in compact.replace("-", ""):
            return known
    return device


def stack() -> dict:
    """What this Python has: the packages pods runs on (None: missing), the GPU and its driver."""
    def version(name):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    cuda = torch.cuda.is_available()
    return {"python": platform.python_version(), "packages": {name: version(name) for name in STACK},
            "torch_cuda": torch.version.cuda, "cuda_available": cuda, "driver": driver_version(),
            "gpu": torch.cuda.get_device_name() if cuda else None,
            "gpu_memory_gib": torch.cuda.mem_get_info()[1] / mem.GIB if cuda else None}


def write_summary(out_dir) -> Path:
    """out_dir/offline-gpu-check.json: scripts/offline_gpu_check.sh's figures (the stack, the random-weight step,
    TRL's steps) gathered from the files its checks wrote; a check that wrote nothing is recorded as missing."""
    out_dir = Path(out_dir)
    read = lambda p: json.loads(p.read_text()) if p.is_file() else None  # noqa: E731
    trl_rows = read_metrics(out_dir / "trl") if (out_dir / "trl" / "metrics.jsonl").is_file() else []
    summary = {"stack": read(out_dir / "stack.json"), "random_weights": read(out_dir / "random-weights.json"),
               "trl": {"steps": len(trl_rows), "rows": trl_rows} if trl_rows else None}
    summary["missing"] = [k for k, v in summary.items() if v is None]
    path = out_dir / "offline-gpu-check.json"
    path.write_text(json.dumps(summary, indent=1))
    return path
