"""A ledger directory read back against its run: which files belong to it, which steps they hold, what is wrong.

    held = read_back(run_dir / "ledger", expect={"n": 16, "seed": 0}, ledger_id=state.get("ledger_id"))
    held.problems(through=k)   # [] or one sentence per problem, each naming its file (damage, another run's data)
    held.files, held.stray     # the ledger's own data files; other files it holds (never counted)
    held.gaps(through=k)       # [(first, last, why)]: steps the run trained without recording them

Contract: the index (_ledger.json) names the ledger (`id`, also in each file's Parquet metadata), lists its files
with their row counts (`files`) and the steps trained with the ledger switched off (`gaps`). A file belongs when
the index lists it (for ledgers written before the list: when its name is steps-<first>-<last>.parquet). Every
file is read back (step, round, slot, status, n) and checked: readable, its format version and ledger id, its
rows, steps and n as the index and its name say; no step in two files; no step missing from first_step up to
`through` but the gaps. Nothing is written here. docs/ledger.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pods.core import ledger as fmt

ID = "id"  # index key: this ledger's id (also the `ledger` field of each file's pods_ledger metadata)
FILES = "files"  # index key: {file name: rows} of the files that belong to the ledger
GAPS = "gaps"  # index key: [{"first": step, "last": step or None (still off), "why": text}]
IDENTITY = ("n", "m", "rule", "seed", "algorithm", "prompts_per_step", "num_prompts", "allocation", "prompt_rule")
SET_ASIDE = "_set-aside"  # <ledger>/_set-aside/: files taken out of the ledger, kept (pyarrow skips _ folders)
OFF = "logging.ledger=false"  # why a gap recorded by a run with the ledger switched off


@dataclass
class DataFile:
    """One Parquet file of a ledger directory, read back."""

    path: Path
    first: int | None  # the steps its name says (None: not named steps-<first>-<last>.parquet)
    last: int | None
    rows: int = 0
    steps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # the steps it holds (sorted)
    ledger: str | None = None  # the ledger id in its metadata
    damage: str | None = None  # why it is not what was written (cut short, rows, steps, a row twice)
    foreign: str | None = None  # why it is not this ledger's data (another ledger, version or n)

    @property
    def start(self) -> int:
        """Its first step (from its rows; from its name when unreadable; 0 when neither says)."""
        return int(self.steps[0]) if len(self.steps) else self.first or 0

    @property
    def end(self) -> int:
        return int(self.steps[-1]) if len(self.steps) else self.last or 0

    def span(self) -> str:
        return f"step {self.start}" if self.start == self.end else f"steps {self.start}-{self.end}"


@dataclass
class Holdings:
    """What a ledger directory holds (see the module); `meta` is its index, None when it has none."""

    dir: Path
    meta: dict | None
    files: list[DataFile]  # the ledger's own, by first step
    stray: list[DataFile]  # files in the directory the index does not list (any name pyarrow.dataset would read)
    absent: list[str]  # files the index lists that are not there
    index_problems: list[str]

    @property
    def first_step(self) -> int:
        return int((self.meta or {}).get("first_step", 1))

    def held(self, through: int | None = None) -> np.ndarray:
        """The steps the ledger's files hold, up to `through` (None: all)."""
        steps = np.unique(np.concatenate([f.steps for f in self.files])) if self.files else np.zeros(0, np.int64)
        return steps if through is None else steps[steps <= through]

    def gaps(self, through: int | None = None) -> list[tuple[int, int | None, str]]:
        """The steps trained with the ledger switched off, up to `through`: (first, last or None if still, why)."""
        out = []
        for g in (self.meta or {}).get(GAPS, []):
            first, last = int(g["first"]), g.get("last")
            if through is not None:
                if first > through:
                    continue
                last = through if last is None else min(int(last), through)
            out.append((first, None if last is None else int(last), str(g.get("why", OFF))))
        return out

    def expected(self, through: int | None = None) -> np.ndarray:
        """The steps the ledger should hold from first_step up to `through` (None: the last held): all but gaps."""
        held = self.held(through)
        end = through if through is not None else (int(held[-1]) if len(held) else 0)
        expected = np.arange(self.first_step, end + 1)
        for first, last, _ in self.gaps(end):
            expected = expected[(expected < first) | (expected > (end if last is None else last))]
        return expected

    def missing(self, through: int | None = None) -> np.ndarray:
        """Steps from first_step up to `through` (None: the last held) that no file holds and no gap explains."""
        return np.setdiff1d(self.expected(through), self.held(through))

    def problems(self, through: int | None = None) -> list[str]:
        """What makes the ledger up to step `through` (None: all of it) unusable, one sentence each naming the file:
        the index's, another run's file anywhere, damage or a step twice up to `through`, steps missing up to it."""
        if self.index_problems:
            return list(self.index_problems)  # its files cannot be judged against an index that cannot be read
        out = []
        reach = lambda f: through is None or f.start <= through  # noqa: E731  a file holding steps <= through
        out += [f"{f.path} {f.foreign}" for f in self.files if f.foreign]
        out += [f"{f.path} {f.damage}" for f in self.files if f.damage and not f.foreign and reach(f)]
        sound = [f for f in self.files if not (f.damage or f.foreign) and reach(f)]
        for i, a in enumerate(sound):
            for b in sound[i + 1:]:
                both = np.intersect1d(a.steps, b.steps)
                if len(both):
                    out.append(f"{_steps(both)} in both {a.path.name} and {b.path.name} in {self.dir} (a copy, "
                               "or another run's file)")
        missing = self.missing(through)
        if len(missing) and not out:
            lost = [n for n in self.absent if (r := fmt.FILE.match(n)) and int(r.group(1)) <= int(missing[-1])
                    and int(r.group(2)) >= int(missing[0])]
            verb = "is" if len(lost) == 1 else "are"
            why = f": {', '.join(lost)}, listed in its {fmt.META}, {verb} not there" if lost else ""
            out.append(f"{self.dir} is truncated: {_steps(missing)} missing ({len(missing)} of "
                       f"{len(self.expected(through))}){why}")
        return out

    def notes(self) -> list[str]:
        """One line per stray file: what it is and that it is not counted."""
        out = []
        for f in self.stray:
            what = f.foreign or f.damage or f"holds {f.span()}"
            out.append(f"{f.path} is not in {self.dir / fmt.META} ({what}): not counted")
        return out


