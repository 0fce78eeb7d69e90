"""Read a run's rollout ledger (<run_dir>/ledger/, written by pods.core.ledger_writer) into arrays, checked.

    rec = read_ledger("checkpoints/demo-...-seed0")        # a run directory or its ledger/ directory
    rec.rewards, rec.accuracy, rec.lengths, rec.kept        # [R, n] float, [R, n], [R, n], [R, k] of generated groups
    rec.steps, rec.rounds, rec.prompts, rec.trained         # [R] each; rec.offered: every row, skipped prompts too
    rec.gaps, rec.notes                                     # steps not recorded (and why); files not counted

Contract: the ledger is read back against its index and its run (pods.core.ledger_index: the run's config.yaml
and newest checkpoint, when there): a ResultsError (exit 2, the file named) for a missing ledger, another format
version, another run's data, a file cut short or damaged, a step in two files, or steps missing that no recorded
gap explains; nothing is written. Files the index does not list are not counted (rec.notes says so). Rows are in
the order the run produced them: by step, round, slot. Groups of unequal n (allocation rules) are padded with
NaN rewards and length 0 to the largest n; `rec.n` [R] holds each group's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pods.core import ledger as fmt
from pods.core import ledger_index as idx
from pods.errors import ResultsError


@dataclass
class Recorded:
    path: Path  # the ledger directory
    meta: dict  # its _ledger.json
    steps: np.ndarray  # [R] step of each generated group
    rounds: np.ndarray  # [R] generation round within the step
    slots: np.ndarray  # [R] position within the round
    prompts: np.ndarray  # [R] dataset index
    trained: np.ndarray  # [R] bool: status trained (else dropped)
    n: np.ndarray  # [R] rollouts of each group
    rewards: np.ndarray  # [R, n] total reward (NaN pads groups with fewer rollouts)
    accuracy: np.ndarray  # [R, n] the accuracy reward
    lengths: np.ndarray  # [R, n] completion tokens (0 pads)
    entropy: np.ndarray  # [R, n] mean token entropy (NaN where not measured)
    kept: np.ndarray  # [R, k] the rollouts the run kept (-1 pads)
    positions: np.ndarray | None = None  # [R] prompt-stream position of each generated group (-1: not known)
    per_fn: dict = field(default_factory=dict)  # {reward name: [R, n]}
    offered: dict = field(default_factory=dict)  # every row, skipped prompts too: {step, round, position, prompt,
    #                                              status, group: index into the generated arrays or -1} -> [S]
    gaps: list = field(default_factory=list)  # [(first, last, why)]: steps trained but not recorded
    notes: list = field(default_factory=list)  # one line per file in the directory that is not counted

    @property
    def num_steps(self) -> int:
        return int(len(np.unique(self.steps)))


def ledger_dir(path: str | Path) -> Path:
    """The ledger directory of a run directory (or the directory itself when it is one)."""
    path = Path(path)
    return path if (path / fmt.META).is_file() else path / fmt.DIR


def _run_settings(run_dir: Path) -> tuple[dict, str | None]:
    """(the IDENTITY settings of the run's config.yaml, the ledger id its newest checkpoint recorded); ({}, None)
    for what is not there (a TRL run, a ledger copied out of its run)."""
    import yaml

    settings, ledger_id = {}, None
    try:
        cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
        rl = cfg["rl"]
        settings = {k: rl[k] for k in idx.IDENTITY if k in rl and k != "algorithm"}  # rl.algorithm may be "auto"
        settings["seed"] = cfg["seed"]
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError):
        pass
    steps = [(int(p.parent.name.split("-")[1]), p) for p in run_dir.glob("checkpoint-*/state.json")
             if p.parent.name.split("-")[1].isdigit()]
    if steps:
        try:
            ledger_id = json.loads(max(steps)[1].read_text()).get("ledger_id")
        except (OSError, ValueError, AttributeError):
            pass
    return settings, ledger_id


def read_back(directory: Path) -> idx.Holdings:
    """The ledger directory read back against its index and run: ResultsError naming the file and what to do."""
    if not (directory / fmt.META).is_file() and not list(directory.glob("*.parquet")):
        raise ResultsError(f"{directory.parent} has no rollout ledger ({directory / fmt.META} is missing): the run "
                           "was trained with logging.ledger=false, or before pods recorded one")
    settings, ledger_id = _run_settings(directory.parent)
    held = idx.read_back(directory, expect=settings, ledger_id=ledger_id)
    problems = held.problems()
    if problems:
        raise ResultsError(f"{'; '.join(problems)}. Replay needs every recorded step from this run's own ledger: put "
                           "its files back (or replay the run whose ledger this is); nothing was written")
    if not held.files:
        raise ResultsError(f"{directory} holds no recorded steps yet")
    return held


def _dense(column, width: int, fill) -> np.ndarray:
    """A pyarrow list column -> [R, width] array (short rows padded with `fill`)."""
    col = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    values = col.flatten().to_numpy(zero_copy_only=False)
    lens = np.diff(col.offsets.to_numpy())
    if len(lens) and (lens == width).all():
        return values.reshape(len(lens), width)
    out = np.full((len(lens), width), fill, dtype=np.result_type(values.dtype, np.asarray(fill).dtype))
    rows = np.repeat(np.arange(len(lens)), lens)
    cols = np.arange(len(values)) - np.repeat(np.cumsum(lens) - lens, lens)
    out[rows, cols] = values
    return out


def read_ledger(path: str | Path, per_fn: bool = True) -> Recorded:
    """The ledger of one run (see the module docstring); per_fn=False leaves out each reward function's values."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    directory = ledger_dir(path)
    held = read_back(directory)
    meta = held.meta
    tables = [pq.read_table(f.path, columns=None if per_fn else _without_per_fn(f.path)) for f in held.files]
    table = pa.concat_tables(tables, promote_options="permissive")
    steps = table["step"].to_numpy()
    first = held.first_step
    gaps = ([(1, first - 1, f"the ledger starts at step {first}")] if first > 1 else []) + held.gaps()
    status = pc.cast(table["status"], pa.string()).to_numpy()
    prompts, positions = table["prompt"].to_numpy(), table["position"].to_numpy()
    n = table["n"].to_numpy()
    width = int(n.max()) if len(n) else 0
    kept_width = int(max((np.diff(c.offsets.to_numpy()).max(initial=0) for c in table["kept"].chunks), default=0))
    rounds, slots = table["round"].to_numpy(), table["slot"].to_numpy()
    gen = np.flatnonzero(status != "skipped")
    order = gen[np.lexsort((slots[gen], rounds[gen], steps[gen]))]  # the order the run made its selections
    group = np.full(len(steps), -1)
    group[order] = np.arange(len(order))
    dense = lambda name, fill: _dense(table[name], width, fill)[order]  # noqa: E731  [R, n]
    names = [c for c in table.column_names if c.startswith(fmt.REWARD_PREFIX)]
    return Recorded(
        path=directory, meta=meta, steps=steps[order], rounds=rounds[order], slots=slots[order],
        prompts=prompts[order], trained=status[order] == "trained", n=n[order], positions=positions[order],
        rewards=dense("reward", np.nan), accuracy=dense("accuracy", np.nan), lengths=dense("length", 0),
        entropy=dense("entropy", np.nan), kept=_dense(table["kept"], kept_width, -1)[order],
        per_fn={c[len(fmt.REWARD_PREFIX):]: dense(c, np.nan) for c in names},
        offered={"step": steps, "round": rounds, "position": positions, "prompt": prompts, "status": status,
                 "group": group}, gaps=gaps, notes=held.notes())


def _without_per_fn(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return [c for c in pq.read_schema(path).names if not c.startswith(fmt.REWARD_PREFIX)]
