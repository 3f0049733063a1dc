"""The in-process writer: bulk_insert, insert, upsert and delete into a Hudi v6 table.

Used by the demo, the tests and the benchmarks, and the reference for the Spark writer. It follows Hudi's write
path: precombine the batch by the ordering field, tag records with their current file group (index over the
latest file slices), MOR updates/deletes to a new log file per touched file group, inserts to new file groups,
and the commit protocol requested -> inflight (workload profile) -> completed with Hudi's write stats.
"""

from __future__ import annotations

import enum
import json
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.errors import TableNotFoundError
from lake_orchestration.hudi.log.block_content import DeleteRecord, wrapper_for
from lake_orchestration.hudi.log.scanner import InstantFilter
from lake_orchestration.hudi.log.writer import avro_data_block, delete_block, write_log_file
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, RuntimeStats, WriteStat
from lake_orchestration.hudi.model.file_group import PARTITION_METAFILE_PREFIX, make_write_token, new_file_id
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.properties import TableType, format_properties, new_table_properties
from lake_orchestration.hudi.model.schema import (
    COMMIT_SEQNO,
    COMMIT_TIME,
    FILE_NAME,
    IS_DELETED_FIELD,
    META_FIELDS,
    PARTITION_PATH,
    RECORD_KEY,
    arrow_to_avro_schema,
    avro_to_arrow_schema,
    with_meta_fields,
)
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import merge_config_for, read_file_slice
from lake_orchestration.hudi.write.base_file import seqnos, write_base_file
from lake_orchestration.hudi.write.keys import partition_paths, record_keys
from lake_orchestration.io.storage import Storage


class WriteOperation(str, enum.Enum):
    """Hudi's write operations (``WriteOperationType`` names)."""

    BULK_INSERT = "bulk_insert"
    INSERT = "insert"
    UPSERT = "upsert"
    DELETE = "delete"


@dataclass(frozen=True, kw_only=True)
class WriteOptions:
    """Table creation and write options (Hudi's names in the docstrings)."""

    table_name: str | None = None
    """``hoodie.table.name`` (required to create a table)."""
    table_type: TableType = TableType.MERGE_ON_READ
    """``hoodie.table.type``."""
    record_key_fields: tuple[str, ...] = ()
    """``hoodie.datasource.write.recordkey.field``."""
    partition_fields: tuple[str, ...] = ()
    """``hoodie.datasource.write.partitionpath.field``; empty = non-partitioned."""
    precombine_field: str | None = None
    """``hoodie.datasource.write.precombine.field``."""
    hive_style_partitioning: bool = False
    """``hoodie.datasource.write.hive_style_partitioning``."""
    payload_class: str | None = None
    """``hoodie.compaction.payload.class``."""
    combine_before_insert: bool = False
    """``hoodie.combine.before.insert``: precombine duplicates for insert and bulk_insert too."""
    max_rows_per_file: int = 500_000
    """Rows per new base file (stands in for ``hoodie.parquet.max.file.size``)."""
    compression: str = "gzip"
    """``hoodie.parquet.compression.codec``."""
    extra: Mapping[str, str] = field(default_factory=dict)
    """Further ``hoodie.*`` table properties."""


@dataclass
class WriteResult:
    """Outcome of one write: the completed instant and its commit metadata."""

    instant: str
    action: str
    metadata: CommitMetadata
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    files_written: list[str] = field(default_factory=list)


def _open_or_create(base_uri: str, data_schema: pa.Schema, options: WriteOptions) -> HudiTable:
    try:
        return HudiTable(base_uri)
    except TableNotFoundError:
        if not options.table_name:
            raise ValueError(f"No table at {base_uri}: a table name is required to create one") from None
        if not options.record_key_fields:
            raise ValueError(f"No table at {base_uri}: record key field(s) are required to create one") from None
        user = pa.schema([f for f in data_schema if f.name not in META_FIELDS])
        avro = arrow_to_avro_schema(user, table_name=options.table_name)
        props = new_table_properties(
            name=options.table_name,
            table_type=options.table_type,
            record_key_fields=options.record_key_fields,
            partition_fields=options.partition_fields,
            precombine_field=options.precombine_field,
            hive_style_partitioning=options.hive_style_partitioning,
            payload_class=options.payload_class,
            create_schema=json.dumps(avro, separators=(",", ":")),
            database_name="default",
            extra=options.extra,
        )
        return HudiTable.create(base_uri, props)


