"""The rollout ledger writer: Parquet files pyarrow reads without pods, flushed before checkpoints, resumable."""

import json

import pyarrow.dataset as ds
import pytest
import torch

from pods.core import ledger as fmt
from pods.core import ledger_writer as lw
from pods.errors import ConfigError


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
    with pytest.raises(ConfigError, match="version 99.*move it aside"):
        lw.Ledger(tmp_path, {}, resume_step=2)
    assert (tmp_path / "ledger" / "steps-00000001-00000002.parquet").read_bytes() == b"old"
