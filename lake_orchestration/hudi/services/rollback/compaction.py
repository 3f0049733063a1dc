"""Rolling back an inflight compaction or log compaction attempt: delete the files the attempt wrote, revert the
plan to requested. The compaction and log compaction services call these (their attempt's rollback), and
:func:`~lake_orchestration.hudi.services.rollback.service.rollback_write` delegates a compaction or log compaction
instant here; nothing here imports those services.

Mirrors Hudi 0.14 (services.md §5.4): a rollback instant with a ``HoodieRollbackPlan`` (``instantToRollback`` =
the compaction), the files the attempt wrote (``{fileId}_*_{instant}.parquet`` of the plan's file groups, found by
listing — the markers say the same) are deleted, ``<R>.rollback`` records ``HoodieRollbackMetadata``, and
``<instant>.compaction.inflight`` is deleted so the plan is requested again. Log files are never touched.
A pending rollback of the same compaction (a crash in the middle) is resumed instead of starting another.

An inflight **log compaction** is rolled back the same way: its attempt only added new log files to the plan's file
groups (never appended to one: log files are never appended to), whose blocks carry the log compaction instant; they
are deleted (markers and listing say which), the rollback instant records them and the plan is requested again. Left
in place, they would be read as soon as the re-executed instant completes, twice. Java rolls the attempt back too
(``rollbackInflightLogCompaction``) and then asks for a new plan; re-executing the same plan gives the same result.
An attempt whose heartbeat (``.hoodie/.heartbeat/<instant>``) is fresh is live and never rolled back.

Paths in the rollback plan and metadata have the forms Java writes (see :mod:`lake_orchestration.io.hadoop_paths`).
"""

from __future__ import annotations

import time
from contextlib import nullcontext

from lake_orchestration.errors import InstantInProgressError, InvalidInstantStateError, PlanError
from lake_orchestration.hudi.log.log_format import iter_blocks
from lake_orchestration.hudi.model.avro import (
    CompactionPlan,
    InstantInfo,
    RollbackPlan,
    RollbackRequest,
)
from lake_orchestration.hudi.model.file_group import BaseFile, LogFile, is_base_file_name, is_log_file_name
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.rollback.committer import commit_rollback, rollback_metadata
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.services.rollback.planner import pending_rollback_of
from lake_orchestration.hudi.services.rollback.repair import compaction_attempt_files_without_plan
from lake_orchestration.hudi.table.heartbeat import attempt_liveness
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.hudi.table.marker import delete_markers, list_markers
from lake_orchestration.io.hadoop_paths import base_path_form, storage_path_of


def _attempt_files(table: HudiTable, plan: CompactionPlan, instant: InstantTime) -> dict[str, list[str]]:
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


def _append_markers(table: HudiTable, instant: InstantTime) -> set[tuple[str, str, str, str]]:
    """(partition, fileId, writeToken, baseInstant) of the APPEND markers under ``.hoodie/.temp/<instant>``."""
    out = set()
    for m in list_markers(table.storage, instant):
        if m.io_type == "APPEND" and is_base_file_name(m.name):
            bf = BaseFile.parse(m.name, partition_path=m.partition)
            out.add((m.partition, bf.file_id, bf.write_token, str(bf.instant)))
    return out


def _log_attempt_files(table: HudiTable, plan: CompactionPlan, instant: InstantTime) -> dict[str, list[str]]:
    """Partition -> log files the log compaction attempt ``instant`` wrote.

    A log file of one of the plan's file groups, not one of the plan's inputs, is the attempt's if every intact
    block in it carries the instant, or (a file without an intact block) if an APPEND marker of the attempt names
    its file group and write token.

    Raises:
        PlanError: such a file also holds blocks of other instants (nothing is deleted then).
    """
    st = table.storage
    markers = _append_markers(table, instant)
    out: dict[str, list[str]] = {}
    for op in plan.operations or ():
        p = op.partition_path or ""
        inputs = {n.rsplit("/", 1)[-1] for n in op.delta_file_paths or ()}
        for f in st.list_dir(st.join(p)):
            if f.is_dir or not is_log_file_name(f.name) or f.name in inputs:
                continue
            lf = LogFile.parse(f.name, partition_path=p)
            if lf.file_id != op.file_id or str(lf.base_instant) != (op.base_instant_time or ""):
                continue
            times = {b.instant_time for b in iter_blocks(st.read_bytes(f.path), st.uri(f.path)) if not b.is_corrupt}
            if not times:
                mine = (p, lf.file_id, lf.write_token or "", str(lf.base_instant)) in markers
            elif instant in times and len(times) > 1:
                raise PlanError(
                    f"Log file {st.uri(f.path)} holds blocks of log compaction {instant} and of "
                    f"{', '.join(sorted(t or '?' for t in times - {instant}))}: it is not the attempt's own file, "
                    "so the attempt cannot be rolled back by deleting it"
                )
            else:
                mine = times == {instant}
            if mine:
                out.setdefault(p, []).append(f.path)
    return out


