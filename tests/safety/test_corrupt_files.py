"""Corrupt input of every file kind: the operation fails with a project error naming the file (never pyarrow's or
fastavro's own exception, never silence) and the table is unchanged (every file hashed before and after); where
Hudi ignores the content (heartbeat, a file clean only deletes), the operation works as on a sound table.

Not here: corrupt log blocks (test_corrupt_log_blocks.py), missing hoodie.properties keys, a corrupt latest
.deltacommit, .compaction.inflight without .requested and the corrupt .rollback.requested repair path
(test_table_properties_guard.py / test_bad_input_errors.py), archive merge of unreadable files
(test_archive_merge_safety.py).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.errors import CorruptFileError, InvalidTablePropertiesError
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import run_clean, schedule_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import run_compaction, schedule_compaction
from lake_orchestration.hudi.services.rollback import rollback_write, stale_writes
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

CLEAN_ONE = {"hoodie.cleaner.commits.retained": "1"}


def _opts(table_type: TableType) -> WriteOptions:
    return trips_options(table_type=table_type, max_rows_per_file=100, small_file_limit=0)


def _table(tmp_path: Path, table_type: TableType, *, upserts: int = 2, name: str = "t") -> tuple[Path, pa.Table]:
    path = tmp_path / name
    base = generate_trips(300, partitions=3, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=_opts(table_type))
    for n in range(upserts):
        upd = generate_updates(base, fraction=0.2, seed=2 + n, ts_offset=(n + 1) * 10**7)
        write_table(str(path), upd, operation="upsert", options=_opts(table_type))
    return path, base


def _hashes(path: Path) -> dict[str, str]:
    return {
        str(f.relative_to(path)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(path.rglob("*"))
        if f.is_file()
    }


def _corrupt(f: Path, kind: str) -> None:
    data = f.read_bytes()
    if kind == "page":  # bit rot inside the record key column's first data page: the footer still reads
        md = pq.read_metadata(f)
        col = md.schema.names.index("_hoodie_record_key")
        off = md.row_group(0).column(col).data_page_offset
        f.write_bytes(data[:off] + b"\x5a" * 40 + data[off + 40 :])
        return
    f.write_bytes({"truncated": data[: len(data) // 2], "zero": b"", "garbage": b"\x13garbage!" * 40}[kind])


def _refused(path: Path, bad: Path, fn: Callable[[], object], exc: type[Exception] = CorruptFileError) -> Exception:
    """``fn`` raises ``exc`` naming ``bad`` and leaves every file of the table as it was."""
    before = _hashes(path)
    with pytest.raises(exc) as info:
        fn()
    assert str(bad) in str(info.value), f"the error does not name {bad}: {info.value}"
    assert _hashes(path) == before, "the table changed although the operation failed"
    return info.value


def _latest_base_file(path: Path) -> Path:
    t = HudiTable(str(path))
    s = next(s for s in t.fs_view().latest_file_slices() if s.base_file is not None)
    return path / s.partition_path / s.base_file.name  # type: ignore[union-attr]


# -- base files ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["truncated", "zero", "garbage", "page"])
@pytest.mark.parametrize("table_type", [TableType.MERGE_ON_READ, TableType.COPY_ON_WRITE], ids=["mor", "cow"])
def test_corrupt_base_file_read_upsert_compaction_fail_naming_it(
    tmp_path: Path, table_type: TableType, kind: str
) -> None:
    path, base = _table(tmp_path, table_type)
    bad = _latest_base_file(path)
    keys = pq.read_table(bad, columns=["uuid"]).column("uuid")
    _corrupt(bad, kind)
    # read (ours and the CLI; hudi-rs fails too)
    _refused(path, bad, lambda: read_snapshot_table(HudiTable(str(path))))
    r = CliRunner().invoke(cli, ["read", str(path), "-o", str(tmp_path / "out.parquet"), "--json"])
    assert r.exit_code != 0 and str(bad) in r.output + (r.stderr if r.stderr_bytes is not None else "")
    assert not isinstance(r.exception, pa.ArrowException)
    # an upsert into its file group
    upd = generate_updates(
        base.filter(pc.is_in(base.column("uuid"), value_set=keys)), fraction=1.0, seed=5, ts_offset=10**9
    )
    assert upd.num_rows
    _refused(path, bad, lambda: write_table(str(path), upd, operation="upsert"))
    if table_type is TableType.MERGE_ON_READ:
        sched = schedule_compaction(HudiTable(str(path)), force=True)
        assert sched.scheduled
        if kind != "page":  # the plan's base files are opened (footers read) before anything is written
            _refused(path, bad, lambda: run_compaction(HudiTable(str(path))))
        else:  # a page is read only by the operation: the attempt fails naming the file, and nothing is committed
            with pytest.raises(CorruptFileError, match=re.escape(str(bad))):
                run_compaction(HudiTable(str(path)))
            t = HudiTable(str(path))
            assert not t.timeline.get(str(sched.instant)).is_completed  # type: ignore[union-attr]


def test_clean_ignores_base_file_content_like_hudi(tmp_path: Path) -> None:
    """Clean decides from names and the timeline only (as Java): a corrupt file in a slice it removes is deleted,
    one in a slice it keeps stays; the outcome is that of a sound copy."""
    path, _ = _table(tmp_path, TableType.COPY_ON_WRITE, upserts=3)
    sound = tmp_path / "sound"
    shutil.copytree(path, sound)
    res_sound = run_clean(HudiTable(str(sound)), CleanConfig.from_options(CLEAN_ONE))
    assert res_sound.deleted
    doomed = next(path / p / n for p, names in res_sound.files.items() for n in names)
    kept = _latest_base_file(path)
    _corrupt(doomed, "garbage")
    _corrupt(kept, "zero")
    res = run_clean(HudiTable(str(path)), CleanConfig.from_options(CLEAN_ONE))
    assert (res.files, res.deleted, res.failed) == (res_sound.files, res_sound.deleted, 0)
    assert not doomed.exists() and kept.exists()
    data = sorted(str(f.relative_to(path)) for f in path.rglob("*.parquet"))
    assert data == sorted(str(f.relative_to(sound)) for f in sound.rglob("*.parquet"))


# -- clean plan ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["truncated", "garbage"])
def test_corrupt_clean_plan_refused_nothing_deleted(tmp_path: Path, kind: str) -> None:
    path, _ = _table(tmp_path, TableType.COPY_ON_WRITE, upserts=3)
    inst, _, why = schedule_clean(HudiTable(str(path)), CleanConfig.from_options(CLEAN_ONE))
    assert inst is not None, why
    bad = path / ".hoodie" / f"{inst.time}.clean.requested"
    _corrupt(bad, kind)
    _refused(path, bad, lambda: run_clean(HudiTable(str(path)), CleanConfig.from_options(CLEAN_ONE)))
    r = CliRunner().invoke(cli, ["clean", str(path), "--option", "hoodie.cleaner.commits.retained=1"])
    assert r.exit_code == 1 and str(bad) in r.output, r.output


# -- archive file -------------------------------------------------------------------------------------------------
def test_truncated_archive_file_named_by_timeline_show_archived(tmp_path: Path) -> None:
    from lake_orchestration.hudi.services.archive import run_archive

    path, _ = _table(tmp_path, TableType.COPY_ON_WRITE, upserts=7)
    res = run_archive(
        HudiTable(str(path)),
        ArchiveConfig.from_options(
            {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}
        ),
    )
    (archive,) = (path / ".hoodie" / "archived").glob(".commits_.archive.*")
    assert res is not None
    r = CliRunner().invoke(cli, ["timeline", "show", str(path), "--archived", "--json"])
    assert r.exit_code == 0, r.output
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) - 40])  # a torn last block
    before = _hashes(path)
    # the real CLI (its logging goes to stderr): the lost block is reported naming the file, the rest is listed
    lake_orch = Path(sys.executable).parent / "lake-orch"
    p = subprocess.run(
        [str(lake_orch), "timeline", "show", str(path), "--archived", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert str(archive) in p.stderr and "skipped" in p.stderr, p.stderr
    rows = json.loads(p.stdout)
    assert rows and all(r["file"] == archive.name for r in rows)
    assert _hashes(path) == before


# -- heartbeat ----------------------------------------------------------------------------------------------------
def _pending_write(path: Path) -> str:
    t = HudiTable(str(path))
    inst = t.create_requested(Instant(t.new_instant_time(), Action.DELTA_COMMIT, State.REQUESTED))
    t.transition_to_inflight(inst)
    return str(inst.time)


def test_heartbeat_with_garbage_content_is_judged_by_its_age_only(tmp_path: Path) -> None:
    path, _ = _table(tmp_path, TableType.MERGE_ON_READ, upserts=1)
    before = hudi_rs_snapshot(path)
    failed = _pending_write(path)
    hb = path / ".hoodie" / ".heartbeat" / failed
    hb.parent.mkdir(parents=True, exist_ok=True)
    hb.write_bytes(b"\x00\xffnot a heartbeat" * 10)
    t = HudiTable(str(path))
    assert stale_writes(t, interval_ms=60_000) == []  # fresh: a live writer is left alone whatever its content
    import os

    os.utime(hb, (hb.stat().st_atime - 3600, hb.stat().st_mtime - 3600))
    assert [str(s.instant.time) for s in stale_writes(t, interval_ms=60_000)] == [failed]
    rollback_write(t, failed)
    assert not hb.exists() and not list(HudiTable(str(path)).timeline.pending())
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_directory_in_place_of_heartbeat_reported_and_rollback_completes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """As Java's HeartbeatUtils.deleteHeartbeatFile: a heartbeat that cannot be deleted is logged, not fatal (failing
    there would leave the rollback pending after the failed write's files were deleted, at every rerun)."""
    path, _ = _table(tmp_path, TableType.MERGE_ON_READ, upserts=1)
    before = hudi_rs_snapshot(path)
    failed = _pending_write(path)
    hb = path / ".hoodie" / ".heartbeat" / failed
    (hb / "x").mkdir(parents=True)
    with caplog.at_level("WARNING"):
        rollback_write(HudiTable(str(path)), failed)
    assert any(str(hb) in r.getMessage() for r in caplog.records), caplog.text
    t = HudiTable(str(path))
    assert not list(t.timeline.pending()) and t.timeline.with_actions(Action.ROLLBACK).completed().last is not None
    assert_same_rows(hudi_rs_snapshot(path), before)
    assert stale_writes(t, timeout_s=0) == []  # the leftover directory names no instant of the timeline


