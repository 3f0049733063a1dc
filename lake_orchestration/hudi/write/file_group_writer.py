"""The per-file-group write task: the unit of work a write distributes (locally or on Spark).

Given the tagged records of one file group (``__lo_op`` = I/U/D) and the group's latest slice, it writes:
* a new file group: base file(s) of at most ``max_rows_per_file`` rows (``HoodieCreateHandle``);
* MERGE_ON_READ, existing group: one new log file with an Avro data block (updates and inserts) and a delete
  block (``HoodieAppendHandle``);
* COPY_ON_WRITE, existing group: a new version of the base file with the merged rows (``HoodieMergeHandle``);
  rows that did not change keep their ``_hoodie_commit_time`` / ``_hoodie_commit_seqno``.
A marker is created under ``.hoodie/.temp/<instant>/`` before each data file, so a failed write can be rolled
back from its markers. Returns Hudi write stats.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.engines.base import TaskAttempt
from lake_orchestration.hudi.log.block_content import DeleteRecord, wrapper_for
from lake_orchestration.hudi.log.writer import avro_data_block, delete_block, write_log_file
from lake_orchestration.hudi.merge.record_merger import conform
from lake_orchestration.hudi.model.commit_metadata import RuntimeStats, WriteStat
from lake_orchestration.hudi.model.file_group import (
    PARTITION_METAFILE_PREFIX,
    BaseFile,
    new_file_id,
)
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.model.properties import MergeSemantics, format_properties
from lake_orchestration.hudi.model.schema import (
    COMMIT_SEQNO,
    COMMIT_TIME,
    FILE_NAME,
    IS_DELETED_FIELD,
    RECORD_KEY,
    avro_to_arrow_schema,
)
from lake_orchestration.hudi.table.base_file_reader import open_base_file
from lake_orchestration.hudi.table.marker import create_marker
from lake_orchestration.hudi.write.base_file import BaseFileWriter, ParquetWriteConfig, constant_strings, seqnos
from lake_orchestration.hudi.write.records import OP_COLUMN
from lake_orchestration.io.storage import Storage


@dataclass(frozen=True, kw_only=True)
class FileGroupWriteContext:
    """Everything a file-group task needs: a typed engine task (see :mod:`lake_orchestration.engines.base`)."""

    base_uri: str
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)
    """Storage options (secrets: never shown in a repr)."""
    instant: InstantTime
    is_mor: bool
    partition_path: str
    file_id: str
    base_instant: str | None = None
    """Base instant of the group's latest slice (None: a new file group)."""
    base_file_name: str | None = None
    """The latest slice's base file, if any."""
    base_bootstrap_source: str | None = None
    """The bootstrap source file of that base file when it is a METADATA_ONLY skeleton (its data columns)."""
    avro_schema_json: str
    """Writer schema with meta fields."""
    ordering_field: str | None = None
    merge_semantics: str = MergeSemantics.COMMIT_TIME_ORDERING.value
    operation: str = "UPSERT"
    attempt: TaskAttempt = field(default_factory=lambda: TaskAttempt(0, 1, 0))
    """The write token (and the partition id of the commit seqnos); on Spark the engine hands in the running task
    attempt."""
    compression: str = "gzip"
    parquet_block_size: int = 120 * 1024 * 1024
    """``hoodie.parquet.block.size``: compressed bytes per row group of a new base file."""
    parquet_page_size: int = 1024 * 1024
    """``hoodie.parquet.page.size``."""
    parquet_dictionary_enabled: bool = True
    """``hoodie.parquet.dictionary.enabled``."""
    unique_columns: tuple[str, ...] = ()
    """Data columns unique by construction (a single record key field): written without a dictionary."""
    max_rows_per_file: int = 1_000_000
    merge_base: bool = False
    """MERGE_ON_READ: rewrite the base file with the records (Hudi's merge handle) instead of appending a log block:
    a small file of a partition with inserts (``BaseSparkDeltaCommitActionExecutor.handleUpdate``)."""