def write_table(
    base_uri: str,
    data: pa.Table,
    *,
    operation: WriteOperation | str,
    options: WriteOptions | None = None,
) -> WriteResult:
    """Write ``data`` to the table at ``base_uri`` (created if absent) as one commit.

    Args:
        base_uri: table base path.
        data: the rows (user columns; ``_hoodie_is_deleted`` honoured).
        operation: bulk_insert, insert, upsert or delete (delete: the key columns suffice).
        options: table creation options; for an existing table the table's own config is used.

    Returns:
        The completed instant with its commit metadata.
    """
    op = WriteOperation(operation)
    options = options or WriteOptions()
    table = _open_or_create(base_uri, data.schema, options)
    cfg = table.config
    complex_key = len(cfg.record_key_fields) > 1 or "Complex" in (cfg.key_generator_class or "")
    data = data.select([c for c in data.column_names if c not in META_FIELDS])
    schema_avro = table.latest_schema()
    if op is WriteOperation.DELETE and schema_avro is not None:
        # A delete carries only keys: keep the table's schema for the log block header and commit.
        user_avro = dict(schema_avro)
        user_avro["fields"] = [f for f in schema_avro["fields"] if f["name"] not in META_FIELDS]
    else:
        user_avro = arrow_to_avro_schema(data.schema, table_name=cfg.name)
    full_avro = with_meta_fields(user_avro) if cfg.populate_meta_fields else user_avro
    full_arrow = avro_to_arrow_schema(full_avro)
    keys = record_keys(data, cfg.record_key_fields, complex_key=complex_key)
    parts = partition_paths(
        data, cfg.partition_fields, hive_style=cfg.hive_style_partitioning, url_encode=cfg.url_encode_partitioning
    )
    data = data.append_column(RECORD_KEY, keys).append_column(PARTITION_PATH, parts)
    if op in (WriteOperation.UPSERT, WriteOperation.DELETE) or options.combine_before_insert:
        data = _precombine(data, cfg.ordering_field)

    view = table.fs_view()
    # Index (key -> file id over the latest merged slices): only updates and deletes need it.
    index = _build_index(table, view) if op in (WriteOperation.UPSERT, WriteOperation.DELETE) else {}
    key_list = data.column(RECORD_KEY).to_pylist()
    part_list = data.column(PARTITION_PATH).to_pylist()
    is_deleted = (
        pc.fill_null(data.column(IS_DELETED_FIELD), False).to_numpy(zero_copy_only=False)
        if IS_DELETED_FIELD in data.column_names
        else np.zeros(data.num_rows, dtype=bool)
    )
    if op is WriteOperation.DELETE:
        is_deleted = np.ones(data.num_rows, dtype=bool)
    updates: dict[tuple[str, str], list[int]] = defaultdict(list)
    deletes: dict[tuple[str, str], list[int]] = defaultdict(list)
    inserts: dict[str, list[int]] = defaultdict(list)
    for i, (k, p) in enumerate(zip(key_list, part_list, strict=True)):
        loc = index.get((p, k)) if op in (WriteOperation.UPSERT, WriteOperation.DELETE) else None
        if loc is not None:
            (deletes if is_deleted[i] else updates)[(p, loc)].append(i)
        elif not is_deleted[i]:
            inserts[p].append(i)
    slices = {(s.partition_path, s.file_id): s for s in view.latest_file_slices()}
    if not cfg.is_mor and (updates or deletes):
        raise NotImplementedError(
            f"{base_uri} is COPY_ON_WRITE: updates and deletes of existing keys are not supported by this writer yet"
        )
    instant = table.new_instant_time()
    action = Action.DELTA_COMMIT if cfg.is_mor else Action.COMMIT
    requested = table.create_requested(Instant(instant, action, State.REQUESTED))

    profile = CommitMetadata(operation_type=op.name)
    for p, idx in inserts.items():
        profile.partition_to_write_stats.setdefault(p, []).append(WriteStat(numInserts=len(idx)))
    for (p, fid), idx in list(updates.items()) + list(deletes.items()):
        profile.partition_to_write_stats.setdefault(p, []).append(
            WriteStat(fileId=fid, prevCommit=str(slices[(p, fid)].base_instant), numUpdateWrites=len(idx))
        )
    inflight = table.transition_to_inflight(requested, profile.to_bytes())

    result = WriteResult(instant=str(instant), action=action.value, metadata=CommitMetadata())
    stats: dict[str, list[WriteStat]] = defaultdict(list)
    task = 0
    storage = table.storage
    for p in sorted(inserts):
        _ensure_partition_metadata(storage, p, str(instant), len(cfg.partition_fields))
        rows = data.take(pa.array(inserts[p]))
        for start in range(0, rows.num_rows, options.max_rows_per_file):
            chunk = rows.slice(start, options.max_rows_per_file)
            t0 = time.monotonic()
            token = make_write_token(task, 1, task)
            bf = write_base_file(
                storage,
                chunk,
                partition_path=p,
                file_id=new_file_id(),
                write_token=token,
                instant=str(instant),
                avro_schema=full_avro,
                arrow_schema=full_arrow,
                compression=options.compression,
            )
            task += 1
            result.inserted += chunk.num_rows
            result.files_written.append(bf.relative_path)
            stats[p].append(
                WriteStat(
                    fileId=bf.file_id,
                    path=bf.relative_path,
                    prevCommit="null",
                    numWrites=chunk.num_rows,
                    numInserts=chunk.num_rows,
                    totalWriteBytes=bf.size,
                    partitionPath=p,
                    fileSizeInBytes=bf.size,
                    runtimeStats=RuntimeStats(totalCreateTime=int((time.monotonic() - t0) * 1000)),
                )
            )
    schema_json = json.dumps(full_avro, separators=(",", ":"))
    for key in sorted(set(updates) | set(deletes)):
        p, fid = key
        fs = slices[key]
        t0 = time.monotonic()
        blocks = []
        upd_idx = updates.get(key, [])
        del_idx = deletes.get(key, [])
        if upd_idx:
            rows = data.take(pa.array(upd_idx))
            rows = _log_meta(rows, str(instant), task, fid, full_arrow)
            blocks.append(avro_data_block(rows, instant=str(instant), schema=full_avro, schema_json=schema_json))
        if del_idx:
            drows = data.take(pa.array(del_idx))
            ords = (
                drows.column(cfg.ordering_field).to_pylist()
                if (cfg.ordering_field and cfg.ordering_field in drows.column_names and op is not WriteOperation.DELETE)
                else [0] * drows.num_rows
            )
            recs = [
                DeleteRecord(k, p, o if o is not None else 0, wrapper_for(o if o is not None else 0))
                for k, o in zip(drows.column(RECORD_KEY).to_pylist(), ords, strict=True)
            ]
            blocks.append(delete_block(recs, instant=str(instant), schema_json=schema_json))
        token = make_write_token(task, 2, task)
        task += 1
        lf = write_log_file(
            storage, partition_path=p, file_id=fid, base_instant=str(fs.base_instant), write_token=token, blocks=blocks
        )
        result.updated += len(upd_idx)
        result.deleted += len(del_idx)
        result.files_written.append(lf.relative_path)
        stats[p].append(
            WriteStat(
                fileId=fid,
                path=lf.relative_path,
                prevCommit=str(fs.base_instant),
                numWrites=len(upd_idx),
                numDeletes=len(del_idx),
                numUpdateWrites=len(upd_idx),
                totalWriteBytes=lf.size,
                partitionPath=p,
                fileSizeInBytes=lf.size,
                runtimeStats=RuntimeStats(totalUpsertTime=int((time.monotonic() - t0) * 1000)),
                logVersion=lf.version,
                logOffset=0,
                baseFile=fs.base_file.name if fs.base_file else "",
                logFiles=[lf.name],
            )
        )
    md = CommitMetadata(
        partition_to_write_stats=dict(stats),
        extra_metadata={"schema": json.dumps(user_avro, separators=(",", ":"))},
        operation_type=op.name,
    )
    table.transition_to_completed(inflight, md.to_bytes())
    result.metadata = md
    return result


