"""Schedule-plan of a Paimon merge-tree compaction: per bucket of the latest snapshot, the unit to compact.

Java runs the planning inside each writer (``MergeTreeCompactManager.triggerCompaction``: the universal picker or a
full compaction, then the drop-delete decision); a dedicated compaction job (``compact`` action) does the same for
every bucket of a snapshot. Here the plan is a value: :func:`plan_compaction` reads the latest snapshot once and
returns a :class:`PaimonCompactionPlan` that the executor runs one bucket per engine task.

Deletion vectors and first-row: Java compacts such tables with a lookup rewriter that marks (deletion vectors) or
drops (first-row) the rows a compaction makes obsolete in higher levels, because their readers do not merge files
above level 0. This project does no lookup, so on such a table a picked unit whose files overlap in key range with
a file above the output level becomes a full compaction (one sorted run at the max level: nothing left to mark);
a bucket that already has deletion vectors is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import CorruptFileError, PlanError
from lake_orchestration.paimon.model.binary_row import BinaryRow
from lake_orchestration.paimon.model.levels import Bucket, CompactUnit
from lake_orchestration.paimon.model.manifest import DataFileMeta
from lake_orchestration.paimon.model.options import ChangelogProducer, CoreOptions, MergeEngine
from lake_orchestration.paimon.model.pk_index import is_global_index_payload, source_meta
from lake_orchestration.paimon.model.schema import TableSchema
from lake_orchestration.paimon.services.compaction.universal import drop_delete, pick_full_compaction, pick_unit
from lake_orchestration.paimon.table import PaimonTable

DELETION_VECTORS_INDEX = "DELETION_VECTORS"


@dataclass(frozen=True, kw_only=True)
class BucketCompaction:
    """What to compact in one (partition, bucket): a :class:`CompactUnit` with its context."""

    partition: BinaryRow
    """The partition row (arity 0 when unpartitioned)."""
    bucket: int
    """Bucket number."""
    total_buckets: int
    """``_TOTAL_BUCKETS`` of the bucket's entries (kept on the new entries)."""
    bucket_path: str
    """The bucket directory relative to the table root (``dt=a/bucket-0``)."""
    output_level: int
    """Level of the output (and of upgraded files)."""
    max_level: int
    """Highest level of the bucket (``num-levels - 1`` or higher when files already sit higher)."""
    drop_delete: bool
    """True when retractions are dropped (the output holds the oldest data of the bucket)."""
    files: tuple[DataFileMeta, ...]
    """The unit's input files."""

    @property
    def input_bytes(self) -> int:
        """Bytes in the input files."""
        return sum(f.file_size for f in self.files)

    def to_json_obj(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "partition": self.partition.data.hex(),
            "bucket": self.bucket,
            "output_level": self.output_level,
            "drop_delete": self.drop_delete,
            "files": [{"file_name": f.file_name, "level": f.level, "file_size": f.file_size} for f in self.files],
        }


@dataclass(frozen=True, kw_only=True)
class PaimonCompactionPlan:
    """The compaction of a table: one :class:`BucketCompaction` per bucket that has something to do."""

    table_uri: str
    """The table."""
    snapshot_id: int | None
    """The snapshot the plan was made from (None: the table has no snapshot)."""
    schema: TableSchema
    """The latest schema (new files are written with it)."""
    full: bool
    """True for a full compaction (every run to the max level)."""
    buckets: tuple[BucketCompaction, ...]
    """The units, in (partition, bucket) order."""

    @property
    def is_empty(self) -> bool:
        """True when no bucket needs compaction."""
        return not self.buckets

    def to_json_obj(self) -> dict[str, Any]:
        """A JSON-ready summary (what ``compaction schedule --json`` will print)."""
        return {
            "table": self.table_uri,
            "snapshot_id": self.snapshot_id,
            "full": self.full,
            "buckets": [
                {
                    **b.to_json_obj(),
                    "partition_values": [
                        None if v is None else str(v) for v in b.partition.to_values(self.schema.partition_types)
                    ],
                }
                for b in self.buckets
            ],
            "input_files": sum(len(b.files) for b in self.buckets),
            "input_bytes": sum(b.input_bytes for b in self.buckets),
        }


