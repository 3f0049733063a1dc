"""Incremental queries on tables our services changed equal hudi-rs's: log compaction and compaction rewrite records
without changing their commit time (a range covering only them is empty), clean removes what old ranges need (a
clear error, or the full-table-scan fallback), archive moves instants to the archived timeline (ranges reaching them
return what they returned before)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import CleanConfig, run_clean
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.services.log_compaction import run_log_compaction, schedule_log_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.incremental import IncrementalFilesCleanedError, read_incremental
from lake_orchestration.hudi.write import write_table
from tests.hudi.table.test_incremental_fixtures import hudi_rs_incremental
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options, write_trips_history

FALLBACK = {"hoodie.datasource.read.incr.fallback.fulltablescan.enable": "true"}


def _commit_times(path: Path) -> list[str]:
    return sorted(str(i.time) for i in HudiTable(str(path)).timeline.completed_commits())


def _ours(path: Path, begin: str, end: str | None = None, **options: str) -> pa.Table:
    return read_incremental(HudiTable(str(path)), begin_instant_time=begin, end_instant_time=end, options=options).table


@pytest.fixture(scope="module")
def serviced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """MOR trips: bulk insert, 3 upserts, log compaction, compaction, 2 upserts; the service instants by name."""
    path = tmp_path_factory.mktemp("incr-services") / "t"
    opts = trips_options(table_type=TableType.MERGE_ON_READ)
    base = write_trips_history(path, opts, rows=40, upserts=3, fraction=0.2)
    cfg = CompactionConfig(log_compaction_blocks_threshold=2)
    sched = schedule_log_compaction(HudiTable(str(path)), config=cfg)
    assert sched.scheduled, sched.reason
    run_log_compaction(HudiTable(str(path)), str(sched.instant), config=cfg)
    before = set(_commit_times(path))
    schedule_compaction(HudiTable(str(path)), force=True)
    run_compaction(HudiTable(str(path)))
    (compaction,) = set(_commit_times(path)) - before
    from lake_orchestration.datagen import generate_updates

    for i in range(2):
        write_table(
            str(path),
            generate_updates(base, fraction=0.2, seed=50 + i, ts_offset=(9 + i) * 10**6),
            operation="upsert",
            options=opts,
        )
    return path, {"log_compaction": str(sched.instant), "compaction": compaction}


def test_incremental_after_log_compaction_and_compaction_equals_hudi_rs(serviced) -> None:  # type: ignore[no-untyped-def]
    path, services = serviced
    times = _commit_times(path)
    for name, instant in services.items():
        prev = max(t for t in times if t < instant)
        assert _ours(path, prev, instant).num_rows == 0, f"a range covering only the {name} returned rows"
        assert_same_rows(_ours(path, prev, instant), hudi_rs_incremental(path, prev, instant))
    for begin in ["0", *times[:-1]]:
        for end in (None, services["compaction"]):
            if end is not None and end <= begin:
                continue
            try:
                assert_same_rows(_ours(path, begin, end), hudi_rs_incremental(path, begin, end))
            except AssertionError as err:
                raise AssertionError(f"range ({begin}, {end}]: {err}") from err


def test_incremental_after_clean_fails_naming_the_instant_or_falls_back(serviced, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    path = tmp_path / "t"
    shutil.copytree(serviced[0], path)
    times = _commit_times(path)
    # expected before the clean: what the range returns while every file is there
    expected_recent = {b: _ours(path, b) for b in times[-3:-1]}
    result = run_clean(HudiTable(str(path)), CleanConfig.from_options({"hoodie.cleaner.commits.retained": "1"}))
    assert result  # the clean deleted the slices before the compaction
    with pytest.raises(IncrementalFilesCleanedError) as err:
        _ours(path, "0", times[1])
    msg = str(err.value)
    assert str(path) in msg and "hoodie.datasource.read.incr.fallback.fulltablescan.enable=true" in msg
    assert err.value.instant in times[:2] and f"hoodie.datasource.read.begin.instanttime={err.value.instant}" in msg
    # the fallback: the latest snapshot's rows whose commit time is in the range (an independent computation on
    # hudi-rs's snapshot)
    snap = hudi_rs_snapshot(path)
    ct = snap.column("_hoodie_commit_time")
    expected = snap.filter(pc.and_(pc.greater(ct, "0"), pc.less_equal(ct, times[1])))
    got = read_incremental(HudiTable(str(path)), begin_instant_time="0", end_instant_time=times[1], options=FALLBACK)
    assert got.full_table_scan
    assert_same_rows(got.table, expected)
    # ranges clean did not reach are unchanged, and still equal hudi-rs
    for b, exp in expected_recent.items():
        assert_same_rows(_ours(path, b), exp)
        assert_same_rows(_ours(path, b), hudi_rs_incremental(path, b, None))


def test_incremental_reaching_archived_instants_unchanged_by_archive(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_trips_history(path, trips_options(table_type=TableType.COPY_ON_WRITE), rows=30, upserts=13, fraction=0.2)
    times = _commit_times(path)
    ranges = [("0", times[1]), (times[0], times[4]), ("0", None), (times[1], None)]
    before = {r: _ours(path, *r) for r in ranges}
    for (b, e), t in before.items():  # the oracle while everything is on the active timeline
        assert_same_rows(t, hudi_rs_incremental(path, b, e))
    result = run_archive(
        HudiTable(str(path)),
        ArchiveConfig.from_options({"hoodie.keep.min.commits": "11", "hoodie.keep.max.commits": "12"}),
    )
    active = _commit_times(path)
    assert active[0] == times[3], (result, active[0])  # 14 commits, 11 kept: the ranges reach the archive
    for r, t in before.items():
        got = read_incremental(HudiTable(str(path)), begin_instant_time=r[0], end_instant_time=r[1])
        assert_same_rows(got.table, t)
        assert got.checkpoint == (r[1] or times[-1])
