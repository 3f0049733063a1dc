"""Commit: a clustering's write stats become ``<instant>.replacecommit`` (``HoodieReplaceCommitMetadata`` JSON:
``partitionToWriteStats`` of the new files, ``partitionToReplaceFileIds`` of every input file group, ``operationType``
``CLUSTER``, ``extraMetadata.schema``), through the one commit path (the table lock, the metadata table's
deltacommit first, the completed instant last with the ambiguous-write rule). A plan already committed makes this a
no-op."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.model.avro import ClusteringPlan
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.attempt import attempt_check
from lake_orchestration.hudi.services.clustering.config import ClusteringConfig
from lake_orchestration.hudi.services.clustering.planner import CLUSTER
from lake_orchestration.hudi.services.clustering.result import ClusteringExecution, ClusteringResult, replaced_file_ids
from lake_orchestration.hudi.services.plans import commit_plan_files, plan_commit_metadata
from lake_orchestration.hudi.table.commit import after_commit
from lake_orchestration.hudi.table.heartbeat import Heartbeat, heartbeat_path
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig


def clustering_commit_metadata(
    stats: list[WriteStat], plan: ClusteringPlan, writer_schema: dict[str, Any]
) -> CommitMetadata:
    """The replacecommit's ``HoodieReplaceCommitMetadata``."""
    return plan_commit_metadata(
        stats,
        plan.extra_metadata,
        writer_schema,
        compacted=False,
        operation_type=CLUSTER,
        partition_to_replace_file_ids=replaced_file_ids(plan),
    )


def commit_clustering(
    table: HudiTable,
    instant: InstantTime | str,
    metadata: CommitMetadata,
    *,
    lock: LockConfig | None = None,
    verify: Callable[[], None] | None = None,
) -> Instant:
    """``<instant>.replacecommit.inflight`` -> ``<instant>.replacecommit``; files with a marker but no write stat
    (failed task attempts) are deleted first, the markers after.

    Raises:
        InvalidInstantStateError: ``verify`` refused, or the instant is not inflight.
        CommitStateUnknownError: the write failed and the timeline does not show the commit.
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    instant = InstantTime(instant, where=table.base_uri)
    inflight = Instant(instant, Action.REPLACE_COMMIT, State.INFLIGHT)
    return commit_plan_files(table, inflight, metadata, service="clustering", lock=lock, verify=verify)


def _completed(table: HudiTable, instant: InstantTime) -> Instant | None:
    done = table.timeline.get(instant, Action.REPLACE_COMMIT)
    return done if done is not None and done.action is Action.REPLACE_COMMIT and done.is_completed else None


def verify_execution(table: HudiTable, execution: ClusteringExecution, cfg: ClusteringConfig) -> Callable[[], None]:
    """The check under the commit's lock: still inflight, the heartbeat still holds the attempt's token, every
    written file exists."""
    beat = Heartbeat(
        table.storage, execution.instant, interval_ms=cfg.heartbeat_interval_ms, content=execution.attempt_token
    )
    return attempt_check(
        table, execution.instant, beat, list(execution.stats), action=Action.REPLACE_COMMIT, what="clustering"
    )


def commit_execution(
    table: HudiTable,
    execution: ClusteringExecution,
    *,
    config: ClusteringConfig | None = None,
    verify: Callable[[], None] | None = None,
) -> ClusteringResult:
    """Commit the write stats of ``execution`` as ``<instant>.replacecommit``; only the completed instant is written
    (never executes again), so a failed commit is retried alone. A plan committed already: a no-op
    (``already_committed``, with the timeline's metadata).

    Args:
        verify: the check under the commit's lock (default: :func:`verify_execution`); a caller passing its own
            attempt's check deletes that attempt's heartbeat itself.

    Raises:
        InvalidInstantStateError: the plan is no longer this attempt's or a written file is gone; nothing committed.
        CommitStateUnknownError: the write failed and the timeline does not show the commit.
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    cfg = config or ClusteringConfig()
    instant = execution.instant
    stats = list(execution.stats)
    done = _completed(table, instant)
    md = clustering_commit_metadata(stats, execution.plan, execution.writer_schema)
    if done is None:
        try:
            commit_clustering(
                table, instant, md, lock=cfg.lock, verify=verify or verify_execution(table, execution, cfg)
            )
        except InvalidInstantStateError:
            done = _completed(table, instant)  # the check refreshed the timeline: committed meanwhile?
            if done is None:
                raise
        else:
            if verify is None:
                after_commit(
                    instant, "deleting the heartbeat", lambda: _delete_heartbeat_if_ours(table, instant, execution)
                )
    if done is not None:
        md = table.commit_metadata(done)
        stats = md.write_stats()
    return ClusteringResult(
        instant=instant,
        groups=execution.groups,
        stats=stats,
        plan=execution.plan,
        metadata=md,
        rolled_back_attempt=execution.rolled_back_attempt,
        seconds=execution.seconds,
        already_committed=done is not None,
    )


def _delete_heartbeat_if_ours(table: HudiTable, instant: InstantTime, execution: ClusteringExecution) -> None:
    beat = Heartbeat(table.storage, instant, content=execution.attempt_token)
    if beat.is_ours():
        table.storage.delete_file(heartbeat_path(table.storage, instant), missing_ok=True)