def _steps(steps) -> str:
    """'step 4 is' / 'steps 1-3 are' / 'steps 1, 5, 9 ... are' of sorted step numbers."""
    steps = [int(s) for s in steps]
    if len(steps) == 1:
        return f"step {steps[0]} is"
    if steps == list(range(steps[0], steps[-1] + 1)):
        return f"steps {steps[0]}-{steps[-1]} are"
    return "steps " + ", ".join(map(str, steps[:8])) + (" ..." if len(steps) > 8 else "") + " are"


def read_index(directory: Path) -> tuple[dict | None, list[str]]:
    """(the index of a ledger directory or None when it has none, its problems: unreadable, another version)."""
    path = Path(directory) / fmt.META
    if not path.exists():
        return None, []
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        return None, [f"{path} cannot be read ({err})"]
    problem = fmt.version_problem(meta)
    return (meta, [f"{Path(directory)} holds {problem}"] if problem else [])


def read_back(directory: str | Path, *, expect: dict | None = None, ledger_id: str | None = None) -> Holdings:
    """A ledger directory's files read back and checked against its index, the run's settings (`expect`: keys
    of IDENTITY) and the id its checkpoint recorded (`ledger_id`); see the module."""
    directory = Path(directory)
    meta, problems = read_index(directory)
    if meta is not None and not problems:
        problems += _identity(directory, meta, expect or {}, ledger_id)
    found = sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith(("_", "."))) \
        if directory.is_dir() else []  # what pyarrow.dataset reads: a copy named *.bak too
    if meta is None and found and not problems:
        problems.append(f"{directory} holds ledger files but no {fmt.META} (its index)")
    listed = (meta or {}).get(FILES)
    mine = (lambda p: p.name in listed) if isinstance(listed, dict) else (lambda p: bool(fmt.FILE.match(p.name)))
    files = sorted((_read(p, meta or {}, listed) for p in found if mine(p)), key=lambda f: (f.start, f.path.name))
    stray = [_read(p, meta or {}, None) for p in found if not mine(p)]
    absent = sorted(set(listed) - {p.name for p in found}) if isinstance(listed, dict) else []
    return Holdings(directory, meta, files, stray, absent, problems)


