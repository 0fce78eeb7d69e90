"""The rollout ledger writer: <run_dir>/ledger/ as Parquet files, appended as the run goes, resumable.

    ledger = Ledger(run_dir, meta={"n": 64, ...}, resume_step=0)   # meta -> ledger/_ledger.json
    ledger.record(step, pods.core.ledger.concat_rows([...]))       # buffered in memory
    ledger.flush()        # before every checkpoint (and every FLUSH_SECONDS): steps-<first>-<last>.parquet
    ledger.close()

Contract: a file is renamed into place only when complete; flushing before each checkpoint keeps every
checkpointed step on disk, and resuming from checkpoint-<k> drops the rows of steps > k (rewriting a file that
straddles k), so after kill -9 and resume the ledger holds each step once. A fresh start (step 0) moves an
earlier attempt's ledger aside; a ledger of another format version stops the run (ConfigError). docs/ledger.md.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch

from pods.core import ledger as fmt
from pods.errors import ConfigError
from pods.io import atomic_write_text, writing

FLUSH_SECONDS = 60.0  # a flush at most this long after a step is recorded (and before every checkpoint)
FLUSH_STEPS = 200  # ... or once this many steps are buffered


def ledger_files(directory: Path) -> list[tuple[int, int, Path]]:
    """(first step, last step, path) of every data file of a ledger directory, by first step."""
    found = [(int(m.group(1)), int(m.group(2)), p) for p in Path(directory).glob("steps-*.parquet")
             if (m := fmt.FILE.match(p.name))]
    return sorted(found)


def arrow_table(rows: dict, meta: dict | None = None):
    """A pyarrow Table of `pods.core.ledger` rows (list columns from (values, lengths))."""
    import numpy as np
    import pyarrow as pa

    types = {"step": pa.int32(), "round": pa.int16(), "slot": pa.int32(), "group": pa.int32(),
             "prompt": pa.int64(), "position": pa.int64(), "n": pa.int32(), "length": pa.int32(), "kept": pa.int16()}
    cols = {}
    for key, value in rows.items():
        if isinstance(value, tuple):
            values, lengths = value
            offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
            np.cumsum(lengths.numpy(), out=offsets[1:])
            flat = pa.array(values.numpy(), type=types.get(key, pa.float32()))
            cols[key] = pa.ListArray.from_arrays(pa.array(offsets), flat)
        elif isinstance(value, list):
            cols[key] = pa.array(value, type=pa.string()).dictionary_encode()
        else:
            cols[key] = pa.array(value.numpy(), type=types[key])
    table = pa.table(cols)
    if meta is not None:
        table = table.replace_schema_metadata({"pods_ledger": json.dumps({"format": fmt.FORMAT,
                                                                          "version": fmt.VERSION})})
    return table


def check_meta(directory: Path) -> dict | None:
    """The ledger's _ledger.json (None when absent); ConfigError for another format or version."""
    path = Path(directory) / fmt.META
    if not path.exists():
        return None
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path} is not a readable ledger description ({err}); move {Path(directory)} aside "
                          "(or set logging.ledger=false) to start a new ledger") from None
    problem = fmt.version_problem(meta)
    if problem:
        raise ConfigError(f"{Path(directory)} holds {problem}: move it aside (or set logging.ledger=false) to resume")
    return meta


