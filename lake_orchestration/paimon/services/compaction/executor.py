"""Execute a Paimon compaction plan: per bucket, Java ``MergeTreeCompactTask.doCompact``; writes only data files.

For each :class:`BucketCompaction` (one engine task per bucket):

1. ``IntervalPartition``: the unit's files sorted by (min key, max key) are cut into sections whose key ranges do
   not overlap; each section is split into sorted runs (a priority queue of runs by their last max key).
2. A section of more than one run is a rewrite candidate. A single-run section's files are *upgraded* (same file,
   new level: no I/O) unless a file is smaller than ``compaction file size`` (``target-file-size`` * 0.7: it joins
   the candidates) or the output is the max level and the file holds retractions (rewritten to drop them), or
   Java's rewriter rewrites it on upgrade (:func:`upgrade_rewrites`: vector-index tables, lookup tables).
   Candidates are rewritten when an upgrade interrupts them and at the end; a lone single-run candidate is
   upgraded instead (``rewrite``'s shortcut).
3. A rewrite sort-merges its files with the merge engine (:mod:`.merge`), drops retractions when the plan says so
   (``DropDeleteReader``), and writes files of about ``target-file-size`` (rolled on an estimate from the input's
   bytes per row; Java checks the written size every 1,000 rows) named ``data-<uuid>-<n>.parquet`` with Java's
   layout: ``_KEY_<pk>`` (field id 1073741823 + id), ``_SEQUENCE_NUMBER`` (2147483646), ``_VALUE_KIND`` int8
   (2147483645), the value columns (their field ids), ``file.compression`` (default zstd).

A file has retractions when its ``_DELETE_ROW_COUNT`` is absent or above 0 (as in Java); a count of 0 is checked
against the data: pypaimon 2.1.0 writes 0 for files that hold ``-D`` rows, so Java's ``deleteRowCount == 0`` check
alone would move retractions to the max level.

Nothing here touches snapshots: a crash leaves only unreferenced data files (see :mod:`.rollback`).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import heapq
import io
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lake_orchestration.engines.base import Engine
from lake_orchestration.engines.local import or_local
from lake_orchestration.errors import InvalidOptionError, SchemaError
from lake_orchestration.io.storage import Storage
from lake_orchestration.paimon.model.avro import decode_record, encode_record
from lake_orchestration.paimon.model.binary_row import BinaryRow
from lake_orchestration.paimon.model.manifest import DATA_FILE_META_SCHEMA, DataFileMeta, FileSource, SimpleStats
from lake_orchestration.paimon.model.options import SEQUENCE_FIELD, CoreOptions, MergeEngine
from lake_orchestration.paimon.model.schema import DataType, TableSchema
from lake_orchestration.paimon.services.compaction.merge import (
    KEY_PREFIX,
    RETRACT_KINDS,
    SEQUENCE_NUMBER,
    VALUE_KIND,
    merge_rows,
)
from lake_orchestration.paimon.services.compaction.planner import BucketCompaction, PaimonCompactionPlan, needs_lookup
from lake_orchestration.paimon.table import PaimonTable

KEY_FIELD_ID_START = 2**31 // 2 - 1
SEQUENCE_NUMBER_FIELD_ID = 2**31 - 2
VALUE_KIND_FIELD_ID = 2**31 - 3
DATA_FILE_PREFIX = "data-"


@dataclass(frozen=True, kw_only=True)
class BucketCompactTask:
    """One engine task: compact one bucket. Plain values only, so the engine's task codec carries it (the files as
    base64 Avro ``DataFileMeta`` records, the partition as hex); the schema is read by the task."""

    base_uri: str
    """The table root."""
    storage_options: dict[str, str] = dataclasses.field(default_factory=dict)
    """Storage options (credentials): the engine ships them apart from the task data, never logged."""
    schema_id: int
    """Schema of the new files."""
    partition: str
    """The partition row's bytes, hex."""
    bucket: int
    """Bucket number."""
    total_buckets: int
    """``_TOTAL_BUCKETS`` of the bucket's entries."""
    bucket_path: str
    """The bucket directory relative to the table root."""
    output_level: int
    """Level of the output."""
    max_level: int
    """Highest level of the bucket."""
    drop_delete: bool
    """True when retractions are dropped."""
    files: tuple[str, ...]
    """The unit's files: base64 of each ``DataFileMeta`` Avro record."""

    @classmethod
    def of(cls, compaction: BucketCompaction, *, base_uri: str, storage_options: dict[str, str], schema_id: int
           ) -> BucketCompactTask:  # fmt: skip
        """The task of a planned bucket."""
        return cls(
            base_uri=base_uri,
            storage_options=storage_options,
            schema_id=schema_id,
            partition=compaction.partition.data.hex(),
            bucket=compaction.bucket,
            total_buckets=compaction.total_buckets,
            bucket_path=compaction.bucket_path,
            output_level=compaction.output_level,
            max_level=compaction.max_level,
            drop_delete=compaction.drop_delete,
            files=tuple(
                base64.b64encode(encode_record(DATA_FILE_META_SCHEMA, f.to_avro())).decode() for f in compaction.files
            ),
        )

    @property
    def compaction(self) -> BucketCompaction:
        """The planned bucket back."""
        return BucketCompaction(
            partition=BinaryRow(bytes.fromhex(self.partition)),
            bucket=self.bucket,
            total_buckets=self.total_buckets,
            bucket_path=self.bucket_path,
            output_level=self.output_level,
            max_level=self.max_level,
            drop_delete=self.drop_delete,
            files=tuple(
                DataFileMeta.from_avro(decode_record(DATA_FILE_META_SCHEMA, base64.b64decode(f))) for f in self.files
            ),
        )


