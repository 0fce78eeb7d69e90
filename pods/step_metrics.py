"""The metrics row of one training step (pods/trainer.py logs it to metrics.jsonl).

    row = step_metrics(rollouts, total, per_fn, correct, kept_idx, stats, grad_norm)

total [G, n] weighted rewards, per_fn {name: [G, n]}, correct [G, n] bool (the accuracy reward > 0),
kept_idx [G, k] the rollouts trained on. Keys: reward/total, reward/<fn> (means over all n),
reward_kept/total, reward_kept/<fn> (over the kept), accuracy, accuracy_kept,
frac_groups_with_spread(_kept) (groups whose rewards are not all equal), completion_length/{mean,max},
completion_length_kept/mean, frac_truncated, the update's stats (loss, kl), grad_norm.
"""

from __future__ import annotations

import torch


def _group_stats(prefix: str, total: torch.Tensor, per_fn: dict, acc: torch.Tensor, lengths) -> dict:
    """total [G, k], per_fn {name: [G, k]}, acc [G, k] -> metrics."""
    row = {f"{prefix}/total": float(total.mean())}
    row.update({f"{prefix}/{k}": float(v.mean()) for k, v in per_fn.items()})
    kept = prefix.endswith("_kept")
    row["accuracy_kept" if kept else "accuracy"] = float(acc.float().mean())
    spread = (total.max(1).values > total.min(1).values).float().mean()
    row["frac_groups_with_spread_kept" if kept else "frac_groups_with_spread"] = float(spread)
    row["completion_length_kept/mean" if kept else "completion_length/mean"] = float(lengths.mean())
    return row


def step_metrics(rollouts, total, per_fn, correct, kept_idx, stats, grad_norm) -> dict:
    """Metrics of one step: total [G, n], per_fn {name: [G, n]}, correct [G, n] bool, kept_idx [G, k]."""
    lengths = rollouts.completion_lengths()  # [G, n]
    row = _group_stats("reward", total, per_fn, correct, lengths)
    row.update(_group_stats("reward_kept", total.gather(1, kept_idx),
                            {k: v.gather(1, kept_idx) for k, v in per_fn.items()},
                            correct.gather(1, kept_idx), lengths.gather(1, kept_idx)))
    row["completion_length/max"] = float(lengths.max())
    row["frac_truncated"] = sum(r == "length" for r in rollouts.finish_reasons) / len(rollouts)
    row.update(stats)
    row["grad_norm"] = grad_norm
    return row
