"""The two interfaces every backend implements: `Generator` (sampling) and `Policy` (training).

    rollouts = generator.generate(prompt_ids, n=8, sampling=Sampling(seed=sampling_seed(seed, step)))
    logp, mask = policy.token_logprobs(rollouts.flat_prompt_ids(), rollouts.completion_ids)  # [B, T]
    generator.update_weights(policy)                # after the optimizer step

The trainer only talks to these and to `sampling_seed(seed, step)`, the per-step sampling seed. Prompts
and completions travel as unpadded token-id lists, so a transformers policy can train on rollouts
sampled by vLLM and vice versa.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, runtime_checkable

import torch

from pods.core.rollouts import Rollouts
from pods.settings import setting


@dataclass(frozen=True)
class Sampling:
    """How to sample completions."""

    max_tokens: int = 512  # most new tokens per completion
    temperature: float = 0.9  # 0 means greedy
    top_p: float = 1.0  # nucleus sampling mass
    seed: int | None = None  # per-call seed (None: the generator's own RNG stream)


def sampling_seed(seed: int, step: int, round_: int = 0) -> int:
    """The sampling seed of training step `step` (0-based) of a run with seed `seed`: a pure function.

    The trainer passes it as `Sampling(seed=...)` to every backend, so a resumed run samples step k
    exactly as the uninterrupted run did, whatever the engine's own RNG state (vLLM's is not
    checkpointed). The first 62 bits of SHA-256("pods-sampling:<seed>:<step>"): distinct per (seed,
    step), far apart, and small enough that a backend's per-completion offsets (vLLM: seed + g * n + j)
    stay below 2**63. `round_` > 0: the further generation rounds of dynamic sampling (pods.core.collect).
    """
    key = f"pods-sampling:{int(seed)}:{int(step)}" + (f":{int(round_)}" if round_ else "")
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 2


@runtime_checkable
class Generator(Protocol):
    """Samples n completions per prompt from the current policy weights."""

    def generate(self, prompts: list[list[int]], n: int, sampling: Sampling) -> Rollouts:
        """Return `Rollouts` with G = len(prompts) groups of n completions each."""
        ...

    def update_weights(self, policy: "Policy") -> None:
        """Make later `generate` calls use the policy's current (just updated) weights."""
        ...


@runtime_checkable
class Policy(Protocol):
    """The trainable model (LoRA adapter or full weights) with its tokenizer."""

    tokenizer: object

    def token_logprobs(
        self, prompts: list[list[int]], completions: list[list[int]], *, reference: bool = False,
        temperature: float = 1.0, entropy: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probs of each completion token given its prompt.

        Returns (logp [B, T], mask [B, T]) with T the longest completion; mask is 1.0 on real
        tokens. `reference=True` evaluates the frozen reference model (adapter disabled), without
        gradient. `temperature`: log-probs of softmax(logits / temperature) (pods.core.losses.token_logprobs).
        entropy=True: also each position's entropy [B, T] from the same logits (a third item, no gradient).
        """
        ...

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        ...

    def named_trainable_parameters(self) -> list[tuple[str, torch.nn.Parameter]]:
        """(name, parameter) of every trainable parameter (the optimizer exempts biases and norms by name)."""
        ...

    def save(self, path: Path) -> None:
        """Write the trainable weights (e.g. the LoRA adapter) into directory `path`."""
        ...

    def load(self, path: Path) -> None:
        """Load trainable weights written by `save`."""
        ...


@dataclass
class BackendSettings:
    """The `backend` section's one key every backend has; each backend's settings add its own (Facts.settings)."""

    name: str = setting(help="backend registry name (pods.backends.BACKENDS)", choices="pods.backends:BACKENDS")


@dataclass(frozen=True)
class Facts:
    """What a backend declares about itself (`FACTS` in its module; `pods.backends.facts(name)`): read by the
    start-up checks, the memory estimate (pods.backends.memory) and the first-contact check (pods.firstcontact.gpucheck)."""

    label: str  # its name in messages: "transformers", "vLLM", "Unsloth"
    settings: type = BackendSettings  # its `backend` section's keys: a BackendSettings dataclass of setting() fields
    library: str | None = None  # the module it needs installed (`uv sync --extra gpu`); None: always here
    needs_cuda: bool = False  # trains only on a CUDA GPU ...
    cpu_build: bool = False  # ... unless its library is installed (a CPU build of it runs without one)
    length_key: str | None = None  # backend.<key>: the longest prompt + completion it holds
    engine: str | None = None  # who samples in its own share of the card (backend.gpu_memory_utilization),
    #                            as the memory table names it; None: model.generate, taking turns with the update
    engine_holds_base: bool = False  # the engine's share holds the base weights training uses (no copy of them)
    offloads_activations: bool = False  # checkpointed layer inputs wait on the CPU
    variants: tuple[tuple[str, bool], ...] = ()  # first-contact variants: (name, LoRA?); False: full-parameter
    tiny_ok: bool = True  # its first contact can use the tiny model
    tiny_overrides: tuple[str, ...] = ()  # the settings its first contact with the tiny model needs
    problems: Callable[..., list[str]] | None = None  # problems(cfg, cuda=...) -> [str]: its own start-up checks
    engine_share_of_free: bool = False  # gpu_memory_utilization is a share of the memory free when the engine
    #                                     starts (after the CUDA context), not of the card's total
    engine_max_seqs: Callable[[float], int] | None = None  # most sequences the engine runs at once, given the GiB
    #                                                        its KV cache gets (None: as many as fit)
    adapter_copy_bytes: int = 0  # bytes per LoRA parameter of a second, GPU-resident copy of the adapter

    @property
    def always_cuda(self) -> bool:
        """Whether its model goes on the GPU whatever backend.device says."""
        return self.needs_cuda and not self.cpu_build