@dataclass(frozen=True, kw_only=True)
class BucketCompactResult:
    """What one bucket's compaction did (Java ``CompactResult``): files before and after, and what was written."""

    compaction: BucketCompaction
    """The planned unit."""
    before: tuple[DataFileMeta, ...]
    """Files replaced (rewritten inputs, and upgraded files at their old level)."""
    after: tuple[DataFileMeta, ...]
    """Files that replace them (new files, and upgraded files at their new level)."""
    written: tuple[str, ...]
    """Paths (relative to the table root) of the data files written."""
    upgraded: int
    """Files that only changed level."""
    rewritten: int
    """Input files merged into new files."""

    def to_json_obj(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "partition": self.compaction.partition.data.hex(),
            "bucket": self.compaction.bucket,
            "output_level": self.compaction.output_level,
            "upgraded": self.upgraded,
            "rewritten": self.rewritten,
            "files_before": len(self.before),
            "files_after": len(self.after),
            "rows_before": sum(f.row_count for f in self.before),
            "rows_after": sum(f.row_count for f in self.after),
        }


@dataclass(frozen=True, kw_only=True)
class PaimonCompactionExecution:
    """The executed plan: what the committer turns into a COMPACT snapshot."""

    plan: PaimonCompactionPlan
    """The plan."""
    results: tuple[BucketCompactResult, ...]
    """One result per planned bucket."""

    @property
    def written(self) -> tuple[str, ...]:
        """Every data file written (relative paths)."""
        return tuple(p for r in self.results for p in r.written)

    def to_json_obj(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "table": self.plan.table_uri,
            "snapshot_id": self.plan.snapshot_id,
            "buckets": [r.to_json_obj() for r in self.results],
            "files_written": len(self.written),
        }


# -- sections and runs (Java IntervalPartition) -----------------------------------------------------------------
KeyOrder = Callable[[BinaryRow], Any]


def interval_partition(files: Sequence[DataFileMeta], key_order: KeyOrder) -> list[list[list[DataFileMeta]]]:
    """Java ``IntervalPartition.partition``: sections of overlapping files, each as sorted runs."""
    ordered = sorted(files, key=lambda f: (key_order(f.min_key), key_order(f.max_key)))
    sections: list[list[list[DataFileMeta]]] = []
    section: list[DataFileMeta] = []
    bound: Any = None
    for meta in ordered:
        if section and key_order(meta.min_key) > bound:
            sections.append(_runs_of_section(section, key_order))
            section, bound = [], None
        section.append(meta)
        if bound is None or key_order(meta.max_key) > bound:
            bound = key_order(meta.max_key)
    if section:
        sections.append(_runs_of_section(section, key_order))
    return sections


