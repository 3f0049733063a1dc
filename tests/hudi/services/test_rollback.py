"""Rollback of failed and stale writes: the table reads as if the write never happened, live writers are untouched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.log.log_format import iter_blocks
from lake_orchestration.hudi.model.avro import RollbackMetadata, RollbackPlan
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.rollback import rollback_stale_writes, rollback_write, stale_writes
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.heartbeat import Heartbeat, is_heartbeat_expired
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.conftest import REPO_ROOT
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.tables import fake_metadata_table

# an upsert of 10,000 updates and 75,000 inserts in 150 new base files (500 a file), long enough to be killed midway
# (generating the rows was most of the tests' time when it wrote the same 150 files of 2,000 from 300,000 inserts)
_KILL = """
import sys
import pyarrow as pa
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.write import WriteOptions, write_table
base = generate_trips(20_000, partitions=4, seed=1)
rows = pa.concat_tables([generate_updates(base, fraction=0.5, seed=3, ts_offset=10**8),
                         generate_trips(75_000, partitions=4, seed=77)])
write_table(sys.argv[1], rows, operation="upsert",
            options=WriteOptions(max_rows_per_file=500, small_file_limit=0, heartbeat_interval_ms=200))
"""


def _killed_write(tmp_path: Path, table_type: TableType) -> tuple[Path, pa.Table]:
    path = tmp_path / "t"
    opts = WriteOptions(
        table_name="t",
        table_type=table_type,
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        small_file_limit=0,
        max_rows_per_file=2500,
    )
    base = generate_trips(20_000, partitions=4, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    before = hudi_rs_snapshot(path)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _KILL, str(path)], env=env, cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            inflight = {p.name.split(".")[0] for p in (path / ".hoodie").glob("*.inflight")}
            done = {p.name.split(".")[0] for p in (path / ".hoodie").glob("*.commit")} | {
                p.name.split(".")[0] for p in (path / ".hoodie").glob("*.deltacommit")
            }
            if inflight - done and len(list(path.rglob("*.parquet"))) > 8 + 4:
                break
            assert proc.poll() is None, "the write finished before it could be killed"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    return path, before


def _wait_heartbeat_expired(path: Path, instant: str, interval_ms: int = 200, misses: int = 2) -> None:
    """Poll (generous deadline) until the killed writer's heartbeat is older than ``interval_ms * misses``."""
    t = HudiTable(str(path))
    deadline = time.monotonic() + 60
    while not is_heartbeat_expired(t.storage, instant, interval_ms=interval_ms, tolerable_misses=misses):
        assert time.monotonic() < deadline, f"the heartbeat of {instant} kept beating after its writer was killed"
        time.sleep(0.05)


@pytest.mark.parametrize("table_type", [TableType.MERGE_ON_READ, TableType.COPY_ON_WRITE], ids=["mor", "cow"])
def test_rollback_stale_killed_write_table_reads_as_before_and_next_upsert_works(
    tmp_path: Path, table_type: TableType
) -> None:
    path, before = _killed_write(tmp_path, table_type)
    t = HudiTable(str(path))
    (pending,) = list(t.timeline.pending())
    _wait_heartbeat_expired(path, str(pending.time))  # the killed writer's heartbeat (200 ms interval) expires
    stale = stale_writes(t, interval_ms=200, tolerable_misses=2)
    assert [s.instant.time for s in stale] == [pending.time]
    dry = rollback_stale_writes(t, interval_ms=200, tolerable_misses=2, dry_run=True)
    assert isinstance(dry[0][1], RollbackPlan) and list(t.refresh().timeline.pending()) == [pending]
    ((_, done),) = rollback_stale_writes(t, interval_ms=200, tolerable_misses=2)
    t = HudiTable(str(path))
    assert not list(t.timeline.pending())
    assert not list((path / ".hoodie").glob(f"{pending.time}.*"))  # the failed instant is gone
    assert not (path / ".hoodie" / ".temp" / str(pending.time)).exists()
    assert not list(path.rglob(f"*_{pending.time}.parquet"))  # its base files are deleted
    meta = RollbackMetadata.from_bytes(t.read_instant(done), path=str(path))
    assert meta.commits_rollback == (str(pending.time),)
    assert_same_rows(hudi_rs_snapshot(path), before)
    assert_same_rows(read_snapshot_table(t), before)
    if table_type is TableType.MERGE_ON_READ:
        rb_logs = [p for p in path.rglob(".*.log.*_1-0-1")]
        for p in rb_logs:
            (blk,) = list(iter_blocks(p.read_bytes()))
            assert blk.is_rollback and blk.instant_time == str(done.time)
    # a new upsert succeeds and is read correctly
    upd = generate_updates(generate_trips(20_000, partitions=4, seed=1), fraction=0.1, seed=9, ts_offset=10**9)
    write_table(str(path), upd, operation="upsert")
    after = hudi_rs_snapshot(path)
    assert after.num_rows == before.num_rows
    got = dict(zip(after.column("uuid").to_pylist(), after.column("fare").to_pylist(), strict=True))
    assert all(got[u] == f for u, f in zip(upd.column("uuid").to_pylist(), upd.column("fare").to_pylist(), strict=True))


