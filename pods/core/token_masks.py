"""Token masks: which completion tokens carry the policy gradient.

    keep = token_mask("entropy_top", mask, entropy=H, quantile=0.2)               # mask, H [B, T] -> [B, T] bool
    keep = token_mask("adv_entropy_top", mask, entropy=H, advantages=A)           # A [B] per completion
    loss, _ = policy_loss(logp, adv, mask & keep)                                 # the loss sees only those

Contract: the result is a subset of `mask` (padding never kept); `quantile` is the fraction of the batch's valid
tokens kept (TRL's top_entropy_quantile), ties at the cut kept; a batch with no valid token keeps none. The
quantile is over whatever batch is passed (TRL: each forward micro-batch, gathered over processes). docs/rules.md.
"""

from __future__ import annotations

from typing import Callable

import torch

from pods.core.registry import lookup, registrar, require

TOKEN_MASKS: dict[str, Callable[..., torch.Tensor]] = {}
NEEDS: dict[str, tuple[str, ...]] = {}


token_rule = registrar(TOKEN_MASKS, NEEDS)  # @token_rule("entropy_top", needs=("entropy",)) where a mask is implemented


def _top(score: torch.Tensor, mask: torch.Tensor, quantile: float) -> torch.Tensor:
    """[B, T] -> [B, T] bool: valid tokens whose score is at least the (1 - quantile) quantile of the valid ones."""
    valid = score[mask].float()
    if valid.numel() == 0:
        return torch.zeros_like(mask)
    return (score.float() >= torch.quantile(valid, 1 - quantile)) & mask


@token_rule("none")
def none(mask: torch.Tensor, **_) -> torch.Tensor:
    """Every valid token (today's loss)."""
    return mask.clone()


@token_rule("entropy_top", needs=("entropy",))
def entropy_top(mask: torch.Tensor, *, entropy: torch.Tensor, quantile: float, **_) -> torch.Tensor:
    """The top `quantile` of tokens by entropy (80/20 forking tokens, arXiv 2506.01939; TRL's mask)."""
    return _top(entropy, mask, quantile)


@token_rule("adv_entropy_top", needs=("entropy", "advantages"))
def adv_entropy_top(mask: torch.Tensor, *, entropy: torch.Tensor, advantages: torch.Tensor, quantile: float,
                    **_) -> torch.Tensor:
    """The top `quantile` of tokens by |advantage| x entropy (D3S's token level, arXiv 2509.22115)."""
    return _top(advantages.float().abs().unsqueeze(1) * entropy.float(), mask, quantile)


def token_mask(name: str, mask: torch.Tensor, *, entropy: torch.Tensor | None = None,
               advantages: torch.Tensor | None = None, quantile: float = 0.2) -> torch.Tensor:
    """[B, T] bool mask of the tokens to train on (a subset of `mask`); see the module docstring."""
    fn = lookup("token mask", name, TOKEN_MASKS)
    require("token mask", name, NEEDS[name], entropy=entropy, advantages=advantages)
    if not 0 < quantile <= 1:
        raise ValueError(f"quantile (the fraction of tokens kept) must be in (0, 1], got {quantile}")
    mask = torch.as_tensor(mask).bool()
    if entropy is not None and entropy.shape != mask.shape:
        raise ValueError(f"entropy must have the mask's shape {tuple(mask.shape)}, got {tuple(entropy.shape)}")
    if advantages is not None and advantages.shape != mask.shape[:1]:
        raise ValueError(f"advantages must be [B] = [{mask.shape[0]}], got {tuple(advantages.shape)}")
    return fn(mask, entropy=entropy, advantages=advantages, quantile=quantile)