def _runs_of_section(metas: list[DataFileMeta], key_order: KeyOrder) -> list[list[DataFileMeta]]:
    heap: list[tuple[Any, int, list[DataFileMeta]]] = [(key_order(metas[0].max_key), 0, [metas[0]])]
    for i, meta in enumerate(metas[1:], start=1):
        last_max, idx, top = heapq.heappop(heap)
        if key_order(meta.min_key) > last_max:
            top.append(meta)
            heapq.heappush(heap, (key_order(meta.max_key), idx, top))
        else:
            heapq.heappush(heap, (last_max, idx, top))
            heapq.heappush(heap, (key_order(meta.max_key), i, [meta]))
    return [run for _, _, run in sorted(heap, key=lambda t: t[1])]


# -- doCompact --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Upgrade:
    """A file that moves to the output level unchanged (Java ``CompactRewriter.upgrade``)."""

    file: DataFileMeta
    """The file, at its current level."""


@dataclass(frozen=True)
class Rewrite:
    """Files sort-merged into new files at the output level (Java ``CompactRewriter.rewrite``)."""

    files: tuple[DataFileMeta, ...]
    """The input files, section by section."""


def compact_steps(
    compaction: BucketCompaction,
    *,
    key_order: KeyOrder,
    min_file_size: int,
    has_retractions: Callable[[DataFileMeta], bool],
    upgrade_rewrites: Callable[[DataFileMeta], bool] = lambda _: False,
) -> list[Upgrade | Rewrite]:
    """Java ``MergeTreeCompactTask.doCompact`` as a list of upgrades and rewrites (no I/O but ``has_retractions``).

    ``upgrade_rewrites`` is the rewriter's side of an upgrade (Java ``CompactRewriter.upgrade``): True when the
    rewriter rewrites the file instead of moving it (see :func:`upgrade_rewrites`)."""
    steps: list[Upgrade | Rewrite] = []
    output_level, max_level = compaction.output_level, compaction.max_level
    candidate: list[list[list[DataFileMeta]]] = []

    def upgrade(file: DataFileMeta) -> None:
        if file.level == output_level:
            return
        if output_level != max_level or not has_retractions(file):
            steps.append(Rewrite((file,)) if upgrade_rewrites(file) else Upgrade(file))
        else:
            # files with delete records should not be upgraded directly to max level
            steps.append(Rewrite((file,)))

    def rewrite() -> None:
        if not candidate:
            return
        if len(candidate) == 1:
            section = candidate[0]
            if not section:
                return
            if len(section) == 1:
                for file in section[0]:
                    upgrade(file)
                candidate.clear()
                return
        steps.append(Rewrite(tuple(f for section in candidate for run in section for f in run)))
        candidate.clear()

    for section in interval_partition(compaction.files, key_order):
        if len(section) > 1:
            candidate.append(section)
            continue
        for file in section[0]:
            if file.file_size < min_file_size:
                # smaller files are rewritten along with the previous files
                candidate.append([[file]])
            else:
                # large file appears: rewrite previous and upgrade it
                rewrite()
                upgrade(file)
    rewrite()
    return steps


def upgrade_rewrites(
    file: DataFileMeta,
    *,
    options: CoreOptions,
    output_level: int,
    max_level: int,
    has_retractions: Callable[[DataFileMeta], bool],
) -> bool:
    """True when Java's rewriter rewrites ``file`` where ``MergeTreeCompactTask`` asks it to upgrade the file.

    - A table with a primary-key vector index (``pk-vector.index.columns``): the ANN index is built only from
      compacted files above level 0 (Java ``PrimaryKeyIndexSourcePolicy``: ``_FILE_SOURCE`` COMPACT and level > 0;
      append files "must not be primary-key vector index sources"), so a file that is not a compaction output is
      rewritten when it moves above level 0. The Java-written golden vector table shows it: its single level-0
      APPEND file moved to the max level is rewritten, where the btree/bitmap and full-text tables upgrade theirs.
    - Tables that need lookup (deletion vectors, ``merge-engine=first-row``): Java's
      ``LookupMergeTreeCompactRewriter.upgradeStrategy``. A file above level 0 is upgraded. A level-0 file is
      rewritten when deletion vectors are on and it has retractions (``deleteRowCount`` absent or > 0; a 0 is
      checked against the data, see :func:`compact_bucket`); upgraded when the output is the max level, or the
      merge engine is ``deduplicate`` without ``sequence.field``; rewritten otherwise (the lookup merge of other
      engines may change the rows).
    """
    if options.primary_key_vector_index_columns and output_level > 0 and file.file_source is not FileSource.COMPACT:
        return True
    if not needs_lookup(options) or file.level != 0:
        return False
    if options.deletion_vectors_enabled and has_retractions(file):
        return True
    if output_level == max_level:
        return False
    return not (options.merge_engine is MergeEngine.DEDUPLICATE and options.get(SEQUENCE_FIELD) is None)


