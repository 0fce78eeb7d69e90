"""The rollout ledger writer: Parquet files pyarrow reads without pods, flushed before checkpoints, resumable."""

import json
import os
import shutil

import pyarrow.dataset as ds
import pytest
import torch

from pods.core import ledger as fmt
from pods.core import ledger_index as idx
from pods.core import ledger_writer as lw
from pods.errors import CheckpointError


def rows(step, G=3, n=4, m=2):
    g = torch.Generator().manual_seed(step)
    acc = (torch.rand(G, n, generator=g) < 0.5).float()
    return fmt.concat_rows([fmt.group_rows(step=step, round_=0, prompts=list(range(G)), status=["trained"] * G,
                                           total=acc, per_fn={"exact": acc}, accuracy=acc,
                                           lengths=torch.full((G, n), 5), kept=torch.arange(m).expand(G, m),
                                           group=list(range(G)))])


def steps_on_disk(run_dir):
    return ds.dataset(run_dir / "ledger").to_table(columns=["step"])["step"].to_pylist()


def test_flushed_steps_are_parquet_that_pyarrow_reads_without_pods(tmp_path):
    led = lw.Ledger(tmp_path, {"n": 4, "m": 2})
    for s in (1, 2, 3):
        led.record(s, rows(s))
    assert not lw.ledger_files(tmp_path / "ledger")  # buffered until a flush
    led.flush()
    led.record(4, rows(4))
    led.close()
    assert [(a, b) for a, b, _ in lw.ledger_files(tmp_path / "ledger")] == [(1, 3), (4, 4)]
    table = ds.dataset(tmp_path / "ledger").to_table()  # _ledger.json is skipped by pyarrow's discovery
    assert table.num_rows == 12 and sorted(set(steps_on_disk(tmp_path))) == [1, 2, 3, 4]
    assert table["reward"][0].as_py() == rows(1)["reward"][0][:4].tolist()
    assert table.to_pandas()["kept"].iloc[0].tolist() == [0, 1]
    meta = json.loads((tmp_path / "ledger" / fmt.META).read_text())
    assert meta["version"] == fmt.VERSION and meta["n"] == 4 and meta["first_step"] == 1


def test_a_flush_is_due_after_flush_seconds(tmp_path):
    now = [0.0]
    led = lw.Ledger(tmp_path, {}, clock=lambda: now[0])
    led.record(1, rows(1))
    now[0] = lw.FLUSH_SECONDS + 1
    led.record(2, rows(2))
    assert [(a, b) for a, b, _ in lw.ledger_files(tmp_path / "ledger")] == [(1, 2)]


def test_resume_drops_the_steps_after_the_checkpoint_and_rewrites_a_straddling_file(tmp_path):
    led = lw.Ledger(tmp_path, {})
    for s in range(1, 6):
        led.record(s, rows(s))
    led.flush()  # steps 1-5 in one file; then kill -9 after step 5 with checkpoint-3 the newest
    led.record(6, rows(6))
    led.flush()
    (tmp_path / "ledger" / ".steps-00000007-00000007.parquet.tmp").write_bytes(b"PAR1 cut")  # a write cut short
    led = lw.Ledger(tmp_path, {}, resume_step=3)
    assert [(a, b) for a, b, _ in lw.ledger_files(tmp_path / "ledger")] == [(1, 3)]
    assert not list((tmp_path / "ledger").glob(".*.tmp"))
    for s in (4, 5):
        led.record(s, rows(s))
    led.close()
    assert sorted(steps_on_disk(tmp_path)) == sorted([s for s in range(1, 6) for _ in range(3)])


def test_a_fresh_start_moves_the_earlier_ledger_aside(tmp_path):
    led = lw.Ledger(tmp_path, {})
    led.record(1, rows(1))
    led.close()
    lines = []
    lw.Ledger(tmp_path, {}, log=lines.append)
    aside = list(tmp_path.glob("ledger.restarted-*"))
    assert len(aside) == 1 and lw.ledger_files(aside[0]) and not lw.ledger_files(tmp_path / "ledger")
    assert "moved to" in lines[0]