def check_supported(options: CoreOptions, schema: TableSchema, *, where: str) -> None:
    """Refuse what the executor cannot do as Java does (named, never silently different).

    Raises:
        PlanError: Not a primary-key table, fixed buckets off, a file format other than parquet, or a changelog
            producer that needs compaction changelog files (``full-compaction``, ``lookup``).
    """
    if not schema.primary_keys:
        raise PlanError(f"{where}: not a primary-key table (no primaryKeys in schema {schema.id}): nothing to merge")
    if options.bucket < 1:
        raise PlanError(f"{where}: bucket={options.bucket}: expected a fixed number of buckets (>= 1)")
    fmt = schema.options.get("file.format", "parquet").strip().lower()
    if fmt != "parquet":
        raise PlanError(f"{where}: file.format={fmt!r}: expected 'parquet' (the only format written here)")
    if options.changelog_producer in (ChangelogProducer.FULL_COMPACTION, ChangelogProducer.LOOKUP):
        raise PlanError(
            f"{where}: changelog-producer={options.changelog_producer.value!r}: compaction changelog files are not "
            "written here; expected 'none' or 'input'"
        )


def needs_lookup(options: CoreOptions) -> bool:
    """Java ``CoreOptions.needLookup`` for what is supported here: deletion vectors or the first-row merge engine.
    Readers then take files above level 0 without merging (pypaimon too), so a compaction must leave no key in two
    levels: the picker forces level-0 files up (``ForceUpLevel0Compaction``) and a unit that would leave a key
    behind in a higher level becomes a full compaction (Java looks such keys up and marks or drops them instead)."""
    return options.deletion_vectors_enabled or options.merge_engine is MergeEngine.FIRST_ROW


def _key_order(schema: TableSchema) -> Any:
    key_types = schema.key_types
    return lambda row: row.sort_key(key_types)


def _overlaps_higher(unit: CompactUnit, bucket: Bucket, schema: TableSchema) -> bool:
    """True when a unit file shares key range with a file above the output level (kept live by the unit)."""
    order = _key_order(schema)
    chosen = {f.file_name for f in unit.files}
    higher = [f for f in bucket.files if f.level > unit.output_level and f.file_name not in chosen]
    return any(
        order(f.min_key) <= order(h.max_key) and order(h.min_key) <= order(f.max_key)
        for f in unit.files
        for h in higher
    )


def plan_bucket(
    bucket: Bucket, options: CoreOptions, schema: TableSchema, *, full: bool, bucket_path: str
) -> BucketCompaction | None:
    """The compaction of one bucket, or None when the picker finds nothing to do."""
    levels = bucket.levels
    lookup = needs_lookup(options)
    unit = pick_unit(levels, options, full=full, force_up_level0=lookup)
    if unit is not None and lookup and not full and _overlaps_higher(unit, bucket, schema):
        unit = pick_full_compaction(levels.number_of_levels, levels.level_sorted_runs())
    if unit is None:
        return None
    return BucketCompaction(
        partition=bucket.partition,
        bucket=bucket.bucket,
        total_buckets=bucket.total_buckets,
        bucket_path=bucket_path,
        output_level=unit.output_level,
        max_level=levels.max_level,
        drop_delete=drop_delete(unit, levels, deletion_vectors=options.deletion_vectors_enabled),
        files=unit.files,
    )


def _columns(schema: TableSchema) -> list[tuple[int, str, Any]]:
    return [(f.id, f.name, f.type.json) for f in schema.fields]


