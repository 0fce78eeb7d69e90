"""transformers + PEFT backend: `HFPolicy` (training, log-probs, save/load) and `HFGenerator`.

    policy, generator = pods.backends.hf.build(cfg)      # cfg: the run config (model, backend, rl)
    logp, mask = policy.token_logprobs(prompts, completions)  # [B, T], with grad; reference=True: adapter disabled
    policy = load_checkpoint_policy("checkpoints/<run>/checkpoint-40")  # or load_policy(cfg, weights=<its policy/>)

`cfg.model.name`: "tiny" (built in code by pods.backends.tiny, sizes from `cfg.model.tiny`), a packaged GGUF model
(pods.backends.gguf), a local directory or a hub id. `model.lora.rank > 0`: a PEFT LoRA on a frozen base (`policy/` holds the adapter); 0: all weights train
(`policy/` holds the model). 4-bit loading on CUDA only. vLLM / Unsloth reuse `HFPolicy`, `load_tokenizer`,
`load_base_model`, `load_policy`; every forward pass runs in `policy.autocast()` (pods.backends.precision).
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from pods.backends.base import BackendSettings, Facts, Sampling
from pods.backends.gguf import local_model
from pods.backends.precision import FP32, Precision, compute_dtype, nf4_config
from pods.backends.precision import resolve as resolve_precision
from pods.backends.tiny import byte_tokenizer, tiny_causal_lm
from pods.core.losses import token_entropy, token_logprobs
from pods.core.reference import runs_reference
from pods.core.rollouts import Rollouts
from pods.settings import setting


@dataclass
class HFSettings(BackendSettings):
    """config/backend/hf.yaml: the `backend` section of backend=hf."""

    generation_batch_size: int | None = setting(None, "completions per model.generate call (null: all G * n at "
                                                "once); lower it if generation runs out of memory", low=1)
    device: str = setting("auto", "device: auto (cuda when available, else cpu) | cpu | cuda")


# samples with model.generate between updates (the memory estimate counts the larger of the two); CPU or GPU
FACTS = Facts(label="transformers", settings=HFSettings, variants=(("hf", True), ("hf-full", False)))


def resolve_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def run_device(cfg) -> torch.device:
    """The device of a run config's `backend.device` (auto when unset)."""
    return resolve_device((cfg.get("backend") or {}).get("device", "auto"))


def load_tokenizer(model_cfg):
    """The tokenizer of `model_cfg.name` (byte tokenizer for "tiny"); pads on the left."""
    if model_cfg.name == "tiny":
        tok = byte_tokenizer()
    else:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(local_model(model_cfg.name))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def load_base_model(model_cfg, tokenizer, device: torch.device, precision: Precision = FP32):
    """The base causal LM (no adapter) on `device`, its weights in `precision.weights`."""
    if model_cfg.name == "tiny":
        t = model_cfg.tiny
        model = tiny_causal_lm(tokenizer, t.arch, seed=t.seed, hidden=t.hidden, layers=t.layers,
                               heads=t.heads, kv_heads=t.kv_heads)
        return model.to(device=device, dtype=precision.weights)
    from transformers import AutoModelForCausalLM

    kwargs = {"dtype": precision.weights}
    if device.type == "cuda" and model_cfg.load_in_4bit:
        if importlib.util.find_spec("bitsandbytes") is None:
            warnings.warn("model.load_in_4bit needs bitsandbytes (`uv sync --extra gpu`); loading unquantized")
        else:
            # NF4 with double quantization: the same quantize_4bit call vLLM's bitsandbytes loader
            # makes (vllm_bnb_plugin/bitsandbytes_loader.py), so backend=vllm serves these weights
            kwargs["quantization_config"] = nf4_config(precision.compute)
            kwargs["device_map"] = {"": device.index or 0}
    model = AutoModelForCausalLM.from_pretrained(local_model(model_cfg.name), **kwargs)
    head = model.get_output_embeddings()
    if head is not None:
        head.register_forward_pre_hook(_contiguous_input)
    return model if "device_map" in kwargs else model.to(device)