# -- reading and writing data files ----------------------------------------------------------------------------
def _columns(schema: TableSchema) -> tuple[list[str], list[str]]:
    keys = [f"{KEY_PREFIX}{k}" for k in schema.trimmed_primary_keys]
    return keys, [f.name for f in schema.fields]


def _read_file(storage: Storage, path: str, names: list[str]) -> pa.Table:
    data = storage.open_parquet(path).read()
    missing = [n for n in names if n not in data.column_names]
    if missing:
        raise SchemaError(
            f"{storage.uri(path)} lacks columns {missing}: expected {names} (files of another schema need schema "
            "evolution, not supported by this compaction)"
        )
    return data.select(names)


def _output_schema(schema: TableSchema, sample: pa.Schema) -> pa.Schema:
    """Java's data file schema: field ids as ``KeyValueFileWriterFactory`` writes them, nullability of the table."""
    ids: dict[str, int] = {SEQUENCE_NUMBER: SEQUENCE_NUMBER_FIELD_ID, VALUE_KIND: VALUE_KIND_FIELD_ID}
    nullable: dict[str, bool] = {SEQUENCE_NUMBER: False, VALUE_KIND: False}
    for k in schema.trimmed_primary_keys:
        field = schema.field(k)
        ids[f"{KEY_PREFIX}{k}"] = KEY_FIELD_ID_START + field.id
        nullable[f"{KEY_PREFIX}{k}"] = False
    for f in schema.fields:
        ids[f.name] = f.id
        nullable[f.name] = f.type.nullable
    return pa.schema(
        [
            pa.field(
                f.name,
                pa.int8() if f.name == VALUE_KIND else f.type,
                nullable=nullable[f.name],
                metadata={b"PARQUET:field_id": str(ids[f.name]).encode()},
            )
            for f in sample
        ]
    )


def _creation_time_millis() -> int:
    """Java's ``LocalDateTime.now()`` stored as epoch millis of the local wall clock."""
    now = datetime.datetime.now()
    return int(now.replace(tzinfo=datetime.UTC).timestamp() * 1000)


_STATS_MODE = re.compile(r"^(none|counts|full|truncate\((\d+)\))$")
_STATS_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT", "DATE", "BOOLEAN", "FLOAT", "DOUBLE", "CHAR"}
_STATS_TYPES |= {"VARCHAR", "BINARY", "VARBINARY"}


def _stats_mode(options: dict[str, str], field: str) -> tuple[str, int | None]:
    """``fields.<f>.stats-mode``, else ``metadata.stats-mode`` (default ``truncate(16)``) as (mode, length).

    Raises:
        InvalidOptionError: Not none, counts, full or truncate(N).
    """
    key = f"fields.{field}.stats-mode"
    if key not in options:
        key = "metadata.stats-mode"
    raw = options.get(key, "truncate(16)")
    m = _STATS_MODE.match(raw.strip().lower())
    if m is None:
        raise InvalidOptionError(
            f"Invalid Paimon table option {key}={raw!r}: expected none, counts, full or truncate(N)"
        )
    return m.group(1).split("(")[0], (int(m.group(2)) if m.group(2) else None)


def _truncate_max(value: str, length: int) -> str | None:
    """Java ``TruncateSimpleColStatsCollector``: the first ``length`` code points with the last one rounded up (a
    bound above every string with that prefix); None when no code point can be rounded up."""
    if len(value) <= length:
        return value
    chars = list(value[:length])
    for i in range(length - 1, -1, -1):
        nxt = ord(chars[i]) + 1
        if 0xD800 <= nxt <= 0xDFFF:
            nxt = 0xE000
        if nxt <= 0x10FFFF:
            return "".join(chars[:i]) + chr(nxt)
    return None


