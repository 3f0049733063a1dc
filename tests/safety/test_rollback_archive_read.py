"""Rollback -> more commits -> archive -> read: a rolled-back write never comes back.

A MERGE_ON_READ write that fails after appending its log blocks is rolled back the way Hudi 0.14 does it: its
timeline files are deleted and a ROLLBACK command block (TARGET_INSTANT_TIME = the failed instant) is appended to
every file group it touched; its log files stay. Once archival moves the timeline start past the failed instant,
the instant counts as committed (``containsOrBeforeTimelineStarts``): only the rollback block keeps its records
out of snapshot reads and compaction.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, iter_blocks
from lake_orchestration.hudi.log.scanner import InstantFilter
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.compaction import run_compaction, schedule_compaction
from lake_orchestration.hudi.services.rollback import rollback_write
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import write_table
from tests.oracle import hudi_rs_snapshot
from tests.trips import trips_options

OPTS = trips_options(small_file_limit=0)
ARCHIVE = {
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.compact.inline.max.delta.commits": "1",
}


class _Crash(Exception):
    """The writer dies after its log blocks are on disk, before the commit is written."""


def _set(rows: pa.Table, name: str, values: list) -> pa.Table:  # type: ignore[type-arg]
    return rows.set_column(rows.schema.get_field_index(name), name, pa.array(values, rows.schema.field(name).type))


def _model_rows(t: pa.Table | None) -> dict[str, tuple[float, int]]:
    assert t is not None
    return dict(
        zip(
            t.column("uuid").to_pylist(),
            zip(t.column("fare").to_pylist(), t.column("ts").to_pylist(), strict=True),
            strict=True,
        )
    )


def _failed_upsert(path: Path, rows: pa.Table, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the project's writer and kill it at commit finalization: the on-disk state of a crashed deltacommit
    (inflight instant, log files with its data blocks, new base files, markers)."""
    import lake_orchestration.hudi.write.writer as writer

    def crash(*_a: object, **_k: object) -> list[str]:
        raise _Crash

    with monkeypatch.context() as m:
        m.setattr(writer, "reconcile_markers", crash)
        with pytest.raises(_Crash):
            write_table(str(path), rows, operation="upsert", options=OPTS)
    (pending,) = list(HudiTable(str(path)).timeline.pending())
    return str(pending.time)


def test_rolled_back_rows_stay_out_after_the_failed_instant_is_archived(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    base = generate_trips(60, partitions=2, seed=5)
    write_table(str(path), base, operation="bulk_insert", options=OPTS)
    model = _model_rows(base)
    keys = base.column("uuid").to_pylist()

    # the failed write: updates of 12 keys (fare -1, greatest ts) and 5 inserts
    victims = base.slice(0, 12)
    bad = _set(_set(victims, "fare", [-1.0] * 12), "ts", [10**15 + i for i in range(12)])
    bad_inserts = _set(generate_trips(5, partitions=2, seed=99), "fare", [-1.0] * 5)
    failed = _failed_upsert(path, pa.concat_tables([bad, bad_inserts]), monkeypatch)
    failed_logs = {
        p for p in path.rglob(".*.log.*") if any(b.instant_time == failed for b in iter_blocks(p.read_bytes()))
    }
    assert failed_logs, "the failed write left no log block: nothing to roll back"
    touched_groups = {(p.parent.name, p.name[1:].split("_")[0]) for p in failed_logs}

    rb = rollback_write(HudiTable(str(path)), failed)
    rb_time = str(rb.time)
    rb_logs = [p for p in path.rglob(".*.log.*_1-0-1")]
    assert rb_logs
    assert {(p.parent.name, p.name[1:].split("_")[0]) for p in rb_logs} == touched_groups
    for p in rb_logs:
        (blk,) = list(iter_blocks(p.read_bytes()))
        assert blk.block_type is LogBlockType.COMMAND_BLOCK and blk.is_rollback
        assert blk.get(HeaderKey.TARGET_INSTANT_TIME) == failed
        assert blk.instant_time == rb_time
    assert all(p.exists() for p in failed_logs)  # v6 keeps the failed log files: the command block hides them

    # more commits on the same file groups (keys the failed write did not touch), then archive
    for n in range(6):
        upd = base.slice(20 + 5 * n, 5)
        upd = _set(_set(upd, "fare", [1000.0 + 10 * n + i for i in range(5)]), "ts", [10**12 + n] * 5)
        write_table(str(path), upd, operation="upsert", options=OPTS)
        model.update(_model_rows(upd))
    result = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(ARCHIVE))
    archived = [str(i.time) for i in result.archived_instants]
    assert archived, "nothing was archived"
    t = HudiTable(str(path))
    first_active = t.timeline.commits().completed().first
    assert first_active is not None and failed < str(first_active.time), (failed, archived)
    flt = InstantFilter.from_timeline(t.timeline)
    assert flt.is_committed(failed), "premise: an instant before the timeline start counts as committed"

    def check(rows: pa.Table | None, who: str) -> None:
        got = _model_rows(rows)
        assert -1.0 not in {f for f, _ in got.values()}, f"{who}: rolled-back values came back"
        assert got == model, f"{who}: rows differ from the model"
        assert set(got) == set(keys)

    check(read_snapshot_table(t), "snapshot read")
    check(hudi_rs_snapshot(path), "hudi-rs")

    # compaction after the archive bakes the same rows into base files
    assert schedule_compaction(t, force=True).scheduled
    results = run_compaction(HudiTable(str(path)))
    assert results and sum(s.totalRollbackBlocks for r in results for s in r.stats) == len(rb_logs)
    check(read_snapshot_table(HudiTable(str(path))), "snapshot read after compaction")
    check(hudi_rs_snapshot(path), "hudi-rs after compaction")