def _contiguous_input(module, args):
    """lm_head's input made contiguous: `logits_to_keep` slices the hidden states, and torch's CPU matmul of such a
    slice with a [V, H] weight copies the weight once per row (3.7 s for 16 rows in bfloat16; docs/real-model.md)."""
    return (args[0].contiguous(), *args[1:])


def is_4bit(model) -> bool:
    """Whether the model's linear layers are bitsandbytes 4-bit (checked on the modules themselves)."""
    return any(type(m).__name__ == "Linear4bit" for m in model.modules())


class HFPolicy:
    """A causal LM with a LoRA adapter (or all weights) trainable; implements base.Policy."""

    def __init__(self, model, tokenizer, device: torch.device, *, lora: bool, reference=None,
                 precision: Precision = FP32):
        self.model, self.tokenizer, self.device = model, tokenizer, device
        self.lora = lora
        self.reference = reference  # frozen copy for full-parameter runs with a reference pass
        self.precision = precision  # storage and compute dtypes (pods.backends.precision)

    def autocast(self):
        """The context every forward pass of this policy runs in (autocast to the compute dtype)."""
        return self.precision.autocast(self.device)

    def _batch(self, prompts, completions):
        """Left-padded prompts + right-padded completions: every completion starts at column P."""
        P = max(len(p) for p in prompts)
        T = max(1, max(len(c) for c in completions))
        B, pad = len(prompts), self.tokenizer.pad_token_id
        ids = torch.full((B, P + T), pad, dtype=torch.long)
        attn = torch.zeros(B, P + T, dtype=torch.long)
        for b, (p, c) in enumerate(zip(prompts, completions)):
            ids[b, P - len(p):P] = torch.tensor(p, dtype=torch.long)
            ids[b, P:P + len(c)] = torch.tensor(c, dtype=torch.long)
            attn[b, P - len(p):P + len(c)] = 1
        return ids.to(self.device), attn.to(self.device), T

    def token_logprobs(self, prompts, completions, *, reference: bool = False, temperature: float = 1.0,
                       entropy: bool = False):
        """(logp [B, T], mask [B, T]) of each completion token given its prompt, at `temperature`;
        entropy=True adds each position's entropy [B, T] (no gradient) from the same logits."""
        ids, attn, T = self._batch(prompts, completions)
        pos = (attn.cumsum(-1) - 1).clamp(min=0)  # positions ignore the left padding
        if reference and not self.lora and self.reference is None:
            raise ValueError("reference log-probs of a full-parameter policy need a reference copy "
                             "(load_policy(..., reference=True))")
        model = self.reference if (reference and not self.lora) else self.model
        ctx = contextlib.ExitStack()
        ctx.enter_context(self.autocast())
        if reference:
            ctx.enter_context(torch.no_grad())
            if self.lora:
                ctx.enter_context(self.model.disable_adapter())
        with ctx:
            logits = model(input_ids=ids, attention_mask=attn, position_ids=pos, logits_to_keep=T + 1).logits
            logp = token_logprobs(logits[:, :-1], ids[:, -T:], temperature)  # position t predicts token t + 1
            ent = token_entropy(logits[:, :-1], temperature) if entropy else None  # the same logits: no extra pass
        mask = attn[:, -T:].to(logp.dtype)
        return (logp * mask, mask) if ent is None else (logp * mask, mask, ent * mask)

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def named_trainable_parameters(self) -> list[tuple[str, torch.nn.Parameter]]:
        return [(k, p) for k, p in self.model.named_parameters() if p.requires_grad]

    def train(self) -> None:
        self.model.train()

    def eval(self) -> None:
        self.model.eval()

    def save(self, path: Path) -> None:
        """LoRA: the PEFT adapter dir (adapter_config.json + adapter_model.safetensors); full: the model."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)

    def load(self, path: Path) -> None:
        """Load weights written by `save` into this policy (same base model and LoRA settings)."""
        from safetensors.torch import load_file

        path = Path(path)
        if self.lora:
            from peft import set_peft_model_state_dict

            state = load_file(str(path / "adapter_model.safetensors"), device=str(self.device))
            result = set_peft_model_state_dict(self.model, state)
            if getattr(result, "unexpected_keys", None):
                raise ValueError(f"adapter at {path} does not fit this model: {result.unexpected_keys[:5]}")
        else:
            files = sorted(path.glob("*.safetensors"))
            if not files:
                raise FileNotFoundError(f"no *.safetensors weights in {path}")
            state = {}
            for f in files:
                state.update(load_file(str(f), device=str(self.device)))
            result = self.model.load_state_dict(state, strict=False)
            tied = {"lm_head.weight"} if getattr(self.model.config, "tie_word_embeddings", False) else set()
            missing = [k for k in result.missing_keys if k not in tied]
            if missing or result.unexpected_keys:
                raise ValueError(f"weights at {path} do not fit this model: missing {missing[:5]}, "
                                 f"unexpected {result.unexpected_keys[:5]}")
            if hasattr(self.model, "tie_weights"):
                self.model.tie_weights()


def load_policy(cfg, *, weights: str | Path | None = None, reference: bool | None = None,
                precision: Precision | None = None) -> HFPolicy:
    """Base model + LoRA adapter (or full weights) per `cfg.model`; `weights`: a `policy/` dir to load.

    reference: keep a frozen reference copy for full-parameter runs (default: when a step computes reference
    log-probs, pods.core.reference.runs_reference).
    precision: storage / compute dtypes (default: `pods.backends.precision.resolve` for the device).
    """
    device = run_device(cfg)
    tok = load_tokenizer(cfg.model)
    lora_cfg = cfg.model.lora
    lora = lora_cfg.rank > 0
    if precision is None:
        precision = resolve_precision(cfg.model, device, full_parameter=not lora)
    model = load_base_model(cfg.model, tok, device, precision)
    ref = None
    if lora:
        from peft import LoraConfig, get_peft_model

        # A 4-bit base gets no peft.prepare_model_for_kbit_training: it would upcast every non-4-bit
        # weight to float32 and so run the passes in float32. get_peft_model freezes the base,
        # gradient checkpointing is enabled below, and PEFT keeps the adapter in float32.
        model = get_peft_model(model, LoraConfig(
            r=lora_cfg.rank, lora_alpha=lora_cfg.alpha, lora_dropout=lora_cfg.dropout,
            target_modules=list(lora_cfg.target_modules), task_type="CAUSAL_LM"))
    else:
        rl = cfg.get("rl")
        wants_ref = (rl is not None and runs_reference(rl.beta, rl.get("reference_pass", "auto"))
                     ) if reference is None else reference
        if wants_ref:
            ref = copy.deepcopy(model).to(precision.frozen).eval().requires_grad_(False)
    if cfg.model.gradient_checkpointing and device.type == "cuda":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if lora:
            model.enable_input_require_grads()
    policy = HFPolicy(model, tok, device, lora=lora, reference=ref, precision=precision)
    if weights is not None:
        policy.load(weights)
    return policy


def load_checkpoint_policy(checkpoint: str | Path) -> HFPolicy:
    """The policy of `checkpoints/<run>/checkpoint-<step>`, built from the run's config.yaml."""
    from omegaconf import OmegaConf

    checkpoint = Path(checkpoint)
    cfg = OmegaConf.load(checkpoint.parent / "config.yaml")
    return load_policy(cfg, weights=checkpoint / "policy", reference=False)


