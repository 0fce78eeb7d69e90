"""Peak GPU memory of a training run, estimated from its config before anything loads.

    arch = architecture(cfg.model)                  # the model's numbers (config/model/*.yaml, or model.tiny)
    est = estimate(arch, workload(cfg), total_gib=44.99)
    print(est.table()); est.total_gib               # one row per item, each with how it was counted
    knobs(arch, workload(cfg), total_gib=44.99, available_gib=44.99)   # settings that would make it fit

Pure arithmetic (no torch, no GPU): weights (by dtype, NF4), LoRA or fp32 masters, gradients, optimizer state, one
micro-batch's activations (gradient checkpointing or not), the loss's logits, the reference copy and the generator
(vLLM / Unsloth: `gpu_memory_utilization` of the card; hf: `model.generate`'s KV cache). What differs by backend
is its declaration (`pods.backends.facts(name)`: engine, engine_holds_base, offloads_activations). docs/gpu.md "Memory".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from pods.backends import facts
from pods.backends.tiny import MLP_RATIO, VOCAB

GIB = 2**30
# GPU memory as nvidia-smi reports it, in GiB (`--gpu NAME` of scripts/preflight.py)
GPUS = {"L4": 22.49, "A10G": 22.49, "RTX4090": 23.99, "V100-32GB": 32.0, "A100-40GB": 40.0, "L40S": 44.99,
        "A6000": 47.99, "A100-80GB": 80.0, "H100": 79.65, "H200": 140.4, "B200": 178.4}
NF4_BYTES = 0.5 + 1 / 64 + 4 / (64 * 256)  # bitsandbytes NF4, block 64, absmax 8-bit + fp32 per 256 blocks
NF4_EXPANDED_BYTES = 0.5 + 4 / 64  # vLLM's bitsandbytes loader expands the absmax to fp32 once at load
ADAM_BYTES = {"adamw": 8.0, "adamw_8bit": 2.0 + 8 / 2048}  # fp32 m and v; bnb: 8-bit m, v + fp32 absmax / 2048
CONTEXT_GIB = 1.0  # CUDA context, cuBLAS workspaces and kernels (outside torch's allocator): 0.8-1.2 GiB with CUDA 12-13
SLACK = 0.05  # torch's caching allocator: fragmentation, as a share of the trainee's memory
ENGINE_OVERHEAD_GIB = 1.5  # vLLM inside its share: activation profile, sampler, CUDA graphs
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class Architecture:
    """A decoder-only transformer (Llama / Qwen2 family) by the numbers of its config.json."""

    layers: int  # num_hidden_layers
    hidden: int  # hidden_size
    intermediate: int  # intermediate_size
    heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads
    vocab: int  # vocab_size
    tied: bool  # tie_word_embeddings: lm_head shares the embedding
    attention_bias: bool  # q, k, v projections have biases (Qwen2)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) features of each linear layer of one block."""
        h, q, kv, i = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim, self.intermediate
        return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
                "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h)}

    def linear_params(self) -> int:
        """Weights of all blocks' linear layers (what 4-bit quantizes)."""
        return self.layers * sum(a * b for a, b in self.linear_shapes().values())

    def params(self) -> int:
        """All parameters: embedding, blocks (linears, q/k/v biases, 2 norms), final norm, untied lm_head."""
        bias = (self.heads + 2 * self.kv_heads) * self.head_dim if self.attention_bias else 0
        embedding = self.vocab * self.hidden
        return embedding * (1 if self.tied else 2) + self.linear_params() + self.layers * (bias + 2 * self.hidden) \
            + self.hidden

    def lora_params(self, rank: int, targets) -> int:
        """LoRA A and B of every targeted linear layer: rank * (in + out) each."""
        shapes = self.linear_shapes()
        return self.layers * sum(rank * sum(shapes[t]) for t in targets if t in shapes)

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        """KV cache of one token over all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes


ARCHITECTURE_KEYS = ("layers", "hidden", "intermediate", "heads", "kv_heads", "vocab", "tied_embeddings",
                     "attention_bias")  # model.architecture (pods.config.schema.ArchitectureConfig) but params


def architecture(model_cfg) -> Architecture | None:
    """The numbers of `model.architecture` (all set), of the tiny model (model.tiny), or None: unknown here."""
    if model_cfg.name == "tiny":
        t = model_cfg.tiny
        return Architecture(layers=int(t.layers), hidden=int(t.hidden), intermediate=MLP_RATIO * int(t.hidden),
                            heads=int(t.heads), kv_heads=int(t.kv_heads), vocab=VOCAB, tied=True,
                            attention_bias=t.arch == "qwen2")
    a = model_cfg.get("architecture") or {}
    if any(a.get(k) is None for k in ARCHITECTURE_KEYS):
        return None
    return Architecture(layers=int(a.layers), hidden=int(a.hidden), intermediate=int(a.intermediate),
                        heads=int(a.heads), kv_heads=int(a.kv_heads), vocab=int(a.vocab),
                        tied=bool(a.tied_embeddings), attention_bias=bool(a.attention_bias))


def from_hf_config(config) -> Architecture:
    """The numbers of a transformers config (a checkpoint's config.json)."""
    return Architecture(layers=config.num_hidden_layers, hidden=config.hidden_size,
                        intermediate=config.intermediate_size, heads=config.num_attention_heads,
                        kv_heads=getattr(config, "num_key_value_heads", None) or config.num_attention_heads,
                        vocab=config.vocab_size, tied=bool(getattr(config, "tie_word_embeddings", False)),
                        attention_bias=bool(getattr(config, "attention_bias", config.model_type == "qwen2")))


@dataclass(frozen=True)
class Workload:
    """The settings of a run that its memory depends on (`workload(cfg)` reads them from the config)."""

    backend: str = "hf"  # a name of pods.backends.BACKENDS: its facts decide the terms below
    lora_rank: int = 64  # 0: full-parameter (fp32 master weights)
    targets: tuple = LINEARS  # LoRA target modules
    four_bit: bool = True  # NF4 base (LoRA only)
    compute_bytes: int = 2  # model.dtype: 2 (bf16 / fp16) or 4 (float32)
    gradient_checkpointing: bool = True
    optimizer: str = "adamw_8bit"
    micro_batch: int = 4  # rl.micro_batch_size
    prompt_tokens: int = 512  # rl.max_prompt_tokens
    completion_tokens: int = 512  # rl.max_completion_tokens
    sequences: int = 64  # completions generated per round: rl.prompts_per_step * rl.n
    generation_batch: int | None = None  # hf: completions per model.generate call (null: all)
    beta: float = 0.0  # KL coefficient: > 0 keeps a reference copy of a full-parameter model
    reference_pass: bool = False  # rl.reference_pass=always: the reference pass (and copy) at beta = 0 too
    divide_logits: bool = False  # the loss divides the logits by rl.temperature (one more fp32 copy)
    gpu_memory_utilization: float | None = None  # the vLLM engine's share of the card (vllm, unsloth)
    notes: tuple = field(default=(), compare=False)  # what the estimate had to assume


@dataclass(frozen=True)
class Row:
    item: str
    gib: float
    how: str


@dataclass
class Estimate:
    """Rows of one estimate; `total_gib` their sum (the hf backend's generation and update do not overlap)."""

    rows: list[Row]
    total_gib: float
    generation: str  # how the generator's sequences fit (vLLM waves, hf batches)

    def table(self) -> str:
        width = max(len(r.item) for r in self.rows)
        lines = [f"  {'item':<{width}}  {'GiB':>6}  how"]
        lines += [f"  {r.item:<{width}}  {r.gib:>6.2f}  {r.how}" for r in self.rows]
        return "\n".join(lines + [f"  {'total':<{width}}  {self.total_gib:>6.2f}"])


def workload(cfg) -> Workload:
    """The Workload of a composed train.py config (config/train.yaml)."""
    m, rl, b = cfg.model, cfg.rl, cfg.backend
    rank = int(m.lora.rank)
    dtype = str(m.dtype)
    notes = ("model.dtype=auto: counted as a 16-bit checkpoint",) if dtype == "auto" else ()
    name = str(b.name)
    return Workload(
        backend=name, lora_rank=rank, targets=tuple(m.lora.target_modules),
        four_bit=bool(m.load_in_4bit) and rank > 0, compute_bytes=4 if dtype == "float32" else 2,
        gradient_checkpointing=bool(m.gradient_checkpointing), optimizer=str(cfg.optim.name),
        micro_batch=int(rl.micro_batch_size), prompt_tokens=int(rl.max_prompt_tokens),
        completion_tokens=int(rl.max_completion_tokens), sequences=int(rl.prompts_per_step) * int(rl.n),
        generation_batch=b.get("generation_batch_size"), beta=float(rl.beta),
        reference_pass=str(rl.get("reference_pass", "auto")) == "always",
        divide_logits=bool(rl.logprob_temperature) and float(rl.temperature) != 1.0,
        gpu_memory_utilization=float(b.gpu_memory_utilization) if facts(name).engine else None,
        notes=notes)


def _gib(n_bytes: float) -> float:
    return n_bytes / GIB


def _params(n: int) -> str:
    return f"{n / 1e9:.2f} B params" if n >= 1e8 else f"{n / 1e6:.2f} M params" if n >= 1e5 else f"{n:,} params"


def weights(arch: Architecture, w: Workload) -> list[Row]:
    """The trainee's weights, trainable parameters, gradients, optimizer state and reference copy."""
    total, a = arch.params(), w.compute_bytes
    rows = []
    if w.lora_rank == 0:
        rows.append(Row("fp32 master weights", _gib(4 * total), f"{_params(total)} x 4 B (full-parameter)"))
        trainable = total
    else:
        if facts(w.backend).engine_holds_base:
            rows.append(Row("base weights", 0.0, f"held in {facts(w.backend).engine} share (below), shared with "
                            "training"))
        elif w.four_bit:
            linear = arch.linear_params()
            rows.append(Row("base weights (NF4)", _gib(linear * NF4_BYTES + (total - linear) * a),
                            f"{_params(linear)} of linear layers x {NF4_BYTES:.3f} B + {_params(total - linear)} "
                            f"x {a} B"))
        else:
            rows.append(Row("base weights", _gib(total * a), f"{_params(total)} x {a} B"))
        trainable = arch.lora_params(w.lora_rank, w.targets)
        rows.append(Row(f"LoRA rank {w.lora_rank} (fp32)", _gib(4 * trainable),
                        f"{_params(trainable)} on {len([t for t in w.targets if t in LINEARS])} modules x 4 B"))
        copy = facts(w.backend).adapter_copy_bytes
        if copy:
            rows.append(Row(f"{facts(w.backend).label}'s copy of the adapter", _gib(copy * trainable),
                            f"{_params(trainable)} x {copy} B, kept on the GPU for its engine"))
        if w.compute_bytes < 4:  # autocast caches each fp32 leaf weight's cast for the forward and backward
            rows.append(Row("autocast's copies of the LoRA weights", _gib(w.compute_bytes * trainable),
                            f"{_params(trainable)} x {w.compute_bytes} B"))
    rows.append(Row("gradients (fp32)", _gib(4 * trainable), f"{_params(trainable)} x 4 B"))
    opt = ADAM_BYTES.get(w.optimizer, ADAM_BYTES["adamw"])
    rows.append(Row(f"optimizer ({w.optimizer})", _gib(opt * trainable), f"{_params(trainable)} x {opt:.3g} B"))
    if w.beta > 0 or w.reference_pass:
        copy = total * a if w.lora_rank == 0 else 0
        why = "rl.beta > 0" if w.beta > 0 else "rl.reference_pass=always"
        rows.append(Row("reference model", _gib(copy), f"a {a}-byte copy ({why})" if copy else
                        "the base with the adapter disabled: no copy"))
    return rows


def layer_bytes_per_token(arch: Architecture, w: Workload) -> float:
    """Bytes one transformer block saves for its backward, per token (HF Llama / Qwen2, SDPA, autocast).

    Counted from the tensors autograd saves (tests/pods/backends/test_memory.py counts them on CPU):
    two RMSNorms (fp32 input, rsqrt; + the fp32 product when their weights train); SDPA's q, k, v,
    output and log-sum-exp; SiLU's input, its output and up's output; the input of every trained
    linear layer, cast to the compute dtype (LoRA: each adapter's own copy; a frozen base saves none);
    the LoRA A outputs. o_proj's input is the attention output itself unless PEFT casts a copy for its adapter.
    """
    a, h, i, kv = w.compute_bytes, arch.hidden, arch.intermediate, arch.kv_heads * arch.head_dim
    full = w.lora_rank == 0
    trained = LINEARS if full else [t for t in w.targets if t in LINEARS]
    norms = 2 * ((8 if full else 4) * h + 4)
    attention = a * (2 * h + 2 * kv) + 4 * arch.heads
    mlp = 3 * a * i
    shapes = arch.linear_shapes()
    inputs = {t: shapes[t][0] for t in trained if not (full and t == "o_proj")}
    if a == 4:  # no autocast: linear layers reading one tensor save it once (q, k, v; gate, up)
        inputs = {t: n for t, n in inputs.items() if t not in ("k_proj", "v_proj", "up_proj")}
    lora = 0 if full else a * w.lora_rank * len(trained)
    return norms + attention + mlp + a * sum(inputs.values()) + lora


def activations(arch: Architecture, w: Workload) -> list[Row]:
    """One micro-batch's activations and the loss's logits (the peak of the update)."""
    a, seq = w.compute_bytes, w.prompt_tokens + w.completion_tokens
    tokens = w.micro_batch * seq
    layer = layer_bytes_per_token(arch, w) * tokens
    backward = a * 2 * (arch.intermediate + arch.hidden) * tokens  # gradients of one block's widest tensors
    shape = f"{w.micro_batch} x ({w.prompt_tokens} + {w.completion_tokens}) tokens"
    if w.gradient_checkpointing:
        r, offloads = 4 if w.lora_rank == 0 else a, facts(w.backend).offloads_activations
        kept = 0 if offloads else arch.layers * r * arch.hidden * tokens
        where = f"offloaded to CPU by {facts(w.backend).label}" if offloads else f"{arch.layers} layer inputs"
        rows = [Row("activations (checkpointed)", _gib(kept + layer + backward),
                    f"{shape}: {where} + 1 block recomputed ({layer_bytes_per_token(arch, w):,.0f} B/token)")]
    else:
        rows = [Row("activations", _gib(arch.layers * layer + backward),
                    f"{shape}: {arch.layers} blocks x {layer_bytes_per_token(arch, w):,.0f} B/token "
                    "(model.gradient_checkpointing=false)")]
    if w.lora_rank == 0 and a < 4:  # autocast's copies of the fp32 masters that the backward needs
        blocks = arch.linear_params() if not w.gradient_checkpointing else arch.linear_params() // arch.layers
        rows.append(Row("weight copies for the backward", _gib(a * (blocks + arch.vocab * arch.hidden)),
                        f"{a}-byte copies of {'one block' if w.gradient_checkpointing else 'every block'}'s "
                        "linear weights and of lm_head (cast by autocast, saved by autograd)"))
    # the output, its fp32 copy (or / temperature) saved by logsumexp, 3 fp32 temporaries of the backward (measured
    # on CPU: tests/pods/backends/test_memory.py); a float32 model's output is its own fp32 copy
    per = a + 12 + (4 if a < 4 or w.divide_logits else 0)
    elements = w.micro_batch * (w.completion_tokens + 1) * arch.vocab
    rows.append(Row("logits of the loss", _gib(per * elements),
                    f"{w.micro_batch} x {w.completion_tokens + 1} x {arch.vocab:,} vocab x {per} B (output, fp32 "
                    "copy, 3 fp32 temporaries of the backward)"))
    return rows


def engine_weights_gib(arch: Architecture, w: Workload) -> float:
    """The vLLM engine's weights (4-bit expanded scales, or the compute dtype) and its LoRA slot."""
    total, a = arch.params(), w.compute_bytes
    if w.four_bit:
        linear = arch.linear_params()
        base = linear * NF4_EXPANDED_BYTES + (total - linear) * a
    else:
        base = total * a
    return _gib(base + arch.lora_params(w.lora_rank, w.targets) * a)


def generator(arch: Architecture, w: Workload, total_gib: float) -> tuple[Row, str]:
    """The generator's row and how its sequences fit (vLLM: waves of sequences its KV cache holds)."""
    seq = w.prompt_tokens + w.completion_tokens
    per_seq = arch.kv_bytes_per_token(w.compute_bytes) * seq
    engine = facts(w.backend).engine
    if engine is None:  # model.generate between updates
        batch = min(w.generation_batch or w.sequences, w.sequences)
        prefill = w.compute_bytes * 4 * (arch.intermediate + arch.hidden) * batch * w.prompt_tokens
        sampling = 3 * 4 * batch * arch.vocab
        row = Row("generation (model.generate)", _gib(per_seq * batch + prefill + sampling),
                  f"KV cache of {batch} sequences x {seq} tokens + prefill of one block + sampling "
                  "(not during the update: the larger of the two counts)")
        waves = math.ceil(w.sequences / batch)
        return row, f"{w.sequences} sequences in {waves} model.generate call{'s' * (waves > 1)}"
    share = engine_share_gib(w, total_gib)
    own = engine_weights_gib(arch, w) + ENGINE_OVERHEAD_GIB
    fit = int(max(share - own, 0) * GIB // per_seq)
    cap = facts(w.backend).engine_max_seqs
    fit = min(fit, cap(share - own)) if cap and fit else fit
    of = f"({total_gib:.2f} - {CONTEXT_GIB:g} GiB free)" if facts(w.backend).engine_share_of_free else f"{total_gib:.2f} GiB"
    row = Row(f"{engine} (its share)", share,
              f"gpu_memory_utilization {w.gpu_memory_utilization:g} x {of}: weights "
              f"{engine_weights_gib(arch, w):.2f} + {ENGINE_OVERHEAD_GIB} + KV cache for {fit} sequences of {seq} "
              f"tokens ({w.sequences} per round)")
    if fit == 0:
        return row, f"vLLM cannot start: its share {share:.2f} GiB is less than its weights and overhead {own:.2f} GiB"
    waves = math.ceil(w.sequences / fit)
    return row, f"vLLM holds {min(fit, w.sequences)} of {w.sequences} sequences at once: {waves} wave" + "s" * (waves > 1)


def engine_share_gib(w: Workload, total_gib: float) -> float:
    """The GiB the engine takes: gpu_memory_utilization of the card, or of what is free once the CUDA context is
    (Unsloth, which starts its vLLM before the trainee loads)."""
    base = total_gib - CONTEXT_GIB if facts(w.backend).engine_share_of_free else total_gib
    return (w.gpu_memory_utilization or 0.0) * base


def estimate(arch: Architecture, w: Workload, *, total_gib: float) -> Estimate:
    """The rows and the peak of a run of `w` on a card of `total_gib` (vLLM's share is a fraction of it)."""
    trainee, update = weights(arch, w), activations(arch, w)
    gen_row, generation = generator(arch, w, total_gib)
    grads = next(r.gib for r in trainee if r.item.startswith("gradients"))
    held, during = sum(r.gib for r in trainee), sum(r.gib for r in update)
    if facts(w.backend).engine is None:  # generation and the update take turns; gradients only during the update
        peak, engine = held - grads + max(grads + during, gen_row.gib), 0.0
    else:
        peak, engine = held + during, gen_row.gib
    slack = SLACK * peak
    rows = trainee + update + [gen_row, Row("CUDA context", CONTEXT_GIB, "context, cuBLAS workspaces, kernels"),
                               Row("allocator slack", slack, f"{SLACK:.0%} of the trainee's memory")]
    return Estimate(rows, peak + engine + CONTEXT_GIB + slack, generation)


def _candidates(arch: Architecture, w: Workload, total_gib: float, available_gib: float):
    """Single changes that lower the peak, most harmless first: (overrides, changed Workload)."""
    if w.gpu_memory_utilization is not None:  # the engine's share: what the trainee leaves, at least its own needs
        rest = estimate(arch, w, total_gib=total_gib).total_gib - engine_share_gib(w, total_gib)
        util = math.floor((available_gib - rest) / total_gib * 100) / 100
        changed = replace(w, gpu_memory_utilization=util)
        if 0 < util < w.gpu_memory_utilization and engine_share_gib(changed, total_gib) > engine_weights_gib(arch, w) \
                + ENGINE_OVERHEAD_GIB:
            waves = generator(arch, changed, total_gib)[1].split(": ")[-1]
            yield [f"backend.gpu_memory_utilization={util:g} ({waves})"], changed
    mb = w.micro_batch // 2
    while mb >= 1:
        yield [f"rl.micro_batch_size={mb}"], replace(w, micro_batch=mb)
        mb //= 2
    if not w.gradient_checkpointing:
        yield ["model.gradient_checkpointing=true"], replace(w, gradient_checkpointing=True)
    if w.optimizer != "adamw_8bit":
        yield ["optim.name=adamw_8bit"], replace(w, optimizer="adamw_8bit")
    if w.lora_rank > 0 and not w.four_bit:
        yield ["model.load_in_4bit=true"], replace(w, four_bit=True)
    if w.lora_rank == 0:
        yield ["model.lora.rank=64 model.load_in_4bit=true (LoRA)"], replace(w, lora_rank=64, four_bit=True)


def knobs(arch: Architecture, w: Workload, *, total_gib: float, available_gib: float) -> list[str]:
    """Settings that make the run fit, at most three: the single changes that do (most harmless first), else
    the harmless knobs combined (each at its strongest value in turn); training LoRA instead comes last."""
    def fits(x: Workload) -> bool:
        return estimate(arch, x, total_gib=total_gib).total_gib <= available_gib

    single, keys = [], set()
    for change, changed in _candidates(arch, w, total_gib, available_gib):
        key = change[0].split("=")[0]
        if key not in keys and fits(changed):
            single.append(" ".join(change))
            keys.add(key)
    harmless = [s for s in single if not s.endswith("(LoRA)")]
    if not harmless:
        applied, combined = {}, w
        for _ in range(len(LINEARS)):
            strongest = {c[0].split("=")[0]: (c, x) for c, x in _candidates(arch, combined, total_gib, available_gib)
                         if not c[0].endswith("(LoRA)")}
            fresh = [k for k in strongest if k not in applied or k == "backend.gpu_memory_utilization"]
            if not fresh:
                break
            change, combined = strongest[fresh[0]]  # the first knob not yet used, at its strongest value
            applied[fresh[0]] = change[0]
            if fits(combined):
                harmless = [" ".join(applied.values())]
                break
    return (harmless + [s for s in single if s.endswith("(LoRA)")])[:3]


def smallest_gpu_gib(est: Estimate, w: Workload, total_gib: float) -> float:
    """The card this run needs (vLLM's share grows with the card: solve need = rest + share x card)."""
    if w.gpu_memory_utilization is None:
        return est.total_gib
    rest = est.total_gib - engine_share_gib(w, total_gib)
    if w.gpu_memory_utilization >= 1:
        return math.inf
    if facts(w.backend).engine_share_of_free:  # need = rest + u (card - context)
        return (rest - w.gpu_memory_utilization * CONTEXT_GIB) / (1 - w.gpu_memory_utilization)
    return rest / (1 - w.gpu_memory_utilization)


def verdict(arch: Architecture, w: Workload, *, total_gib: float, available_gib: float,
            est: Estimate | None = None) -> tuple[bool, str]:
    """(fits, the last line): 'fits: X GiB of N GiB' or 'does not fit: X GiB needed, N GiB available; try ...'.
    `est`: estimate(arch, w, total_gib=total_gib) when the caller has it already."""
    est = est or estimate(arch, w, total_gib=total_gib)
    if est.total_gib <= available_gib:
        return True, f"fits: {est.total_gib:.1f} GiB of {available_gib:.1f} GiB"
    found = knobs(arch, w, total_gib=total_gib, available_gib=available_gib)
    card = f"a GPU with {math.ceil(smallest_gpu_gib(est, w, total_gib))} GiB or more"
    return False, (f"does not fit: {est.total_gib:.1f} GiB needed, {available_gib:.1f} GiB available; try "
                   + "; or ".join([*found, card]))


def describe(model_name: str, arch: Architecture, w: Workload) -> str:
    """'Qwen/Qwen2.5-3B-Instruct (3.09 B params), backend unsloth, LoRA 64 on a 4-bit base'."""
    train = "full-parameter (fp32 master weights)" if w.lora_rank == 0 else \
        f"LoRA {w.lora_rank} on a {'4-bit' if w.four_bit else f'{8 * w.compute_bytes}-bit'} base"
    return f"{model_name} ({_params(arch.params())}), backend {w.backend}, {train}"