def partition_path_depth(partition: str) -> int:
    """``partitionDepth`` as Java writes it: the number of directory levels of the partition path
    (``partitionPath.depth() - basePath.depth()``), e.g. 3 for ``2024/01/05`` from one partition field."""
    return len([p for p in partition.split("/") if p])


def ensure_partition_metadata(storage: Storage, partition: str, instant: InstantTime, depth: int) -> None:
    """Write ``.hoodie_partition_metadata`` once per partition (never overwritten)."""
    path = storage.join(partition, PARTITION_METAFILE_PREFIX)
    if storage.exists(path):
        return
    text = format_properties({"commitTime": instant, "partitionDepth": str(depth)})
    text = "#partition metadata\n" + text.split("\n", 1)[1]
    try:
        storage.create_if_absent(path, text.encode("latin-1"))
    except Exception:
        if not storage.exists(path):
            raise


def write_group(ctx: FileGroupWriteContext, records: pa.Table) -> list[WriteStat]:
    """Engine task (``Engine.map_record_groups``): :func:`write_file_group`."""
    return write_file_group(records, ctx)


def write_file_group(records: pa.Table, ctx: FileGroupWriteContext) -> list[WriteStat]:
    """Write the tagged ``records`` of one file group; returns its write stats."""
    avro = json.loads(ctx.avro_schema_json)
    g = _Group(Storage(ctx.base_uri, options=ctx.storage_options), ctx, avro, avro_to_arrow_schema(avro))
    ops = records.column(OP_COLUMN).to_numpy(zero_copy_only=False)
    data = records.drop_columns([c for c in records.column_names if c.startswith("__lo_")])
    if ctx.base_instant is None:
        ensure_partition_metadata(g.storage, ctx.partition_path, ctx.instant, partition_path_depth(ctx.partition_path))
        return _create(g, data.filter(pa.array(ops == "I")))
    if ctx.is_mor and not ctx.merge_base:
        return [_append(g, data, ops)]
    return [_merge(g, data, ops)]


@dataclass(frozen=True)
class _Group:
    """One file group's task as the handles below use it: its storage, context and writer schema (Avro, Arrow)."""

    storage: Storage
    ctx: FileGroupWriteContext
    avro: dict[str, Any]
    schema: pa.Schema

    @property
    def token(self) -> str:
        return self.ctx.attempt.write_token

    def write_base_file(
        self, rows: pa.Table, file_id: str, *, io_type: str, preserve_commit_metadata: bool = False
    ) -> BaseFile:
        """A marker (``io_type``: CREATE or MERGE), then ``rows`` as one new base file ``file_id`` of this task."""
        ctx = self.ctx
        name = BaseFile(file_id, self.token, ctx.instant).name  # type: ignore[arg-type]
        create_marker(self.storage, ctx.instant, ctx.partition_path, name, io_type)
        writer = BaseFileWriter(
            self.storage,
            partition_path=ctx.partition_path,
            file_id=file_id,
            write_token=self.token,
            instant=ctx.instant,
            avro_schema=self.avro,
            arrow_schema=self.schema,
            compression=ctx.compression,
            preserve_commit_metadata=preserve_commit_metadata,
            config=ParquetWriteConfig(
                compression=ctx.compression.lower(),
                block_size=ctx.parquet_block_size,
                page_size=ctx.parquet_page_size,
                dictionary_enabled=ctx.parquet_dictionary_enabled,
            ),
            unique_columns=tuple(ctx.unique_columns),
        )
        writer.write(rows)
        return writer.close()


