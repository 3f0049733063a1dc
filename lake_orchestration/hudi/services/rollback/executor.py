"""Rollback execution: undo what a failed write left, as ``MergeOnReadRollbackActionExecutor`` /
``CopyOnWriteRollbackActionExecutor`` (Hudi 0.14, timeline layout 1) do.

Delete the plan's base files; for every touched file group of a MERGE_ON_READ table write a new log file (token
``1-0-1``) holding a ROLLBACK command block targeting the instant (the failed log files stay: readers skip their
blocks); delete the markers; delete the rolled-back instant's timeline files (inflight first, then requested) and its
heartbeat. A resumed rollback reuses the rollback log file its crashed attempt already wrote. The result is the
``HoodieRollbackMetadata`` the commit (:mod:`.committer`) writes.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping

from lake_orchestration.errors import StorageError
from lake_orchestration.hudi.log.log_format import HeaderKey, iter_blocks
from lake_orchestration.hudi.log.writer import rollback_command_block, write_log_file
from lake_orchestration.hudi.model.avro import RollbackMetadata, RollbackPlan, RollbackRequest
from lake_orchestration.hudi.model.file_group import UNKNOWN_WRITE_TOKEN, LogFile, is_log_file_name
from lake_orchestration.hudi.model.instant import Instant, InstantTime, State
from lake_orchestration.hudi.services.rollback.committer import rollback_metadata
from lake_orchestration.hudi.table.heartbeat import heartbeat_path
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.marker import delete_markers
from lake_orchestration.io.hadoop_paths import qualified_path

log = logging.getLogger(__name__)


def execute_rollback(
    table: HudiTable,
    plan: RollbackPlan,
    *,
    target: Instant,
    rollback: Instant,
    paths: Mapping[str, str | None],
    start: float,
    resumed: bool,
) -> RollbackMetadata:
    """Carry out ``plan`` (the rollback of the write ``target``) as the inflight rollback instant ``rollback``;
    returns the metadata to commit. Nothing of the rollback's own instant is written here.

    Args:
        paths: each path the plan lists -> its storage path (see
            :func:`~lake_orchestration.hudi.services.rollback.planner.storage_paths`).
        start: ``time.monotonic()`` when the rollback started (its metadata records the time taken).
        resumed: the plan is a crashed attempt's: a rollback log file it already wrote is reused, never written
            twice.
    """
    instant = str(target.time)
    rb_time = str(rollback.time)
    deleted: dict[str, list[str]] = defaultdict(list)
    rollback_logs: dict[str, dict[str, int]] = defaultdict(dict)
    failed_logs: dict[str, dict[str, int]] = defaultdict(dict)
    for req in plan.rollback_requests or ():
        for full in req.files_to_be_deleted:
            table.storage.delete_file(paths[full] or "", missing_ok=True)
            deleted[req.partition_path].append(full)
        if req.log_blocks_to_be_deleted and table.config.is_mor:
            lf = (_written_rollback_log(table, req, rb_time, instant) if resumed else None) or write_log_file(
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
    delete_markers(table.storage, instant)
    # the rolled-back instant disappears from the timeline (inflight first, then requested), as in Hudi
    for state in (State.INFLIGHT, State.REQUESTED):
        table.storage.delete_file(table.instant_path(Instant(target.time, target.action, state)), missing_ok=True)
    _delete_heartbeat(table, instant)
    return rollback_metadata(
        rb_time,
        start,
        instant,
        target.action.value,
        deleted=deleted,
        rollback_logs=rollback_logs,
        failed_logs=failed_logs,
    )


def _written_rollback_log(table: HudiTable, req: RollbackRequest, rb_time: str, instant: InstantTime) -> LogFile | None:
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


def _delete_heartbeat(table: HudiTable, instant: InstantTime) -> None:
    """Delete the rolled-back instant's heartbeat. One that cannot be deleted (a directory in its place) is reported
    and left, as Java's ``HeartbeatUtils.deleteHeartbeatFile`` does: the instant is gone, nothing reads it any more,
    and failing here would leave the rollback pending after its files were deleted."""
    path = heartbeat_path(table.storage, instant)
    try:
        table.storage.delete_file(path, missing_ok=True)
    except StorageError as err:
        log.warning("Cannot delete the heartbeat of rolled-back instant %s (%s); left in place", instant, err)
