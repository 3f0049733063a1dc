"""Snapshot reads: the merged rows of a file slice and of a whole table, as Hudi's snapshot query returns them.

A slice's log side is resolved in memory; its base file is streamed row group by row group, so memory is
bounded by the log side plus one row group.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from lake_orchestration.errors import InstantNotFoundError
from lake_orchestration.hudi.log.scanner import InstantFilter, ScanStats, scan_blocks
from lake_orchestration.hudi.merge.record_merger import (
    LogRecords,
    MergeConfig,
    conform,
    merge_slice_batches,
    resolve_log_records,
)
from lake_orchestration.hudi.model.file_group import FileSlice
from lake_orchestration.hudi.model.schema import META_FIELDS, RECORD_KEY, avro_to_arrow_schema
from lake_orchestration.hudi.table.base_file_reader import open_base_file
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.io.storage import FileInfo, Storage


@dataclass
class ReadStats:
    """What a read touched (``corrupt_blocks``: blocks skipped for corrupt framing, i.e. torn writes)."""

    file_slices: int = 0
    base_files: int = 0
    log_files: int = 0
    log_blocks: int = 0
    log_records: int = 0
    corrupt_blocks: int = 0
    rollback_blocks: int = 0
    rows: int = 0
    corrupt_reasons: list[str] = field(default_factory=list)

    def add_scan(self, s: ScanStats, lr: LogRecords) -> None:
        self.log_files += s.total_log_files
        self.log_blocks += s.total_log_blocks
        self.corrupt_blocks += s.total_corrupt_blocks
        self.rollback_blocks += s.total_rollback_blocks
        self.log_records += lr.total_log_records
        self.corrupt_reasons += s.corrupt_reasons


def merge_config_for(table: HudiTable) -> MergeConfig:
    cfg = table.config
    key = (
        RECORD_KEY if cfg.populate_meta_fields else (cfg.record_key_fields[0] if cfg.record_key_fields else RECORD_KEY)
    )
    return MergeConfig(semantics=cfg.merge_semantics, ordering_field=cfg.ordering_field, key_field=key)


def read_file_slice(
    storage: Storage,
    file_slice: FileSlice,
    *,
    instant_filter: InstantFilter,
    merge_config: MergeConfig,
    schema: pa.Schema | None = None,
    batch_size: int = 131_072,
    stats: ReadStats | None = None,
) -> Iterator[pa.Table]:
    """Merged rows of one file slice, streamed.

    Args:
        storage: the table's storage.
        file_slice: the slice (base file optional, log files in any order).
        instant_filter: which log blocks count (see :class:`InstantFilter`).
        merge_config: ordering field and merge semantics.
        schema: output schema; default: the base file's, else the log records'.
        batch_size: rows per base-file batch.
        stats: counters to update.

    Raises:
        CorruptLogBlockError: a committed log block's content does not decode (raised before the first batch).
    """
    stats = stats if stats is not None else ReadStats()
    stats.file_slices += 1
    blocks, scan_stats = (
        scan_blocks(storage, file_slice.log_files, instant_filter) if file_slice.log_files else ([], ScanStats())
    )
    log_records = resolve_log_records(blocks, merge_config)
    stats.add_scan(scan_stats, log_records)
    base_batches = None
    base_schema = schema
    if file_slice.base_file is not None:
        stats.base_files += 1
        pf = open_base_file(storage, file_slice.base_file)  # a bootstrap skeleton: stitched with its source
        file_schema = pf.schema_arrow
        base_schema = schema or file_schema
        base_batches = (
            conform(b, base_schema) if schema is not None else b for b in pf.iter_batches(batch_size=batch_size)
        )
    elif base_schema is None and log_records.records is not None:
        base_schema = log_records.records.schema
    for t in merge_slice_batches(base_batches, base_schema, log_records, merge_config):  # type: ignore[arg-type]
        stats.rows += t.num_rows
        yield t


def table_arrow_schema(table: HudiTable) -> pa.Schema | None:
    """Arrow schema of the table's latest writer schema (meta fields included when populated)."""
    avro = table.latest_schema()
    return avro_to_arrow_schema(avro) if avro else None


def read_snapshot(
    table: HudiTable,
    *,
    as_of: str | None = None,
    stats: ReadStats | None = None,
    batch_size: int = 131_072,
    options: Mapping[str, str] | None = None,
) -> Iterator[pa.Table]:
    """Snapshot of the table as of its latest completed commit (or ``as_of``): merged slices, streamed.

    COW tables and read of base-only slices return base rows; MOR slices merge their committed log blocks. The
    files come from the table's metadata table when it has one (``files`` in ``hoodie.table.metadata.partitions``)
    unless ``options`` sets ``hoodie.metadata.enable=false``, as Java's reader does; else from listing storage.

    Raises:
        CorruptLogBlockError: a committed log block's content does not decode; log blocks with corrupt framing (a
            torn write) are skipped and counted in ``stats.corrupt_blocks``.
    """
    timeline = table.timeline
    if as_of is not None and as_of not in timeline.completed_commits().times():
        raise InstantNotFoundError(
            table.base_uri, as_of, "--as-of must be a completed commit, deltacommit or replacecommit instant"
        )
    latest = as_of or table.timeline.latest_completed_commit_time()
    if latest is None:
        return
    # The latest commit's metadata holds the table schema: one that does not decode stops the read, naming the file
    # (CorruptFileError), as hudi-rs and Java refuse such a table, instead of reading on with an older schema.
    table.latest_schema()
    view = table.fs_view(file_listing(table, options))
    flt = InstantFilter.from_timeline(timeline, latest_instant=str(latest))
    cfg = merge_config_for(table)
    drop_meta = not table.config.populate_meta_fields
    schema: pa.Schema | None = None
    for fs in view.latest_merged_file_slices_before_or_on(str(latest)):
        for t in read_file_slice(
            table.storage, fs, instant_filter=flt, merge_config=cfg, stats=stats, batch_size=batch_size
        ):
            if drop_meta:
                # Java writes all-null meta columns (file name aside) even with meta fields off; readers
                # (hudi-rs, Hudi's own) present only the user columns.
                t = t.drop_columns([c for c in META_FIELDS if c in t.column_names])
            if schema is None:
                schema = t.schema
            elif not t.schema.equals(schema):
                t = _unify(t, schema)
            yield t


def file_listing(table: HudiTable, options: Mapping[str, str] | None = None) -> dict[str, list[FileInfo]] | None:
    """The listing reads build their file-system view from: the metadata table's ``files`` partition when the table
    has one and ``hoodie.metadata.enable`` (``options``) is not false, else None (``HudiTable.fs_view`` lists
    storage). See :mod:`lake_orchestration.hudi.metadata.reader`."""
    # here, not at module level: the metadata reader imports HudiTable (this package)
    from lake_orchestration.hudi.metadata.reader import metadata_file_listing

    return metadata_file_listing(table, options)


def _unify(t: pa.Table, schema: pa.Schema) -> pa.Table:
    try:
        return conform(t, schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return t


def read_snapshot_table(
    table: HudiTable,
    *,
    as_of: str | None = None,
    stats: ReadStats | None = None,
    options: Mapping[str, str] | None = None,
) -> pa.Table:
    """The whole snapshot as one Arrow table (empty table with the table schema if there are no rows)."""
    parts = list(read_snapshot(table, as_of=as_of, stats=stats, options=options))
    if not parts:
        schema = table_arrow_schema(table)
        return schema.empty_table() if schema is not None else pa.table({})
    return pa.concat_tables(parts, promote_options="permissive")
