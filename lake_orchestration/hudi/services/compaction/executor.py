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
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from lake_orchestration.engines.base import Engine, TaskAttempt
from lake_orchestration.engines.local import or_local
from lake_orchestration.errors import CorruptLogBlockError, PlanError
from lake_orchestration.hudi.log.scanner import InstantFilter, ScanStats, scan_blocks
from lake_orchestration.hudi.merge.record_merger import (
    DecodedBlock,
    DecodeState,
    MergeConfig,
    SliceMerger,
    check_log_blocks,
    combine_log_records,
    conform,
    decode_log_blocks,
)
from lake_orchestration.hudi.model.avro import CompactionOperation, CompactionPlan
from lake_orchestration.hudi.model.commit_metadata import RuntimeStats, WriteStat
from lake_orchestration.hudi.model.file_group import BaseFile, FileGroupId, FileSlice, LogFile
from lake_orchestration.hudi.model.instant import Action, InstantTime
from lake_orchestration.hudi.model.schema import avro_to_arrow_schema, with_meta_fields
from lake_orchestration.hudi.model.timeline import Timeline
from lake_orchestration.hudi.services.attempt import InstantAttempt
from lake_orchestration.hudi.services.compaction.attempt import compaction_attempt, pending_plan
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.compaction.planner import load_plan
from lake_orchestration.hudi.services.compaction.result import CompactionExecution
from lake_orchestration.hudi.table.base_file_reader import open_base_file
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.hudi.table.marker import create_marker
from lake_orchestration.hudi.table.snapshot import merge_config_for
from lake_orchestration.hudi.write.base_file import BaseFileWriter, ParquetWriteConfig, WriteBehind
from lake_orchestration.io.storage import Storage

progress_log = logging.getLogger("lake_orchestration.progress.compaction")
"""Progress of an execution for people (the CLI prints it on stderr): a start line per plan, a line per file group
run in process. INFO records; nothing shows unless a handler is configured at INFO (``lake-orch`` does)."""


@dataclass(frozen=True, kw_only=True)
class OperationTask:
    """One compaction operation (file group) with everything its task needs: a typed engine task (see
    :mod:`lake_orchestration.engines.base`)."""

    base_uri: str
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    """Storage options (secrets: never shown in a repr, never encoded as data)."""
    instant: InstantTime
    file_slice: FileSlice
    """The plan's file slice, by file names (sizes unknown: the task reads them from storage)."""
    log_files_size: float
    instant_filter: InstantFilter
    merge: MergeConfig
    avro_schema_json: str
    parquet: ParquetWriteConfig
    memory_max_bytes: int = 100 * 1024 * 1024
    unique_columns: tuple[str, ...] = ()
    """Columns unique within the file group (a single record key field): written without dictionary."""
    attempt: TaskAttempt
    """The write token; on Spark the engine hands in the running task attempt."""

    @property
    def partition_path(self) -> str:
        return self.file_slice.partition_path

    @property
    def file_id(self) -> str:
        return self.file_slice.file_id

    @classmethod
    def for_operation(cls, op: CompactionOperation, n: int, **common: Any) -> OperationTask:
        p = op.partition_path or ""
        base = BaseFile.parse(op.data_file_path.rsplit("/", 1)[-1], partition_path=p) if op.data_file_path else None
        if base is not None and op.bootstrap_file_path:  # a bootstrap skeleton: read with its source file
            base = replace(base, bootstrap_source=op.bootstrap_file_path)
        logs = tuple(LogFile.parse(f.rsplit("/", 1)[-1], partition_path=p) for f in op.delta_file_paths or ())
        fs = FileSlice(FileGroupId(p, op.file_id or ""), InstantTime(op.base_instant_time or ""), base, logs)
        return cls(
            file_slice=fs,
            log_files_size=float((op.metrics or {}).get("TOTAL_LOG_FILES_SIZE", 0.0)),
            attempt=TaskAttempt(n, 0, n),
            **common,
        )


