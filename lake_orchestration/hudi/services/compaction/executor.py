"""Execute-plan: one task per compaction operation (file group), run in-process or on Spark.

Mirrors ``HoodieCompactor.compact``: merged log scan of the plan's log files up to the latest completed instant
(uncommitted and rolled-back blocks dropped, blocks with corrupt framing skipped and counted; a block whose content
does not decode raises ``CorruptLogBlockError``, checked by ``verify_operations`` before the plan goes inflight), merge
with the base file by the
payload's semantics (or insert-only without a base file), and a new base file ``{fileId}_{token}_{instant}.parquet``
that keeps every record's ``_hoodie_commit_time``/``_hoodie_commit_seqno`` and carries Hudi's footer. The base file
is streamed by row group in one pass. The decoded log side is held in memory up to
``hoodie.memory.compaction.max.size`` (Flink: ``compaction.max_memory`` in MB, default 100 MB); beyond it, the log
records go to local Arrow IPC spill files read back memory-mapped: the merge reads keys, sequence and ordering values
into memory and fetches the winning records' other columns from the files as base batches need them.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa

from lake_orchestration.errors import CorruptLogBlockError
from lake_orchestration.hudi.log.scanner import InstantFilter, scan_blocks
from lake_orchestration.hudi.merge.record_merger import (
    DecodeState,
    MergeConfig,
    SliceMerger,
    check_log_blocks,
    combine_log_records,
    conform,
    decode_log_blocks,
)
from lake_orchestration.hudi.model.avro import CompactionOperation
from lake_orchestration.hudi.model.commit_metadata import RuntimeStats, WriteStat
from lake_orchestration.hudi.model.file_group import BaseFile, FileGroupId, FileSlice, LogFile, make_write_token
from lake_orchestration.hudi.model.instant import Action, InstantTime
from lake_orchestration.hudi.model.properties import MergeSemantics
from lake_orchestration.hudi.model.schema import avro_to_arrow_schema
from lake_orchestration.hudi.model.timeline import Timeline
from lake_orchestration.hudi.table.marker import create_marker
from lake_orchestration.hudi.write.base_file import BaseFileWriter, ParquetWriteConfig, WriteBehind
from lake_orchestration.io.storage import Storage


@dataclass(frozen=True, kw_only=True)
class OperationTask:
    """One compaction operation with everything its task needs (plain values: it travels as JSON)."""

    base_uri: str
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)
    """Storage options (secrets: never shown in a repr)."""
    instant: str
    partition_path: str
    file_id: str
    base_instant: str
    data_file: str | None
    log_files: list[str]
    log_files_size: float
    latest_instant: str
    completed: list[str]
    inflight: list[str]
    timeline_start: str | None
    merge_semantics: str
    ordering_field: str | None
    key_field: str
    avro_schema_json: str
    task_partition_id: int
    compression: str = "gzip"
    memory_max_bytes: int = 100 * 1024 * 1024
    parquet_block_size: int = 120 * 1024 * 1024
    parquet_page_size: int = 1024 * 1024
    parquet_dictionary_enabled: bool = True
    unique_columns: list[str] = field(default_factory=list)
    """Columns unique within the file group (a single record key field): written without dictionary."""

    def parquet(self) -> ParquetWriteConfig:
        return ParquetWriteConfig(
            compression=self.compression,
            block_size=self.parquet_block_size,
            page_size=self.parquet_page_size,
            dictionary_enabled=self.parquet_dictionary_enabled,
        )

    @classmethod
    def for_operation(cls, op: CompactionOperation, n: int, **common: object) -> OperationTask:
        return cls(
            partition_path=op.partition_path or "",
            file_id=op.file_id or "",
            base_instant=op.base_instant_time or "",
            data_file=op.data_file_path.rsplit("/", 1)[-1] if op.data_file_path else None,
            log_files=[p.rsplit("/", 1)[-1] for p in (op.delta_file_paths or ())],
            log_files_size=float((op.metrics or {}).get("TOTAL_LOG_FILES_SIZE", 0.0)),
            task_partition_id=n,
            **common,  # type: ignore[arg-type]
        )


def compactor_instant_filter(timeline: Timeline, instant: str) -> InstantFilter:
    """The log blocks a (log) compaction reads: up to the last completed commit, deltacommit, replacecommit or
    rollback (Hudi's compactor bound), the plan's instant when there is none."""
    last = (
        timeline.completed()
        .filter(lambda i: i.action in (Action.COMMIT, Action.DELTA_COMMIT, Action.ROLLBACK, Action.REPLACE_COMMIT))
        .last
    )
    return InstantFilter.from_timeline(timeline, latest_instant=str(last.time) if last else instant)


def execute_operation_json(payload: str) -> list[str]:
    """Spark entry point: a JSON :class:`OperationTask` in, JSON write stats out.

    The write token comes from the Spark task (``{partitionId}-{stageId}-{taskAttemptId}``, as Hudi), so a retried or
    speculative attempt writes a different file name and the commit keeps only the one in the write stats.
    """
    from pyspark import TaskContext

    task = OperationTask(**json.loads(payload))
    tc = TaskContext.get()
    if tc is not None:
        stat = execute_operation(task, stage_id=tc.stageId(), attempt_id=tc.taskAttemptId())
    else:
        stat = execute_operation(task)
    return [json.dumps(stat.to_json_obj())] if stat is not None else []


def _task_slice(task: OperationTask) -> tuple[Storage, FileSlice, InstantFilter, MergeConfig]:
    storage = Storage(task.base_uri, options=task.storage_options)
    p = task.partition_path
    base = (
        BaseFile.parse(task.data_file, partition_path=p, size=storage.size(storage.join(p, task.data_file)))
        if task.data_file
        else None
    )
    logs = tuple(LogFile.parse(n, partition_path=p, size=storage.size(storage.join(p, n))) for n in task.log_files)
    fs = FileSlice(FileGroupId(p, task.file_id), InstantTime(task.base_instant), base, logs)
    flt = InstantFilter(
        latest_instant=task.latest_instant,
        completed=frozenset(task.completed),
        inflight=frozenset(task.inflight),
        timeline_start=task.timeline_start,
    )
    mcfg = MergeConfig(
        semantics=MergeSemantics(task.merge_semantics), ordering_field=task.ordering_field, key_field=task.key_field
    )
    return storage, fs, flt, mcfg


def verify_operation(task: OperationTask) -> None:
    """Decode every log block the operation's merge reads, writing nothing.

    Raises:
        CorruptLogBlockError: a block's content does not decode.
    """
    storage, fs, flt, mcfg = _task_slice(task)
    blocks, _ = scan_blocks(storage, fs.log_files, flt)
    check_log_blocks(blocks, mcfg)


def verify_operation_json(payload: str) -> list[str]:
    """Spark entry point of :func:`verify_operation`: the corrupt block as JSON (``[]`` when every block decodes),
    so the driver raises the same ``CorruptLogBlockError`` as the local engine."""
    try:
        verify_operation(OperationTask(**json.loads(payload)))
    except CorruptLogBlockError as err:
        return [
            json.dumps(
                {
                    "path": err.path,
                    "offset": err.offset,
                    "reason": err.reason,
                    "instant": err.instant,
                    "block_type": err.block_type,
                }
            )
        ]
    return []


def verify_operations(tasks: list[OperationTask], *, spark: object = None) -> None:
    """Decode the log blocks of every operation before anything is written (the compaction goes inflight after).

    Only framing corruption (a torn write) is skipped, as Java's reader does; a block whose content does not decode
    would otherwise fail a task after other tasks wrote their base files.

    Raises:
        CorruptLogBlockError: a block whose content does not decode (the first one, in task order).
    """
    if spark is None:
        for t in tasks:
            verify_operation(t)
        return
    from lake_orchestration.hudi.services.spark_runner import run_json_tasks

    results = run_json_tasks(
        spark,
        [json.dumps(asdict(t)) for t in tasks],
        "lake_orchestration.hudi.services.compaction.executor:verify_operation_json",
    )
    if results:
        e = json.loads(results[0])
        raise CorruptLogBlockError(
            e["path"], e["offset"], e["reason"], instant=e["instant"], block_type=e["block_type"]
        )


def execute_operation(task: OperationTask, *, stage_id: int = 0, attempt_id: int | None = None) -> WriteStat | None:
    """Compact one file group; returns its write stat (None when nothing is left to write and there was no base)."""
    storage, fs, flt, mcfg = _task_slice(task)
    p = task.partition_path
    base = fs.base_file
    t0 = time.monotonic()
    blocks, scan = scan_blocks(storage, fs.log_files, flt)
    avro = json.loads(task.avro_schema_json)
    schema = avro_to_arrow_schema(avro)
    state = DecodeState()
    decoded = decode_log_blocks(blocks, mcfg, state)
    tables: list[pa.Table] = []
    deletes: list = []
    held = 0
    spill: _LogSpill | None = None
    for d in decoded:
        if d.table is not None:
            if spill is not None:
                tables.append(spill.put(d.table))
            else:
                tables.append(d.table)
                held += d.table.nbytes
        deletes.extend(d.deletes)
        if spill is None and held > task.memory_max_bytes:
            # Beyond hoodie.memory.compaction.max.size: the decoded log records go to local disk (Arrow IPC files,
            # read back memory-mapped, like Hudi's ExternalSpillableMap with its disk map); only what the merge
            # probes with (keys, sequence and ordering values) is read into memory.
            spill = _LogSpill()
            tables = [spill.put(t) for t in tables]
            held = 0
    scan_ms = int((time.monotonic() - t0) * 1000)
    token = make_write_token(
        task.task_partition_id, stage_id, attempt_id if attempt_id is not None else task.task_partition_id
    )
    t1 = time.monotonic()
    writer: WriteBehind | BaseFileWriter | None = None
    pf = storage.open_parquet(storage.join(base.relative_path)) if base is not None else None
    # the rewritten base file's compressed bytes per row size the first row group of the new one
    row_bytes_hint = (base.size or 0) / pf.metadata.num_rows if pf is not None and pf.metadata.num_rows else None

    def out() -> WriteBehind | BaseFileWriter:
        nonlocal writer
        if writer is None:
            name = BaseFile(task.file_id, token, InstantTime(task.instant)).name
            create_marker(storage, task.instant, p, name, "MERGE" if base is not None else "CREATE")
            w = BaseFileWriter(
                storage,
                partition_path=p,
                file_id=task.file_id,
                write_token=token,
                instant=task.instant,
                avro_schema=avro,
                arrow_schema=schema,
                preserve_commit_metadata=True,
                config=task.parquet(),
                unique_columns=tuple(task.unique_columns),
                row_bytes_hint=row_bytes_hint,
            )
            # With more than one core (the local engine), write on a background thread: reading and merging batch
            # i+1 overlaps writing batch i. A Spark task owns one core (Arrow pinned to one thread): write inline.
            writer = WriteBehind(w) if pa.cpu_count() > 1 else w
        return writer

    try:
        if base is not None:
            out()  # a base file is rewritten even if every record was deleted
        log_records = combine_log_records(tables, deletes, mcfg, state, gather=spill.gather if spill else None)
        del tables
        merger = SliceMerger(log_records, mcfg)
        if pf is not None:
            for batch in pf.iter_batches(batch_size=131_072):
                out().write(merger.merge_batch(conform(batch, schema)))
        inserts = merger.remaining_inserts(schema)
        n_inserts = 0
        if inserts is not None and inserts.num_rows:
            n_inserts = inserts.num_rows
            out().write(inserts)
        updated, deleted = merger.updated, merger.deleted
        n_log_keys = (log_records.records.num_rows if log_records.records is not None else 0) + len(
            log_records.deleted_keys
        )
        new_file = writer.close() if writer is not None else None  # queued batches are written before the spill goes
    except BaseException:
        if isinstance(writer, WriteBehind):
            writer.abort()
        raise
    finally:
        if spill is not None:
            spill.close()
    if writer is None or new_file is None:
        return None
    rows = writer.rows
    upsert_ms = int((time.monotonic() - t1) * 1000)
    return WriteStat(
        fileId=task.file_id,
        path=new_file.relative_path,
        prevCommit=task.base_instant,
        numWrites=rows,
        numDeletes=deleted,
        numUpdateWrites=updated,
        numInserts=n_inserts,
        totalWriteBytes=new_file.size,
        partitionPath=p,
        totalLogRecords=state.seq,
        totalLogFilesCompacted=len(fs.log_files),
        totalLogSizeCompacted=int(task.log_files_size),
        totalUpdatedRecordsCompacted=n_log_keys,
        totalLogBlocks=scan.total_log_blocks,
        totalCorruptLogBlock=scan.total_corrupt_blocks,
        totalRollbackBlocks=scan.total_rollback_blocks,
        fileSizeInBytes=new_file.size,
        runtimeStats=RuntimeStats(
            totalScanTime=scan_ms,
            totalUpsertTime=upsert_ms if base is not None else 0,
            totalCreateTime=upsert_ms if base is None else 0,
        ),
    )


class _LogSpill:
    """Decoded log tables in Arrow IPC files in a local temp dir, read back memory-mapped (zero copy)."""

    _BATCH = 65_536

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="lake-orch-compaction-spill-")
        self.count = 0

    def _write(self, schema: pa.Schema, batches: Iterator[pa.Table]) -> pa.Table:
        path = os.path.join(self.dir, f"{self.count}.arrow")
        self.count += 1
        with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, schema) as w:
            for t in batches:
                w.write_table(t, max_chunksize=self._BATCH)
        return pa.ipc.open_file(pa.memory_map(path)).read_all()

    def put(self, table: pa.Table) -> pa.Table:
        """Spill ``table``; returns it memory-mapped from its file."""
        return self._write(table.schema, iter([table]))

    def gather(self, data: pa.Table, rows: pa.Array) -> pa.Table:
        """``data.take(rows)`` written to a new spill file chunk by chunk (rows in ascending order)."""
        idx = np.sort(rows.to_numpy())
        n = self._BATCH
        return self._write(data.schema, (data.take(pa.array(idx[i : i + n])) for i in range(0, len(idx), n)))

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def run_operations(tasks: list[OperationTask], *, spark: object = None) -> list[WriteStat]:
    """Execute every operation: on Spark (one task per operation) when a session is given, else in-process."""
    if spark is None:
        return [s for s in (execute_operation(t) for t in tasks) if s is not None]
    from lake_orchestration.hudi.services.spark_runner import run_json_tasks

    results = run_json_tasks(
        spark,
        [json.dumps(asdict(t)) for t in tasks],
        "lake_orchestration.hudi.services.compaction.executor:execute_operation_json",
    )
    return [WriteStat.from_json_obj(json.loads(r)) for r in results]
