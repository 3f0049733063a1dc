"""Log compaction execution: merge a file slice's log blocks into one new log file, without rewriting the base file.

Executing a ``<ts>.logcompaction`` plan writes, per slice, one new log file with the merged records (an Avro data
block, and one delete block for the deleted keys, as ``HoodieAppendHandle.appendDataAndDeleteBlocks``), both with
the ``COMPACTED_BLOCK_TIMES`` header listing the instants of the blocks they replace (an APPEND marker first).
Records keep their own ``_hoodie_commit_time``/``_hoodie_commit_seqno``, deletes their ordering value. Mirrors
``LogCompactionExecutionHelper`` / ``HoodieCompactor.compact`` (0.14/0.15): the plan's log files are scanned with
``scanInternalV2`` (:mod:`.blocks`) bounded by the log compaction instant, so blocks written after the plan are not
merged, and ``COMPACTED_BLOCK_TIMES`` is the scan's ``getValidBlockInstants()`` (newest first).

The replaced blocks stay on disk: a reader that reads every block in file order (``scanInternalV1``: Java's Spark
snapshot reader and Java's compaction) gets the same result only because the merged block comes right after them.
A plan overtaken by a later write (a log file of the file group that the plan does not list, e.g. a delete written
after the plan was scheduled) would put the merged block, holding older data, after that write: Java's in-order
readers would apply it last and the deleted rows would come back (``scanInternalV2``, our reader and hudi-rs place
it right). Java executes such a plan as it is; here the operation is left out: nothing is written for its file
group, which the next plan picks up with all its blocks. A write landing while the plan executes is caught by the
commit (:mod:`.committer`).

While it executes, the instant has a heartbeat (``.hoodie/.heartbeat/<instant>``, as writers have) holding a token
of the attempt (:class:`~lake_orchestration.hudi.services.attempt.InstantAttempt`); the commit (:mod:`.committer`)
checks it is still this attempt's.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from lake_orchestration.errors import InstantNotFoundError
from lake_orchestration.hudi.log.block_content import encode_avro_table, encode_delete_content
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, encode_block
from lake_orchestration.hudi.log.writer import write_log_file
from lake_orchestration.hudi.merge.record_merger import check_log_blocks, conform, resolve_log_records
from lake_orchestration.hudi.model.avro import CompactionPlan
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, RuntimeStats, WriteStat
from lake_orchestration.hudi.model.file_group import LogFile
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime
from lake_orchestration.hudi.model.schema import META_FIELDS, avro_to_arrow_schema, with_meta_fields
from lake_orchestration.hudi.services.attempt import InstantAttempt
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.log_compaction.blocks import log_compaction_execution_filter, optimized_scan
from lake_orchestration.hudi.services.log_compaction.planner import read_log_compaction_plan
from lake_orchestration.hudi.services.rollback.compaction import rollback_log_compaction_attempt
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.hudi.table.marker import create_marker
from lake_orchestration.hudi.table.snapshot import merge_config_for

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class LogCompactionExecution:
    """What executing a log compaction plan wrote (plain values: it pickles, so the commit may run elsewhere)."""

    instant: InstantTime
    """The log compaction instant (left inflight)."""
    metadata: CommitMetadata
    """The deltacommit's metadata (``LOG_COMPACT``) listing the new log files."""
    attempt: bytes
    """Content of the heartbeat ``.hoodie/.heartbeat/<instant>`` this attempt wrote: the commit checks it."""

    def to_json_obj(self) -> dict[str, Any]:
        """The execution as JSON (the attempt token stays out)."""
        stats = self.metadata.write_stats()
        return {
            "instant": self.instant,
            "file_slices": len(stats),
            "records": sum(s.numWrites or 0 for s in stats),
            "deletes": sum(s.numDeletes or 0 for s in stats),
            "bytes_written": sum(s.totalWriteBytes or 0 for s in stats),
        }


def execute_log_compaction(
    table: HudiTable, instant: InstantTime | str, *, config: CompactionConfig | None = None
) -> LogCompactionExecution:
    """Execute the pending log compaction ``instant``: write the merged log files; the instant is left inflight for
    :func:`~lake_orchestration.hudi.services.log_compaction.committer.commit_log_compaction`.

    The heartbeat is no longer refreshed once this returns: a commit that comes later than the heartbeat expiry may
    find the attempt taken over (then nothing is committed). :func:`execute_log_compaction_attempt` keeps it beating
    for a commit in the same process.

    Raises:
        As :func:`execute_log_compaction_attempt`.
    """
    instant = InstantTime(instant, where=table.base_uri)
    execution, attempt = execute_log_compaction_attempt(table, instant, config=config)
    attempt.give_up()  # the commit checks it is still this attempt's, then deletes it
    return execution