def compactor_instant_filter(timeline: Timeline, instant: InstantTime) -> InstantFilter:
    """The log blocks a (log) compaction reads: up to the last completed commit, deltacommit, replacecommit or
    rollback (Hudi's compactor bound), the plan's instant when there is none."""
    last = (
        timeline.completed()
        .filter(lambda i: i.action in (Action.COMMIT, Action.DELTA_COMMIT, Action.ROLLBACK, Action.REPLACE_COMMIT))
        .last
    )
    return InstantFilter.from_timeline(timeline, latest_instant=str(last.time) if last else instant)


def _task_slice(task: OperationTask) -> tuple[Storage, FileSlice]:
    """The task's storage and its file slice with the file sizes read from storage."""
    storage = Storage(task.base_uri, options=task.storage_options)
    fs = task.file_slice
    base = replace(fs.base_file, size=storage.size(storage.join(fs.base_file.relative_path))) if fs.base_file else None
    logs = tuple(replace(lf, size=storage.size(storage.join(lf.relative_path))) for lf in fs.log_files)
    return storage, replace(fs, base_file=base, log_files=logs)


@dataclass(frozen=True)
class CorruptBlock:
    """A log block whose content does not decode, as an engine task returns it (the driver raises it)."""

    path: str
    offset: int
    reason: str
    instant: str | None
    block_type: str | None

    def error(self) -> CorruptLogBlockError:
        return CorruptLogBlockError(
            self.path, self.offset, self.reason, instant=self.instant, block_type=self.block_type
        )


@dataclass
class DecodedLog:
    """A file group's log side as the check before the plan went inflight decoded it, kept for the execution."""

    instant_filter: InstantFilter
    file_slice: FileSlice
    """The slice with the file sizes read from storage."""
    scan: ScanStats
    blocks: list[DecodedBlock]
    state: DecodeState
    scan_ms: int
    nbytes: int


class DecodedLogs:
    """Log sides decoded by :func:`verify_operations` in this process, kept for :func:`execute_operation` up to
    ``max_bytes`` of decoded records in all (the rest is decoded again): the check and the execution then read and
    decode every log block once. An entry is used only if the execution's instant filter is the check's (the
    timeline did not change the blocks that count in between)."""

    def __init__(self, max_bytes: int) -> None:
        self.room = max_bytes
        self.entries: dict[tuple[str, str], DecodedLog] = {}

    def put(self, task: OperationTask, entry: DecodedLog) -> None:
        self.entries[(task.partition_path, task.file_id)] = entry
        self.room -= entry.nbytes

    def take(self, task: OperationTask) -> DecodedLog | None:
        entry = self.entries.pop((task.partition_path, task.file_id), None)
        if entry is not None:
            self.room += entry.nbytes
        return entry if entry is not None and entry.instant_filter == task.instant_filter else None


def verify_operation(task: OperationTask, *, keep: DecodedLogs | None = None) -> None:
    """Decode every log block the operation's merge reads, writing nothing; with ``keep``, the decoded log side is
    kept there for the execution while it fits.

    Raises:
        CorruptLogBlockError: a block's content does not decode.
    """
    t0 = time.monotonic()
    storage, fs = _task_slice(task)
    blocks, scan = scan_blocks(storage, fs.log_files, task.instant_filter)
    if keep is None:
        check_log_blocks(blocks, task.merge)
        return
    state = DecodeState()
    decoded: list[DecodedBlock] | None = []
    nbytes = 0
    for d in decode_log_blocks(blocks, task.merge, state):
        if decoded is None:
            continue  # too large to keep: decoded only to check it
        nbytes += d.table.nbytes if d.table is not None else 0
        if nbytes > keep.room:
            decoded = None
        else:
            decoded.append(d)
    if decoded is not None:
        scan_ms = int((time.monotonic() - t0) * 1000)
        keep.put(task, DecodedLog(task.instant_filter, fs, scan, decoded, state, scan_ms, nbytes))