def test_rolled_back_data_and_delete_blocks_stay_out_after_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed write appended a data block AND a delete block (an upsert whose rows carry
    ``_hoodie_is_deleted``): after its rollback is archived, neither its updates nor its deletes may apply — the
    deleted keys are back with their committed values, in our read, in hudi-rs and after compaction."""
    from lake_orchestration.datagen import with_delete_flags

    path = tmp_path / "t"
    base = generate_trips(60, partitions=2, seed=6)
    write_table(str(path), with_delete_flags([base], deleted_index=None), operation="bulk_insert", options=OPTS)
    model = _model_rows(base)

    updates = _set(_set(base.slice(0, 10), "fare", [-1.0] * 10), "ts", [10**15 + i for i in range(10)])
    deletes = base.slice(10, 8)
    failed = _failed_upsert(path, with_delete_flags([updates, deletes], deleted_index=1), monkeypatch)
    kinds = {
        b.block_type for p in path.rglob(".*.log.*") for b in iter_blocks(p.read_bytes()) if b.instant_time == failed
    }
    assert {LogBlockType.AVRO_DATA_BLOCK, LogBlockType.DELETE_BLOCK} <= kinds, f"premise: both blocks, got {kinds}"

    rollback_write(HudiTable(str(path)), failed)
    for n in range(6):
        upd = base.slice(30 + 4 * n, 4)
        upd = _set(_set(upd, "fare", [2000.0 + 10 * n + i for i in range(4)]), "ts", [10**12 + n] * 4)
        write_table(str(path), with_delete_flags([upd], deleted_index=None), operation="upsert", options=OPTS)
        model.update(_model_rows(upd))
    assert run_archive(HudiTable(str(path)), ArchiveConfig.from_options(ARCHIVE)).archived_instants
    t = HudiTable(str(path))
    assert InstantFilter.from_timeline(t.timeline).is_committed(failed), "premise: the failed instant is archived"

    def check(rows: pa.Table | None, who: str) -> None:
        got = _model_rows(rows)
        assert got == model, f"{who}: rows differ from the model (rolled-back updates or deletes applied)"

    check(read_snapshot_table(t), "snapshot read")
    check(hudi_rs_snapshot(path), "hudi-rs")
    assert schedule_compaction(t, force=True).scheduled
    assert run_compaction(HudiTable(str(path)))
    check(read_snapshot_table(HudiTable(str(path))), "snapshot read after compaction")
    check(hudi_rs_snapshot(path), "hudi-rs after compaction")