def _create(g: _Group, rows: pa.Table) -> list[WriteStat]:
    ctx = g.ctx
    stats = []
    if not _sorted_by_key(rows):  # the writer hands new file groups over sorted (bulk_insert's sort)
        rows = rows.sort_by(RECORD_KEY)
    prefix = ctx.file_id.rsplit("-", 1)[0]
    for n, start in enumerate(range(0, max(rows.num_rows, 1), ctx.max_rows_per_file)):
        chunk = rows.slice(start, ctx.max_rows_per_file)
        if chunk.num_rows == 0:
            break
        fid = ctx.file_id if n == 0 else new_file_id(n, prefix=prefix)
        t0 = time.monotonic()
        bf = g.write_base_file(chunk, fid, io_type="CREATE")
        stats.append(
            WriteStat(
                fileId=fid,
                path=bf.relative_path,
                prevCommit="null",
                numWrites=chunk.num_rows,
                numInserts=chunk.num_rows,
                totalWriteBytes=bf.size,
                partitionPath=ctx.partition_path,
                fileSizeInBytes=bf.size,
                runtimeStats=RuntimeStats(totalCreateTime=int((time.monotonic() - t0) * 1000)),
            )
        )
    return stats


def _sorted_by_key(rows: pa.Table) -> bool:
    keys = rows.column(RECORD_KEY)
    if rows.num_rows < 2 or keys.null_count:
        return rows.num_rows < 2
    keys = keys.combine_chunks()
    return pc.all(pc.less_equal(keys.slice(0, len(keys) - 1), keys.slice(1))).as_py() is not False


def _log_rows(rows: pa.Table, ctx: FileGroupWriteContext, schema: pa.Schema) -> pa.Table:
    """Meta columns of log records: ``_hoodie_file_name`` holds the file id only (Hudi's append handle)."""
    n = rows.num_rows
    cols = {}
    for f in schema:
        if f.name == COMMIT_TIME:
            cols[f.name] = constant_strings(ctx.instant, n)
        elif f.name == COMMIT_SEQNO:
            cols[f.name] = seqnos(ctx.instant, ctx.attempt.partition_id, n)
        elif f.name == FILE_NAME:
            cols[f.name] = constant_strings(ctx.file_id, n)
        elif f.name in rows.column_names:
            c = rows.column(f.name)
            cols[f.name] = c.cast(f.type) if c.type != f.type else c
        else:
            cols[f.name] = pa.nulls(n, f.type)
    return pa.table(cols, schema=schema)


def _delete_records(rows: pa.Table, ctx: FileGroupWriteContext) -> list[DeleteRecord]:
    keys = rows.column(RECORD_KEY).to_pylist()
    use_ord = ctx.operation != "DELETE" and ctx.ordering_field and ctx.ordering_field in rows.column_names
    ords = rows.column(ctx.ordering_field).to_pylist() if use_ord else [0] * rows.num_rows  # type: ignore[arg-type]
    return [
        DeleteRecord(k, ctx.partition_path, o if o is not None else 0, wrapper_for(o if o is not None else 0))
        for k, o in zip(keys, ords, strict=True)
    ]


def _append(g: _Group, data: pa.Table, ops: np.ndarray) -> WriteStat:
    ctx, token = g.ctx, g.token
    t0 = time.monotonic()
    schema_json = ctx.avro_schema_json
    upserts = data.filter(pa.array(ops != "D"))
    deletes = data.filter(pa.array(ops == "D"))
    blocks = []
    if upserts.num_rows:
        blocks.append(
            avro_data_block(
                _log_rows(upserts, ctx, g.schema), instant=ctx.instant, schema=g.avro, schema_json=schema_json
            )
        )
    if deletes.num_rows:
        blocks.append(delete_block(_delete_records(deletes, ctx), instant=ctx.instant, schema_json=schema_json))
    base_ext = ".parquet"
    create_marker(
        g.storage, ctx.instant, ctx.partition_path, f"{ctx.file_id}_{token}_{ctx.base_instant}{base_ext}", "APPEND"
    )
    lf = write_log_file(
        g.storage,
        partition_path=ctx.partition_path,
        file_id=ctx.file_id,
        base_instant=str(ctx.base_instant),
        write_token=token,
        blocks=blocks,
    )
    n_upd = int((ops == "U").sum())
    n_ins = int((ops == "I").sum())
    return WriteStat(
        fileId=ctx.file_id,
        path=lf.relative_path,
        prevCommit=str(ctx.base_instant),
        numWrites=upserts.num_rows,
        numDeletes=deletes.num_rows,
        numUpdateWrites=n_upd,
        numInserts=n_ins,
        totalWriteBytes=lf.size,
        partitionPath=ctx.partition_path,
        fileSizeInBytes=lf.size,
        runtimeStats=RuntimeStats(totalUpsertTime=int((time.monotonic() - t0) * 1000)),
        logVersion=lf.version,
        logOffset=0,
        baseFile=ctx.base_file_name or "",
        logFiles=[lf.name],
    )


