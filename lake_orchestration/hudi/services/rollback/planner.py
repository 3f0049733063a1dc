"""Rollback planning: which pending writes are stale, and what rolling one back deletes.

Mirrors ``BaseRollbackPlanActionExecutor`` (marker based): the plan (``<R>.rollback.requested``,
``HoodieRollbackPlan``) lists, from the write's markers in ``.hoodie/.temp/<instant>`` (or, without markers, by
listing files named with the instant and log files holding its blocks), the base files to delete and per file group
the log files that received its blocks. A stale write is one whose heartbeat expired (``HoodieHeartbeatClient``), or
without a heartbeat one older than a timeout.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.log.log_format import iter_blocks
from lake_orchestration.hudi.model.avro import InstantInfo, RollbackPlan, RollbackRequest
from lake_orchestration.hudi.model.file_group import BaseFile, LogFile, is_base_file_name, is_log_file_name
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.rollback.repair import read_rollback_plan
from lake_orchestration.hudi.table.clustering import is_pending_clustering
from lake_orchestration.hudi.table.heartbeat import heartbeat_path, is_heartbeat_expired
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.marker import list_markers
from lake_orchestration.io.hadoop_paths import base_path_form, qualified_path, storage_path_of

WRITE_ACTIONS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)
"""Actions of the writes rolled back here (compactions have their own rollback)."""


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
    for inst in table.refresh().timeline.pending().with_actions(*WRITE_ACTIONS):
        if is_pending_clustering(table, inst):
            continue  # Java's getInflightTimelineExcludeCompactionAndClustering: a plan is executed, not rolled back
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
    :func:`~lake_orchestration.hudi.services.rollback.service.rollback_write` completes it."""
    out = []
    tl = table.timeline
    for pending in tl.pending().with_actions(Action.ROLLBACK):
        plan = read_rollback_plan(table, pending)  # an unreadable plan: an error saying how to remove it
        itr = plan.instant_to_rollback
        if itr is None or not itr.commit_time or itr.action not in {a.value for a in WRITE_ACTIONS}:
            continue
        if tl.get(itr.commit_time) is not None:
            continue  # the write is still there: judged by its heartbeat above
        target = Instant(InstantTime(itr.commit_time), Action(itr.action), State.INFLIGHT)
        out.append(StaleWrite(target, f"its rollback {pending.time} was interrupted"))
    return out


def _local_tz() -> str:
    import pendulum

    return str(pendulum.local_timezone().name)


def pending_rollback_of(table: HudiTable, instant: InstantTime | str) -> tuple[Instant, RollbackPlan] | None:
    """The pending rollback whose plan targets ``instant`` (one that crashed half-way), with its plan."""
    instant = InstantTime(instant, where=table.base_uri)
    for pending in table.timeline.pending().with_actions(Action.ROLLBACK):
        rp = read_rollback_plan(table, pending)  # an unreadable plan: an error saying how to remove it
        if rp.instant_to_rollback is not None and rp.instant_to_rollback.commit_time == instant:
            return pending, rp
    return None


def plan_rollback(table: HudiTable, instant: InstantTime | str, action: Action) -> RollbackPlan:
    """The plan of rolling back the pending write ``instant`` (``action``): nothing is written."""
    instant = InstantTime(instant, where=table.base_uri)
    return RollbackPlan(
        instant_to_rollback=InstantInfo(commit_time=instant, action=action.value),
        rollback_requests=tuple(_plan_requests(table, instant)),
        version=1,
    )


def _plan_requests(table: HudiTable, instant: InstantTime) -> list[RollbackRequest]:
    storage = table.storage
    base_files: dict[str, set[str]] = defaultdict(set)
    touched_logs: dict[tuple[str, str, str], dict[str, int]] = {}
    partitions = set()
    for m in list_markers(storage, instant):  # a missing folder lists empty (no existence check first)
        partitions.add(m.partition)
        if m.io_type in ("CREATE", "MERGE") and is_base_file_name(m.name):
            base_files[m.partition].add(storage.join(m.data_file))
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


def storage_paths(table: HudiTable, plan: RollbackPlan, *, instant: InstantTime, where: str) -> dict[str, str | None]:
    """Each file the plan deletes -> its storage path. Java writes the table's base path form (``file:/…``,
    ``s3a://…``), older plans of ours a bare storage path: both resolve.

    Raises:
        InvalidInstantStateError: a path is not a file under the table (``where`` names the plan): a rollback
            deletes nothing then.
    """
    paths = {
        full: storage_path_of(table.storage, full)
        for r in plan.rollback_requests or ()
        for full in r.files_to_be_deleted
    }
    outside = [full for full, path in paths.items() if path is None]
    if outside:
        raise InvalidInstantStateError(
            table.base_uri,
            instant,
            f"{where} lists {outside[0]!r}, which is not a file under {table.base_uri}; nothing was deleted",
        )
    return paths
