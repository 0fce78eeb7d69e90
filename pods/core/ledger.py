"""The rollout ledger's format: one row per prompt group per training step (pure; no file is touched here).

    rows = group_rows(step=3, round_=0, prompts=[7, 2], status=["trained", "dropped"], total=total,
                      per_fn={"correct": acc}, accuracy=acc, lengths=lengths, kept=idx)   # [B, n] each, idx [B, k]
    table = concat_rows([rows, ...])      # one step (every round, skipped prompts too): pods.core.ledger_writer

Contract: COLUMNS name the fixed columns; each reward function adds a list column `reward/<name>`. List columns hold
one value per rollout ([n], n may differ per group), `kept` the indices trained ([k], [] when not trained).
`status`: trained | dropped (generated, not trained: dynamic sampling) | skipped (a prompt rule skipped it: no
rollouts). VERSION changes whenever a reader of an older ledger would misread this one. docs/ledger.md.
"""

from __future__ import annotations

import re

import torch

FORMAT = "pods-ledger"
VERSION = 1
DIR = "ledger"  # <run_dir>/ledger/
META = "_ledger.json"  # the run's ledger settings (a leading _ keeps pyarrow.dataset from reading it as data)
FILE = re.compile(r"^steps-(\d+)-(\d+)\.parquet$")  # a data file: the steps it holds, first and last
STATUSES = ("trained", "dropped", "skipped")
SCALARS = ("step", "round", "slot", "group", "prompt", "position", "status", "n")  # one value per prompt group
LISTS = ("reward", "accuracy", "length", "entropy", "kept")  # one value per rollout (kept: per trained rollout)
REWARD_PREFIX = "reward/"  # + a reward function's name: its value per rollout


def version_problem(meta) -> str | None:
    """What makes a ledger description (its META file) unreadable by this version; None when it is readable."""
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        return f"not a pods rollout ledger (format {meta.get('format') if isinstance(meta, dict) else meta!r})"
    if meta.get("version") != VERSION:
        return f"a ledger of format version {meta.get('version')!r}; this pods reads and writes version {VERSION}"
    return None


def _ragged(values, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """[B, n] tensor or B 1-D tensors -> (flat values [sum n], lengths [B])."""
    if isinstance(values, torch.Tensor):
        if values.dim() != 2 or values.shape[0] != count:
            raise ValueError(f"expected [B={count}, n] values, got shape {tuple(values.shape)}")
        return values.reshape(-1), torch.full((count,), values.shape[1], dtype=torch.long)
    if len(values) != count:
        raise ValueError(f"expected {count} groups, got {len(values)}")
    flat = [torch.as_tensor(v).reshape(-1) for v in values]
    return (torch.cat(flat) if flat else torch.zeros(0)), torch.tensor([len(v) for v in flat], dtype=torch.long)


def group_rows(*, step: int, round_: int, prompts: list[int], status: list[str], total, per_fn: dict, accuracy,
               lengths, kept, group: list[int] | None = None, positions: list[int] | None = None,
               entropy=None) -> dict:
    """The ledger rows of one generation round's B groups: {column: tensor}; list columns as (values, lengths).

    total, per_fn values, accuracy, lengths, entropy: [B, n] (or B tensors of their own n); kept: [B, k] (or B
    tensors; [] where not trained); group: each group's position in the step's trained batch (-1: not trained);
    positions: each prompt's position in the prompt stream (-1: not known).
    """
    B = len(prompts)
    bad = sorted(set(status) - set(STATUSES))
    if bad or len(status) != B:
        raise ValueError(f"status must be {B} of {STATUSES}, got {status!r}")
    reward, n = _ragged(total, B)
    rows = {"step": torch.full((B,), step, dtype=torch.long), "round": torch.full((B,), round_, dtype=torch.long),
            "slot": torch.arange(B), "group": torch.tensor(group if group is not None else [-1] * B, dtype=torch.long),
            "prompt": torch.tensor(prompts, dtype=torch.long),
            "position": torch.tensor(positions if positions is not None else [-1] * B, dtype=torch.long),
            "status": list(status), "n": n,
            "reward": (reward.float(), n)}
    for name, values in per_fn.items():
        rows[REWARD_PREFIX + name] = (_ragged(values, B)[0].float(), n)
    rows["accuracy"] = (_ragged(accuracy, B)[0].float(), n)
    rows["length"] = (_ragged(lengths, B)[0].long(), n)
    ent = _ragged(entropy, B)[0].float() if entropy is not None else torch.full((int(n.sum()),), float("nan"))
    rows["entropy"] = (ent, n)
    rows["kept"] = _ragged(kept, B)
    return rows


def skipped_rows(*, step: int, round_: int, prompts: list[int], reward_names: list[str],
                 positions: list[int] | None = None) -> dict:
    """Rows of the prompts a prompt rule skipped in a generation round: no rollouts, every list empty."""
    B = len(prompts)
    empty = [torch.zeros(0)] * B
    return group_rows(step=step, round_=round_, prompts=prompts, positions=positions, status=["skipped"] * B, total=empty,
                      per_fn={k: empty for k in reward_names}, accuracy=empty, lengths=empty,
                      kept=[torch.zeros(0, dtype=torch.long)] * B)


def concat_rows(parts: list[dict]) -> dict:
    """Several `group_rows` results (same reward functions) as one: a training step's table."""
    if not parts:
        raise ValueError("concat_rows: nothing to concatenate")
    out = {}
    for key in parts[0]:
        cols = [p[key] for p in parts]
        if isinstance(cols[0], tuple):
            out[key] = (torch.cat([c[0] for c in cols]), torch.cat([c[1] for c in cols]))
        elif isinstance(cols[0], list):
            out[key] = [s for c in cols for s in c]
        else:
            out[key] = torch.cat(cols)
    return out
