"""The rollout ledger writer: <run_dir>/ledger/ as Parquet files, appended as the run goes, resumable.

    ledger = Ledger(run_dir, meta={"n": 64, ...}, resume_step=0)   # meta -> ledger/_ledger.json (the index)
    ledger.record(step, pods.core.ledger.concat_rows([...]))       # buffered in memory
    ledger.flush()        # before every checkpoint (and every FLUSH_SECONDS): steps-<first>-<last>.parquet
    ledger.close()
    switch_off(run_dir, resume_step)   # logging.ledger=false: the ledger's index records the steps as a gap

Contract: a file is renamed into place only when complete, then listed in the index; flushing before each
checkpoint keeps every checkpointed step on disk. Resuming from checkpoint-<k> reads the ledger back against the
run (pods.core.ledger_index): damage up to step k or another run's data stops it (CheckpointError, the file named,
nothing changed); then the rows of steps > k go (a file straddling k rewritten, a damaged one set aside in
_set-aside/), and files the index does not list are set aside. A fresh start (step 0) moves an earlier attempt's
ledger aside. docs/ledger.md.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

import torch

from pods.core import ledger as fmt
from pods.core import ledger_index as idx
from pods.errors import CheckpointError
from pods.io import atomic_write_text, writing

FLUSH_SECONDS = 60.0  # a flush at most this long after a step is recorded (and before every checkpoint)
FLUSH_STEPS = 200  # ... or once this many steps are buffered


def ledger_files(directory: Path) -> list[tuple[int, int, Path]]:
    """(first step, last step, path) of every file of a ledger directory named as a data file, by first step."""
    found = [(int(m.group(1)), int(m.group(2)), p) for p in Path(directory).glob("steps-*.parquet")
             if (m := fmt.FILE.match(p.name))]
    return sorted(found)


def arrow_table(rows: dict, meta: dict | None = None):
    """A pyarrow Table of `pods.core.ledger` rows (list columns from (values, lengths)); `meta`, the ledger's
    index, tags it with the format, version and ledger id."""
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
    return table if meta is None else table.replace_schema_metadata({"pods_ledger": _tag(meta)})


def _tag(meta: dict) -> str:
    return json.dumps({"format": fmt.FORMAT, "version": fmt.VERSION, "ledger": meta.get(idx.ID)})


def check_resume(run_dir: Path, meta: dict, step: int, ledger_id: str | None = None) -> idx.Holdings | None:
    """The run's ledger read back for a resume from checkpoint-<step> (None when it has none): CheckpointError
    naming the file and what to do when it is damaged up to `step` or holds another run's data. Writes nothing.
    meta: the run's ledger settings (IDENTITY keys compared); ledger_id: the one its checkpoint recorded."""
    directory = Path(run_dir) / fmt.DIR
    held = idx.read_back(directory, expect=meta, ledger_id=ledger_id)
    if held.meta is None and not held.files and not held.stray and not held.index_problems:
        return None
    problems = held.problems(through=step)
    if problems:
        raise CheckpointError(
            f"the rollout ledger cannot continue from checkpoint-{step}: {'; '.join(problems)}. Nothing was changed. "
            f"To go on: move {directory} aside (it is kept as it is) and rerun, and a new ledger records from step "
            f"{step + 1}; or set logging.ledger=false; or, if this run's own ledger files were moved or replaced, "
            "put them back")
    return held


def move_aside(directory: Path, log=print) -> None:
    """A fresh start keeps an earlier attempt's ledger as ledger.restarted-<unix time>/, never wipes it."""
    if directory.is_dir() and any(directory.iterdir()):
        kept = directory.with_name(f"{fmt.DIR}.restarted-{int(time.time())}")
        with writing(kept):
            os.replace(directory, kept)
        log(f"no checkpoint to resume from: the earlier attempt's ledger was moved to {kept}")


class LedgerFiles:
    """A ledger directory and its index: each file written, removed or set aside is reflected in the index."""

    def __init__(self, directory: Path, meta: dict, held: idx.Holdings | None, log=print):
        self.dir, self.log = directory, log
        self.meta = {**meta, "format": fmt.FORMAT, "version": fmt.VERSION}
        self.meta[idx.ID] = meta.get(idx.ID) or secrets.token_hex(8)
        self.meta[idx.FILES] = {f.path.name: f.rows for f in held.files} if held is not None else {}

    def save_index(self) -> None:
        with writing(self.dir):
            self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.dir / fmt.META, json.dumps(self.meta, indent=1))

    def write(self, table, first: int, last: int) -> None:
        """`table` as steps-<first>-<last>.parquet (renamed into place when complete), then listed in the index."""
        import pyarrow.parquet as pq

        final = self.dir / f"steps-{first:08d}-{last:08d}.parquet"
        tmp = self.dir / f".{final.name}.tmp"
        table = table.replace_schema_metadata({"pods_ledger": _tag(self.meta)})
        with writing(final):
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, final)
        self.meta[idx.FILES][final.name] = table.num_rows
        self.save_index()

    def drop(self, path: Path, why: str | None) -> None:
        """Take a file out of the ledger: deleted (why None), or set aside as _set-aside/<why>.<name>."""
        if self.meta[idx.FILES].pop(path.name, None) is not None:
            self.save_index()  # unlisted first: a kill -9 here leaves a stray file, never a listed one missing
        if why is None:
            path.unlink()
            return
        aside, i = self.dir / idx.SET_ASIDE / f"{why}.{path.name}", 1
        while aside.exists():
            aside, i = aside.with_name(f"{why}-{i}.{path.name}"), i + 1
        with writing(aside):
            aside.parent.mkdir(exist_ok=True)
            os.replace(path, aside)
        self.log(f"{path} set aside as {aside} ({why.replace('-', ' ')})")

    def cut(self, held: idx.Holdings, step: int) -> None:
        """Keep only the rows of steps <= step: later files go (a damaged one set aside), a file straddling step
        is rewritten, files the index does not list are set aside (a tail not yet listed goes)."""
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        for f in held.files:
            if f.start > step:
                self.drop(f.path, "damaged-tail" if f.damage else None)
            elif f.end > step:
                table = pq.read_table(f.path)
                self.write(table.filter(pc.less_equal(table["step"], step)), f.start, step)
                self.drop(f.path, None)
        for f in held.stray:
            tail = not (f.damage or f.foreign) and f.start > step and f.ledger in (None, self.meta[idx.ID])
            self.drop(f.path, None if tail else "not-in-index")


