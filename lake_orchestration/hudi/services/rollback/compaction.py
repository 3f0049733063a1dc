"""Rolling back an inflight compaction: delete the attempt's base files, revert the plan to requested.

Mirrors Hudi 0.14 (services.md §5.4): a rollback instant with a ``HoodieRollbackPlan`` (``instantToRollback`` =
the compaction), the files the attempt wrote (``{fileId}_*_{instant}.parquet`` of the plan's file groups, found by
listing — the markers say the same) are deleted, ``<R>.rollback`` records ``HoodieRollbackMetadata``, and
``<instant>.compaction.inflight`` is deleted so the plan is requested again. Log files are never touched.
A pending rollback of the same compaction (a crash in the middle) is resumed instead of starting another.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext

from lake_orchestration.errors import InstantInProgressError, InvalidInstantStateError
from lake_orchestration.hudi.model.avro import (
    CompactionPlan,
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
)
from lake_orchestration.hudi.model.file_group import BaseFile, is_base_file_name
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.rollback.repair import compaction_attempt_files_without_plan, read_rollback_plan
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
from lake_orchestration.hudi.write.file_group_writer import MARKERS_DIR
from lake_orchestration.hudi.write.heartbeat import attempt_liveness, heartbeat_options


def _attempt_files(table: HudiTable, plan: CompactionPlan, instant: str) -> dict[str, list[str]]:
    """Partition -> paths of base files the compaction attempt wrote."""
    out: dict[str, list[str]] = {}
    ids_by_partition: dict[str, set[str]] = {}
    for op in plan.operations or ():
        ids_by_partition.setdefault(op.partition_path or "", set()).add(op.file_id or "")
    for p, ids in ids_by_partition.items():
        for f in table.storage.list_dir(table.storage.join(p)):
            if f.is_dir or not is_base_file_name(f.name):
                continue
            bf = BaseFile.parse(f.name, partition_path=p)
            if bf.instant == instant and bf.file_id in ids:
                out.setdefault(p, []).append(table.storage.join(p, f.name))
    return out


def files_to_roll_back(table: HudiTable, instant: str) -> dict[str, list[str]]:
    """Partition -> base files the inflight attempt of compaction ``instant`` wrote (what a rollback deletes)."""
    req = Instant(InstantTime(instant), Action.COMPACTION, State.REQUESTED)
    if req.action is Action.COMPACTION and not table.storage.exists(table.instant_path(req)):
        # the plan is missing (repair of an inflight compaction without its requested file): list the attempt's files
        return compaction_attempt_files_without_plan(table, instant)
    plan = CompactionPlan.from_bytes(table.read_instant(req), path=table.storage.uri(table.instant_path(req)))
    return _attempt_files(table, plan, instant)


def pending_rollback_of(table: HudiTable, instant: str) -> tuple[Instant, RollbackPlan] | None:
    """The pending rollback whose plan targets ``instant`` (one that crashed half-way), with its plan."""
    for pending in table.timeline.pending().with_actions(Action.ROLLBACK):
        rp = read_rollback_plan(table, pending)  # an unreadable plan: an error saying how to remove it
        if rp.instant_to_rollback is not None and rp.instant_to_rollback.commit_time == instant:
            return pending, rp
    return None


def rollback_inflight_compaction(
    table: HudiTable, instant: str, *, dry_run: bool = False, options: Mapping[str, str] | None = None
) -> Instant | None:
    """Roll back the inflight attempt of compaction ``instant``; returns the completed rollback instant.

    Args:
        table: the table.
        instant: the compaction instant whose ``.compaction.inflight`` exists.
        dry_run: only report (returns None, writes and deletes nothing).
        options: ``hoodie.metadata.enable=false`` lets a table with a metadata table be rolled back (it is deleted
            first; see :meth:`HudiTable.ensure_metadata_table_handled`).

    Raises:
        InvalidInstantStateError: the compaction is not inflight.
        MetadataTableError: the table has a metadata table and ``hoodie.metadata.enable`` is not ``false``.
        TableLockedError: another process holds the table lock (``hoodie.write.lock.*`` in ``options``).
        InstantInProgressError: its heartbeat is fresh (``hoodie.client.heartbeat.*`` in ``options``): another
            process is executing it.
    """
    lock = LockConfig.from_options(options)
    interval_ms, misses = heartbeat_options(options)
    # the liveness check and the rollback hold the lock together: no attempt can start in between
    with nullcontext() if dry_run else table_lock(table, operation=f"rollback of compaction {instant}", config=lock):
        liveness = attempt_liveness(table.storage, instant, interval_ms=interval_ms, tolerable_misses=misses)
        if liveness.alive:
            raise InstantInProgressError(
                table.base_uri,
                instant,
                f"compaction {instant} is being executed by another process: {liveness.describe()}; it is rolled "
                "back only once the heartbeat expired",
            )
        return _rollback_inflight_compaction(table, instant, dry_run=dry_run, options=options)


def _rollback_inflight_compaction(
    table: HudiTable, instant: str, *, dry_run: bool, options: Mapping[str, str] | None
) -> Instant | None:
    table.refresh()
    tl = table.timeline
    comp = tl.get(instant, Action.COMPACTION)
    if comp is None or comp.action is not Action.COMPACTION or comp.state is not State.INFLIGHT:
        raise InvalidInstantStateError(table.base_uri, instant, "is not an inflight compaction; nothing to roll back")
    table.ensure_metadata_table_handled(options, service="rollback", dry_run=dry_run)
    files = files_to_roll_back(table, instant)
    if dry_run:
        return None
    resumed = pending_rollback_of(table, instant)  # a rollback of this compaction that crashed half-way
    rb_req = resumed[0] if resumed is not None else None
    start = time.monotonic()
    if rb_req is None:
        rb_time = table.new_instant_time()
        rplan = RollbackPlan(
            instant_to_rollback=InstantInfo(commit_time=instant, action=Action.COMPACTION.value),
            rollback_requests=tuple(
                RollbackRequest(
                    partition_path=p,
                    file_id="",
                    latest_base_instant="",
                    files_to_be_deleted=tuple(fs),
                    log_blocks_to_be_deleted={},
                )
                for p, fs in sorted(files.items())
            ),
            version=1,
        )
        rb_req = table.create_requested(Instant(rb_time, Action.ROLLBACK, State.REQUESTED), rplan.to_bytes())
    if rb_req.state is State.REQUESTED:
        rb_inflight = table.transition_to_inflight(Instant(rb_req.time, Action.ROLLBACK, State.REQUESTED))
    else:
        rb_inflight = rb_req
    deleted: dict[str, list[str]] = {}
    for p, paths in files.items():
        for path in paths:
            table.storage.delete_file(path, missing_ok=True)
            deleted.setdefault(p, []).append(table.storage.uri(path))
    table.storage.delete_dir(table.storage.join(MARKERS_DIR, instant))
    meta = rollback_metadata(str(rb_inflight.time), start, instant, Action.COMPACTION.value, deleted=deleted)
    done = table.transition_to_completed(rb_inflight, meta.to_bytes())
    # Last, revert the compaction to requested (Java's order): a crash before this leaves the compaction inflight,
    # and the next run rolls it back again (its files are gone already), never a rollback left pending.
    table.storage.delete_file(
        table.instant_path(Instant(comp.time, Action.COMPACTION, State.INFLIGHT)), missing_ok=True
    )
    table.refresh()
    return done


def rollback_metadata(
    rollback_time: str,
    start: float,
    instant: str,
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
