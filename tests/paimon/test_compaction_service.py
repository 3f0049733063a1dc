"""Paimon compaction plan -> execute -> commit on tables pypaimon writes, checked by pypaimon reading them back.

pypaimon (2.1.0, its own venv: conftest.py) writes primary-key tables in several commits (inserts, updates of
existing keys, deletes through ``rowkind.field``), so each bucket holds several level-0 files; it refuses to commit
a compaction itself. After our COMPACT snapshot pypaimon must read the same rows as before (it merges across levels,
and reads a split raw when no file is at level 0 and none has deletes: wrong levels or delete counts would show as
duplicates or resurrected rows), list the same live files as our model, and keep writing to the table.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lake_orchestration.engines.local import LocalEngine
from lake_orchestration.errors import PaimonCommitConflictError, PlanError
from lake_orchestration.paimon.model import Bucket, CommitKind, FileKind, FileSource
from lake_orchestration.paimon.services.compaction import (
    PaimonCompactionExecution,
    abort_execution,
    commit_compaction,
    execute_compaction,
    orphan_files,
    plan_compaction,
    remove_orphan_files,
    run_compaction,
)
from lake_orchestration.paimon.table import PaimonTable
from tests.paimon.tables import Pypaimon, Rows, read_rows, table_path, table_spec, write_table

pytestmark = pytest.mark.slow

LONG_MAX = 2**63 - 1

BUCKETS = 2


def _dedup_commits() -> list[Rows]:
    return [
        [[dt, i, f"v0-{i}", "+I"] for dt in ("a", "b") for i in range(200)],
        [["a", i, f"v1-{i}", "+I"] for i in range(0, 200, 3)],  # updates
        [["b", i, None, "-D"] for i in range(50, 90)] + [["a", i, None, "-D"] for i in range(0, 30, 2)],  # deletes
        [["a", i, f"v3-{i}", "+I"] for i in range(190, 230)] + [["b", i, f"v3-{i}", "+I"] for i in range(60, 70)],
    ]


def _write(pypaimon: Pypaimon, tmp_path: Path, commits: list[Rows], **options: str) -> tuple[str, PaimonTable]:
    warehouse = write_table(pypaimon, tmp_path, commits, buckets=BUCKETS, **options)
    return str(warehouse), PaimonTable.open(table_path(warehouse))


def _scan_files(pypaimon: Pypaimon, warehouse: str) -> set[tuple[Any, ...]]:
    plan = pypaimon("scan", warehouse, "default.t")
    return {
        (split["bucket"], f["file_name"], f["level"], f["row_count"], f["delete_row_count"])
        for split in plan["splits"]
        for f in split["files"]
    }


def _our_files(table: PaimonTable) -> set[tuple[Any, ...]]:
    return {(b.bucket, f.file_name, f.level, f.row_count, f.delete_row_count) for b in table.buckets() for f in b.files}


def _retractions(table: PaimonTable, bucket_path: str, file_name: str) -> int:
    kinds = pq.read_table(Path(table.uri) / bucket_path / file_name, columns=["_VALUE_KIND"]).column(0)
    return int(pc.sum(pc.is_in(kinds, value_set=pc.cast([1, 3], "int8"))).as_py() or 0)


def _assert_compact_snapshot(table: PaimonTable, before_id: int, execution: PaimonCompactionExecution) -> None:
    """The new snapshot is a COMPACT commit whose delta is exactly the execution's before (DELETE, old level) and
    after (ADD, output level) files, with Java's commit identifier and consistent record counts."""
    snap = table.latest_snapshot()
    assert snap is not None and snap.id == before_id + 1
    assert (snap.commit_kind, snap.commit_identifier) == (CommitKind.COMPACT, LONG_MAX)
    entries = table.delta_entries(snap)
    deleted = {(e.bucket, e.file.file_name, e.file.level) for e in entries if e.kind is FileKind.DELETE}
    added = {(e.bucket, e.file.file_name, e.file.level) for e in entries if e.kind is FileKind.ADD}
    assert deleted == {(r.compaction.bucket, f.file_name, f.level) for r in execution.results for f in r.before}
    assert added == {(r.compaction.bucket, f.file_name, f.level) for r in execution.results for f in r.after}
    for result in execution.results:
        assert {f.level for f in result.after} <= {result.compaction.output_level}
        sources = {f.file_name: f.file_source for f in result.before}
        for f in result.after:
            # an upgrade keeps the file (and its source); a rewrite writes a COMPACT file
            assert f.file_source is sources.get(f.file_name, FileSource.COMPACT)
    live_rows = sum(f.row_count for b in table.buckets() for f in b.files)
    assert snap.total_record_count == live_rows
    assert snap.delta_record_count == sum(e.file.row_count * (1 if e.kind is FileKind.ADD else -1) for e in entries)