class Ledger:
    """Buffers each step's rows and appends them to <run_dir>/ledger/ as Parquet files (see the module)."""

    def __init__(self, run_dir: Path, meta: dict, resume_step: int = 0, clock=time.monotonic, log=print,
                 ledger_id: str | None = None):
        import pyarrow.parquet  # noqa: F401  loaded at start-up (seconds on a busy machine), not in a step's time

        self.dir = Path(run_dir) / fmt.DIR
        self.clock, self.buffer, self.since = clock, [], None
        held = None
        if resume_step == 0:
            move_aside(self.dir, log)
        else:
            held = check_resume(run_dir, meta, resume_step, ledger_id)
            if held is None and ledger_id:
                log(f"checkpoint-{resume_step} was saved with a rollout ledger, but {self.dir} holds none: a new "
                    f"ledger records from step {resume_step + 1}")
        index = held.meta if held is not None else {"first_step": resume_step + 1}  # switched on at a resume
        self.files = LedgerFiles(self.dir, {**index, **meta}, held, log)
        self.files.meta[idx.GAPS] = _gaps(held, resume_step, off=False)
        self.files.save_index()
        for tmp in self.dir.glob(".steps-*.tmp"):  # a write that kill -9 cut short
            tmp.unlink()
        if held is not None:
            self.files.cut(held, resume_step)

    @property
    def id(self) -> str:
        """This ledger's id (in its index and each file); the trainer records it in every checkpoint."""
        return self.files.meta[idx.ID]

    def record(self, step: int, rows: dict) -> None:
        """Buffer one step's rows (a `pods.core.ledger.concat_rows` table); flushes when one is due."""
        self.buffer.append((step, rows))
        self.since = self.clock() if self.since is None else self.since
        if len(self.buffer) >= FLUSH_STEPS or self.clock() - self.since >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Write the buffered steps as one file, steps-<first>-<last>.parquet, and list it in the index."""
        if not self.buffer:
            return
        table = arrow_table(fmt.concat_rows([rows for _, rows in self.buffer]))  # one conversion: cheap
        self.files.write(table, self.buffer[0][0], self.buffer[-1][0])
        self.buffer, self.since = [], None

    def close(self) -> None:
        self.flush()


def _gaps(held: idx.Holdings | None, step: int, *, off: bool) -> list[dict]:
    """The index's gaps for a run resuming at `step`: those up to it (one still open closes there); off: the
    ledger is switched off from step + 1 on (the gap that ends at `step` continues, or a new one opens)."""
    gaps = [{"first": a, "last": b, "why": why} for a, b, why in (held.gaps(step) if held is not None else [])]
    if off:
        if gaps and gaps[-1]["last"] == step and gaps[-1]["why"] == idx.OFF:
            gaps[-1]["last"] = None
        else:
            gaps.append({"first": step + 1, "last": None, "why": idx.OFF})
    return gaps


def switch_off(run_dir: Path, step: int, log=print) -> None:
    """A run (or a resume from checkpoint-<step>) with logging.ledger=false: an earlier ledger is moved aside at
    step 0; else it is cut back to `step` as a resume would, and its index records the steps from step + 1 on as
    not recorded (replay reports the gap). A damaged or foreign one is left as it is, with a warning."""
    directory = Path(run_dir) / fmt.DIR
    if step == 0:
        move_aside(directory, log)
        return
    held = idx.read_back(directory)
    if held.meta is None and not held.files and not held.stray and not held.index_problems:
        return
    problems = held.problems(through=step)
    if problems:
        log(f"warning: the rollout ledger in {directory} is left as it is (logging.ledger=false): "
            f"{'; '.join(problems)}")
        return
    files = LedgerFiles(directory, held.meta, held, log)
    files.meta[idx.GAPS] = _gaps(held, step, off=True)
    files.save_index()
    files.cut(held, step)
    log(f"logging.ledger=false: {directory} records no steps from step {step + 1} on (its index says so)")


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
    for r, (rnd, chosen, places) in enumerate(batch.seen):  # chosen [B, k] the round's selection (-1 rows: none)
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
                                    kept=chosen if bool((chosen >= 0).all()) else [row[row >= 0] for row in chosen],
                                    entropy=own(ent)))
        if rnd.skipped:
            parts.append(fmt.skipped_rows(step=step, round_=r, prompts=list(rnd.skipped), reward_names=list(rnd.per_fn),
                                          positions=rnd.skipped_positions))
    return fmt.concat_rows(parts)
