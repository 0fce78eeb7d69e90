"""The GRPO policy loss as pure tensor functions.

    logp = token_logprobs(logits, ids)                      # [B, T, V], [B, T] -> [B, T]
    logp = token_logprobs(logits, ids, temperature=0.9)     # log-probs under softmax(logits / 0.9)
    loss, metrics = policy_loss(logp, adv, mask)            # adv [B], mask [B, T]

Every batch of rollouts is trained on once, right after it was sampled, so the importance ratio
pi / pi_old is exactly 1 and PPO clipping never acts: the loss is -A * exp(logp - logp.detach())
per token (value -A, gradient -A * d logp), as in the authors' single-GPU trainer
(trainer/maxvargrpo_trainer.py:586 of YixuanEvenXu/pods at 3fc107e) and TRL with num_iterations = 1.
Optional k3 KL penalty against reference log-probs (omitted when beta == 0), and two aggregations:
"sequence" (mean over each completion's tokens, then over completions: the paper's,
maxvargrpo_trainer.py:588) and "token" (mean over all tokens). `denominator` lets a caller that
splits a batch into micro-batches normalise every micro-batch by the whole batch's count, so
accumulated gradients equal the full-batch gradient.
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


def policy_loss(
    logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    ref_logp: torch.Tensor | None = None,
    beta: float = 0.0,
    aggregation: str = "sequence",
    denominator: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """GRPO loss for B completions sampled by the current policy (ratio 1).

    logp [B, T] current log-probs (with grad); advantages [B]; mask [B, T] 1 on completion tokens;
    ref_logp [B, T] reference log-probs, required when beta > 0.
    denominator: number of sequences ("sequence") or tokens ("token") of the full batch; default
    is this batch's own count.
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {aggregation!r}; valid: {', '.join(AGGREGATIONS)}")
    if beta > 0 and ref_logp is None:
        raise ValueError("beta > 0 needs ref_logp (reference log-probs)")
    mask = mask.to(logp.dtype)
    adv = advantages.to(logp.dtype).unsqueeze(1)  # [B, 1]
    ratio = torch.exp((logp - logp.detach()) * mask)  # [B, T]: 1, with the gradient of logp
    per_token = -ratio * adv  # [B, T]
    kl = None
    if beta > 0:
        delta = (ref_logp.detach() - logp) * mask  # k3 estimator: exp(d) - d - 1 >= 0
        kl = torch.exp(delta) - delta - 1
        per_token = per_token + beta * kl

    tokens = mask.sum(1).clamp(min=1)  # [B]
    if aggregation == "sequence":
        per_seq = (per_token * mask).sum(1) / tokens  # [B]
        loss = per_seq.sum() / (denominator or logp.shape[0])
    else:
        loss = (per_token * mask).sum() / (denominator or mask.sum().clamp(min=1))

    with torch.no_grad():
        metrics = {"completion_tokens": float(mask.sum())}
        if kl is not None:
            metrics["kl"] = float((kl * mask).sum() / mask.sum().clamp(min=1))
    return loss, metrics