def _column_stats(
    data: pa.Table, columns: list[str], fields: list[str], types: tuple[DataType, ...], options: dict[str, str]
) -> tuple[SimpleStats, bool]:
    """Min/max/null counts of ``columns`` as Java's stats collectors fill them; (stats, False) when a column's type
    has no min/max here (nested types, wide decimals and timestamps): the caller then stores no statistics."""
    mins: list[Any] = []
    maxs: list[Any] = []
    nulls: list[int | None] = []
    for name, field, dtype in zip(columns, fields, types, strict=True):
        col = data.column(name)
        mode, length = _stats_mode(options, field)
        supported = dtype.root in _STATS_TYPES or (dtype.root == "DECIMAL" and dtype.precision <= 18)
        if mode == "none":
            mins.append(None)
            maxs.append(None)
            nulls.append(None)
            continue
        nulls.append(col.null_count)
        if mode == "counts":
            mins.append(None)
            maxs.append(None)
            continue
        if not supported:
            return SimpleStats(min_values=BinaryRow.empty(), max_values=BinaryRow.empty(), null_counts=()), False
        mm = pc.min_max(col)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if mode == "truncate" and length is not None and isinstance(lo, str):
            lo = lo[:length]
            hi = None if hi is None else _truncate_max(hi, length)
        mins.append(lo)
        maxs.append(hi)
    return (
        SimpleStats(
            min_values=BinaryRow.from_values(mins, types),
            max_values=BinaryRow.from_values(maxs, types),
            null_counts=tuple(nulls),
        ),
        True,
    )


def _key_row(data: pa.Table, schema: TableSchema, index: int) -> BinaryRow:
    values = [data.column(f"{KEY_PREFIX}{k}")[index].as_py() for k in schema.trimmed_primary_keys]
    return BinaryRow.from_values(values, schema.key_types)


class _RollingWriter:
    """Writes ``data-<uuid>-<n>.parquet`` files of about ``rows_per_file`` rows into one bucket directory."""

    def __init__(self, storage: Storage, schema: TableSchema, bucket_path: str) -> None:
        self.storage = storage
        self.schema = schema
        self.bucket_path = bucket_path
        self.uuid = str(uuid.uuid4())
        self.counter = 0
        self.compression = schema.options.get("file.compression", "zstd").strip().lower()
        level = schema.options.get("file.compression.zstd-level", "1").strip()
        self.compression_level = int(level) if self.compression == "zstd" else None
        self.written: list[str] = []

    def write(self, data: pa.Table, *, level: int, rows_per_file: int) -> list[DataFileMeta]:
        out = []
        for start in range(0, data.num_rows, max(1, rows_per_file)):
            out.append(self._write_one(data.slice(start, rows_per_file), level=level))
        return out

    def _write_one(self, data: pa.Table, *, level: int) -> DataFileMeta:
        schema = self.schema
        name = f"{DATA_FILE_PREFIX}{self.uuid}-{self.counter}.parquet"
        self.counter += 1
        sink = io.BytesIO()
        compression = "none" if self.compression in ("none", "uncompressed") else self.compression
        with pq.ParquetWriter(
            sink, data.schema, compression=compression, compression_level=self.compression_level
        ) as writer:
            writer.write_table(data)
        payload = sink.getvalue()
        path = self.storage.join(self.bucket_path, name)
        self.storage.write_bytes(path, payload)
        self.written.append(self.storage.relative(path))
        options = dict(schema.options)
        keys = list(schema.trimmed_primary_keys)
        key_stats, _ = _column_stats(data, [f"{KEY_PREFIX}{k}" for k in keys], keys, schema.key_types, options)
        fields = list(schema.fields)
        # dense statistics (``metadata.stats-dense-store``, default true): columns without statistics (mode none,
        # and VECTOR columns, which Java collects none for) are left out and the others named in valueStatsCols
        with_stats = [f for f in fields if f.type.root != "VECTOR" and _stats_mode(options, f.name)[0] != "none"]
        dense = options.get("metadata.stats-dense-store", "true").strip().lower() == "true"
        stats_fields = with_stats if dense and len(with_stats) < len(fields) else fields
        names = [f.name for f in stats_fields]
        value_stats, has_value_stats = _column_stats(data, names, names, tuple(f.type for f in stats_fields), options)
        if not has_value_stats:
            stats_cols: tuple[str, ...] | None = ()
        else:
            stats_cols = None if stats_fields is fields else tuple(names)
        seqs = pc.min_max(data.column(SEQUENCE_NUMBER))
        deletes = pc.sum(pc.is_in(data.column(VALUE_KIND), pa.array(RETRACT_KINDS, pa.int8()))).as_py() or 0
        return DataFileMeta(
            file_name=name,
            file_size=len(payload),
            row_count=data.num_rows,
            min_key=_key_row(data, schema, 0),
            max_key=_key_row(data, schema, data.num_rows - 1),
            key_stats=key_stats,
            value_stats=value_stats,
            min_sequence_number=seqs["min"].as_py(),
            max_sequence_number=seqs["max"].as_py(),
            schema_id=schema.id,
            level=level,
            extra_files=(),
            creation_time=_creation_time_millis(),
            delete_row_count=int(deletes),
            file_source=FileSource.COMPACT,
            # None: every value column has statistics; else the columns that have (dense statistics)
            value_stats_cols=stats_cols,
        )


