"""Compaction and log compaction plans leave out the file groups of a pending clustering plan, as Java 0.15's
``BaseHoodieCompactionPlanGenerator#generateCompactionPlan`` does (``getFileGroupsInPendingClustering``)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_orchestration.hudi.model.avro import ClusteringGroup, ClusteringPlan, RequestedReplaceMetadata, SliceInfo
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.compaction.planner import schedule_compaction
from lake_orchestration.hudi.services.log_compaction.planner import schedule_log_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table


def _rows(ids: range, part: str, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"id{i:03d}" for i in ids]),
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "p": pa.array([part] * len(ids)),
        }
    )


@pytest.fixture
def mor_with_clustering(tmp_path) -> tuple[str, set[tuple[str, str]]]:
    """MOR, partitions a and b with log files in every file group, a clustering plan pending on partition a."""
    path = str(tmp_path / "t")
    opts = WriteOptions.from_hudi_options(
        {
            "hoodie.table.name": "t",
            "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.parquet.small.file.limit": "0",
        },
        max_rows_per_file=10,
    )
    write_table(
        path,
        pa.concat_tables([_rows(range(20), "a", 1), _rows(range(100, 120), "b", 1)]),
        operation="bulk_insert",
        options=opts,
    )
    write_table(
        path,
        pa.concat_tables([_rows(range(20), "a", 2), _rows(range(100, 120), "b", 2)]),
        operation="upsert",
        options=opts,
    )
    table = HudiTable(path)
    slices = [s for s in table.fs_view().latest_file_slices() if s.partition_path == "a"]
    assert slices and all(s.log_files for s in slices)
    plan = ClusteringPlan(
        input_groups=(
            ClusteringGroup(
                slices=tuple(
                    SliceInfo(
                        data_file_path=s.base_file.relative_path if s.base_file else None,
                        delta_file_paths=tuple(lf.relative_path for lf in s.log_files),
                        file_id=s.file_id,
                        partition_path="a",
                    )
                    for s in slices
                )
            ),
        )
    )
    requested = RequestedReplaceMetadata(operation_type="CLUSTER", clustering_plan=plan, extra_metadata={})
    table.create_requested(
        Instant(table.new_instant_time(), Action.REPLACE_COMMIT, State.REQUESTED), requested.to_bytes()
    )
    return path, {("a", s.file_id) for s in slices}


def test_compaction_plan_skips_file_groups_under_pending_clustering(mor_with_clustering) -> None:
    path, clustered = mor_with_clustering
    # a pending clustering before the plan's instant refuses a single writer's compaction, as Java's
    # ScheduleCompactionActionExecutor (filterPendingExcludingCompaction); beside writers (LAZY) it is planned
    result = schedule_compaction(HudiTable(path), config=CompactionConfig(failed_writes_policy="LAZY"), force=True)
    planned = {(op.partition_path, op.file_id) for op in result.plan.operations}
    assert planned and {p for p, _ in planned} == {"b"}
    assert not planned & clustered


def test_log_compaction_plan_skips_file_groups_under_pending_clustering(mor_with_clustering) -> None:
    path, clustered = mor_with_clustering
    result = schedule_log_compaction(
        HudiTable(path), config=CompactionConfig(log_compaction_blocks_threshold=1, failed_writes_policy="LAZY")
    )
    planned = {(op.partition_path, op.file_id) for op in result.plan.operations}
    assert planned and {p for p, _ in planned} == {"b"}
    assert not planned & clustered