def test_a_ledger_switched_on_at_a_resume_starts_there(tmp_path):
    led = lw.Ledger(tmp_path, {}, resume_step=7)
    assert json.loads((tmp_path / "ledger" / fmt.META).read_text())["first_step"] == 8
    led.close()


def test_resuming_onto_a_ledger_of_another_version_stops_and_keeps_it(tmp_path):
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / fmt.META).write_text(json.dumps({"format": fmt.FORMAT, "version": 99}))
    (tmp_path / "ledger" / "steps-00000001-00000002.parquet").write_bytes(b"old")
    with pytest.raises(CheckpointError, match="version 99.*move .*ledger aside"):
        lw.Ledger(tmp_path, {}, resume_step=2)
    assert (tmp_path / "ledger" / "steps-00000001-00000002.parquet").read_bytes() == b"old"


# ---- resume reads the ledger back against the run (issue 42 part 1)
META = {"n": 4, "m": 2, "rule": "max_variance", "seed": 0, "algorithm": "pods"}


def written(run_dir, steps=range(1, 7), every=3, meta=META, n=4):
    """A ledger as a run writes it: flushed every `every` steps (its checkpoints); returns its directory."""
    led = lw.Ledger(run_dir, meta)
    for s in steps:
        led.record(s, rows(s, n=n))
        if s % every == 0:
            led.flush()
    led.close()
    return run_dir / "ledger"


def snapshot(run_dir):
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


def cut_short(path):
    path.write_bytes(path.read_bytes()[:200])


def delete(path):
    path.unlink()


def copy_of_another_runs_ledger(tmp_path):
    other = written(tmp_path / "other", meta={**META, "n": 8}, n=8)
    (tmp_path / "run" / "ledger").rename(tmp_path / "mine")
    other.rename(tmp_path / "run" / "ledger")


def another_ledgers_file(tmp_path):
    other = written(tmp_path / "other")
    name = "steps-00000004-00000006.parquet"
    os.replace(other / name, tmp_path / "run" / "ledger" / name)


def an_older_ledger_with_a_step_in_two_files(tmp_path):
    d = tmp_path / "run" / "ledger"
    index = json.loads((d / fmt.META).read_text())
    del index[idx.FILES]  # written before the index listed its files: files belong by their names
    (d / fmt.META).write_text(json.dumps(index))
    shutil.copy(d / "steps-00000004-00000006.parquet", d / "steps-4-6.parquet")  # the same steps, another name


STOPS = {  # damage up to the checkpoint (step 6) or another run's data: (make it, what the message says)
    "last-file-cut-short": (lambda t: cut_short(t / "run/ledger/steps-00000004-00000006.parquet"),
                            "steps-00000004-00000006.parquet cannot be read: cut short or damaged"),
    "first-file-deleted": (lambda t: delete(t / "run/ledger/steps-00000001-00000003.parquet"),
                           r"is truncated: steps 1-3 are missing \(3 of 6\): steps-00000001-00000003.parquet, "
                           "listed in its _ledger.json, is not there"),
    "copied-from-another-run": (copy_of_another_runs_ledger,
                                r"is another run's ledger: it records n = 8 \(this run: 4\)"),
    "another-ledgers-file": (another_ledgers_file, "steps-00000004-00000006.parquet was written by another ledger"),
    "step-in-two-files": (an_older_ledger_with_a_step_in_two_files,
                          "steps 4-6 are in both steps-00000004-00000006.parquet and steps-4-6.parquet"),
    "steps-missing-after-the-last-file": (lambda t: delete(t / "run/ledger/steps-00000004-00000006.parquet"),
                                          r"steps 4-6 are missing \(3 of 6\)"),
}


@pytest.mark.parametrize("case", list(STOPS))
def test_resume_onto_a_damaged_or_foreign_ledger_stops_naming_it_and_changes_nothing(tmp_path, case):
    written(tmp_path / "run")
    make, says = STOPS[case]
    make(tmp_path)
    before = snapshot(tmp_path / "run")
    with pytest.raises(CheckpointError, match=says) as err:
        lw.Ledger(tmp_path / "run", {**META, "num_prompts": 3}, resume_step=6)
    assert "cannot continue from checkpoint-6" in str(err.value) and "logging.ledger=false" in str(err.value)
    assert f"move {tmp_path / 'run' / 'ledger'} aside" in str(err.value)
    assert snapshot(tmp_path / "run") == before