def test_run_compaction_pypaimon_table_with_updates_and_deletes_commits_compact_snapshot_read_equal(
    tmp_path: Path, pypaimon: Pypaimon
) -> None:
    warehouse, table = _write(pypaimon, tmp_path, _dedup_commits(), **{"num-sorted-run.compaction-trigger": "3"})
    before_rows = read_rows(pypaimon, warehouse)
    before_id = table.latest_snapshot_id()
    assert before_id == 4

    plan = plan_compaction(table)
    assert not plan.is_empty and plan.snapshot_id == 4
    result = run_compaction(table, engine=LocalEngine(threads=2))
    assert result.commit is not None and result.execution is not None and result.replans == 0
    _assert_compact_snapshot(table, before_id, result.execution)

    assert read_rows(pypaimon, warehouse) == before_rows
    assert _scan_files(pypaimon, warehouse) == _our_files(table)


def test_full_compaction_no_level0_file_left_pypaimon_fast_path_reads_equal(tmp_path: Path, pypaimon: Pypaimon) -> None:
    warehouse, table = _write(pypaimon, tmp_path, _dedup_commits())
    before_rows = read_rows(pypaimon, warehouse)

    result = run_compaction(table, full=True)
    assert result.commit is not None and result.execution is not None
    _assert_compact_snapshot(table, 4, result.execution)

    buckets = table.buckets()
    max_level = table.options().num_levels - 1
    for bucket in buckets:
        assert not bucket.levels.level0
        for f in bucket.files:
            path = table.storage.relative(table.bucket_path(bucket.partition, bucket.bucket))
            # the fast path reads these files raw: no retraction may be left, and the metadata must say so
            assert (f.level, f.delete_row_count, _retractions(table, path, f.file_name)) == (max_level, 0, 0)
    assert read_rows(pypaimon, warehouse) == before_rows
    assert _scan_files(pypaimon, warehouse) == _our_files(table)
    # nothing left to do
    assert plan_compaction(table, full=True).is_empty

    # pypaimon keeps writing on top of the compacted table, and merges its new level-0 files with ours
    spec = table_spec(
        warehouse, [[["a", 5, "after", "+I"], ["b", 0, None, "-D"], ["b", 999, "new", "+I"]]], buckets=BUCKETS
    )
    pypaimon("append", spec)
    expected = {(r[0], r[1]): r for r in before_rows}
    expected[("a", 5)] = ["a", 5, "after", "+I"]
    expected.pop(("b", 0))
    expected[("b", 999)] = ["b", 999, "new", "+I"]
    assert read_rows(pypaimon, warehouse) == sorted(expected.values(), key=lambda r: (r[0], r[1]))


