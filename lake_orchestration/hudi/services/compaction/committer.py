"""Commit: the compaction's write stats become ``<instant>.commit`` (``compacted: true``, ``COMPACT``).

The completed file is the single commit point and is written with create-if-absent, so a plan can never be
committed twice. If writing it fails ambiguously, the timeline is re-checked with the instant time (the
idempotency key): nothing is cleaned up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.model.avro import CompactionPlan
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.attempt import attempt_check
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.compaction.result import CompactionExecution, CompactionResult
from lake_orchestration.hudi.services.plans import commit_plan_files, plan_commit_metadata
from lake_orchestration.hudi.table.commit import after_commit
from lake_orchestration.hudi.table.heartbeat import Heartbeat, heartbeat_path
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig


def compaction_commit_metadata(
    stats: list[WriteStat], plan: CompactionPlan, writer_schema: dict[str, Any]
) -> CommitMetadata:
    return plan_commit_metadata(stats, plan.extra_metadata, writer_schema, compacted=True, operation_type="COMPACT")


def commit_compaction(
    table: HudiTable,
    instant: InstantTime | str,
    metadata: CommitMetadata,
    *,
    lock: LockConfig | None = None,
    verify: Callable[[], None] | None = None,
) -> Instant:
    """``<instant>.compaction.inflight`` -> ``<instant>.commit``; then the markers are removed.

    The marker reconciliation and the completed-file write run under the table lock (``lock``), so no rollback,
    clean or archive of another process changes the instant's files between the check and the commit.

    Raises:
        InvalidInstantStateError: already committed (a second commit is impossible), or the inflight file is gone.
        CommitStateUnknownError: the write failed and the timeline does not show the commit.
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    instant = InstantTime(instant, where=table.base_uri)
    inflight = Instant(instant, Action.COMPACTION, State.INFLIGHT)
    return commit_plan_files(table, inflight, metadata, service="compaction", lock=lock, verify=verify)


def commit_execution(
    table: HudiTable,
    execution: CompactionExecution,
    *,
    config: CompactionConfig | None = None,
    verify: Callable[[], None] | None = None,
) -> CompactionResult:
    """Commit: the write stats of ``execution`` become ``<instant>.commit``; the attempt's heartbeat and markers are
    removed. Only the completed instant is written (files a failed or duplicate task attempt left, known by their
    markers, are deleted first): the plan is never executed again here, so a failed commit is retried alone.

    A plan that is committed already makes this a no-op (``already_committed``, with the timeline's metadata).

    Args:
        verify: the check run under the commit's lock (default: the plan is still inflight, its heartbeat holds
            ``execution.attempt_token``, every file of the write stats exists). A caller that passes its own (the
            attempt of this process, :meth:`~lake_orchestration.hudi.services.attempt.InstantAttempt.verify`) also
            removes the attempt's heartbeat itself.

    Raises:
        InvalidInstantStateError: the plan is no longer this attempt's (rolled back, taken over by another process
            after the heartbeat expired) or a written file is gone; nothing was committed.
        CommitStateUnknownError: the write failed and the timeline does not show the commit.
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    cfg = config or CompactionConfig()
    instant = execution.instant
    stats = list(execution.stats)
    # on the timeline the table holds (a fresh table in a separate commit step): the check under the lock lists it
    done = _completed(table, instant)
    if done is None:
        md = compaction_commit_metadata(stats, execution.plan, execution.writer_schema)
        check = verify or verify_execution(table, execution, cfg)
        try:
            commit_compaction(table, instant, md, lock=cfg.lock, verify=check)
        except InvalidInstantStateError:
            done = _completed(table, instant)  # the check refreshed the timeline: committed meanwhile?
            if done is None:
                raise
        else:
            if verify is None:  # an attempt of this process (``verify`` given) stops its own heartbeat
                after_commit(
                    instant,
                    "deleting the heartbeat",
                    lambda: _delete_heartbeat_if_ours(table, instant, execution.attempt_token),
                )
    already = done is not None
    if done is not None:
        md = table.commit_metadata(done)
        stats = md.write_stats()
    return CompactionResult(
        instant=instant,
        operations=execution.operations,
        stats=stats,
        metadata=md,
        rolled_back_attempt=execution.rolled_back_attempt,
        seconds=execution.seconds,
        already_committed=already,
    )


def _completed(table: HudiTable, instant: InstantTime) -> Instant | None:
    done = table.timeline.get(instant, Action.COMMIT)
    return done if done is not None and done.action is Action.COMMIT and done.is_completed else None


def verify_execution(table: HudiTable, execution: CompactionExecution, cfg: CompactionConfig) -> Callable[[], None]:
    """The check the commit runs under its lock: the plan is still inflight, its heartbeat still holds the attempt's
    token (no other process judged it dead and took it over) and every file of the write stats exists."""
    beat = Heartbeat(
        table.storage, execution.instant, interval_ms=cfg.heartbeat_interval_ms, content=execution.attempt_token
    )
    return attempt_check(table, execution.instant, beat, list(execution.stats))


def _delete_heartbeat_if_ours(table: HudiTable, instant: InstantTime, token: bytes) -> None:
    beat = Heartbeat(table.storage, instant, content=token)
    if beat.is_ours():
        table.storage.delete_file(heartbeat_path(table.storage, instant), missing_ok=True)