def test_resume_onto_another_runs_ledger_id_stops(tmp_path):
    written(tmp_path / "run")
    with pytest.raises(CheckpointError, match="this run's checkpoint recorded 0123abcd"):
        lw.check_resume(tmp_path / "run", META, 6, ledger_id="0123abcd")


def test_resume_sets_a_damaged_tail_aside_and_records_its_steps_again(tmp_path):
    d = written(tmp_path / "run")  # checkpoint-3 the newest: steps 4-6 are a tail the resume trains again
    cut_short(d / "steps-00000004-00000006.parquet")
    lines = []
    led = lw.Ledger(tmp_path / "run", META, resume_step=3, log=lines.append)
    aside = d / idx.SET_ASIDE / "damaged-tail.steps-00000004-00000006.parquet"
    assert aside.stat().st_size == 200 and "set aside" in lines[0] and "damaged tail" in lines[0]
    for s in (4, 5, 6):
        led.record(s, rows(s))
    led.close()
    held = idx.read_back(d, expect=META, ledger_id=led.id)
    assert held.problems() == [] and held.held().tolist() == [1, 2, 3, 4, 5, 6]
    assert sorted(steps_on_disk(tmp_path / "run")) == [s for s in range(1, 7) for _ in range(3)]  # _set-aside skipped


@pytest.mark.parametrize("name", ["steps-1-3.parquet", "steps-00000001-00000003.parquet.bak"])
def test_resume_sets_a_stray_copy_aside_and_counts_its_steps_once(tmp_path, name):
    """The same steps under another name, .parquet or not: pyarrow.dataset reads both (issue 42)."""
    d = written(tmp_path / "run")
    shutil.copy(d / "steps-00000001-00000003.parquet", d / name)
    lines = []
    lw.Ledger(tmp_path / "run", META, resume_step=6, log=lines.append).close()
    assert (d / idx.SET_ASIDE / f"not-in-index.{name}").exists() and not (d / name).exists()
    assert "not in index" in lines[0]
    assert sorted(steps_on_disk(tmp_path / "run")) == [s for s in range(1, 7) for _ in range(3)]


def test_a_ledger_switched_off_and_on_again_records_the_gap_in_its_index(tmp_path):
    d = written(tmp_path / "run")  # steps 1-6 written; the run resumes from checkpoint-3 with the ledger off
    lines = []
    lw.switch_off(tmp_path / "run", 3, log=lines.append)
    index = json.loads((d / fmt.META).read_text())
    assert index[idx.GAPS] == [{"first": 4, "last": None, "why": idx.OFF}] and list(index[idx.FILES]) == [
        "steps-00000001-00000003.parquet"]
    assert "records no steps from step 4 on" in lines[-1]
    lw.switch_off(tmp_path / "run", 5, log=lines.append)  # off again from checkpoint-5: the same gap goes on
    assert json.loads((d / fmt.META).read_text())[idx.GAPS] == [{"first": 4, "last": None, "why": idx.OFF}]
    led = lw.Ledger(tmp_path / "run", META, resume_step=6)  # on again from checkpoint-6
    led.record(7, rows(7))
    led.close()
    held = idx.read_back(d, expect=META, ledger_id=led.id)
    assert held.problems() == [] and held.gaps() == [(4, 6, idx.OFF)] and held.held().tolist() == [1, 2, 3, 7]


def test_switching_the_ledger_off_leaves_a_damaged_one_as_it_is(tmp_path):
    d = written(tmp_path / "run")
    delete(d / "steps-00000001-00000003.parquet")
    before, lines = snapshot(tmp_path / "run"), []
    lw.switch_off(tmp_path / "run", 6, log=lines.append)
    assert snapshot(tmp_path / "run") == before and lines[0].startswith("warning: the rollout ledger in")