def files_to_roll_back(
    table: HudiTable, instant: InstantTime | str, action: Action = Action.COMPACTION
) -> dict[str, list[str]]:
    """Partition -> files the inflight attempt of (log) compaction ``instant`` wrote (what a rollback deletes):
    base files for a compaction, log files for a log compaction."""
    instant = InstantTime(instant, where=table.base_uri)
    req = Instant(InstantTime(instant), action, State.REQUESTED)
    if req.action is Action.COMPACTION and not table.storage.exists(table.instant_path(req)):
        # the plan is missing (repair of an inflight compaction without its requested file): list the attempt's files
        return compaction_attempt_files_without_plan(table, instant)
    plan = table.read_model(req, CompactionPlan)
    if action is Action.LOG_COMPACTION:
        return _log_attempt_files(table, plan, instant)
    return _attempt_files(table, plan, instant)


def rollback_inflight_compaction(
    table: HudiTable, instant: InstantTime | str, *, dry_run: bool = False, config: RollbackConfig | None = None
) -> Instant | None:
    """Roll back the inflight attempt of compaction ``instant``; returns the completed rollback instant.

    Args:
        table: the table.
        instant: the compaction instant whose ``.compaction.inflight`` exists.
        dry_run: only report (returns None, writes and deletes nothing).
        config: the table lock, the heartbeats; ``metadata_enable=False`` (``hoodie.metadata.enable=false``) lets a
            table with a metadata table be rolled back (it is deleted first; see
            :meth:`HudiTable.ensure_metadata_table_handled`). Default: Hudi's.

    Raises:
        InvalidInstantStateError: the compaction is not inflight.
        InstantInProgressError: its heartbeat is fresh (``config.heartbeat``): another process is executing it.
        MetadataTableError: the metadata table has a partition other than ``files`` (or is missing though
            ``hoodie.table.metadata.partitions`` lists it) and ``hoodie.metadata.enable`` is not ``false``.
        TableLockedError: another process holds the table lock (``config.lock``).
    """
    instant = InstantTime(instant, where=table.base_uri)
    cfg = config or RollbackConfig()
    hb = cfg.heartbeat
    # the liveness check and the rollback hold the lock together: no attempt can start in between
    with (
        nullcontext() if dry_run else table_lock(table, operation=f"rollback of compaction {instant}", config=cfg.lock)
    ):
        _refuse_live_attempt(table, instant, "compaction", interval_ms=hb.interval_ms, misses=hb.tolerable_misses)
        return _rollback_inflight_plan(table, instant, Action.COMPACTION, dry_run=dry_run, cfg=cfg)


def rollback_inflight_log_compaction(
    table: HudiTable,
    instant: InstantTime | str,
    *,
    dry_run: bool = False,
    config: RollbackConfig | None = None,
    check_liveness: bool = True,
) -> Instant | None:
    """Roll back the inflight attempt of log compaction ``instant`` (delete the log files it wrote, revert the plan
    to requested); returns the completed rollback instant.

    Args:
        config: as :func:`rollback_inflight_compaction`.
        check_liveness: refuse an attempt whose heartbeat is fresh (``config.heartbeat``);
            ``False`` only for a caller that judged it under the table lock it holds.

    Raises:
        InvalidInstantStateError: the log compaction is not inflight.
        InstantInProgressError: its heartbeat is fresh: another process is executing it.
        PlanError: a log file of the plan's file groups mixes the attempt's blocks with others (nothing deleted).
        MetadataTableError: the metadata table has a partition other than ``files`` (or is missing though
            ``hoodie.table.metadata.partitions`` lists it) and ``hoodie.metadata.enable`` is not ``false``.
        TableLockedError: another process holds the table lock (``config.lock``).
    """
    instant = InstantTime(instant, where=table.base_uri)
    cfg = config or RollbackConfig()
    hb = cfg.heartbeat
    what = f"rollback of logcompaction {instant}"
    with nullcontext() if dry_run else table_lock(table, operation=what, config=cfg.lock):
        if check_liveness:
            inflight = table.instant_path(Instant(InstantTime(instant), Action.LOG_COMPACTION, State.INFLIGHT))
            _refuse_live_attempt(
                table,
                instant,
                "log compaction",
                interval_ms=hb.interval_ms,
                misses=hb.tolerable_misses,
                inflight_path=inflight,
            )
        return _rollback_inflight_plan(table, instant, Action.LOG_COMPACTION, dry_run=dry_run, cfg=cfg)


