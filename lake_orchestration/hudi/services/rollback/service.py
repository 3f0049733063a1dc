"""Rollback of a failed (pending) write end to end: plan -> execute -> ``.rollback``, as Hudi 0.14 does it for
timeline layout 1 (``BaseRollbackPlanActionExecutor`` then ``MergeOnReadRollbackActionExecutor``).

:func:`rollback_write` rolls back one pending write (a compaction or log compaction instant is delegated to
:mod:`.compaction`), :func:`rollback_stale_writes` every stale one (live writers, with a fresh heartbeat, are never
touched). A failed rollback is not undone but resumed: its pending ``<R>.rollback`` names its target, and the next
rollback of that target (or of the stale writes) finishes it from its plan; a pending rollback whose plan does not
decode is removed by :func:`~lake_orchestration.hudi.services.rollback.repair.remove_unreadable_rollback`.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.model.avro import InstantInfo, RollbackPlan
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.rollback.committer import commit_rollback
from lake_orchestration.hudi.services.rollback.compaction import (
    rollback_inflight_compaction,
    rollback_inflight_log_compaction,
)
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.services.rollback.executor import execute_rollback
from lake_orchestration.hudi.services.rollback.planner import (
    WRITE_ACTIONS,
    StaleWrite,
    pending_rollback_of,
    plan_rollback,
    stale_writes,
    storage_paths,
)
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock

if TYPE_CHECKING:
    from lake_orchestration.hudi.services.rollback.repair import RemovedRollback


@dataclass(frozen=True, kw_only=True)
class RollbackResult:
    """The rollback of one pending write: done (the rollback instant), or on a dry run its plan."""

    instant: str
    """The rolled-back (or, on a dry run, the would-be rolled-back) instant."""
    reason: str
    """Why it was rolled back (``requested``, or why it was judged stale)."""
    plan: RollbackPlan | None = None
    """The plan (dry run)."""
    rollback_instant: Instant | None = None
    """The completed rollback instant (not a dry run)."""

    @classmethod
    def of(cls, instant: str, reason: str, outcome: RollbackPlan | Instant) -> RollbackResult:
        """From what :func:`rollback_write` returns."""
        if isinstance(outcome, RollbackPlan):
            return cls(instant=instant, reason=reason, plan=outcome)
        return cls(instant=instant, reason=reason, rollback_instant=outcome)

    @property
    def dry_run(self) -> bool:
        return self.plan is not None

    @property
    def files_to_delete(self) -> list[str]:
        """Files the plan deletes (dry run)."""
        return [
            f for req in (self.plan.rollback_requests if self.plan else None) or () for f in req.files_to_be_deleted
        ]

    @property
    def log_files_with_blocks(self) -> list[str]:
        """Log files holding the instant's blocks, which get a rollback command block (dry run)."""
        reqs = (self.plan.rollback_requests if self.plan else None) or ()
        return [f for req in reqs for f in (req.log_blocks_to_be_deleted or {})]

    def to_json_obj(self) -> dict[str, Any]:
        """One row of ``lake-orch rollback --json``."""
        if self.plan is not None:
            return {
                "instant": self.instant,
                "reason": self.reason,
                "dry_run": True,
                "files_to_delete": self.files_to_delete,
                "log_files_with_blocks": self.log_files_with_blocks,
            }
        return {"instant": self.instant, "reason": self.reason, "rollback_instant": str(self.rollback_instant.time)}  # type: ignore[union-attr]


def rollback_write(
    table: HudiTable, instant: InstantTime | str, *, dry_run: bool = False, config: RollbackConfig | None = None
) -> RollbackPlan | Instant:
    """Roll back the pending write ``instant`` (a compaction instant is delegated to its own rollback).

    Returns the plan on a dry run, else the completed rollback instant. ``config`` (default: Hudi's; from Hudi keys:
    :meth:`RollbackConfig.from_options`): the table lock, the heartbeats, and ``hoodie.metadata.enable=false``, which
    lets a table with a metadata table be rolled back (the metadata table is deleted first; see
    :meth:`HudiTable.ensure_metadata_table_handled`).

    Raises:
        InvalidInstantStateError: the instant is completed or not a write on the timeline.
        MetadataTableError: the metadata table has a partition other than ``files`` (or is missing though
            ``hoodie.table.metadata.partitions`` lists it) and ``hoodie.metadata.enable`` is not ``false``.
        TableLockedError: another process holds the table lock (``config.lock``).
    """
    cfg = config or RollbackConfig()
    instant = InstantTime(instant, where=table.base_uri)
    with nullcontext() if dry_run else table_lock(table, operation=f"rollback of {instant}", config=cfg.lock):
        return _rollback_write(table, instant, dry_run=dry_run, cfg=cfg)