# -- plans --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["truncated", "garbage"])
def test_corrupt_compaction_plan_refused(tmp_path: Path, kind: str) -> None:
    path, _ = _table(tmp_path, TableType.MERGE_ON_READ)
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    bad = path / ".hoodie" / f"{sched.instant}.compaction.requested"
    _corrupt(bad, kind)
    _refused(path, bad, lambda: run_compaction(HudiTable(str(path))))
    _refused(path, bad, lambda: read_snapshot_table(HudiTable(str(path))))  # the file-system view reads the plan
    r = CliRunner().invoke(cli, ["compaction", "run", str(path)])
    assert r.exit_code == 1 and str(bad) in r.output, r.output


@pytest.mark.parametrize("kind", ["truncated", "garbage"])
def test_corrupt_log_compaction_plan_refused(tmp_path: Path, kind: str) -> None:
    from lake_orchestration.hudi.services.compaction import CompactionConfig
    from lake_orchestration.hudi.services.log_compaction import run_log_compaction, schedule_log_compaction

    path, _ = _table(tmp_path, TableType.MERGE_ON_READ, upserts=4)
    sched = schedule_log_compaction(
        HudiTable(str(path)), config=CompactionConfig.from_options({"hoodie.log.compaction.blocks.threshold": "2"})
    )
    assert sched.scheduled, sched.reason
    bad = path / ".hoodie" / f"{sched.instant}.logcompaction.requested"
    _corrupt(bad, kind)
    _refused(path, bad, lambda: run_log_compaction(HudiTable(str(path)), str(sched.instant)))