def test_rollback_live_writer_left_alone_and_completed_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = WriteOptions(table_name="t", record_key_fields=("uuid",), partition_fields=("city",), precombine_field="ts")
    first = write_table(str(path), generate_trips(100, seed=1), operation="bulk_insert", options=opts)
    t = HudiTable(str(path))
    live = t.create_requested(Instant(t.new_instant_time(), Action.DELTA_COMMIT, State.REQUESTED))
    hb = Heartbeat(t.storage, str(live.time), interval_ms=100).start()
    try:
        # the thread keeps the heartbeat fresh: its mtime moves on (polled, no fixed sleep) ...
        hb_file = path / ".hoodie" / ".heartbeat" / str(live.time)
        beat0 = hb_file.stat().st_mtime
        deadline = time.monotonic() + 60
        while hb_file.stat().st_mtime <= beat0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert hb_file.stat().st_mtime > beat0, "the heartbeat thread never beat"
        # ... and is judged with a window (10 s) that a starved thread on a loaded box does not miss
        assert stale_writes(t, interval_ms=5_000, tolerable_misses=2) == []
        assert rollback_stale_writes(t, interval_ms=5_000, tolerable_misses=2) == []
        assert t.refresh().timeline.get(str(live.time)) is not None
    finally:
        hb.stop(delete=True)
    # without a heartbeat file, only the timeout decides
    assert stale_writes(t, timeout_s=3600) == []
    assert [s.instant.time for s in stale_writes(t, timeout_s=0)] == [live.time]
    with pytest.raises(InvalidInstantStateError, match="is completed"):
        rollback_write(t, first.instant)


def test_rollback_cli_dry_run_then_instant(tmp_path: Path) -> None:
    import json as _json

    from click.testing import CliRunner

    from lake_orchestration.cli.app import cli

    path, before = _killed_write(tmp_path, TableType.MERGE_ON_READ)
    (pending,) = list(HudiTable(str(path)).timeline.pending())
    run = CliRunner().invoke
    _wait_heartbeat_expired(path, str(pending.time))
    r = run(
        cli,
        [
            "rollback",
            str(path),
            "--stale",
            "--option",
            "hoodie.client.heartbeat.interval_in_ms=200",
            "--dry-run",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    (row,) = _json.loads(r.output)
    assert row["instant"] == str(pending.time) and row["dry_run"] and row["files_to_delete"]
    assert list(HudiTable(str(path)).timeline.pending()) == [pending]
    # a metadata table (left by a Java writer) would keep listing the files a rollback deletes: refused until
    # hoodie.metadata.enable=false, which deletes it first
    fake_metadata_table(path)
    listing = sorted(p.relative_to(path) for p in path.rglob("*") if p.is_file())
    r = run(cli, ["rollback", str(path), "--instant-time", str(pending.time)])
    assert r.exit_code == 1 and "rollback does not update" in r.output, r.output
    assert sorted(p.relative_to(path) for p in path.rglob("*") if p.is_file()) == listing
    r = run(
        cli, ["rollback", str(path), "--instant-time", str(pending.time), "--option", "hoodie.metadata.enable=false"]
    )
    assert r.exit_code == 0 and "Rolled back" in r.output, r.output
    assert not HudiTable(str(path)).has_metadata_table()
    assert_same_rows(hudi_rs_snapshot(path), before)
    r = run(cli, ["rollback", str(path)])
    assert r.exit_code == 1 and "exactly one of" in r.output