def _precombine(data: pa.Table, ordering_field: str | None) -> pa.Table:
    """Keep one row per (partition, key): the greatest ordering value, ties to the later row."""
    n = data.num_rows
    if n == 0:
        return data
    cols: dict[str, Any] = {
        "k": data.column(RECORD_KEY),
        "p": data.column(PARTITION_PATH),
        "i": pa.array(np.arange(n)),
    }
    by = ["i"]
    if ordering_field and ordering_field in data.column_names:
        cols["o"] = data.column(ordering_field)
        by = ["o", "i"]
    df = pl.DataFrame(pa.table(cols))
    if df.select(pl.struct("p", "k").n_unique()).item() == n:
        return data
    keep = df.sort(by, nulls_last=False).unique(subset=["p", "k"], keep="last").sort("i")["i"].to_numpy()
    return data.take(pa.array(keep))


def _build_index(table: HudiTable, view: Any) -> dict[tuple[str, str], str]:
    """(partition, record key) -> file id, from the merged latest slices (base and log keys)."""
    latest = table.timeline.latest_completed_commit_time()
    if latest is None:
        return {}
    flt = InstantFilter.from_timeline(table.timeline, latest_instant=str(latest))
    mcfg = merge_config_for(table)
    out: dict[tuple[str, str], str] = {}
    for fs in view.latest_merged_file_slices_before_or_on(str(latest)):
        for t in read_file_slice(table.storage, fs, instant_filter=flt, merge_config=mcfg):
            for k in t.column(RECORD_KEY).to_pylist():
                out[(fs.partition_path, k)] = fs.file_id
    return out


def _log_meta(rows: pa.Table, instant: str, task: int, file_id: str, schema: pa.Schema) -> pa.Table:
    """Meta columns of log records: the fileId (not a file name) in ``_hoodie_file_name``."""
    n = rows.num_rows
    cols = {}
    for f in schema:
        if f.name == COMMIT_TIME:
            cols[f.name] = pa.array([instant] * n, pa.string())
        elif f.name == COMMIT_SEQNO:
            cols[f.name] = seqnos(instant, task, n)
        elif f.name == FILE_NAME:
            cols[f.name] = pa.array([file_id] * n, pa.string())
        elif f.name in rows.column_names:
            c = rows.column(f.name)
            cols[f.name] = c.cast(f.type) if c.type != f.type else c
        else:
            cols[f.name] = pa.nulls(n, f.type)
    return pa.table(cols, schema=schema)


def _ensure_partition_metadata(storage: Storage, partition: str, instant: str, depth: int) -> None:
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
