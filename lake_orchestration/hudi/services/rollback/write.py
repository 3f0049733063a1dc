"""Rollback of a failed (pending) write: plan -> execute -> ``.rollback``, as Hudi 0.14 does it for timeline layout 1.

Mirrors ``BaseRollbackPlanActionExecutor`` / ``MergeOnReadRollbackActionExecutor`` (marker based):
* plan (``<R>.rollback.requested``, ``HoodieRollbackPlan``): from the write's markers in ``.hoodie/.temp/<instant>``
  (or, without markers, by listing files named with the instant and log files holding its blocks) — base files to
  delete, and per file group the log files that received its blocks;
* execute: delete those base files; for every touched file group of a MERGE_ON_READ table write a new log file
  (token ``1-0-1``) holding a ROLLBACK command block targeting the instant (the failed log files stay: readers skip
  their blocks); delete the markers;
* the rolled-back instant's timeline files are deleted, then ``<R>.rollback`` (``HoodieRollbackMetadata``) completes.
A pending rollback of the same instant (a crash half-way) is resumed. Live writers are never touched by
:func:`rollback_stale_writes` (fresh heartbeat).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass

from lake_orchestration.errors import InvalidInstantStateError, StorageError
from lake_orchestration.hudi.log.log_format import HeaderKey, iter_blocks
from lake_orchestration.hudi.log.writer import rollback_command_block, write_log_file
from lake_orchestration.hudi.model.avro import (
    InstantInfo,
    RollbackPlan,
    RollbackRequest,
)
from lake_orchestration.hudi.model.file_group import (
    UNKNOWN_WRITE_TOKEN,
    BaseFile,
    LogFile,
    is_base_file_name,
    is_log_file_name,
)
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.rollback.compaction import (
    pending_rollback_of,
    rollback_inflight_compaction,
    rollback_inflight_log_compaction,
    rollback_metadata,
)
from lake_orchestration.hudi.services.rollback.repair import read_rollback_plan
from lake_orchestration.hudi.table.heartbeat import heartbeat_path, is_heartbeat_expired
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
from lake_orchestration.hudi.table.marker import MARKERS_DIR
from lake_orchestration.io.hadoop_paths import base_path_form, qualified_path, storage_path_of

_WRITE_ACTIONS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StaleWrite:
    """A pending write instant judged stale, and why."""

    instant: Instant
    reason: str


def stale_writes(
    table: HudiTable, *, interval_ms: int = 60_000, tolerable_misses: int = 2, timeout_s: float | None = None
) -> list[StaleWrite]:
    """Pending writes whose heartbeat expired, or (no heartbeat file) older than ``timeout_s``."""
    out = []
    now_ms = int(time.time() * 1000)
    for inst in table.refresh().timeline.pending().with_actions(*_WRITE_ACTIONS):
        has_hb = table.storage.exists(heartbeat_path(table.storage, str(inst.time)))
        if has_hb:
            if is_heartbeat_expired(
                table.storage, str(inst.time), interval_ms=interval_ms, tolerable_misses=tolerable_misses, now_ms=now_ms
            ):
                out.append(StaleWrite(inst, f"heartbeat older than {interval_ms * tolerable_misses} ms"))
        elif timeout_s is not None:
            age = (
                now_ms / 1000
                - InstantTime(str(inst.time))
                .to_datetime("UTC" if table.config.timeline_timezone.value == "UTC" else _local_tz())
                .timestamp()
            )
            if age > timeout_s:
                out.append(StaleWrite(inst, f"no heartbeat and {int(age)} s old (timeout {int(timeout_s)} s)"))
    out += _interrupted_rollbacks(table)
    return out


def _interrupted_rollbacks(table: HudiTable) -> list[StaleWrite]:
    """Writes whose rollback crashed after removing their timeline files: only the pending rollback is left, and
    :func:`rollback_write` completes it."""
    out = []
    tl = table.timeline
    for pending in tl.pending().with_actions(Action.ROLLBACK):
        plan = read_rollback_plan(table, pending)  # an unreadable plan: an error saying how to remove it
        itr = plan.instant_to_rollback
        if itr is None or not itr.commit_time or itr.action not in {a.value for a in _WRITE_ACTIONS}:
            continue
        if tl.get(itr.commit_time) is not None:
            continue  # the write is still there: judged by its heartbeat above
        target = Instant(InstantTime(itr.commit_time), Action(itr.action), State.INFLIGHT)
        out.append(StaleWrite(target, f"its rollback {pending.time} was interrupted"))
    return out


def _local_tz() -> str:
    import pendulum

    return str(pendulum.local_timezone().name)


def _plan_requests(table: HudiTable, instant: str) -> list[RollbackRequest]:
    storage = table.storage
    base_files: dict[str, set[str]] = defaultdict(set)
    touched_logs: dict[tuple[str, str, str], dict[str, int]] = {}
    root = storage.join(MARKERS_DIR, instant)
    marker_files = list(storage.walk_files(root))  # a missing folder lists empty (no existence check first)
    partitions = set()
    for f in marker_files:
        rel = storage.relative(f.path)[len(f"{MARKERS_DIR}/{instant}/") :]
        data_file, _, io_type = rel.rpartition(".marker.")
        partition, _, name = data_file.rpartition("/")
        partitions.add(partition)
        if io_type in ("CREATE", "MERGE") and is_base_file_name(name):
            base_files[partition].add(storage.join(data_file))
    # listing: base files named with the instant, log files holding its blocks (also without markers)
    # the partitions the markers name, else every partition (the walk's listing of each is reused)
    listing = {p: storage.list_dir(storage.join(p)) for p in partitions} if partitions else table.partition_listing()
    for p, entries in listing.items():
        for f in entries:
            if f.is_dir:
                continue
            if is_base_file_name(f.name) and BaseFile.parse(f.name).instant == instant:
                base_files[p].add(f.path)
            elif is_log_file_name(f.name):
                lf = LogFile.parse(f.name, partition_path=p, size=f.size)
                if any(b.instant_time == instant for b in iter_blocks(storage.read_bytes(f.path))):
                    logs = touched_logs.setdefault((p, lf.file_id, str(lf.base_instant)), {})
                    logs[qualified_path(storage, f.path)] = f.size  # a listed path: qualified, as Java's
    reqs = [
        RollbackRequest(
            partition_path=p,
            file_id="",
            latest_base_instant="",
            files_to_be_deleted=tuple(sorted(base_path_form(storage, f) for f in fs)),
            log_blocks_to_be_deleted={},
        )
        for p, fs in sorted(base_files.items())
        if fs
    ]
    reqs += [
        RollbackRequest(
            partition_path=p,
            file_id=fid,
            latest_base_instant=base,
            files_to_be_deleted=(),
            log_blocks_to_be_deleted=logs,
        )
        for (p, fid, base), logs in sorted(touched_logs.items())
    ]
    return reqs


def _written_rollback_log(table: HudiTable, req: RollbackRequest, rb_time: str, instant: str) -> LogFile | None:
    """The log file of ``req``'s file group that a crashed attempt of rollback ``rb_time`` already wrote (one
    rollback block of ``rb_time`` targeting ``instant``): reused on resume, never written twice."""
    for f in table.storage.list_dir(table.storage.join(req.partition_path)):
        if f.is_dir or not is_log_file_name(f.name):
            continue
        lf = LogFile.parse(f.name, partition_path=req.partition_path, size=f.size)
        if lf.file_id != (req.file_id or "") or str(lf.base_instant) != (req.latest_base_instant or ""):
            continue
        blocks = list(iter_blocks(table.storage.read_bytes(f.path)))
        if (
            len(blocks) == 1
            and blocks[0].is_rollback
            and blocks[0].instant_time == rb_time
            and blocks[0].get(HeaderKey.TARGET_INSTANT_TIME) == instant
        ):
            return lf
    return None


def _delete_heartbeat(table: HudiTable, instant: str) -> None:
    """Delete the rolled-back instant's heartbeat. One that cannot be deleted (a directory in its place) is reported
    and left, as Java's ``HeartbeatUtils.deleteHeartbeatFile`` does: the instant is gone, nothing reads it any more,
    and failing here would leave the rollback pending after its files were deleted."""
    path = heartbeat_path(table.storage, instant)
    try:
        table.storage.delete_file(path, missing_ok=True)
    except StorageError as err:
        log.warning("Cannot delete the heartbeat of rolled-back instant %s (%s); left in place", instant, err)


def rollback_write(
    table: HudiTable, instant: str, *, dry_run: bool = False, options: Mapping[str, str] | None = None
) -> RollbackPlan | Instant:
    """Roll back the pending write ``instant`` (a compaction instant is delegated to its own rollback).

    Returns the plan on a dry run, else the completed rollback instant. ``options``: ``hoodie.metadata.enable=false``
    lets a table with a metadata table be rolled back (the metadata table is deleted first; see
    :meth:`HudiTable.ensure_metadata_table_handled`).

    Raises:
        InvalidInstantStateError: the instant is completed or not a write on the timeline.
        MetadataTableError: the table has a metadata table and ``hoodie.metadata.enable`` is not ``false``.
        TableLockedError: another process holds the table lock (``hoodie.write.lock.*`` in ``options``).
    """
    lock = LockConfig.from_options(options)
    with nullcontext() if dry_run else table_lock(table, operation=f"rollback of {instant}", config=lock):
        return _rollback_write(table, instant, dry_run=dry_run, options=options)


def _rollback_write(
    table: HudiTable, instant: str, *, dry_run: bool, options: Mapping[str, str] | None
) -> RollbackPlan | Instant:
    tl = table.refresh().timeline
    target = tl.get(instant)
    if target is None:
        # a rollback that crashed after deleting the instant's timeline files, before ``.rollback``: resume it (as
        # Java's rollbackFailedWrites executes every pending rollback)
        orphan = pending_rollback_of(table, instant)
        itr = orphan[1].instant_to_rollback if orphan is not None else None
        if itr is not None and itr.action in {a.value for a in _WRITE_ACTIONS}:
            target = Instant(InstantTime(instant), Action(itr.action), State.INFLIGHT)
    if target is not None and target.action is Action.COMPACTION:  # validates, then checks the metadata table
        done = rollback_inflight_compaction(table, instant, dry_run=dry_run, options=options)
        return (
            done
            if done is not None
            else RollbackPlan(instant_to_rollback=InstantInfo(commit_time=instant, action="compaction"))
        )
    if target is not None and target.action is Action.LOG_COMPACTION:  # refused while its heartbeat is fresh
        done = rollback_inflight_log_compaction(table, instant, dry_run=dry_run, options=options)
        return (
            done
            if done is not None
            else RollbackPlan(instant_to_rollback=InstantInfo(commit_time=instant, action="logcompaction"))
        )
    if target is None or target.action not in _WRITE_ACTIONS:
        raise InvalidInstantStateError(table.base_uri, instant, "is not a write instant on the active timeline")
    if target.is_completed:
        raise InvalidInstantStateError(
            table.base_uri, instant, "is completed: only pending (failed or stale) writes are rolled back here"
        )
    table.ensure_metadata_table_handled(options, service="rollback", dry_run=dry_run)
    resumed = pending_rollback_of(table, instant)  # a rollback of this write that crashed half-way
    pending_rb = resumed[0] if resumed is not None else None
    if resumed is not None:
        plan = resumed[1]
    else:
        plan = RollbackPlan(
            instant_to_rollback=InstantInfo(commit_time=instant, action=target.action.value),
            rollback_requests=tuple(_plan_requests(table, instant)),
            version=1,
        )
    # Java writes the table's base path form (file:/…, s3a://…), older plans of ours a bare storage path: both
    # resolve; a path outside the table stops the rollback before anything is deleted
    paths = {
        full: storage_path_of(table.storage, full)
        for r in plan.rollback_requests or ()
        for full in r.files_to_be_deleted
    }
    outside = [full for full, path in paths.items() if path is None]
    if outside:
        where = table.storage.uri(table.instant_path(pending_rb)) if pending_rb is not None else "the rollback plan"
        raise InvalidInstantStateError(
            table.base_uri,
            instant,
            f"{where} lists {outside[0]!r}, which is not a file under {table.base_uri}; nothing was deleted",
        )
    if dry_run:
        return plan
    start = time.monotonic()
    if pending_rb is None:
        rb = table.create_requested(
            Instant(table.new_instant_time(), Action.ROLLBACK, State.REQUESTED), plan.to_bytes()
        )
        pending_rb = rb
    inflight = (
        table.transition_to_inflight(Instant(pending_rb.time, Action.ROLLBACK, State.REQUESTED))
        if pending_rb.state is State.REQUESTED
        else pending_rb
    )
    rb_time = str(inflight.time)
    deleted: dict[str, list[str]] = defaultdict(list)
    rollback_logs: dict[str, dict[str, int]] = defaultdict(dict)
    failed_logs: dict[str, dict[str, int]] = defaultdict(dict)
    for req in plan.rollback_requests or ():
        for full in req.files_to_be_deleted:
            table.storage.delete_file(paths[full] or "", missing_ok=True)
            deleted[req.partition_path].append(full)
        if req.log_blocks_to_be_deleted and table.config.is_mor:
            lf = (
                _written_rollback_log(table, req, rb_time, instant) if resumed is not None else None
            ) or write_log_file(
                table.storage,
                partition_path=req.partition_path,
                file_id=req.file_id or "",
                base_instant=req.latest_base_instant or "",
                write_token=UNKNOWN_WRITE_TOKEN,
                blocks=[rollback_command_block(instant=rb_time, target_instant=instant)],
            )
            rollback_logs[req.partition_path][qualified_path(table.storage, table.storage.join(lf.relative_path))] = (
                lf.size
            )
            failed_logs[req.partition_path].update(req.log_blocks_to_be_deleted)
    table.storage.delete_dir(table.storage.join(MARKERS_DIR, instant))
    # the rolled-back instant disappears from the timeline (inflight first, then requested), as in Hudi
    for state in (State.INFLIGHT, State.REQUESTED):
        table.storage.delete_file(table.instant_path(Instant(target.time, target.action, state)), missing_ok=True)
    _delete_heartbeat(table, instant)
    meta = rollback_metadata(
        rb_time,
        start,
        instant,
        target.action.value,
        deleted=deleted,
        rollback_logs=rollback_logs,
        failed_logs=failed_logs,
    )
    return table.transition_to_completed(inflight, meta.to_bytes())


def rollback_stale_writes(
    table: HudiTable,
    *,
    interval_ms: int = 60_000,
    tolerable_misses: int = 2,
    timeout_s: float | None = None,
    dry_run: bool = False,
    options: Mapping[str, str] | None = None,
) -> list[tuple[StaleWrite, RollbackPlan | Instant]]:
    """Roll back every stale pending write (see :func:`stale_writes`); fresh heartbeats are left alone.

    ``options`` as for :func:`rollback_write` (a table with a metadata table is refused only if it has a stale
    write to roll back). The heartbeat checks and the rollbacks run under one hold of the table lock, so a writer
    cannot commit an instant between the check that finds it stale and its rollback."""
    lock = LockConfig.from_options(options)
    with nullcontext() if dry_run else table_lock(table, operation="rollback of stale writes", config=lock):
        return _rollback_stale_writes(
            table,
            interval_ms=interval_ms,
            tolerable_misses=tolerable_misses,
            timeout_s=timeout_s,
            dry_run=dry_run,
            options=options,
        )


def _rollback_stale_writes(
    table: HudiTable,
    *,
    interval_ms: int,
    tolerable_misses: int,
    timeout_s: float | None,
    dry_run: bool,
    options: Mapping[str, str] | None,
) -> list[tuple[StaleWrite, RollbackPlan | Instant]]:
    return [
        (s, rollback_write(table, str(s.instant.time), dry_run=dry_run, options=options))
        for s in stale_writes(table, interval_ms=interval_ms, tolerable_misses=tolerable_misses, timeout_s=timeout_s)
    ]