def execute_log_compaction_attempt(
    table: HudiTable, instant: InstantTime | str, *, config: CompactionConfig | None = None
) -> tuple[LogCompactionExecution, InstantAttempt]:
    """:func:`execute_log_compaction`, returning the attempt (:class:`InstantAttempt`) with its heartbeat still
    beating: the caller commits (passing it to
    :func:`~lake_orchestration.hudi.services.log_compaction.committer.commit_log_compaction`, which stops it).

    The attempt keeps a heartbeat (``hoodie.client.heartbeat.*``, a token of its own as content) from before the
    requested -> inflight transition; after a failure it is no longer refreshed (the expiring heartbeat tells the
    next run that this attempt is gone). Under the table lock,
    a plan found inflight is refused while its attempt's heartbeat is fresh (or, without a heartbeat, while its
    inflight file is younger than the expiry), and otherwise rolled back first (the crashed attempt's log files
    deleted, :func:`rollback_log_compaction_attempt`).

    Raises:
        InstantNotFoundError: no pending log compaction ``instant``.
        InstantInProgressError: the plan is inflight and its attempt is live (another process executes it).
        InvalidInstantStateError: the attempt was taken over while it wrote (it stops before its next file).
        CorruptLogBlockError: a log block the plan merges does not decode (nothing is written).
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    instant = InstantTime(instant, where=table.base_uri)
    cfg = config or CompactionConfig()
    table.refresh()
    table.ensure_metadata_table_handled(cfg.metadata_options(), service="log compaction")
    _pending(table, instant)
    plan = read_log_compaction_plan(table, instant)
    _check_log_blocks(table, plan, instant)  # CorruptLogBlockError before anything is written
    attempt = log_compaction_attempt(table, instant, cfg)
    with table_lock(table, operation=f"log compaction start {instant}", config=cfg.lock):
        # The crashed attempt's log files hold blocks of this instant: once it completes they would be read as
        # well (records twice, files missing from the commit metadata). They are deleted first (attempt.claim).
        attempt.claim(_pending(table, instant))  # as of the lock
    try:
        md = _execute(table, plan, instant, check=attempt.ensure_ours)
    except BaseException:
        attempt.give_up()  # the expiring heartbeat tells the next run that this attempt is gone
        raise
    return LogCompactionExecution(instant=instant, metadata=md, attempt=attempt.token), attempt


def log_compaction_attempt(
    table: HudiTable, instant: InstantTime, cfg: CompactionConfig, token: bytes | None = None
) -> InstantAttempt:
    """The attempt at log compaction ``instant`` (``token``: an executed one's, to commit it); a crashed attempt is
    rolled back (:func:`rollback_log_compaction_attempt`) before the plan is claimed again."""

    def roll_back(t: HudiTable, i: str) -> None:
        rollback_log_compaction_attempt(t, i, config=cfg.rollback_config())

    return InstantAttempt(
        table,
        instant,
        action=Action.LOG_COMPACTION,
        what="log compaction",
        interval_ms=cfg.heartbeat_interval_ms,
        tolerable_misses=cfg.heartbeat_tolerable_misses,
        lock=cfg.lock,
        roll_back=roll_back,
        token=token,
    )


def _pending(table: HudiTable, instant: InstantTime) -> Instant:
    pending = table.refresh().timeline.get(instant, Action.LOG_COMPACTION)
    if pending is None or pending.action is not Action.LOG_COMPACTION or pending.is_completed:
        raise InstantNotFoundError(table.base_uri, instant, "no pending log compaction plan")
    return pending


def _execute(
    table: HudiTable, plan: CompactionPlan, instant: InstantTime, *, check: Callable[[], None] = lambda: None
) -> CommitMetadata:
    """Write the merged log file of every operation (``check`` runs before each: it raises once the attempt is no
    longer this process's); the commit metadata listing them."""
    schema = with_meta_fields(table.latest_schema() or {"type": "record", "name": "r", "fields": []})
    schema_json = json.dumps(schema, separators=(",", ":"))
    arrow = avro_to_arrow_schema(schema)
    flt = log_compaction_execution_filter(table.timeline, instant)
    mcfg = merge_config_for(table)
    stats: dict[str, list[WriteStat]] = defaultdict(list)
    overtaken = overtaking_log_files(table, plan)
    for n, op in enumerate(plan.operations or ()):
        check()
        later = overtaken.get((op.partition_path or "", op.file_id or ""))
        if later:
            log.warning(
                "Log compaction %s of %s: file group %s/%s left out, written after the plan was made (%s): its "
                "merged block would follow them and undo them for in-order readers",
                instant,
                table.base_uri,
                op.partition_path,
                op.file_id,
                ", ".join(later),
            )
            continue
        stats[op.partition_path or ""].append(
            _compact_logs(table, op, instant, n, flt, mcfg, schema, schema_json, arrow)
        )
    user = dict(schema)
    user["fields"] = [f for f in schema["fields"] if f["name"] not in META_FIELDS]
    return CommitMetadata(
        partition_to_write_stats=dict(stats),
        operation_type="LOG_COMPACT",
        extra_metadata={"schema": json.dumps(user, separators=(",", ":"))},
    )


def _compact_logs(table, op, instant, n, flt, mcfg, schema, schema_json, arrow) -> WriteStat:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    p = op.partition_path or ""
    logs = [
        LogFile.parse(name, partition_path=p, size=table.storage.size(table.storage.join(p, name)))
        for name in op.delta_file_paths or ()
    ]
    scan = optimized_scan(table.storage, logs, flt)
    blocks = scan.blocks
    lr = resolve_log_records(blocks, mcfg)
    times = ",".join(scan.valid_block_instants)
    header = [
        (HeaderKey.INSTANT_TIME, instant),
        (HeaderKey.SCHEMA, schema_json),
        (HeaderKey.COMPACTED_BLOCK_TIMES, times),
    ]
    out = []
    if lr.records is not None and lr.records.num_rows:
        out.append(
            encode_block(LogBlockType.AVRO_DATA_BLOCK, header, encode_avro_table(conform(lr.records, arrow), schema))
        )
    # Each delete keeps its partition path and ordering value (LongWrapper(ts), IntWrapper(0)...), as Java's merged
    # scan does; all of them in one delete block after the data block (HoodieAppendHandle.appendDataAndDeleteBlocks).
    if lr.deletes:
        dels = [d if d.partition_path else replace(d, partition_path=p) for d in lr.deletes]
        out.append(encode_block(LogBlockType.DELETE_BLOCK, header, encode_delete_content(dels)))
    token = f"{n}-0-{n}"
    create_marker(table.storage, instant, p, f"{op.file_id}_{token}_{op.base_instant_time}.parquet", "APPEND")
    lf = write_log_file(
        table.storage,
        partition_path=p,
        file_id=op.file_id or "",
        base_instant=op.base_instant_time or "",
        write_token=token,
        blocks=out,
    )
    n_rec = lr.records.num_rows if lr.records is not None else 0
    return WriteStat(
        fileId=op.file_id or "",
        path=lf.relative_path,
        prevCommit=op.base_instant_time or "null",
        numWrites=n_rec,
        numDeletes=len(lr.deleted_keys),
        totalWriteBytes=lf.size,
        partitionPath=p,
        totalLogRecords=lr.total_log_records,
        totalLogFilesCompacted=len(logs),
        totalLogSizeCompacted=sum(lf_.size for lf_ in logs),
        totalLogBlocks=scan.total_log_blocks,
        totalCorruptLogBlock=scan.total_corrupt_blocks,
        totalRollbackBlocks=scan.total_rollback_blocks,
        fileSizeInBytes=lf.size,
        runtimeStats=RuntimeStats(totalUpsertTime=int((time.monotonic() - t0) * 1000)),
        logVersion=lf.version,
        logOffset=0,
        baseFile=op.data_file_path or "",
        logFiles=[lf.name],
    )


def _check_log_blocks(table: HudiTable, plan: CompactionPlan, instant: InstantTime) -> None:
    """Decode every log block the plan merges, writing nothing: a block whose content does not decode raises
    ``CorruptLogBlockError`` before the plan goes inflight (only blocks with corrupt framing are skipped)."""
    flt = log_compaction_execution_filter(table.timeline, instant)
    mcfg = merge_config_for(table)
    for op in plan.operations or ():
        p = op.partition_path or ""
        logs = [
            LogFile.parse(name, partition_path=p, size=table.storage.size(table.storage.join(p, name)))
            for name in op.delta_file_paths or ()
        ]
        check_log_blocks(optimized_scan(table.storage, logs, flt).blocks, mcfg)


def overtaking_log_files(table: HudiTable, plan: CompactionPlan) -> dict[tuple[str, str], list[str]]:
    """Per (partition, file id) of the plan: the log files of its slice that the plan does not list and that sort
    after the plan's last one -- written after the plan was made (a merged block written now would follow them)."""
    view = table.fs_view()
    out: dict[tuple[str, str], list[str]] = {}
    for op in plan.operations or ():
        p, fid = op.partition_path or "", op.file_id or ""
        planned = [LogFile.parse(n, partition_path=p) for n in op.delta_file_paths or ()]
        if not planned:
            continue
        last = max(lf.sort_key() for lf in planned)
        names = {lf.name for lf in planned}
        for fs in view.latest_file_slices(p):
            if fs.file_id != fid or str(fs.base_instant) != (op.base_instant_time or ""):
                continue
            later = [lf.name for lf in fs.log_files if lf.name not in names and lf.sort_key() > last]
            if later:
                out[(p, fid)] = later
    return out