MERGE_ENGINE_CASES: dict[str, tuple[dict[str, str], list[Rows]]] = {
    "partial-update": (
        {"merge-engine": "partial-update"},
        [
            [[dt, i, f"v0-{i}", "+I"] for dt in ("a", "b") for i in range(60)],
            [["a", i, None, f"op1-{i}"] for i in range(0, 60, 2)],  # only op: v keeps its value
            [["a", i, f"v2-{i}", None] for i in range(0, 60, 3)],  # only v
            [["b", i, None, None] for i in range(10)],  # nothing
        ],
    ),
    "first-row": (
        {"merge-engine": "first-row"},
        [
            [[dt, i, f"v0-{i}", "+I"] for dt in ("a", "b") for i in range(60)],
            [["a", i, f"v1-{i}", "+I"] for i in range(0, 80, 2)],  # later rows of existing keys are ignored
            [["b", i, f"v2-{i}", "+I"] for i in range(50, 90)],
        ],
    ),
}


@pytest.mark.parametrize("full", [False, True], ids=["picked", "full"])
@pytest.mark.parametrize("engine", sorted(MERGE_ENGINE_CASES))
def test_run_compaction_merge_engine_table_pypaimon_reads_equal(
    tmp_path: Path, pypaimon: Pypaimon, engine: str, full: bool
) -> None:
    options, commits = MERGE_ENGINE_CASES[engine]
    opts = {**options, "num-sorted-run.compaction-trigger": "2"}
    warehouse = tmp_path / "warehouse"
    spec = table_spec(warehouse, commits, buckets=BUCKETS, **opts)
    if engine == "partial-update":
        spec["options"].pop("rowkind.field")  # op is a plain column here: partial updates have no retractions
    pypaimon("write", spec)
    table = PaimonTable.open(str(warehouse / "default.db" / "t"))
    # independent expectation: first row per key, or non-null fields of later rows overwriting
    merged: dict[tuple[str, int], list[Any]] = {}
    for commit in commits:
        for row in commit:
            key = (row[0], row[1])
            if key not in merged:
                merged[key] = list(row)
            elif engine == "partial-update":
                merged[key] = [new if new is not None else old for old, new in zip(merged[key], row, strict=True)]
    expected = sorted(merged.values(), key=lambda r: (r[0], r[1]))
    # pypaimon, like Java, reads no level-0 file of a first-row table (only compaction makes rows visible)
    assert read_rows(pypaimon, str(warehouse)) == ([] if engine == "first-row" else expected)

    result = run_compaction(table, full=full)
    assert result.commit is not None and result.execution is not None
    _assert_compact_snapshot(table, len(commits), result.execution)
    assert read_rows(pypaimon, str(warehouse)) == expected
    if engine == "first-row":
        # first-row readers take files above level 0 without merging: no key may be left in two levels
        for bucket in table.buckets():
            assert not bucket.levels.level0
            ids = _ids_of(table, bucket)
            assert len(pc.unique(ids)) == len(ids)


def _ids_of(table: PaimonTable, bucket: Bucket) -> pa.Array:
    path = Path(table.bucket_path(bucket.partition, bucket.bucket))
    return pa.concat_arrays(
        [pq.read_table(path / f.file_name, columns=["_KEY_id"]).column(0).combine_chunks() for f in bucket.files]
    )