@pytest.mark.parametrize("kind", ["truncated", "garbage"])
def test_corrupt_rollback_plan_refused_by_rollback(tmp_path: Path, kind: str) -> None:
    path, _ = _table(tmp_path, TableType.MERGE_ON_READ, upserts=1)
    failed = _pending_write(path)
    t = HudiTable(str(path))
    rollback_write(t, failed, dry_run=True)
    from lake_orchestration.hudi.model.avro import InstantInfo, RollbackPlan

    plan = RollbackPlan(instant_to_rollback=InstantInfo(commit_time=failed, action="deltacommit"), version=1)
    rb = t.create_requested(Instant(t.new_instant_time(), Action.ROLLBACK, State.REQUESTED), plan.to_bytes())
    bad = path / ".hoodie" / f"{rb.time}.rollback.requested"
    _corrupt(bad, kind)
    _refused(path, bad, lambda: rollback_write(HudiTable(str(path)), failed))
    _refused(path, bad, lambda: stale_writes(HudiTable(str(path)), timeout_s=0))


def test_garbage_pending_replacecommit_plan_rolled_back_without_reading_it(tmp_path: Path) -> None:
    """A pending replacecommit's plan is not needed to roll it back (Java plans the rollback from markers and
    listing too): the garbage requested file goes with the instant."""
    path, _ = _table(tmp_path, TableType.COPY_ON_WRITE, upserts=1)
    before = hudi_rs_snapshot(path)
    t = HudiTable(str(path))
    inst = t.create_requested(Instant(t.new_instant_time(), Action.REPLACE_COMMIT, State.REQUESTED), b"\x13garbage")
    rollback_write(HudiTable(str(path)), str(inst.time))
    assert not list((path / ".hoodie").glob(f"{inst.time}.replacecommit*"))
    assert_same_rows(hudi_rs_snapshot(path), before)