def find_corrupt_blocks(task: OperationTask) -> list[CorruptBlock]:
    """Engine task of :func:`verify_operation`: the corrupt block (``[]`` when every block decodes), returned instead
    of raised inside an executor, so the driver raises the same ``CorruptLogBlockError`` as the local engine."""
    try:
        verify_operation(task)
    except CorruptLogBlockError as err:
        return [CorruptBlock(err.path, err.offset, err.reason, err.instant, err.block_type)]
    return []


def verify_operations(tasks: list[OperationTask], *, engine: Engine, keep: DecodedLogs | None = None) -> None:
    """Decode the log blocks of every operation before anything is written (the compaction goes inflight after).
    On an in-process engine (``engine.in_process``) the check runs here, and ``keep`` holds the decoded log sides
    for the execution (see :class:`DecodedLogs`).

    Only framing corruption (a torn write) is skipped, as Java's reader does; a block whose content does not decode
    would otherwise fail a task after other tasks wrote their base files.

    Raises:
        CorruptLogBlockError: a block whose content does not decode (the first one, in task order).
    """
    if engine.in_process:
        for t in tasks:
            verify_operation(t, keep=keep)
        return
    found = engine.map_tasks(find_corrupt_blocks, tasks, description=f"compaction {_instant_of(tasks)}: verify logs")
    if found:
        raise found[0].error()


def compact_operation(task: OperationTask) -> list[WriteStat]:
    """Engine task: compact one file group (:func:`execute_operation`); its write stat, if a file was written."""
    stat = execute_operation(task)
    return [stat] if stat is not None else []


def run_operations(tasks: list[OperationTask], *, engine: Engine) -> list[WriteStat]:
    """Execute every operation with ``engine`` (one engine task per operation)."""
    return engine.map_tasks(compact_operation, tasks, description=f"compaction {_instant_of(tasks)}: execute")


def _instant_of(tasks: list[OperationTask]) -> str:
    return tasks[0].instant if tasks else ""


def execute_operation(
    task: OperationTask,
    *,
    decoded_log: DecodedLog | None = None,
    pipeline: ClosePipeline | None = None,
) -> WriteStat | None:
    """Compact one file group; returns its write stat (None when nothing is left to write and there was no base).

    The new base file is named with the task's write token (``task.attempt``). ``decoded_log``: the log side the
    check before the plan went inflight decoded (else it is read and decoded here). ``pipeline``: the previous file
    group's file may still be closing on its thread (see :class:`ClosePipeline`); once every row is merged, the rest
    of this one (the last row group, the footer, closing the file, the write stat) is handed to it and None is
    returned (the stat comes from the pipeline).
    """
    mcfg = task.merge
    p = task.partition_path
    t0 = time.monotonic()
    decoded: Iterable[DecodedBlock]
    if decoded_log is not None:
        storage = Storage(task.base_uri, options=task.storage_options)
        fs, scan, state, decoded = decoded_log.file_slice, decoded_log.scan, decoded_log.state, decoded_log.blocks
        decoded_log.blocks = []  # the tables go to the merge (or a spill) from here
    else:
        storage, fs = _task_slice(task)
        blocks, scan = scan_blocks(storage, fs.log_files, task.instant_filter)
        state = DecodeState()
        decoded = decode_log_blocks(blocks, mcfg, state)
    base = fs.base_file
    avro = json.loads(task.avro_schema_json)
    schema = avro_to_arrow_schema(avro)
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
    scan_ms = int((time.monotonic() - t0) * 1000) + (decoded_log.scan_ms if decoded_log is not None else 0)
    token = task.attempt.write_token
    t1 = time.monotonic()
    writer: WriteBehind | BaseFileWriter | None = None
    pf = open_base_file(storage, base) if base is not None else None  # a skeleton is stitched with its source
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
                config=task.parquet,
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
            merged_bytes = 0
            for batch in pf.iter_batches(batch_size=131_072):
                merged = merger.merge_batch(conform(batch, schema))
                if pipeline is not None:
                    merged_bytes += merged.nbytes
                    pipeline.admit(merged_bytes)
                out().write(merged)
        inserts = merger.remaining_inserts(schema)
        n_inserts = 0
        if inserts is not None and inserts.num_rows:
            n_inserts = inserts.num_rows
            out().write(inserts)
        updated, deleted = merger.updated, merger.deleted
        n_log_keys = (log_records.records.num_rows if log_records.records is not None else 0) + len(
            log_records.deleted_keys
        )
    except BaseException:
        if isinstance(writer, WriteBehind):
            writer.abort()
        if spill is not None:
            spill.close()
        raise
    if writer is None:
        if spill is not None:
            spill.close()
        return None
    opened = writer

    def finish() -> WriteStat:
        try:
            new_file = opened.close()  # queued batches are written before the spill goes
        except BaseException:
            if isinstance(opened, WriteBehind):
                opened.abort()
            raise
        finally:
            if spill is not None:
                spill.close()
        upsert_ms = int((time.monotonic() - t1) * 1000)
        return _write_stat(
            task, fs, scan, state, new_file, opened.rows, (updated, deleted, n_inserts, n_log_keys), scan_ms, upsert_ms
        )

    if pipeline is not None:
        try:
            pipeline.submit(
                finish
            )  # raises a previous close's error: this file is then left unclosed, as on any failure
        except BaseException:
            if isinstance(opened, WriteBehind):
                opened.abort()
            if spill is not None:
                spill.close()
            raise
        return None
    return finish()