def test_run_compaction_aggregation_table_pypaimon_reads_equal(tmp_path: Path, pypaimon: Pypaimon) -> None:
    warehouse = tmp_path / "warehouse"
    spec = {
        "warehouse": str(warehouse),
        "identifier": "default.t",
        "columns": [
            ["k", "string", False],
            ["total", "int64", True],
            ["top", "float64", True],
            ["tag", "string", True],
        ],
        "partition_keys": [],
        "primary_keys": ["k"],
        "options": {
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.total.aggregate-function": "sum",
            "fields.top.aggregate-function": "max",
            "num-sorted-run.compaction-trigger": "2",
        },
        "commits": [
            [[f"k{i}", i, float(i), f"t0-{i}"] for i in range(40)],
            [[f"k{i}", 10, float(-i), None] for i in range(0, 40, 2)],
            [[f"k{i}", None, 100.0, f"t2-{i}"] for i in range(0, 40, 5)],
        ],
    }
    pypaimon("write", spec)
    table = PaimonTable.open(str(warehouse / "default.db" / "t"))
    before = sorted(pypaimon("read", str(warehouse), "default.t")["rows"])
    # independent expectation: sum, max and (default) last non-null value per key
    expected: dict[str, list[Any]] = {}
    for commit in spec["commits"]:
        for k, total, top, tag in commit:
            row = expected.setdefault(k, [k, None, None, None])
            if total is not None:
                row[1] = total if row[1] is None else row[1] + total
            if top is not None:
                row[2] = top if row[2] is None else max(row[2], top)
            if tag is not None:
                row[3] = tag
    assert before == sorted(expected.values())

    result = run_compaction(table, full=True)
    assert result.commit is not None and result.execution is not None
    _assert_compact_snapshot(table, 3, result.execution)
    assert sorted(pypaimon("read", str(warehouse), "default.t")["rows"]) == before
    (bucket,) = table.buckets()
    assert [f.row_count for f in bucket.files] == [40]


def test_crash_between_execute_and_commit_leaves_no_visible_change_rerun_completes(
    tmp_path: Path, pypaimon: Pypaimon
) -> None:
    warehouse, table = _write(pypaimon, tmp_path, _dedup_commits())
    before_rows = read_rows(pypaimon, warehouse)
    before_files = _our_files(table)

    crashed = execute_compaction(plan_compaction(table, full=True), storage=table.storage)
    assert crashed.written  # data files were written ...
    # ... but no commit: nothing visible
    assert table.latest_snapshot_id() == 4
    assert _our_files(table) == before_files
    assert read_rows(pypaimon, warehouse) == before_rows

    result = run_compaction(table, full=True)
    assert result.commit is not None and result.commit.snapshot.id == 5
    assert read_rows(pypaimon, warehouse) == before_rows
    # the crashed attempt's files are orphans: no snapshot references them, the rerun did not use them
    orphans = orphan_files(table, older_than_ms=0)
    assert set(orphans.data_files) == set(crashed.written)
    assert not orphans.manifest_files
    with pytest.raises(PlanError, match="committed"):
        abort_execution(table, result.execution)  # type: ignore[arg-type]
    assert remove_orphan_files(table, older_than_ms=0) == orphans
    assert not any((Path(table.uri) / p).exists() for p in crashed.written)
    assert read_rows(pypaimon, warehouse) == before_rows


def test_concurrent_append_during_compaction_commits_on_top_of_it(tmp_path: Path, pypaimon: Pypaimon) -> None:
    """Java ``FileStoreCommitImpl``: a newer snapshot whose live files still include every compacted file is no
    conflict: the COMPACT snapshot is created on top of it (id + 1) and keeps the appended files."""
    warehouse, table = _write(pypaimon, tmp_path, _dedup_commits())
    plan = plan_compaction(table, full=True)
    execution = execute_compaction(plan, storage=table.storage)

    concurrent = [["a", 1, "concurrent", "+I"], ["b", 1, None, "-D"], ["a", 777, "concurrent-new", "+I"]]
    pypaimon("append", table_spec(warehouse, [concurrent], buckets=BUCKETS))
    expected_rows = read_rows(pypaimon, warehouse)
    append_files = _our_files(table) - {(r.compaction.bucket, f.file_name, f.level, f.row_count, f.delete_row_count)
                                        for r in execution.results for f in r.before}  # fmt: skip
    assert table.latest_snapshot_id() == 5

    commit = commit_compaction(table, execution)
    assert commit is not None and commit.snapshot.id == 6 and commit.attempts == 1
    _assert_compact_snapshot(table, 5, execution)
    assert append_files <= _our_files(table)  # the APPEND's level-0 files are still live
    assert read_rows(pypaimon, warehouse) == expected_rows