def rollback_log_compaction_attempt(
    table: HudiTable, instant: InstantTime | str, *, config: RollbackConfig | None = None
) -> Instant | None:
    """Roll back the crashed attempt of log compaction ``instant``; for a caller that judged it dead under the table
    lock it holds (the liveness is not checked again, the nested lock is the same). Returns the rollback instant.

    ``config``: as :func:`rollback_inflight_compaction` (log compaction passes ``CompactionConfig.rollback_config()``).
    """
    instant = InstantTime(instant, where=table.base_uri)
    return rollback_inflight_log_compaction(table, instant, config=config, check_liveness=False)


def _refuse_live_attempt(
    table: HudiTable,
    instant: InstantTime,
    what: str,
    *,
    interval_ms: int,
    misses: int,
    inflight_path: str | None = None,
) -> None:
    """Raise :class:`InstantInProgressError` if the attempt executing ``instant`` is live (see
    :func:`attempt_liveness`)."""
    liveness = attempt_liveness(
        table.storage, instant, inflight_path=inflight_path, interval_ms=interval_ms, tolerable_misses=misses
    )
    if liveness.alive:
        raise InstantInProgressError(
            table.base_uri,
            instant,
            f"{what} {instant} is being executed by another process: {liveness.describe()}; it is rolled back only "
            "once the heartbeat expired",
        )


def _rollback_inflight_plan(
    table: HudiTable, instant: InstantTime, action: Action, *, dry_run: bool, cfg: RollbackConfig
) -> Instant | None:
    # The whole rollback (short) holds the table lock (``cfg.lock``; TableLockedError).
    what = f"rollback of {action.value} {instant}"
    with nullcontext() if dry_run else table_lock(table, operation=what, config=cfg.lock):
        return _rollback_inflight_plan_locked(table, instant, action, dry_run=dry_run, cfg=cfg)


def _rollback_inflight_plan_locked(
    table: HudiTable, instant: InstantTime, action: Action, *, dry_run: bool, cfg: RollbackConfig
) -> Instant | None:
    table.refresh()
    tl = table.timeline
    comp = tl.get(instant, action)
    if comp is None or comp.action is not action or comp.state is not State.INFLIGHT:
        raise InvalidInstantStateError(
            table.base_uri, instant, f"is not an inflight {action.value}; nothing to roll back"
        )
    table.ensure_metadata_table_handled(
        cfg.metadata_options(), service="rollback", dry_run=dry_run, keeps_change_log=True
    )
    files = files_to_roll_back(table, instant, action)
    if dry_run:
        return None
    st = table.storage
    resumed = pending_rollback_of(table, instant)  # a rollback of this compaction that crashed half-way
    rb_req = resumed[0] if resumed is not None else None
    start = time.monotonic()
    if rb_req is None:
        rb_time = table.new_instant_time()
        rplan = RollbackPlan(
            instant_to_rollback=InstantInfo(commit_time=instant, action=action.value),
            rollback_requests=tuple(
                RollbackRequest(
                    partition_path=p,
                    file_id="",
                    latest_base_instant="",
                    files_to_be_deleted=tuple(base_path_form(st, f) for f in fs),
                    log_blocks_to_be_deleted={},
                )
                for p, fs in sorted(files.items())
            ),
            version=1,
        )
        rb_req = table.create_requested(Instant(rb_time, Action.ROLLBACK, State.REQUESTED), rplan.to_bytes())
    else:
        # a resumed rollback also deletes what its plan lists (the listing above misses files already deleted)
        for req in resumed[1].rollback_requests or ():
            for full in req.files_to_be_deleted:
                path = storage_path_of(st, full)
                if path is not None and path not in files.get(req.partition_path, []):
                    files.setdefault(req.partition_path, []).append(path)
    if rb_req.state is State.REQUESTED:
        rb_inflight = table.transition_to_inflight(Instant(rb_req.time, Action.ROLLBACK, State.REQUESTED))
    else:
        rb_inflight = rb_req
    deleted: dict[str, list[str]] = {}
    for p, paths in files.items():
        for path in paths:
            st.delete_file(path, missing_ok=True)
            deleted.setdefault(p, []).append(base_path_form(st, path))
    delete_markers(st, instant)
    meta = rollback_metadata(str(rb_inflight.time), start, instant, action.value, deleted=deleted)
    done = commit_rollback(table, rb_inflight, meta)
    # Last, revert the compaction to requested (Java's order): a crash before this leaves the compaction inflight,
    # and the next run rolls it back again (its files are gone already), never a rollback left pending.
    st.delete_file(table.instant_path(Instant(comp.time, action, State.INFLIGHT)), missing_ok=True)
    table.refresh()
    return done
