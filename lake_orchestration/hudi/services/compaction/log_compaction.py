"""Log compaction: merge a file slice's log blocks into one log file, without rewriting the base file.

``<ts>.logcompaction.requested`` holds a ``HoodieCompactionPlan`` for the slices whose log files hold at least
``hoodie.log.compaction.blocks.threshold`` blocks; executing it writes, per slice, one new log file with the merged
records (an Avro data block, and a delete block for deleted keys), both with the ``COMPACTED_BLOCK_TIMES`` header
listing the instants of the blocks they replace; it completes as ``<ts>.deltacommit`` (``LOG_COMPACT``).
Records keep their own ``_hoodie_commit_time``/``_hoodie_commit_seqno``. The replaced blocks stay on disk: a reader
that still reads them gets the same result, because the merged block repeats each key's winning version.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict

from lake_orchestration.errors import InstantNotFoundError
from lake_orchestration.hudi.log.block_content import DeleteRecord, encode_avro_table, encode_delete_content
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, encode_block, iter_blocks
from lake_orchestration.hudi.log.scanner import scan_blocks
from lake_orchestration.hudi.log.writer import write_log_file
from lake_orchestration.hudi.merge.record_merger import check_log_blocks, conform, resolve_log_records
from lake_orchestration.hudi.model.avro import CompactionOperation, CompactionPlan
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, RuntimeStats, WriteStat
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.model.schema import META_FIELDS, avro_to_arrow_schema, with_meta_fields
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.compaction.executor import compactor_instant_filter
from lake_orchestration.hudi.services.compaction.planner import (
    COMPACTION_PLAN_VERSION,
    ScheduleResult,
    operation_metrics,
    validate_instant,
)
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.hudi.table.snapshot import merge_config_for
from lake_orchestration.hudi.write.file_group_writer import MARKERS_DIR, create_marker


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
    plan = CompactionPlan(operations=tuple(ops), version=COMPACTION_PLAN_VERSION)
    table.create_requested(Instant(instant, Action.LOG_COMPACTION, State.REQUESTED), plan.to_bytes())
    return ScheduleResult(instant, plan, f"scheduled log compaction of {len(ops)} file slice(s)")


def run_log_compaction(table: HudiTable, instant: str, *, config: CompactionConfig | None = None) -> CommitMetadata:
    """Execute and commit the pending log compaction ``instant``; returns its commit metadata."""
    table.refresh()
    table.ensure_metadata_table_handled((config or CompactionConfig()).metadata_options(), service="log compaction")
    pending = table.timeline.get(instant, Action.LOG_COMPACTION)
    if pending is None or pending.action is not Action.LOG_COMPACTION:
        raise InstantNotFoundError(table.base_uri, instant, "no pending log compaction plan")
    req = Instant(pending.time, Action.LOG_COMPACTION, State.REQUESTED)
    plan = CompactionPlan.from_bytes(table.read_instant(req), path=table.storage.uri(table.instant_path(req)))
    _check_log_blocks(table, plan, instant)  # CorruptLogBlockError before anything is written
    if pending.state is State.INFLIGHT:
        # a crashed attempt only added log files named by this instant's blocks: they are never read (the instant
        # is not completed), so the plan is simply executed again
        pass
    else:
        table.transition_to_inflight(req)
    schema = with_meta_fields(table.latest_schema() or {"type": "record", "name": "r", "fields": []})
    schema_json = json.dumps(schema, separators=(",", ":"))
    arrow = avro_to_arrow_schema(schema)
    tl = table.timeline
    flt = compactor_instant_filter(tl, instant)
    mcfg = merge_config_for(table)
    stats: dict[str, list[WriteStat]] = defaultdict(list)
    for n, op in enumerate(plan.operations or ()):
        stats[op.partition_path or ""].append(
            _compact_logs(table, op, instant, n, flt, mcfg, schema, schema_json, arrow)
        )
    user = dict(schema)
    user["fields"] = [f for f in schema["fields"] if f["name"] not in META_FIELDS]
    md = CommitMetadata(
        partition_to_write_stats=dict(stats),
        operation_type="LOG_COMPACT",
        extra_metadata={"schema": json.dumps(user, separators=(",", ":"))},
    )
    with table_lock(table, operation=f"log compaction commit {instant}", config=(config or CompactionConfig()).lock):
        table.transition_to_completed(Instant(pending.time, Action.LOG_COMPACTION, State.INFLIGHT), md.to_bytes())
        table.storage.delete_dir(table.storage.join(MARKERS_DIR, instant))
    return md


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
    if len(lr.deleted_keys):
        dels = [DeleteRecord(k, p, 0, "IntWrapper") for k in lr.deleted_keys.to_pylist()]
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