class _RacingEngine:
    """Runs the tasks, then lets another compaction of the same table commit first (a concurrent compaction job)."""

    name = "racing"

    def __init__(self, table: PaimonTable) -> None:
        self.table = table
        self.raced = False

    def map_tasks(self, fn: Callable[[Any], list[Any]], tasks: Sequence[Any], *, description: str) -> list[Any]:
        results = [r for t in tasks for r in fn(t)]
        if not self.raced:
            self.raced = True
            run_compaction(self.table, full=True)
        return results

    def map_record_groups(self, fn: Any, groups: Any, *, description: str) -> list[Any]:
        raise NotImplementedError


def test_concurrent_compaction_conflict_replans_and_removes_the_failed_attempts_files(
    tmp_path: Path, pypaimon: Pypaimon
) -> None:
    warehouse, table = _write(pypaimon, tmp_path, _dedup_commits())
    before_rows = read_rows(pypaimon, warehouse)

    # two executions of one plan: the second commit finds its inputs compacted away
    plan = plan_compaction(table, full=True)
    first = execute_compaction(plan, storage=table.storage)
    second = execute_compaction(plan, storage=table.storage)
    assert commit_compaction(table, first) is not None
    with pytest.raises(PaimonCommitConflictError, match="no longer live") as err:
        commit_compaction(table, second)
    assert err.value.snapshot_id == 5
    assert table.latest_snapshot_id() == 5
    assert abort_execution(table, second) == len(second.written)

    # the service re-plans after the conflict: the racer compacted everything, nothing is left to do
    shutil.rmtree(tmp_path / "warehouse")
    warehouse, table = _write(pypaimon, tmp_path, _dedup_commits())
    result = run_compaction(table, full=True, engine=_RacingEngine(table))
    assert result.replans == 1 and result.commit is None and result.plan.is_empty
    latest = table.latest_snapshot()
    assert latest is not None and latest.id == 5 and latest.commit_kind is CommitKind.COMPACT
    assert orphan_files(table, older_than_ms=0).data_files == ()
    assert read_rows(pypaimon, warehouse) == before_rows


@pytest.mark.spark
def test_run_compaction_on_spark_one_task_per_bucket_pypaimon_reads_equal(
    tmp_path: Path, pypaimon: Pypaimon, spark: Any
) -> None:
    from lake_orchestration.engines.spark import SparkEngine

    warehouse, table = _write(pypaimon, tmp_path, _dedup_commits())
    before_rows = read_rows(pypaimon, warehouse)
    result = run_compaction(table, full=True, engine=SparkEngine(spark))
    assert result.execution is not None and len(result.execution.results) == len(result.plan.buckets) == 4
    _assert_compact_snapshot(table, 4, result.execution)
    assert read_rows(pypaimon, warehouse) == before_rows


def test_full_compaction_rolls_output_at_target_file_size_sorted_disjoint_files(
    tmp_path: Path, pypaimon: Pypaimon
) -> None:
    warehouse, table = _write(pypaimon, tmp_path, _dedup_commits(), **{"target-file-size": "2kb"})
    before_rows = read_rows(pypaimon, warehouse)
    result = run_compaction(table, full=True)
    assert result.commit is not None
    schema = table.schema()
    rolled = 0
    for bucket in table.buckets():
        files = bucket.files
        rolled += len(files) > 1
        # one sorted run at the max level: files ordered by key with disjoint ranges
        keys = [(f.min_key.to_values(schema.key_types), f.max_key.to_values(schema.key_types)) for f in files]
        assert all(lo <= hi for lo, hi in keys)
        assert all(a[1] < b[0] for a, b in itertools.pairwise(keys))
        assert {f.level for f in files} == {table.options().num_levels - 1}
        assert all(f.file_name.startswith("data-") and f.file_name.endswith(".parquet") for f in files)
    assert rolled
    assert read_rows(pypaimon, warehouse) == before_rows
    assert _scan_files(pypaimon, warehouse) == _our_files(table)