def _write_stat(
    task: OperationTask,
    fs: FileSlice,
    scan: ScanStats,
    state: DecodeState,
    new_file: BaseFile,
    rows: int,
    counts: tuple[int, int, int, int],
    scan_ms: int,
    upsert_ms: int,
) -> WriteStat:
    """The write stat of a compacted file group; ``counts``: updated, deleted, inserted rows and log keys."""
    updated, deleted, n_inserts, n_log_keys = counts
    p = task.partition_path
    base = fs.base_file
    return WriteStat(
        fileId=task.file_id,
        path=new_file.relative_path,
        prevCommit=str(fs.base_instant),
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


def compaction_tasks(
    table: HudiTable, instant: InstantTime, cfg: CompactionConfig, *, plan: CompactionPlan | None = None
) -> tuple[list[OperationTask], dict[str, Any]]:
    """The per-operation tasks of plan ``instant`` and the writer schema (with meta fields) they write."""
    instant = InstantTime(instant, where=table.base_uri)  # a caller's plain str too
    plan = plan or load_plan(table, instant)
    schema = table.latest_schema()
    if schema is None:
        raise PlanError(f"No writer schema found on the timeline of {table.base_uri}")
    schema = with_meta_fields(schema) if table.config.populate_meta_fields else schema
    # the timeline as the caller last loaded it: execution refreshes it on entry and under the lock (claim)
    flt = compactor_instant_filter(table.timeline, instant)
    common = {
        "base_uri": table.base_uri,
        "storage_options": table.storage.options,
        "instant": instant,
        "instant_filter": flt,
        "merge": merge_config_for(table),
        "avro_schema_json": json.dumps(schema, separators=(",", ":")),
        "parquet": cfg.parquet(),
        "memory_max_bytes": cfg.memory_max_bytes,
        # a single record key field is unique within a file group, as the record key is: no dictionary for it
        "unique_columns": tuple(table.config.record_key_fields) if len(table.config.record_key_fields) == 1 else (),
    }
    return [OperationTask.for_operation(op, n, **common) for n, op in enumerate(plan.operations or ())], schema


def check_base_files(table: HudiTable, plan: CompactionPlan) -> None:
    """Every base file the plan merges opens as Parquet (footer read), so a corrupt one stops the run before
    anything is written instead of failing one operation after others wrote their files.

    Raises:
        CorruptFileError: a base file that is empty, truncated or not Parquet, naming it.
    """
    for op in plan.operations or ():
        if op.data_file_path:
            name = op.data_file_path.rsplit("/", 1)[-1]
            table.storage.open_parquet(table.storage.join(op.partition_path or "", name)).close()


def execute_plan(
    table: HudiTable,
    instant: InstantTime | str,
    *,
    config: CompactionConfig | None = None,
    engine: Engine | None = None,
) -> CompactionExecution:
    """Execute-plan only: claim the pending plan ``instant`` (requested -> inflight, rolling a crashed inflight
    attempt back first), write one new base file per operation (with its marker) and return the write stats.
    Nothing is committed: :func:`~lake_orchestration.hudi.services.compaction.committer.commit_execution` does that,
    in this process or another one.

    The attempt's heartbeat stops beating when this returns (it is not deleted): a commit that follows within
    ``hoodie.client.heartbeat.interval_in_ms`` x ``tolerable.misses`` always finds the plan still this attempt's;
    after that another process may roll it back and take it over, and the commit then refuses.

    Raises:
        InstantNotFoundError: no pending plan ``instant`` (or it is already committed).
        InstantInProgressError: another process is executing the plan (its heartbeat is fresh); nothing was done.
        CorruptLogBlockError: a log block the plan merges does not decode; raised before anything is written.
        InvalidInstantTimeError: ``instant`` is not an instant time (nothing is read or written).
    """
    instant = InstantTime(instant, where=table.base_uri)
    execution, attempt = execute_attempt(table, instant, cfg=config or CompactionConfig(), engine=engine, refresh=True)
    attempt.heartbeat.stop(delete=False)
    return execution


def execute_attempt(
    table: HudiTable, instant: InstantTime, *, cfg: CompactionConfig, engine: Engine | None, refresh: bool
) -> tuple[CompactionExecution, InstantAttempt]:
    """:func:`execute_plan`, returning the attempt with its heartbeat still beating (the caller stops it);
    ``refresh=False`` when the caller has just listed the timeline.

    On a failure the attempt is rolled back (if still ours) and its heartbeat deleted, so a retry can start at once.
    """
    instant = InstantTime(instant, where=table.base_uri)  # a caller's plain str too
    t0 = time.monotonic()
    engine = or_local(engine)
    if refresh:
        table.refresh()
    pending_plan(table, instant)
    plan = load_plan(table, instant)
    ops = plan.operations or ()
    progress_log.info(
        "Compacting %s: %d operation(s), %d file group(s) in %d partition(s), engine %s",
        instant,
        len(ops),
        len({(o.partition_path, o.file_id) for o in ops}),
        len({o.partition_path for o in ops}),
        "local (in-process)" if engine.in_process else engine.name,
        extra={"instant": str(instant)},
    )
    check_base_files(table, plan)
    # Every log block the plan merges must decode before anything is written (CorruptLogBlockError otherwise).
    keep = DecodedLogs(cfg.memory_max_bytes) if engine.in_process else None
    verify_operations(compaction_tasks(table, instant, cfg, plan=plan)[0], engine=engine, keep=keep)
    table.ensure_metadata_table_handled(cfg.metadata_options(), service="compaction")
    # Decide and move to inflight under the table lock, holding the plan's heartbeat from before the transition to
    # the commit: a second process finds it live and refuses instead of rolling back a running attempt.
    attempt = compaction_attempt(table, instant, cfg)
    with table_lock(table, operation=f"compaction {instant}", config=cfg.lock):
        attempt.claim(pending_plan(table.refresh(), instant))
    try:
        tasks, schema = compaction_tasks(table, instant, cfg, plan=plan)
        # in-process, the attempt stops between tasks once another process took the plan over
        stats = run_in_process(attempt, tasks, keep) if engine.in_process else run_operations(tasks, engine=engine)
    except BaseException:
        attempt.abandon()  # roll our own attempt back, so a retry need not wait for the heartbeat to expire
        raise
    execution = CompactionExecution(
        instant=instant,
        operations=len(tasks),
        stats=tuple(stats),
        plan=plan,
        writer_schema=schema,
        attempt_token=attempt.token,
        rolled_back_attempt=attempt.rolled_back.time if attempt.rolled_back is not None else None,
        seconds=time.monotonic() - t0,
    )
    return execution, attempt


#: How much of the next file group (Arrow bytes of merged rows) is merged while the previous file still closes:
#: the extra memory of the pipeline. 0: the next file group is prepared (log side combined, key index built, base
#: file opened, first batch read and merged) during the close, then waits for it. Measured on 1M-row file groups
#: (docs/performance.md, Hudi defaults): 128 MiB gains ~0.2 s more on zstd but +~130 MB of peak RSS (> 1 GB).
CLOSE_OVERLAP_BYTES = 0


class ClosePipeline:
    """Closes file group i's new base file (its last row group, the footer) on a background thread while file group
    i+1 is read and merged: a file group of up to ``hoodie.parquet.block.size`` is one row group, whose encoding
    (pyarrow, without the GIL) can only start once its last row is merged, so without this the reading waits for it.

    At most one close is pending, and while it is, the next file group merges at most ``overlap_bytes`` of rows
    (:meth:`admit`) before waiting for it: memory holds at most that much more than a sequential run. A close that
    fails raises from the next :meth:`admit`, :meth:`submit` or :meth:`wait`; :meth:`shutdown` waits for a pending
    close (an error the caller is already raising wins).
    """

    def __init__(self, overlap_bytes: int = CLOSE_OVERLAP_BYTES) -> None:
        self.overlap_bytes = overlap_bytes
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compaction-close")
        self._pending: Future[WriteStat | None] | None = None
        self.stats: list[WriteStat] = []
        """Write stats in task order (closes complete in submission order)."""

    def admit(self, merged_bytes: int) -> None:
        """Called as the next file group has merged ``merged_bytes``: waits for the pending close beyond the bound."""
        if self._pending is not None and merged_bytes > self.overlap_bytes:
            self.wait()

    def submit(self, finish: Callable[[], WriteStat | None]) -> None:
        self.wait()
        self._pending = self._pool.submit(finish)

    def wait(self) -> None:
        """Wait for the pending close and keep its stat; its error is raised here."""
        pending, self._pending = self._pending, None
        if pending is not None and (stat := pending.result()) is not None:
            self.stats.append(stat)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)