def _check_schemas(
    table: PaimonTable, schema: TableSchema, planned: BucketCompaction, same_columns: dict[int, bool]
) -> None:
    """Files written with another schema must have the same columns: schema evolution is not applied here.

    ``same_columns`` remembers, per older schema id, whether its columns are ``schema``'s, so each older schema
    file is read once per plan rather than once per bucket."""
    for schema_id in sorted({f.schema_id for f in planned.files} - {schema.id}):
        if schema_id not in same_columns:
            same_columns[schema_id] = _columns(table.schema(schema_id)) == _columns(schema)
        if not same_columns[schema_id]:
            names = [f.file_name for f in planned.files if f.schema_id == schema_id][:3]
            raise PlanError(
                f"{table.uri} bucket {planned.bucket}: files {names} were written with schema {schema_id}, whose "
                f"columns differ from schema {schema.id}: expected one schema's columns (schema evolution is not "
                "supported by this compaction)"
            )


def _check_global_indexes(
    table: PaimonTable, snapshot_id: int, records: tuple[dict[str, Any], ...], buckets: set[tuple[bytes, int]]
) -> None:
    """The global index payloads of the buckets to compact must be Paimon 2.x primary-key index payloads.

    The COMPACT commit keeps the index manifest as it is (see ``committer``): Java then ignores the payloads of the
    levels the compaction changed, because each names its source data files and row counts
    (``PrimaryKeyIndexSourceMeta``), and its next writer rebuilds them. A global index without that source list
    (one keyed by row positions alone) would be read against rewritten files, so it is refused."""
    where = f"{table.uri} snapshot {snapshot_id} index manifest"
    for r in records:
        if r.get("_KIND", 0) != 0 or not is_global_index_payload(r):
            continue
        if (bytes(r["_PARTITION"]), r["_BUCKET"]) not in buckets:
            continue
        try:
            source_meta(r, where=where)
        except CorruptFileError as err:
            raise PlanError(
                f"{err}; bucket {r['_BUCKET']} is to be compacted, and this compaction does not rebuild global "
                "indexes: only primary-key index payloads (which Java validates against their source files) can "
                "be left as they are"
            ) from err


def plan_compaction(table: PaimonTable, *, full: bool = False) -> PaimonCompactionPlan:
    """Plan the compaction of every bucket of the latest snapshot.

    Args:
        table: The table.
        full: Full compaction (``compact --full``): every bucket with more than one run, or a run below the max
            level, goes to the max level.

    Returns:
        The plan (empty when nothing is to be done or the table has no snapshot).

    Raises:
        PlanError: What :func:`check_supported` refuses, a bucket to compact has deletion vectors or a global
            index that is not a primary-key index payload, or its files were written with a schema of other
            columns.
    """
    schema = table.schema()
    options = CoreOptions(schema.options)
    check_supported(options, schema, where=table.uri)
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return PaimonCompactionPlan(table_uri=table.uri, snapshot_id=None, schema=schema, full=full, buckets=())
    index_records = table.index_manifest_records(snapshot)
    dv_buckets = {
        (bytes(r["_PARTITION"]), r["_BUCKET"])
        for r in index_records
        if r.get("_INDEX_TYPE") == DELETION_VECTORS_INDEX and r.get("_KIND", 0) == 0
    }
    out = []
    same_columns: dict[int, bool] = {}
    for bucket in table.buckets(snapshot, schema=schema):
        path = table.storage.relative(table.bucket_path(bucket.partition, bucket.bucket, schema=schema))
        planned = plan_bucket(bucket, options, schema, full=full, bucket_path=path)
        if planned is None:
            continue
        _check_schemas(table, schema, planned, same_columns)
        if (bucket.partition.data, bucket.bucket) in dv_buckets:
            raise PlanError(
                f"{table.uri} bucket {bucket.bucket} (partition {bucket.partition.data.hex()}) has deletion vectors "
                f"in snapshot {snapshot.id}: compaction that applies and rewrites them is not supported here"
            )
        out.append(planned)
    _check_global_indexes(table, snapshot.id, index_records, {(b.partition.data, b.bucket) for b in out})
    return PaimonCompactionPlan(
        table_uri=table.uri, snapshot_id=snapshot.id, schema=schema, full=full, buckets=tuple(out)
    )