@pytest.mark.parametrize("kind", ["truncated", "garbage"])
def test_corrupt_savepoint_refused_by_clean_archive_and_show(tmp_path: Path, kind: str) -> None:
    from lake_orchestration.hudi.services.archive import run_archive
    from lake_orchestration.hudi.services.savepoint import create_savepoint, list_savepoints

    path, _ = _table(tmp_path, TableType.COPY_ON_WRITE, upserts=4)
    first = str(HudiTable(str(path)).timeline.completed_commits().first.time)  # type: ignore[union-attr]
    create_savepoint(HudiTable(str(path)), first)
    bad = path / ".hoodie" / f"{first}.savepoint"
    _corrupt(bad, kind)
    _refused(path, bad, lambda: list_savepoints(HudiTable(str(path))))
    # clean must not delete the savepointed files it can no longer read about
    _refused(path, bad, lambda: run_clean(HudiTable(str(path)), CleanConfig.from_options(CLEAN_ONE)))
    # archival needs only the savepoint's instant time (as Java's): it stops at it and archives nothing
    active = sorted(p.name for p in (path / ".hoodie").iterdir() if p.is_file())
    run_archive(
        HudiTable(str(path)),
        ArchiveConfig.from_options(
            {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}
        ),
    )
    assert sorted(p.name for p in (path / ".hoodie").iterdir() if p.is_file()) == active
    r = CliRunner().invoke(cli, ["savepoint", "show", str(path)])
    assert r.exit_code == 1 and str(bad) in r.output, r.output


# -- hoodie.properties --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("content", [b"\x00\xff\xfe\x13\x00garbage", b""], ids=["binary", "empty"])
def test_garbage_hoodie_properties_refused_naming_it(tmp_path: Path, content: bytes) -> None:
    path, _ = _table(tmp_path, TableType.MERGE_ON_READ, upserts=0)
    bad = path / ".hoodie" / "hoodie.properties"
    bad.write_bytes(content)
    _refused(path, bad, lambda: HudiTable(str(path)), InvalidTablePropertiesError)
    r = CliRunner().invoke(cli, ["timeline", "show", str(path)])
    assert r.exit_code == 1 and str(bad) in r.output, r.output
