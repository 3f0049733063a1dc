"""Bootstrap commit of the METADATA_ONLY partitions: the bootstrap index, then ``00000000000001`` completed.

Mirrors Hudi 0.14/0.15 ``SparkBootstrapCommitActionExecutor.commit``: the ``HFileBootstrapIndex`` (partition and
file-id index HFiles under ``.hoodie/.aux/.bootstrap/``) is written first, then the completed instant, last:
``HoodieCommitMetadata`` with the skeletons' write stats, ``extraMetadata.schema`` = the bootstrap schema and
``operationType`` ``BOOTSTRAP``. Markers of the instant are reconciled before and removed after the commit.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence

from lake_orchestration.hudi.hfile.bootstrap_index import (
    FILE_ID_INDEX_PATH,
    PARTITION_INDEX_PATH,
    write_bootstrap_index,
)
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.instant import Instant
from lake_orchestration.hudi.services.bootstrap.executor import MetadataOnlyExecution, SkeletonWrite
from lake_orchestration.hudi.services.bootstrap.planner import BootstrapPlan
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.commit import complete_instant
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
from lake_orchestration.hudi.table.marker import delete_markers, reconcile_markers

BOOTSTRAP_OPERATION = "BOOTSTRAP"
"""``WriteOperationType.BOOTSTRAP``: the commit's ``operationType``."""


def write_index(table: HudiTable, plan: BootstrapPlan, writes: Sequence[SkeletonWrite]) -> None:
    """Write both bootstrap index files (a leftover of a crashed attempt at the same instant is replaced)."""
    files = write_bootstrap_index(
        (w.mapping for w in writes),
        bootstrap_base_path=plan.source_path,
        created_timestamp=int(time.time() * 1000),
    )
    st = table.storage
    for rel, data in ((PARTITION_INDEX_PATH, files.partition_index), (FILE_ID_INDEX_PATH, files.file_id_index)):
        st.delete_file(st.join(rel), missing_ok=True)
        st.create_if_absent(st.join(rel), data)


def bootstrap_commit_metadata(plan: BootstrapPlan, writes: Sequence[SkeletonWrite]) -> CommitMetadata:
    """The completed instant's content: write stats by partition, the bootstrap schema, operation BOOTSTRAP."""
    by_partition: dict[str, list[WriteStat]] = defaultdict(list)
    for w in writes:
        by_partition[w.stat.partitionPath or ""].append(w.stat)
    return CommitMetadata(
        partition_to_write_stats=dict(by_partition),
        extra_metadata={"schema": plan.schema_json},
        operation_type=BOOTSTRAP_OPERATION,
    )


def commit_metadata_only(
    table: HudiTable, plan: BootstrapPlan, execution: MetadataOnlyExecution, *, lock: LockConfig | None = None
) -> Instant:
    """Write the bootstrap index, then complete the execution's inflight instant (the commit point, written last)
    under the table lock. Never executes anything; a committed instant makes this a no-op (its completed instant
    is returned).

    Raises:
        InvalidInstantStateError: ``inflight`` is not an inflight instant on storage (e.g. rolled back meanwhile).
        TableLockedError: another process holds the table lock (``lock``) past its wait time.
    """
    inflight, writes = execution.inflight, execution.writes
    done = table.refresh().timeline.completed().get(str(inflight.time))
    if done is not None:
        return done
    write_index(table, plan, writes)
    instant = str(inflight.time)
    metadata = bootstrap_commit_metadata(plan, writes).to_bytes()
    # Under the table lock: no rollback of another process takes the instant for a failed one between the check
    # that it is still inflight (transition_to_completed) and the commit.
    with table_lock(table, operation=f"bootstrap commit {instant}", config=lock):
        reconcile_markers(table.storage, instant, {w.stat.path for w in writes if w.stat.path})
        completed = complete_instant(table, inflight, metadata)
    delete_markers(table.storage, instant)
    return completed
