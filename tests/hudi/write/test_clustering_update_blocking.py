"""Writers beside a pending clustering plan (Java 0.15 ``hoodie.clustering.updates.strategy``): upserts and deletes
into its file groups refused before anything is written (``SparkRejectUpdateStrategy``), inserts kept out of its
small files (``UpsertPartitioner#filterSmallFilesInClustering``), other file groups written as usual, and the
``SparkAllowUpdateStrategy`` alternative. The plan is a ``replacecommit.requested`` holding a
``HoodieRequestedReplaceMetadata`` (CLUSTER) over the table's file groups, as Java schedules one
(tests/java/test_clustering_guards_java.py has Java schedule it and refuse the same upsert)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_orchestration.hudi.model.avro import (
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    RequestedReplaceMetadata,
    SliceInfo,
)
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from lake_orchestration.hudi.write.clustering_guard import ALLOW, ClusteringUpdateError

KEYS = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts"}


def _rows(ids: list[int], part: str, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"id{i:03d}" for i in ids]),
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "v": pa.array([float(i) for i in ids]),
            "p": pa.array([part] * len(ids)),
        }
    )


def _options(table_type: str = "COPY_ON_WRITE", **extra: str) -> WriteOptions:
    return WriteOptions.from_hudi_options(
        {
            "hoodie.table.name": "t",
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.partitionpath.field": "p",
            **KEYS,
            **extra,
        },
        max_rows_per_file=10,
    )


def _schedule_clustering(path: str, partition: str) -> tuple[str, set[tuple[str, str]]]:
    """A pending clustering plan over every file group of ``partition`` (what Java's planner writes: one group of
    the partition's slices, SparkSortAndSizeExecutionStrategy)."""
    table = HudiTable(path)
    slices = [s for s in table.fs_view().latest_file_slices() if s.partition_path == partition]
    instant = table.new_instant_time()
    plan = ClusteringPlan(
        input_groups=(
            ClusteringGroup(
                slices=tuple(
                    SliceInfo(
                        data_file_path=s.base_file.relative_path if s.base_file else None,
                        delta_file_paths=(),
                        file_id=s.file_id,
                        partition_path=s.partition_path,
                    )
                    for s in slices
                ),
                num_output_file_groups=1,
            ),
        ),
        strategy=ClusteringStrategy(
            strategy_class_name="org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
            strategy_params={},
        ),
        preserve_hoodie_metadata=True,
    )
    requested = RequestedReplaceMetadata(operation_type="CLUSTER", clustering_plan=plan, extra_metadata={})
    table.create_requested(Instant(instant, Action.REPLACE_COMMIT, State.REQUESTED), requested.to_bytes())
    return str(instant), {(partition, s.file_id) for s in slices}


@pytest.fixture(scope="module")
def clustered(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, set[tuple[str, str]]]:
    """Two partitions of 15 rows each (two file groups each), a clustering plan pending on partition a."""
    path = str(tmp_path_factory.mktemp("clustering-blocking") / "t")
    data = pa.concat_tables([_rows(list(range(15)), "a", 1), _rows(list(range(100, 115)), "b", 1)])
    write_table(path, data, operation="bulk_insert", options=_options())
    instant, groups = _schedule_clustering(path, "a")
    return path, instant, groups


def test_mor_update_into_clustering_file_group_refused(tmp_path: Path) -> None:
    """MERGE_ON_READ: an update would append a log block to the file group; refused the same way (Java's delta
    commit executors share BaseSparkCommitActionExecutor#clusteringHandleUpdate)."""
    path = str(tmp_path / "t")
    write_table(path, _rows(list(range(15)), "a", 1), operation="bulk_insert", options=_options("MERGE_ON_READ"))
    write_table(path, _rows([1, 2], "a", 2), operation="upsert", options=_options("MERGE_ON_READ"))  # log files
    instant, groups = _schedule_clustering(path, "a")
    before = _timeline_and_files(path)
    logs = {p.name: p.stat().st_size for p in Path(path).rglob("*.log.*")}
    assert logs
    with pytest.raises(ClusteringUpdateError) as err:
        write_table(path, _rows([3], "a", 3), operation="upsert", options=_options("MERGE_ON_READ"))
    assert err.value.instants == [instant] and set(err.value.file_groups) <= groups
    assert _timeline_and_files(path) == before
    assert {p.name: p.stat().st_size for p in Path(path).rglob("*.log.*")} == logs  # no log block appended


def _copy(src: str, dst: Path) -> str:
    import shutil

    shutil.copytree(src, dst)
    return str(dst)


def _timeline_and_files(path: str) -> tuple[list[str], list[str]]:
    root = Path(path)
    return sorted(p.name for p in (root / ".hoodie").iterdir() if p.is_file()), sorted(
        str(p.relative_to(root)) for p in root.rglob("*.parquet") if ".hoodie" not in p.parts
    )


@pytest.mark.parametrize("operation", ["upsert", "delete"])
def test_update_into_clustering_file_group_refused_before_anything_is_written(
    clustered: tuple[str, str, set[tuple[str, str]]], tmp_path: Path, operation: str
) -> None:
    path = _copy(clustered[0], tmp_path / "t")
    instant, groups = clustered[1], clustered[2]
    before = _timeline_and_files(path)
    batch = pa.concat_tables([_rows([3], "a", 2), _rows([101], "b", 2)])
    with pytest.raises(ClusteringUpdateError) as err:
        write_table(path, batch, operation=operation, options=_options())
    hit = {g for g in groups if g[1] in str(err.value)}
    assert hit, str(err.value)  # the file group of id003 is named ...
    assert instant in str(err.value)  # ... and the clustering instant
    assert err.value.instants == [instant]
    assert set(err.value.file_groups) <= groups
    assert "Not allowed to update the clustering file group" in str(err.value)
    assert _timeline_and_files(path) == before  # no instant, no file


def test_other_file_groups_and_inserts_are_written_and_inserts_skip_clustering_small_files(
    clustered: tuple[str, str, set[tuple[str, str]]], tmp_path: Path
) -> None:
    path = _copy(clustered[0], tmp_path / "t")
    groups = clustered[2]
    opts = _options(**{"hoodie.parquet.small.file.limit": str(100 * 1024 * 1024)})
    res = write_table(path, _rows([101, 102], "b", 2), operation="upsert", options=opts)
    assert res.updated == 2
    res = write_table(path, _rows([50, 51, 52], "a", 2), operation="upsert", options=opts)  # new keys in partition a
    assert res.inserted == 3
    written = {(s.partitionPath, s.fileId) for stats in res.metadata.partition_to_write_stats.values() for s in stats}
    assert written and not (written & groups)  # a new file group, not a small file under clustering
    snap = read_snapshot_table(HudiTable(path))
    assert snap.num_rows == 33


def test_allow_strategy_lets_the_update_through_and_rollback_on_conflict_needs_the_rollback(
    clustered: tuple[str, str, set[tuple[str, str]]], tmp_path: Path
) -> None:
    path = _copy(clustered[0], tmp_path / "t")
    instant, groups = clustered[1], clustered[2]
    allow = {"hoodie.clustering.updates.strategy": ALLOW}
    res = write_table(path, _rows([3], "a", 2), operation="upsert", options=_options(**allow))
    written = {(s.partitionPath, s.fileId) for stats in res.metadata.partition_to_write_stats.values() for s in stats}
    assert written <= groups and res.updated == 1
    on_conflict = {**allow, "hoodie.clustering.rollback.pending.replacecommit.on.conflict": "true"}
    with pytest.raises(ClusteringUpdateError, match="no clustering rollback"):
        write_table(path, _rows([4], "a", 3), operation="upsert", options=_options(**on_conflict))
    asked: list[str] = []

    def roll_back(table: HudiTable, clustering_instant: str) -> None:
        # what Java's table.rollback(..., deleteInstants=true) leaves: the plan gone from the timeline
        asked.append(clustering_instant)
        for state in (State.INFLIGHT, State.REQUESTED):
            p = Path(path) / ".hoodie" / Instant(clustering_instant, Action.REPLACE_COMMIT, state).file_name
            p.unlink(missing_ok=True)

    res = write_table(
        path, _rows([4], "a", 3), operation="upsert", options=_options(**on_conflict), rollback_clustering=roll_back
    )
    assert asked == [instant] and res.updated == 1


def test_bad_strategy_values_are_named(clustered: tuple[str, str, set[tuple[str, str]]], tmp_path: Path) -> None:
    path = _copy(clustered[0], tmp_path / "t")
    with pytest.raises(ValueError, match=r"hoodie\.clustering\.updates\.strategy='Nope'"):
        write_table(
            path,
            _rows([101], "b", 2),
            operation="upsert",
            options=_options(**{"hoodie.clustering.updates.strategy": "Nope"}),
        )