def compact_bucket(task: BucketCompactTask) -> list[BucketCompactResult]:
    """Compact one bucket (the engine task function): upgrades and rewrites, new data files written."""
    storage = Storage(task.base_uri, options=task.storage_options)
    schema = PaimonTable(storage).schema(task.schema_id)
    options = CoreOptions(schema.options)
    compaction = task.compaction
    key_types = schema.key_types
    key_columns, value_columns = _columns(schema)
    names = [*key_columns, SEQUENCE_NUMBER, VALUE_KIND, *value_columns]

    def path_of(f: DataFileMeta) -> str:
        return storage.join(compaction.bucket_path, f.file_name)

    def has_retractions(f: DataFileMeta) -> bool:
        if f.delete_row_count is None or f.delete_row_count > 0:
            return True
        kinds = storage.open_parquet(path_of(f)).read(columns=[VALUE_KIND]).column(VALUE_KIND)
        return bool(pc.any(pc.is_in(kinds, pa.array(RETRACT_KINDS, pa.int8()))).as_py())

    steps = compact_steps(
        compaction,
        key_order=lambda row: row.sort_key(key_types),
        min_file_size=options.compaction_file_size,
        has_retractions=has_retractions,
        upgrade_rewrites=lambda f: upgrade_rewrites(
            f,
            options=options,
            output_level=compaction.output_level,
            max_level=compaction.max_level,
            has_retractions=has_retractions,
        ),
    )
    writer = _RollingWriter(storage, schema, compaction.bucket_path)
    before: list[DataFileMeta] = []
    after: list[DataFileMeta] = []
    upgraded = rewritten = 0
    for step in steps:
        if isinstance(step, Upgrade):
            before.append(step.file)
            after.append(replace(step.file, level=compaction.output_level))
            upgraded += 1
            continue
        tables = [_read_file(storage, path_of(f), names) for f in step.files]
        target = _output_schema(schema, tables[0].schema)
        data = pa.concat_tables([t.cast(target) for t in tables])
        merged = merge_rows(
            data,
            key_columns=key_columns,
            value_columns=value_columns,
            primary_keys=schema.primary_keys,
            engine=options.merge_engine,
            options=schema.options,
            drop_delete=compaction.drop_delete,
        )
        in_rows = sum(f.row_count for f in step.files)
        bytes_per_row = max(1, sum(f.file_size for f in step.files) // max(1, in_rows))
        rows_per_file = max(1, options.target_file_size // bytes_per_row)
        before.extend(step.files)
        after.extend(writer.write(merged, level=compaction.output_level, rows_per_file=rows_per_file))
        rewritten += len(step.files)
    return [
        BucketCompactResult(
            compaction=compaction,
            before=tuple(before),
            after=tuple(after),
            written=tuple(writer.written),
            upgraded=upgraded,
            rewritten=rewritten,
        )
    ]


def bucket_tasks(plan: PaimonCompactionPlan, storage: Storage) -> list[BucketCompactTask]:
    """One task per planned bucket."""
    return [
        BucketCompactTask.of(b, base_uri=plan.table_uri, storage_options=storage.options, schema_id=plan.schema.id)
        for b in plan.buckets
    ]


def execute_compaction(
    plan: PaimonCompactionPlan, *, storage: Storage, engine: Engine | None = None
) -> PaimonCompactionExecution:
    """Run every bucket of ``plan`` (one engine task each; the default engine: in this process, bucket by bucket).

    Writes data files only; the table is unchanged until :func:`~.committer.commit_compaction`.
    """
    tasks = bucket_tasks(plan, storage)
    description = f"Paimon compaction of {len(tasks)} bucket(s) of {plan.table_uri}"
    results = or_local(engine).map_tasks(compact_bucket, tasks, description=description)
    return PaimonCompactionExecution(plan=plan, results=tuple(results))
