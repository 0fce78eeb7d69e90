"""The GRPO policy loss as pure tensor functions.

    logp = token_logprobs(logits, ids)                      # [B, T, V], [B, T] -> [B, T]
    logp = token_logprobs(logits, ids, temperature=0.9)     # log-probs under softmax(logits / 0.9)
    loss, metrics = policy_loss(logp, adv, mask)            # adv [B], mask [B, T]

Ratio 1 (each batch is trained on once, right after sampling; TRL's num_iterations = 1): per token
-A * exp(logp - logp.detach()), value -A and gradient -A * d logp, plus beta x the k3 KL when beta > 0;
aggregated per "sequence" (mean over its tokens, then over completions) or per "token". `denominator`:
the whole batch's count, so micro-batch gradients add up to the full-batch one. docs/algorithms.md "Loss".
"""

from __future__ import annotations

import torch

AGGREGATIONS = ("sequence", "token")


def token_logprobs(logits: torch.Tensor, ids: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """[B, T, V] logits, [B, T] chosen ids -> [B, T] log-probabilities (float32) of softmax(logits / temperature).

    temperature = the sampling temperature gives the log-probs of the distribution the rollouts were
    drawn from (TRL, verl, the authors' 8-GPU fork); 1.0 those of the model itself (the authors'
    single-GPU trainer). See rl.logprob_temperature.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 to divide the logits by it, got {temperature}")
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    chosen = logits.gather(-1, ids.unsqueeze(-1)).squeeze(-1)  # [B, T]
    return chosen - torch.logsumexp(logits, dim=-1)


@torch.no_grad()
def token_entropy(logits: torch.Tensor, temperature: float = 1.0, chunk_elements: int = 2 ** 24) -> torch.Tensor:
    """[B, T, V] logits -> [B, T] entropy (nats, float32) of softmax(logits / temperature); no gradient.
    Rows go through in chunks of at most `chunk_elements` logits (64 MB of float32; TRL chunks likewise)."""
    B, T, V = logits.shape
    rows = max(1, chunk_elements // max(T * V, 1))
    out = []
    with torch.no_grad():  # a statistic for the ledger: no autograd graph on the loss's logits
        for chunk in logits.split(rows):  # [b, T, V]
            z = chunk.float() if temperature == 1.0 else chunk.float() / temperature
            logp = torch.log_softmax(z, dim=-1)
            out.append(-(logp.exp() * logp).sum(-1))
    return torch.cat(out) if out else logits.new_zeros((B, T), dtype=torch.float32)


def policy_loss(
    logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    ref_logp: torch.Tensor | None = None,
    beta: float = 0.0,
    aggregation: str = "sequence",
    denominator: float | None = None,
    keep: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """GRPO loss for B completions sampled by the current policy (ratio 1).

    logp [B, T] current log-probs (with grad); advantages [B]; mask [B, T] 1 on completion tokens;
    ref_logp [B, T] reference log-probs, required when beta > 0 (given at beta = 0: the KL is measured, not added).
    denominator: number of sequences ("sequence") or tokens ("token") of the full batch; default
    is this batch's own count. keep [B, T] bool (a token mask): only these tokens carry the policy term,
    the KL term and every count stay on `mask` (TRL's top_entropy_quantile).
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {aggregation!r}; valid: {', '.join(AGGREGATIONS)}")
    if beta > 0 and ref_logp is None:
        raise ValueError("beta > 0 needs ref_logp (reference log-probs)")
    mask = mask.to(logp.dtype)
    adv = advantages.to(logp.dtype).unsqueeze(1)  # [B, 1]
    ratio = torch.exp((logp - logp.detach()) * mask)  # [B, T]: 1, with the gradient of logp
    per_token = -ratio * adv  # [B, T]
    if keep is not None:  # TRL multiplies the policy term by its entropy mask before adding the KL term
        per_token = per_token * keep.to(logp.dtype)
    kl = None
    if ref_logp is not None:
        delta = (ref_logp.detach() - logp) * mask  # k3 estimator: exp(d) - d - 1 >= 0
        kl = torch.exp(delta) - delta - 1
        if beta > 0:  # at beta = 0 the loss does not see it (the authors added 0 x kl)
            per_token = per_token + beta * kl

    tokens = mask.sum(1).clamp(min=1)  # [B]
    if aggregation == "sequence":
        per_seq = (per_token * mask).sum(1) / tokens  # [B]
        loss = per_seq.sum() / (denominator or logp.shape[0])
    else:
        loss = (per_token * mask).sum() / (denominator or mask.sum().clamp(min=1))

    with torch.no_grad():
        metrics = {"completion_tokens": float(mask.sum())}
        if keep is not None:  # the tokens that carry the policy gradient
            metrics["trained_tokens"] = float((mask * keep.to(mask.dtype)).sum())
        if kl is not None:
            metrics["kl"] = float((kl * mask).sum() / mask.sum().clamp(min=1))
    return loss, metrics
