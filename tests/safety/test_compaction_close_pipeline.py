"""In-process compaction closes file group i's base file on a background thread while file group i+1 is merged
(executor.ClosePipeline): the files are the bytes a sequential run writes, and a close that fails on that thread
fails the run (the attempt is rolled back, nothing is committed) instead of being lost."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.engines.local import LocalEngine
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table
from lake_orchestration.hudi.write.base_file import BaseFileWriter
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot

pytestmark = pytest.mark.skipif(pa.cpu_count() < 2, reason="the close pipeline runs with more than one core")


def _table(path: Path) -> Path:
    """A MERGE_ON_READ table of 4 file groups in one partition, each with a base file and a log file."""
    opts = WriteOptions(
        table_name="t",
        table_type=TableType.MERGE_ON_READ,
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        max_rows_per_file=5_000,
        # no small-file handling: the inserts of the upsert go to a new file group and the updates to log files
        # (Hudi rewrites a small base-only file group that takes inserts into a new base file instead)
        small_file_limit=0,
    )
    base = generate_trips(20_000, partitions=1, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    upd = pa.concat_tables([generate_updates(base, fraction=0.2, seed=3), generate_trips(50, partitions=1, seed=9)])
    write_table(str(path), upd, operation="upsert", options=opts)
    return path


def _new_files(path: Path, instant: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.rglob(f"*_{instant}.parquet"))}


def test_compaction_close_pipeline_files_equal_sequential_run(tmp_path: Path) -> None:
    a = _table(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    instant = str(schedule_compaction(HudiTable(str(a)), force=True).instant)
    assert str(schedule_compaction(HudiTable(str(b)), force=True, instant_time=instant).instant) == instant
    closers: set[str] = set()
    real_close = BaseFileWriter.close

    def close(self: BaseFileWriter):  # type: ignore[no-untyped-def]
        closers.add(threading.current_thread().name)
        return real_close(self)

    mp = pytest.MonkeyPatch()
    mp.setattr(BaseFileWriter, "close", close)
    try:
        (ra,) = run_compaction(HudiTable(str(a)), instant_time=instant)  # in process: pipelined closes
        pipelined = set(closers)
        closers.clear()
        # the engine's task path (map_tasks on threads, each task closing its own file): no close pipeline
        (rb,) = run_compaction(HudiTable(str(b)), instant_time=instant, engine=LocalEngine(threads=2))
    finally:
        mp.undo()
    assert pipelined and all(n.startswith("compaction-close") for n in pipelined), pipelined
    assert closers and not any(n.startswith("compaction-close") for n in closers), closers
    files_a, files_b = _new_files(a, instant), _new_files(b, instant)
    assert len(files_a) == 4 and files_a == files_b
    commits = [json.loads((t / ".hoodie" / f"{instant}.commit").read_bytes()) for t in (a, b)]
    for c in commits:  # timings differ from run to run
        for stats in c["partitionToWriteStats"].values():
            for s in stats:
                s.pop("runtimeStats", None)
    assert commits[0] == commits[1]  # the same write stats, in task order
    assert ra.instant == rb.instant == instant


@pytest.mark.parametrize("overlap_bytes", [0, 1 << 30], ids=["raised-while-merging", "raised-when-handing-over"])
def test_compaction_close_failing_in_background_fails_run_and_rolls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overlap_bytes: int
) -> None:
    from lake_orchestration.hudi.services.compaction import executor

    monkeypatch.setattr(executor, "CLOSE_OVERLAP_BYTES", overlap_bytes)
    path = _table(tmp_path / "t")
    before = hudi_rs_snapshot(path)
    instant = str(schedule_compaction(HudiTable(str(path)), force=True).instant)
    real_close = BaseFileWriter.close
    calls: list[str] = []

    def failing(self: BaseFileWriter):  # type: ignore[no-untyped-def]
        calls.append(threading.current_thread().name)
        if len(calls) == 2:
            raise OSError("disk full while closing (test)")
        return real_close(self)

    monkeypatch.setattr(BaseFileWriter, "close", failing)
    with pytest.raises(OSError, match="disk full while closing"):
        run_compaction(HudiTable(str(path)), instant_time=instant)
    assert calls[1].startswith("compaction-close"), calls
    t = HudiTable(str(path))
    assert t.timeline.get(instant, Action.COMPACTION).state is State.REQUESTED
    assert not (path / ".hoodie" / f"{instant}.commit").exists()
    assert not list(path.rglob(f"*_{instant}.parquet")), "the failed attempt's files were left"
    assert not [th for th in threading.enumerate() if th.name.startswith(("compaction-close", "write-behind"))]
    monkeypatch.setattr(BaseFileWriter, "close", real_close)
    (result,) = run_compaction(HudiTable(str(path)), instant_time=instant)
    assert result.instant == instant
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)