def _rollback_write(
    table: HudiTable, instant: InstantTime, *, dry_run: bool, cfg: RollbackConfig
) -> RollbackPlan | Instant:
    tl = table.refresh().timeline
    target = tl.get(instant)
    if target is None:
        # a rollback that crashed after deleting the instant's timeline files, before ``.rollback``: resume it (as
        # Java's rollbackFailedWrites executes every pending rollback)
        orphan = pending_rollback_of(table, instant)
        itr = orphan[1].instant_to_rollback if orphan is not None else None
        if itr is not None and itr.action in {a.value for a in WRITE_ACTIONS}:
            target = Instant(InstantTime(instant), Action(itr.action), State.INFLIGHT)
    if target is not None and target.action is Action.COMPACTION:  # validates, then checks the metadata table
        done = rollback_inflight_compaction(table, instant, dry_run=dry_run, config=cfg)
        return (
            done
            if done is not None
            else RollbackPlan(instant_to_rollback=InstantInfo(commit_time=instant, action="compaction"))
        )
    if target is not None and target.action is Action.LOG_COMPACTION:  # refused while its heartbeat is fresh
        done = rollback_inflight_log_compaction(table, instant, dry_run=dry_run, config=cfg)
        return (
            done
            if done is not None
            else RollbackPlan(instant_to_rollback=InstantInfo(commit_time=instant, action="logcompaction"))
        )
    if target is None or target.action not in WRITE_ACTIONS:
        raise InvalidInstantStateError(table.base_uri, instant, "is not a write instant on the active timeline")
    if target.is_completed:
        raise InvalidInstantStateError(
            table.base_uri, instant, "is completed: only pending (failed or stale) writes are rolled back here"
        )
    table.ensure_metadata_table_handled(
        cfg.metadata_options(), service="rollback", dry_run=dry_run, keeps_change_log=True
    )
    resumed = pending_rollback_of(table, instant)  # a rollback of this write that crashed half-way
    pending_rb = resumed[0] if resumed is not None else None
    plan = resumed[1] if resumed is not None else plan_rollback(table, instant, target.action)
    # a path outside the table stops the rollback before anything is deleted
    where = table.storage.uri(table.instant_path(pending_rb)) if pending_rb is not None else "the rollback plan"
    paths = storage_paths(table, plan, instant=instant, where=where)
    if dry_run:
        return plan
    start = time.monotonic()
    if pending_rb is None:
        pending_rb = table.create_requested(
            Instant(table.new_instant_time(), Action.ROLLBACK, State.REQUESTED), plan.to_bytes()
        )
    inflight = (
        table.transition_to_inflight(Instant(pending_rb.time, Action.ROLLBACK, State.REQUESTED))
        if pending_rb.state is State.REQUESTED
        else pending_rb
    )
    meta = execute_rollback(
        table, plan, target=target, rollback=inflight, paths=paths, start=start, resumed=resumed is not None
    )
    return commit_rollback(table, inflight, meta)


def rollback_stale_writes(
    table: HudiTable,
    *,
    interval_ms: int | None = None,
    tolerable_misses: int | None = None,
    timeout_s: float | None = None,
    dry_run: bool = False,
    config: RollbackConfig | None = None,
) -> list[tuple[StaleWrite, RollbackPlan | Instant]]:
    """Roll back every stale pending write (see :func:`stale_writes`); fresh heartbeats are left alone.

    ``config`` as for :func:`rollback_write` (a table with a metadata table is refused only if it has a stale
    write to roll back); ``interval_ms`` and ``tolerable_misses`` default to its heartbeat settings. The heartbeat
    checks and the rollbacks run under one hold of the table lock, so a writer cannot commit an instant between the
    check that finds it stale and its rollback."""
    cfg = config or RollbackConfig()
    interval = cfg.heartbeat.interval_ms if interval_ms is None else interval_ms
    misses = cfg.heartbeat.tolerable_misses if tolerable_misses is None else tolerable_misses
    with nullcontext() if dry_run else table_lock(table, operation="rollback of stale writes", config=cfg.lock):
        return [
            (s, rollback_write(table, str(s.instant.time), dry_run=dry_run, config=cfg))
            for s in stale_writes(table, interval_ms=interval, tolerable_misses=misses, timeout_s=timeout_s)
        ]


def rollback_instant(
    table: HudiTable, instant: InstantTime | str, *, dry_run: bool = False, config: RollbackConfig | None = None
) -> RollbackResult | RemovedRollback:
    """What a rollback of one named instant does, for every shell (``lake-orch rollback --instant-time``, the Dagster
    rollback job): a pending rollback instant is removed with what it left
    (:func:`~lake_orchestration.hudi.services.rollback.repair.remove_unreadable_rollback`), any other pending write
    is rolled back (:func:`rollback_write`, reason ``requested``).

    Raises:
        As :func:`rollback_write` or :func:`~.repair.remove_unreadable_rollback`.
    """
    from lake_orchestration.hudi.services.rollback.repair import RemovedRollback, remove_unreadable_rollback

    t = InstantTime(instant, where=table.base_uri)
    pending = table.timeline.get(t, Action.ROLLBACK)
    if pending is not None and pending.action is Action.ROLLBACK and not pending.is_completed:
        removed = remove_unreadable_rollback(table, t, dry_run=dry_run, config=config)
        return RemovedRollback(instant=str(t), dry_run=dry_run, files=tuple(removed))
    return RollbackResult.of(str(t), "requested", rollback_write(table, t, dry_run=dry_run, config=config))
