"""Rollback commit: ``<R>.rollback.inflight`` -> ``<R>.rollback`` (``HoodieRollbackMetadata``), written once the
rolled-back instant's files and timeline files are gone (the last step of ``BaseRollbackActionExecutor``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from lake_orchestration.hudi.model.avro import InstantInfo, RollbackMetadata, RollbackPartitionMetadata
from lake_orchestration.hudi.model.instant import Instant, InstantTime
from lake_orchestration.hudi.table.commit import complete_instant
from lake_orchestration.hudi.table.hudi_table import HudiTable


def commit_rollback(table: HudiTable, rollback: Instant, metadata: RollbackMetadata) -> Instant:
    """Complete the inflight rollback instant ``rollback`` with ``metadata`` (the commit point,
    :func:`~lake_orchestration.hudi.table.commit.complete_instant`; the caller holds the table lock); returns the
    completed instant.

    Raises:
        InvalidInstantStateError: ``rollback`` is not inflight, or its completed file exists already.
        CommitStateUnknownError: the write failed and the timeline does not show the rollback.
    """
    return complete_instant(table, rollback, metadata.to_bytes())


def rollback_metadata(
    rollback_time: str,
    start: float,
    instant: InstantTime,
    action: str,
    *,
    deleted: Mapping[str, Sequence[str]],
    rollback_logs: Mapping[str, Mapping[str, int]] | None = None,
    failed_logs: Mapping[str, Mapping[str, int]] | None = None,
) -> RollbackMetadata:
    """``HoodieRollbackMetadata`` of rolling back ``instant``: per partition the files deleted, the rollback log
    files written (path -> size) and the failed commit's log files (path -> size); ``start`` is ``time.monotonic()``
    at the start of the rollback."""
    rollback_logs = rollback_logs or {}
    failed_logs = failed_logs or {}
    return RollbackMetadata(
        start_rollback_time=rollback_time,
        time_taken_in_millis=int((time.monotonic() - start) * 1000),
        total_files_deleted=sum(len(v) for v in deleted.values()),
        commits_rollback=(instant,),
        partition_metadata={
            p: RollbackPartitionMetadata(
                partition_path=p,
                success_delete_files=tuple(deleted.get(p, ())),
                failed_delete_files=(),
                rollback_log_files=dict(rollback_logs.get(p, {})),
                log_files_from_failed_commit=dict(failed_logs.get(p, {})),
            )
            for p in sorted(set(deleted) | set(rollback_logs))
        },
        version=1,
        instants_rollback=(InstantInfo(commit_time=instant, action=action),),
    )