class Ledger:
    """Buffers each step's rows and appends them to <run_dir>/ledger/ as Parquet files (see the module)."""

    def __init__(self, run_dir: Path, meta: dict, resume_step: int = 0, clock=time.monotonic, log=print):
        import pyarrow.parquet  # noqa: F401  loaded at start-up (seconds on a busy machine), not in a step's time

        self.dir = Path(run_dir) / fmt.DIR
        self.meta = {"format": fmt.FORMAT, "version": fmt.VERSION, **meta}
        self.clock, self.buffer, self.since = clock, [], None
        earlier = None
        if resume_step == 0:
            self._move_aside(log)
        else:
            earlier = check_meta(self.dir)
            self.truncate(resume_step)
        # the first step this ledger holds: a ledger switched on at a resume starts there (replay checks for gaps)
        self.meta["first_step"] = (earlier or {}).get("first_step", resume_step + 1)
        with writing(self.dir):
            self.dir.mkdir(parents=True, exist_ok=True)
        for tmp in self.dir.glob(".steps-*.tmp"):  # a write that kill -9 cut short
            tmp.unlink()
        atomic_write_text(self.dir / fmt.META, json.dumps(self.meta, indent=1))

    def _move_aside(self, log) -> None:
        """A fresh start keeps an earlier attempt's ledger as ledger.restarted-<unix time>/, never wipes it."""
        if self.dir.is_dir() and (ledger_files(self.dir) or (self.dir / fmt.META).exists()):
            kept = self.dir.with_name(f"{fmt.DIR}.restarted-{int(time.time())}")
            with writing(kept):
                os.replace(self.dir, kept)
            log(f"no checkpoint to resume from: the earlier attempt's ledger was moved to {kept}")

    def truncate(self, step: int) -> None:
        """Keep only the rows of steps <= step (a file straddling it is rewritten, atomically)."""
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        for first, last, path in ledger_files(self.dir):
            if first > step:
                path.unlink()
            elif last > step:
                table = pq.read_table(path)
                table = table.filter(pc.less_equal(table["step"], step))
                self._write(table, first, step)
                path.unlink()

    def record(self, step: int, rows: dict) -> None:
        """Buffer one step's rows (a `pods.core.ledger.concat_rows` table); flushes when one is due."""
        self.buffer.append((step, rows))
        self.since = self.clock() if self.since is None else self.since
        if len(self.buffer) >= FLUSH_STEPS or self.clock() - self.since >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Write the buffered steps as one file, steps-<first>-<last>.parquet."""
        if not self.buffer:
            return
        table = arrow_table(fmt.concat_rows([rows for _, rows in self.buffer]), self.meta)  # one conversion: cheap
        self._write(table, self.buffer[0][0], self.buffer[-1][0])
        self.buffer, self.since = [], None

    def _write(self, table, first: int, last: int) -> None:
        import pyarrow.parquet as pq

        final = self.dir / f"steps-{first:08d}-{last:08d}.parquet"
        tmp = self.dir / f".{final.name}.tmp"
        with writing(final):
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, final)

    def close(self) -> None:
        self.flush()


def _own_rollouts(counts):
    """[B, n] padded -> B tensors of counts[b] values (the padding dropped); identity for counts None."""
    if counts is None:
        return lambda x: x
    return lambda x: [x[b, :c] for b, c in enumerate(counts.tolist())]


def step_rows(step: int, batch, *, accuracy: str, entropy=None) -> dict:
    """A training step's ledger rows from its pods.core.collect.Batch: every round's groups (trained or dropped)
    and the prompts the prompt rule skipped in it (Round.skipped). entropy: [G, k] mean token entropy of the trained
    rollouts, at batch.idx (NaN where it is -1), or None."""
    parts = []
    for r, (rnd, idx, places) in enumerate(batch.seen):  # idx [B, k] the round's selection (-1 rows: none)
        ent = torch.full(rnd.total.shape, float("nan"))  # [B, n]: measured only where the update ran
        if entropy is not None:
            for b, g in enumerate(places):
                if g >= 0:
                    at = batch.idx[g] >= 0  # -1: a batch-level rule's row keeps fewer
                    ent[b, batch.idx[g][at]] = entropy[g][at].float().cpu()
        own = _own_rollouts(rnd.counts)  # an allocation rule's rows of unequal n: each row's own rollouts
        parts.append(fmt.group_rows(step=step, round_=r, prompts=list(rnd.prompts), group=places,
                                    positions=rnd.positions, status=["trained" if g >= 0 else "dropped" for g in places],
                                    total=own(rnd.total), per_fn={k: own(v) for k, v in rnd.per_fn.items()},
                                    accuracy=own(rnd.per_fn[accuracy]), lengths=own(rnd.rollouts.completion_lengths()),
                                    kept=idx if bool((idx >= 0).all()) else [row[row >= 0] for row in idx],
                                    entropy=own(ent)))
        if rnd.skipped:
            parts.append(fmt.skipped_rows(step=step, round_=r, prompts=list(rnd.skipped), reward_names=list(rnd.per_fn),
                                          positions=rnd.skipped_positions))
    return fmt.concat_rows(parts)