class HFGenerator:
    """Samples with `model.generate` from the policy's own (current) weights; implements base.Generator."""

    def __init__(self, policy: HFPolicy, batch_size: int | None = None):
        self.policy, self.batch_size = policy, batch_size

    def update_weights(self, policy) -> None:
        """Nothing to do: generation uses the training model itself."""

    def _eos_ids(self) -> list[int]:
        eos = getattr(self.policy.model.generation_config, "eos_token_id", None)
        eos = self.policy.tokenizer.eos_token_id if eos is None else eos
        return list(eos) if isinstance(eos, (list, tuple)) else [eos]

    def _shared_prefill(self, chunk: list[list[int]], ids: torch.Tensor, attn: torch.Tensor):
        """The KV cache of every row's prompt but its last token, computed once per distinct prompt and copied to
        its rows (a group's n rollouts share one prompt), or None when every row's prompt is its own. `ids`, `attn`:
        [B, P] left-padded. `generate` then runs only the last prompt token and the completion; positions as it
        derives them from the attention mask (cumsum - 1, padding at 0)."""
        rows, index = {}, []
        for p in chunk:
            index.append(rows.setdefault(tuple(p), len(rows)))
        if len(rows) == len(chunk) or ids.shape[1] < 2:
            return None
        first = torch.tensor([index.index(u) for u in range(len(rows))], device=ids.device)  # [U]
        a = attn[first, :-1]  # [U, P - 1]
        pos = (a.cumsum(-1) - 1).masked_fill(a == 0, 0)
        cache = self.policy.model(input_ids=ids[first, :-1], attention_mask=a, position_ids=pos,
                                  use_cache=True, logits_to_keep=1).past_key_values
        cache.batch_select_indices(torch.tensor(index, device=ids.device))  # [U, ...] -> [B, ...]
        return cache

    @torch.no_grad()
    def generate(self, prompts: list[list[int]], n: int, sampling: Sampling) -> Rollouts:
        from transformers import GenerationConfig

        tok, model, eos = self.policy.tokenizer, self.policy.model, self._eos_ids()
        # explicit settings, never the model's generation_config.json (Qwen's sets top_k, repetition_penalty)
        sample = {"temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": 0} if sampling.temperature > 0 else {}
        gen_cfg = GenerationConfig(do_sample=sampling.temperature > 0, repetition_penalty=1.0,
                                   max_new_tokens=sampling.max_tokens, pad_token_id=tok.pad_token_id,
                                   eos_token_id=eos, **sample)
        flat = [p for p in prompts for _ in range(n)]  # [G * n], group-major
        size = self.batch_size or len(flat)
        was_training = model.training
        model.eval()
        completions, reasons = [], []
        rng = torch.random.fork_rng(devices=[]) if sampling.seed is not None else contextlib.nullcontext()
        with rng:
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            for start in range(0, len(flat), size):
                chunk = flat[start:start + size]
                P = max(len(p) for p in chunk)
                ids = torch.full((len(chunk), P), tok.pad_token_id, dtype=torch.long)
                attn = torch.zeros(len(chunk), P, dtype=torch.long)
                for b, p in enumerate(chunk):
                    ids[b, P - len(p):] = torch.tensor(p, dtype=torch.long)
                    attn[b, P - len(p):] = 1
                ids, attn = ids.to(self.policy.device), attn.to(self.policy.device)
                with self.policy.autocast():
                    cache = self._shared_prefill(chunk, ids, attn)
                    out = model.generate(input_ids=ids, attention_mask=attn, past_key_values=cache,
                                         generation_config=gen_cfg)
                for row in out[:, P:].tolist():
                    stop = next((i for i, t in enumerate(row) if t in eos), None)
                    completions.append(row if stop is None else row[:stop + 1])
                    reasons.append("length" if stop is None else "stop")
        if was_training:
            model.train()
        texts = tok.batch_decode(completions, skip_special_tokens=True)
        return Rollouts(prompt_ids=[list(p) for p in prompts], completion_ids=completions, texts=texts,
                        n=n, finish_reasons=reasons)


def build(cfg):
    """(HFPolicy, HFGenerator) for the run config."""
    policy = load_policy(cfg)
    return policy, HFGenerator(policy, (cfg.get("backend") or {}).get("generation_batch_size"))


def build_4bit(cfg, model_dir: str | Path) -> HFGenerator:
    """An HFGenerator over the whole model in `model_dir` loaded in 4-bit NF4 (bitsandbytes; CPU or CUDA),
    computing in the run's dtype (`cfg.model.dtype` of the run's own model)."""
    from transformers import AutoModelForCausalLM

    device = run_device(cfg)
    compute = compute_dtype(cfg.model, device)
    place = {"": device.index or 0} if device.type == "cuda" else {"": "cpu"}
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=compute, quantization_config=nf4_config(compute),
                                                 device_map=place)
    policy = HFPolicy(model.eval(), load_tokenizer(cfg.model), device, lora=False,
                      precision=Precision(weights=compute, compute=compute))
    return HFGenerator(policy, (cfg.get("backend") or {}).get("generation_batch_size"))