def _identity(directory: Path, meta: dict, expect: dict, ledger_id: str | None) -> list[str]:
    """The index against the run: its settings, and the ledger id the run's checkpoint recorded."""
    differ = [f"{k} = {meta[k]!r} (this run: {expect[k]!r})" for k in IDENTITY
              if k in expect and k in meta and meta[k] != expect[k]]
    if ledger_id and meta.get(ID) and meta[ID] != ledger_id:
        differ.append(f"ledger id {meta[ID]} (this run's checkpoint recorded {ledger_id})")
    return [f"{directory} is another run's ledger: it records {'; '.join(differ)}"] if differ else []


def _read(path: Path, meta: dict, listed: dict | None) -> DataFile:
    """One data file read back (its step, round, slot, status and n columns) and checked against the index."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    name = fmt.FILE.match(path.name)
    first, last = (int(name.group(1)), int(name.group(2))) if name else (None, None)
    f = DataFile(path, first, last)
    try:
        pf = pq.ParquetFile(path)
        tag = json.loads((pf.schema_arrow.metadata or {}).get(b"pods_ledger", b"null"))
        table = pf.read(columns=["step", "round", "slot", "status", "n"])
    except (OSError, ValueError, KeyError, pa.ArrowException) as err:
        f.damage = f"cannot be read: cut short or damaged ({str(err).splitlines()[0]})"
        return f
    if not isinstance(tag, dict) or fmt.version_problem(tag):
        why = fmt.version_problem(tag) if isinstance(tag, dict) else "no pods_ledger metadata"
        f.foreign = f"is not a file of this ledger ({why})"
        return f
    f.ledger, f.rows = tag.get("ledger"), table.num_rows
    step, rnd, slot = (table[c].to_numpy() for c in ("step", "round", "slot"))
    generated = pc.cast(table["status"], pa.string()).to_numpy(zero_copy_only=False) != "skipped"
    f.steps = np.unique(step)
    n, n_run = table["n"].to_numpy()[generated], meta.get("n")
    fixed = meta.get("allocation") in (None, "none")
    if f.ledger and meta.get(ID) and f.ledger != meta[ID]:
        f.foreign = f"was written by another ledger (id {f.ledger}; this ledger's is {meta[ID]})"
    elif isinstance(n_run, int) and len(n) and ((n != n_run).any() if fixed else (n > n_run).any()):
        f.foreign = f"holds groups of n = {int(n.max() if (n > n_run).any() else n.min())}; this ledger's n is {n_run}"
    elif listed is not None and listed.get(path.name) not in (None, table.num_rows):
        f.damage = f"holds {table.num_rows} rows; the index ({fmt.META}) lists {listed[path.name]}"
    elif name and len(f.steps) and (f.steps[0], f.steps[-1]) != (f.first, f.last):
        f.damage = f"holds {f.span()}, its name says {f.first}-{f.last}"
    elif np.unique(np.stack([step, rnd, generated, slot]), axis=1).shape[1] != len(step):
        f.damage = "holds a group's row twice"
    return f