def run_in_process(
    attempt: InstantAttempt, tasks: list[OperationTask], keep: DecodedLogs | None = None
) -> list[WriteStat]:
    """Run the tasks in this process, one after the other, checking before each that the attempt is ours; a log
    side the check kept (``keep``) is not decoded again. With more than one core, each file group's base file is
    closed on a background thread while the next one is read and merged (:class:`ClosePipeline`); every file is
    closed (or has failed the run) before this returns.
    """
    pipeline = ClosePipeline(CLOSE_OVERLAP_BYTES) if pa.cpu_count() > 1 and len(tasks) > 1 else None
    stats = pipeline.stats if pipeline is not None else []
    try:
        for n, task in enumerate(tasks, 1):
            attempt.ensure_ours()
            kw: dict[str, Any] = {}
            if keep is not None and (decoded_log := keep.take(task)) is not None:
                kw["decoded_log"] = decoded_log
            if pipeline is not None:
                kw["pipeline"] = pipeline
            stat = execute_operation(task, **kw)
            if stat is not None:
                stats.append(stat)
            progress_log.info(
                "Compaction %s: file group %d/%d merged (%s)",
                task.instant,
                n,
                len(tasks),
                f"{task.partition_path}/{task.file_id}" if task.partition_path else task.file_id,
                extra={"instant": task.instant, "done": n, "total": len(tasks), "progress_line": True},
            )
        if pipeline is not None:
            pipeline.wait()
    finally:
        if pipeline is not None:
            pipeline.shutdown()
    return stats
