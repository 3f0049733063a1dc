"""Log compaction: merge a file slice's log blocks into one log file, without rewriting the base file.

``<ts>.logcompaction.requested`` holds a ``HoodieCompactionPlan`` for the slices whose log files hold at least
``hoodie.log.compaction.blocks.threshold`` blocks; executing it writes, per slice, one new log file with the merged
records (an Avro data block, and a delete block for deleted keys), both with the ``COMPACTED_BLOCK_TIMES`` header
listing the instants of the blocks they replace; it completes as ``<ts>.deltacommit`` (``LOG_COMPACT``).
Records keep their own ``_hoodie_commit_time``/``_hoodie_commit_seqno``, deletes their ordering value. The replaced
blocks stay on disk: a reader that still reads them gets the same result, because the merged block repeats each key's
winning version. The plan carries Java's log compaction strategy (``LogCompactionExecutionHelper``,
``preserveHoodieMetadata = true``, as ``HoodieLogCompactionPlanGenerator`` writes), so a Java client resuming it runs
a log compaction, not a full one.

While it executes, the instant has a heartbeat (``.hoodie/.heartbeat/<instant>``, as writers have). A rerun of a
plan left inflight by a crash first rolls the crashed attempt back (its new log files are deleted, see
:func:`rollback_inflight_log_compaction`), but only once its heartbeat expired: an attempt with a fresh heartbeat is
live, and the rerun is refused with an error naming the instant and the heartbeat time.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InstantNotFoundError, InvalidInstantStateError
from lake_orchestration.hudi.log.block_content import DeleteRecord, encode_avro_table, encode_delete_content
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, encode_block, iter_blocks
from lake_orchestration.hudi.log.scanner import scan_blocks
from lake_orchestration.hudi.log.writer import write_log_file
from lake_orchestration.hudi.merge.record_merger import check_log_blocks, conform, resolve_log_records
from lake_orchestration.hudi.model.avro import CompactionOperation, CompactionPlan, CompactionStrategy
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, RuntimeStats, WriteStat
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.model.schema import META_FIELDS, avro_to_arrow_schema, with_meta_fields
from lake_orchestration.hudi.services.compaction.attempt import in_progress_error, taken_over_error
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.compaction.executor import compactor_instant_filter
from lake_orchestration.hudi.services.compaction.planner import (
    COMPACTION_PLAN_VERSION,
    ScheduleResult,
    operation_metrics,
    validate_instant,
)
from lake_orchestration.hudi.services.rollback.compaction import rollback_inflight_log_compaction
from lake_orchestration.hudi.table.heartbeat import Heartbeat, attempt_liveness
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.hudi.table.marker import MARKERS_DIR, create_marker
from lake_orchestration.hudi.table.snapshot import merge_config_for

log = logging.getLogger(__name__)

LOG_COMPACTION_EXECUTOR = "org.apache.hudi.table.action.compact.LogCompactionExecutionHelper"
"""``strategy.compactorClassName`` of a log compaction plan (``HoodieLogCompactionPlanGenerator``)."""


def log_compaction_plan(operations: tuple[CompactionOperation, ...]) -> CompactionPlan:
    """A ``HoodieCompactionPlan`` as ``HoodieLogCompactionPlanGenerator.getCompactionPlan`` builds it: the strategy
    names ``LogCompactionExecutionHelper`` (empty ``strategyParams``) and ``preserveHoodieMetadata`` is true."""
    return CompactionPlan(
        operations=operations,
        version=COMPACTION_PLAN_VERSION,
        strategy=CompactionStrategy(compactor_class_name=LOG_COMPACTION_EXECUTOR, strategy_params={}, version=1),
        preserve_hoodie_metadata=True,
    )


def _block_count(table: HudiTable, fs) -> int:  # type: ignore[no-untyped-def]
    n = 0
    for lf in fs.log_files:
        n += sum(
            1 for b in iter_blocks(table.storage.read_bytes(table.storage.join(lf.relative_path))) if not b.is_corrupt
        )
    return n


def schedule_log_compaction(
    table: HudiTable, *, config: CompactionConfig | None = None, instant_time: str | None = None
) -> ScheduleResult:
    """Write ``<ts>.logcompaction.requested`` for slices with enough log blocks (no trigger strategy, as Hudi).

    Runs under the table lock (``hoodie.write.lock.*``), as compaction scheduling does.
    """
    cfg = config or CompactionConfig()
    with table_lock(table, operation="log compaction schedule", config=cfg.lock):
        return _schedule_log_compaction(table, cfg, instant_time)


def _schedule_log_compaction(table: HudiTable, cfg: CompactionConfig, instant_time: str | None) -> ScheduleResult:
    table.refresh()
    table.ensure_metadata_table_handled(cfg.metadata_options(), service="log compaction")
    instant = InstantTime(instant_time) if instant_time else table.new_instant_time()
    validate_instant(table, instant)
    view = table.fs_view()
    excluded = set(view.pending_compaction) | set(view.pending_log_compaction)
    ops = []
    for fs in view.latest_file_slices():
        if len(fs.log_files) < 1 or fs.file_group_id in excluded:
            continue
        if _block_count(table, fs) < cfg.log_compaction_blocks_threshold:
            continue
        ops.append(
            CompactionOperation(
                base_instant_time=str(fs.base_instant),
                delta_file_paths=tuple(lf.name for lf in fs.log_files),
                data_file_path=fs.base_file.name if fs.base_file else None,
                file_id=fs.file_id,
                partition_path=fs.partition_path,
                metrics=operation_metrics(fs, max_file_size=cfg.max_file_size),
            )
        )
    if not ops:
        return ScheduleResult(
            None,
            None,
            f"no file slice has >= {cfg.log_compaction_blocks_threshold} log blocks "
            "(hoodie.log.compaction.blocks.threshold)",
        )
    plan = log_compaction_plan(tuple(ops))
    table.create_requested(Instant(instant, Action.LOG_COMPACTION, State.REQUESTED), plan.to_bytes())
    return ScheduleResult(instant, plan, f"scheduled log compaction of {len(ops)} file slice(s)")


def run_log_compaction(table: HudiTable, instant: str, *, config: CompactionConfig | None = None) -> CommitMetadata:
    """Execute and commit the pending log compaction ``instant``; returns its commit metadata.

    The attempt keeps a heartbeat (``hoodie.client.heartbeat.*``, a token of its own as content) from before the
    requested -> inflight transition until the commit. Under the table lock, a plan found inflight is refused while
    its attempt's heartbeat is fresh (or, without a heartbeat, while its inflight file is younger than the expiry),
    and otherwise rolled back first (the crashed attempt's log files deleted). The commit checks, under the lock,
    that the plan is still inflight, the heartbeat still this attempt's and the written files present.

    Raises:
        InstantNotFoundError: no pending log compaction ``instant``.
        InstantInProgressError: the plan is inflight and its attempt is live (another process executes it).
        InvalidInstantStateError: at the commit, the attempt was taken over or its files are gone (nothing
            committed).
        CorruptLogBlockError: a log block the plan merges does not decode (nothing is written).
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    cfg = config or CompactionConfig()
    table.refresh()
    table.ensure_metadata_table_handled(cfg.metadata_options(), service="log compaction")
    pending = _pending(table, instant)
    req = Instant(pending.time, Action.LOG_COMPACTION, State.REQUESTED)
    plan = CompactionPlan.from_bytes(table.read_instant(req), path=table.storage.uri(table.instant_path(req)))
    _check_log_blocks(table, plan, instant)  # CorruptLogBlockError before anything is written
    token = f"{uuid.uuid4().hex}\n".encode()
    heartbeat = Heartbeat(table.storage, instant, interval_ms=cfg.heartbeat_interval_ms, content=token)
    with table_lock(table, operation=f"log compaction start {instant}", config=cfg.lock):
        pending = _pending(table, instant)  # as of the lock
        if pending.state is State.INFLIGHT:
            liveness = attempt_liveness(
                table.storage,
                instant,
                inflight_path=table.instant_path(req.with_state(State.INFLIGHT)),
                interval_ms=cfg.heartbeat_interval_ms,
                tolerable_misses=cfg.heartbeat_tolerable_misses,
            )
            if liveness.alive:
                raise in_progress_error(table, liveness, "log compaction")
            # The crashed attempt's log files hold blocks of this instant: once it completes they would be read as
            # well (records twice, files missing from the commit metadata). They are deleted first.
            log.warning(
                "Log compaction %s of %s: rolling back a crashed attempt (%s)",
                instant,
                table.base_uri,
                liveness.describe(),
            )
            rollback_inflight_log_compaction(table, instant, options=_options(cfg), check_liveness=False)
        heartbeat.start()
        try:
            table.transition_to_inflight(req)
        except BaseException:
            heartbeat.stop(delete=True)
            raise

    def ensure_ours() -> None:  # a paused attempt taken over stops before writing its next log file
        if heartbeat.lost or not heartbeat.is_ours():
            raise taken_over_error(table, instant, "log compaction")

    try:
        md = _execute(table, plan, instant, check=ensure_ours)
        with table_lock(table, operation=f"log compaction commit {instant}", config=cfg.lock):
            _verify(table, instant, heartbeat, md)
            table.transition_to_completed(req.with_state(State.INFLIGHT), md.to_bytes())
            table.storage.delete_dir(table.storage.join(MARKERS_DIR, instant))
    except BaseException:
        heartbeat.stop(delete=False)  # the expiring heartbeat tells the next run that this attempt is gone
        raise
    heartbeat.stop(delete=True)
    return md


def _options(cfg: CompactionConfig) -> dict[str, str]:
    return {
        **cfg.lock.to_options(),  # the nested rollback locks the same file as its caller
        **cfg.metadata_options(),
        HoodieKey.HEARTBEAT_INTERVAL_MS.key: str(cfg.heartbeat_interval_ms),
        HoodieKey.HEARTBEAT_TOLERABLE_MISSES.key: str(cfg.heartbeat_tolerable_misses),
    }


def _verify(table: HudiTable, instant: str, heartbeat: Heartbeat, md: CommitMetadata) -> None:
    """Under the commit's lock: the plan is still inflight, the heartbeat still ours, every written file there."""
    cur = table.refresh().timeline.get(instant, Action.LOG_COMPACTION)
    why = ""
    if cur is None or cur.action is not Action.LOG_COMPACTION or cur.state is not State.INFLIGHT:
        why = "the plan is no longer inflight"
    elif heartbeat.lost or not heartbeat.is_ours():
        why = "its heartbeat is no longer this process's (the attempt was judged dead and rolled back)"
    else:
        gone = [s.path for s in md.write_stats() if s.path and not table.storage.exists(table.storage.join(s.path))]
        if gone:
            why = f"files it wrote were deleted meanwhile ({', '.join(gone[:3])})"
    if why:
        raise InvalidInstantStateError(
            table.base_uri, instant, f"log compaction {instant} is not committed by this process: {why}"
        )


def _pending(table: HudiTable, instant: str) -> Instant:
    pending = table.refresh().timeline.get(instant, Action.LOG_COMPACTION)
    if pending is None or pending.action is not Action.LOG_COMPACTION or pending.is_completed:
        raise InstantNotFoundError(table.base_uri, instant, "no pending log compaction plan")
    return pending


def _execute(
    table: HudiTable, plan: CompactionPlan, instant: str, *, check: Callable[[], None] = lambda: None
) -> CommitMetadata:
    """Write the merged log file of every operation (``check`` runs before each: it raises once the attempt is no
    longer this process's); the commit metadata listing them."""
    schema = with_meta_fields(table.latest_schema() or {"type": "record", "name": "r", "fields": []})
    schema_json = json.dumps(schema, separators=(",", ":"))
    arrow = avro_to_arrow_schema(schema)
    flt = compactor_instant_filter(table.timeline, instant)
    mcfg = merge_config_for(table)
    stats: dict[str, list[WriteStat]] = defaultdict(list)
    for n, op in enumerate(plan.operations or ()):
        check()
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
    from lake_orchestration.hudi.model.file_group import LogFile

    t0 = time.monotonic()
    p = op.partition_path or ""
    logs = [
        LogFile.parse(name, partition_path=p, size=table.storage.size(table.storage.join(p, name)))
        for name in op.delta_file_paths or ()
    ]
    blocks, scan = scan_blocks(table.storage, logs, flt)
    lr = resolve_log_records(blocks, mcfg)
    times = ",".join(sorted({b.instant_time or "" for b in blocks}))
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
    # scan does. One delete block per ordering-value type: readers such as hudi-rs refuse a block mixing them.
    by_type: dict[str | None, list[DeleteRecord]] = {}
    for d in lr.deletes:
        by_type.setdefault(d.ordering_wrapper, []).append(d if d.partition_path else replace(d, partition_path=p))
    for dels in by_type.values():
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


def _check_log_blocks(table: HudiTable, plan: CompactionPlan, instant: str) -> None:
    """Decode every log block the plan merges, writing nothing: a block whose content does not decode raises
    ``CorruptLogBlockError`` before the plan goes inflight (only blocks with corrupt framing are skipped)."""
    from lake_orchestration.hudi.model.file_group import LogFile

    flt = compactor_instant_filter(table.timeline, instant)
    mcfg = merge_config_for(table)
    for op in plan.operations or ():
        p = op.partition_path or ""
        logs = [
            LogFile.parse(name, partition_path=p, size=table.storage.size(table.storage.join(p, name)))
            for name in op.delta_file_paths or ()
        ]
        blocks, _ = scan_blocks(table.storage, logs, flt)
        check_log_blocks(blocks, mcfg)