def _merge(g: _Group, data: pa.Table, ops: np.ndarray) -> WriteStat:
    """Copy-on-write: rewrite the base file with updates applied, deletes removed, inserts added."""
    ctx, schema = g.ctx, g.schema
    t0 = time.monotonic()
    old_file = BaseFile.parse(str(ctx.base_file_name), partition_path=ctx.partition_path)
    if ctx.base_bootstrap_source is not None:  # a bootstrap skeleton: its records are stitched with the source's
        old_file = replace(old_file, bootstrap_source=ctx.base_bootstrap_source)
    old = open_base_file(g.storage, old_file).read()
    old = conform(old, schema)
    incoming_keys = data.column(RECORD_KEY).combine_chunks()
    pos = pc.fill_null(pc.index_in(old.column(RECORD_KEY), value_set=incoming_keys), -1).to_numpy(zero_copy_only=False)
    hit = pos >= 0
    in_ops = ops[pos[hit]]
    keep_old = ~hit
    take_new = pos[hit][in_ops != "D"]
    if ctx.merge_semantics == MergeSemantics.EVENT_TIME_ORDERING.value and ctx.ordering_field:
        # DefaultHoodieRecordPayload: the stored record stays when its ordering value is greater.
        hit_idx = np.nonzero(hit)[0][in_ops != "D"]
        old_o = old.column(ctx.ordering_field).take(pa.array(hit_idx))
        new_o = data.column(ctx.ordering_field).take(pa.array(take_new)).cast(old_o.type)
        old_wins = pc.fill_null(pc.greater(old_o, new_o), False).to_numpy(zero_copy_only=False)
        keep_old[hit_idx[old_wins]] = True
        take_new = take_new[~old_wins]
    if IS_DELETED_FIELD in data.column_names and len(take_new):
        flags = pc.fill_null(data.column(IS_DELETED_FIELD).take(pa.array(take_new)), False)
        take_new = take_new[~flags.to_numpy(zero_copy_only=False).astype(bool)]
    matched = np.zeros(data.num_rows, dtype=bool)
    matched[pos[hit]] = True
    inserts = np.nonzero((~matched) & (ops == "I"))[0]
    kept = old.filter(pa.array(keep_old))
    new_rows = data.take(pa.array(np.concatenate([take_new, inserts]).astype(np.int64)))
    new_rows = conform(new_rows, schema)
    new_rows = new_rows.set_column(
        schema.get_field_index(COMMIT_TIME), COMMIT_TIME, constant_strings(ctx.instant, new_rows.num_rows)
    )
    new_rows = new_rows.set_column(
        schema.get_field_index(COMMIT_SEQNO),
        COMMIT_SEQNO,
        seqnos(ctx.instant, ctx.attempt.partition_id, new_rows.num_rows),
    )
    merged = pa.concat_tables([kept, new_rows]).sort_by(RECORD_KEY)
    bf = g.write_base_file(merged, ctx.file_id, io_type="MERGE", preserve_commit_metadata=True)
    n_deleted = int((ops[pos[hit]] == "D").sum())
    return WriteStat(
        fileId=ctx.file_id,
        path=bf.relative_path,
        prevCommit=str(ctx.base_instant),
        numWrites=merged.num_rows,
        numDeletes=n_deleted,
        numUpdateWrites=len(take_new),
        numInserts=len(inserts),
        totalWriteBytes=bf.size,
        partitionPath=ctx.partition_path,
        fileSizeInBytes=bf.size,
        runtimeStats=RuntimeStats(totalUpsertTime=int((time.monotonic() - t0) * 1000)),
    )
