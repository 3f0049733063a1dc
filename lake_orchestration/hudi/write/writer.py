"""Writing to a Hudi v6 table: bulk_insert, insert, upsert, delete — with the file group as the unit of work.

The driver side mirrors Hudi's Spark write client: validate (or create) the table, build keys and partition
paths, precombine the batch by the ordering field, tag records with their file group (an index over the latest
file slices, pruned by the footer min/max keys and bloom filter), assign inserts to small file groups and then to
new ones, and run the commit protocol: ``requested`` -> ``inflight`` (workload profile) -> the file-group tasks
(in-process or on Spark, see :mod:`lake_orchestration.hudi.write.file_group_writer`) -> ``completed`` with Hudi's
write stats, written last. Markers live under ``.hoodie/.temp/<instant>`` and a heartbeat under
``.hoodie/.heartbeat/<instant>`` while the write runs; a crash leaves an inflight instant every reader ignores.
"""

from __future__ import annotations

import enum
import json
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.config.keys import PROPERTIES_FILE, TABLE_CONFIG_PREFIX, HoodieKey
from lake_orchestration.engines.base import Engine, TaskAttempt
from lake_orchestration.engines.local import or_local
from lake_orchestration.errors import (
    InvalidInstantStateError,
    InvalidTablePropertiesError,
    TableNotFoundError,
    WriteConflictError,
)
from lake_orchestration.hudi.log.scanner import InstantFilter
from lake_orchestration.hudi.metadata.initialize import initialize_if_requested
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.file_group import FileSlice, new_file_id
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.model.properties import (
    KEY_GENERATORS,
    TableConfig,
    new_table_properties,
)
from lake_orchestration.hudi.model.schema import (
    IS_DELETED_FIELD,
    META_FIELDS,
    PARTITION_PATH,
    RECORD_KEY,
    arrow_to_avro_schema,
    avro_to_arrow_schema,
    with_meta_fields,
)
from lake_orchestration.hudi.table.commit import (
    Conflict,
    after_commit,
    check_write_conflicts,
    commit_section,
    describe_file_ids,
)
from lake_orchestration.hudi.table.heartbeat import Heartbeat
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.hudi.table.marker import delete_markers, reconcile_markers
from lake_orchestration.hudi.write.base_file import ParquetWriteConfig, constant_strings
from lake_orchestration.hudi.write.clustering_guard import (
    ClusteringRollback,
    handle_updates,
    pending_clustering_file_groups,
)
from lake_orchestration.hudi.write.file_group_writer import FileGroupWriteContext, write_file_group, write_group
from lake_orchestration.hudi.write.index import tag_locations
from lake_orchestration.hudi.write.options import WriteOptions
from lake_orchestration.hudi.write.records import FILE_ID_COLUMN, OP_COLUMN, deleted_mask, precombine, with_keys

ORDER_COLUMN = "__lo_order"
"""Place of a row within its file group (set for rows of new file groups: key order)."""


class WriteOperation(str, enum.Enum):
    """Hudi's write operations (``WriteOperationType``)."""

    BULK_INSERT = "bulk_insert"
    INSERT = "insert"
    UPSERT = "upsert"
    DELETE = "delete"


@dataclass
class WriteResult:
    """Outcome of one write: the completed instant, its commit metadata and timings."""

    instant: InstantTime
    action: str
    metadata: CommitMetadata
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    files_written: list[str] = field(default_factory=list)
    index_seconds: float = 0.0
    write_seconds: float = 0.0
    operation: str = ""
    """The write operation (``upsert``, ``insert``, ``bulk_insert``, ``delete``)."""
    warnings: list[str] = field(default_factory=list)
    """Housekeeping that failed after the commit point (the commit stands; see :mod:`..table.commit`)."""

    def to_json_obj(self) -> dict[str, Any]:
        """What ``lake-orch write --json`` prints."""
        return {
            "instant": self.instant,
            "action": self.action,
            "operation": self.operation,
            "inserted": self.inserted,
            "updated": self.updated,
            "deleted": self.deleted,
            "files_written": len(self.files_written),
            "index_seconds": round(self.index_seconds, 3),
            "write_seconds": round(self.write_seconds, 3),
            "warnings": list(self.warnings),
        }


def run_tasks_locally(tasks: list[tuple[FileGroupWriteContext, pa.Table]]) -> list[WriteStat]:
    """Run every file-group task in this process (the local engine)."""
    out: list[WriteStat] = []
    for ctx, records in tasks:
        out.extend(write_file_group(records, ctx))
    return out


# -- table creation / validation ------------------------------------------------------------------------------------
def _open_or_create(base_uri: str, data_schema: pa.Schema, options: WriteOptions, storage_options: Any) -> HudiTable:
    try:
        table = HudiTable(base_uri, storage_options=storage_options)
    except TableNotFoundError:
        if not options.table_name:
            raise ValueError(
                f"No table at {base_uri}: a table name (hoodie.table.name) is required to create one"
            ) from None
        if not options.record_key_fields:
            raise ValueError(
                f"No table at {base_uri}: record key field(s) (hoodie.datasource.write.recordkey.field) are required"
            ) from None
        missing = [f for f in (*options.record_key_fields, *options.partition_fields) if f not in data_schema.names]
        if missing:  # checked before anything is created: a failed first write leaves no table behind
            raise ValueError(
                f"Cannot create {base_uri}: key/partition field(s) {missing} are not columns of the data "
                f"(columns: {data_schema.names})"
            ) from None
        user = pa.schema([f for f in data_schema if f.name not in META_FIELDS])
        avro = arrow_to_avro_schema(user, table_name=options.table_name)
        table_props = {k: v for k, v in options.options.items() if k.startswith(TABLE_CONFIG_PREFIX)}
        props = new_table_properties(
            name=options.table_name,
            table_type=options.table_type,
            record_key_fields=options.record_key_fields,
            partition_fields=options.partition_fields,
            precombine_field=options.precombine_field,
            key_generator=options.key_generator,
            hive_style_partitioning=options.hive_style_partitioning,
            payload_class=options.payload_class,
            create_schema=json.dumps(avro, separators=(",", ":")),
            database_name="default",
            extra=table_props,
        )
        table = HudiTable.create(base_uri, props, storage_options=storage_options)
        # hoodie.metadata.enable=true: the new table gets its metadata table at 00000000000000010 (as Java's first
        # write with the metadata table on)
        initialize_if_requested(table, options.options, lock=options.lock)
        return table
    # Java's initTable -> initializeIfNeeded, before the write's instant: a table without a metadata table gets one
    # when hoodie.metadata.enable=true is given (skipped while a data instant is pending); a half-made one is rebuilt
    initialize_if_requested(table, options.options, lock=options.lock)
    table.ensure_metadata_table_handled(options.options, service="this writer")
    _validate(table, options)
    return table


def _validate(table: HudiTable, options: WriteOptions) -> None:
    """Options given for an existing table must agree with its hoodie.properties."""
    cfg = table.config
    checks: list[tuple[str, Any, Any]] = []
    if options.table_name is not None:
        checks.append((HoodieKey.TABLE_NAME.key, options.table_name, cfg.name))
    if options.record_key_fields:
        checks.append(
            (HoodieKey.RECORDKEY_FIELDS.key, ",".join(options.record_key_fields), ",".join(cfg.record_key_fields))
        )
    if options.partition_fields:
        checks.append(
            (HoodieKey.PARTITION_FIELDS.key, ",".join(options.partition_fields), ",".join(cfg.partition_fields))
        )
    if options.precombine_field:
        checks.append((HoodieKey.PRECOMBINE_FIELD.key, options.precombine_field, cfg.precombine_field))
    if any(k in options.options for k in HoodieKey.WRITE_TABLE_TYPE.lookup_keys):
        checks.append((HoodieKey.TABLE_TYPE.key, options.table_type.value, cfg.table_type.value))
    if options.key_generator:
        checks.append(
            (
                HoodieKey.KEYGENERATOR_CLASS.key,
                KEY_GENERATORS.get(options.key_generator, options.key_generator),
                cfg.key_generator_class,
            )
        )
    for key, given, actual in checks:
        if given != actual:
            raise InvalidTablePropertiesError(
                table.storage.uri(table.storage.join(".hoodie", PROPERTIES_FILE)),
                f"write option {key}={given!r} does not match the table's {key}={actual!r}",
            )


# -- the write ---------------------------------------------------------------------------------------------------
def write_table(
    base_uri: str,
    data: pa.Table | Any,
    *,
    operation: WriteOperation | str,
    options: WriteOptions | None = None,
    storage_options: Mapping[str, str] | None = None,
    engine: Engine | None = None,
    instant_time: str | None = None,
    on_conflict: ConflictRollback | None = None,
    rollback_clustering: ClusteringRollback | None = None,
) -> WriteResult:
    """Write ``data`` to the table at ``base_uri`` (created if absent) as one commit.

    Args:
        base_uri: table base path or URI.
        data: a ``pyarrow.Table`` or a Spark DataFrame (collected to Arrow on the driver for tagging).
        operation: bulk_insert, insert, upsert or delete (delete needs only the key and partition columns).
        options: write/table options (:class:`WriteOptions`; Hudi keys via ``WriteOptions.from_hudi_options``).
        storage_options: options for object stores.
        engine: the engine running the file-group tasks (default: in this process, one after the other).
        instant_time: a fixed instant time instead of a new one (the bootstrap's FULL_RECORD commit
            ``00000000000002``); it must sort after every instant of the timeline.
        on_conflict: rolls this write back when another writer committed to the same file groups first (the CLI
            passes the rollback service); without it the losing write is left inflight for ``rollback --stale``.
        rollback_clustering: rolls back a pending clustering whose file groups take updates, with
            ``hoodie.clustering.updates.strategy=SparkAllowUpdateStrategy`` and
            ``hoodie.clustering.rollback.pending.replacecommit.on.conflict=true`` (see
            :mod:`lake_orchestration.hudi.write.clustering_guard`).

    Returns:
        The completed instant with its commit metadata, counts and timings.

    Raises:
        InvalidTablePropertiesError: options disagree with the existing table's ``hoodie.properties``.
        WriteConflictError: another writer committed to the same file groups since this write started (Hudi's
            optimistic concurrency check); nothing of this write is visible.
        ClusteringUpdateError: updates or deletes to file groups under a pending clustering plan, refused as Java's
            default ``SparkRejectUpdateStrategy`` refuses them; nothing is written.
        ValueError: missing key fields, null keys, bad option values.
    """
    op = WriteOperation(operation)
    engine = or_local(engine)
    options = options or WriteOptions()
    # hoodie.parquet.* checked before anything is created or written
    parquet = ParquetWriteConfig.from_options(options.options, service="write", compression=options.compression)
    if not isinstance(data, pa.Table):
        data = data.toArrow()  # a Spark DataFrame
    table = _open_or_create(base_uri, data.schema, options, storage_options)
    cfg = table.config
    data = _with_optional_is_deleted(table, data, op)
    _check_supported(table, data, op)
    records = with_keys(data, cfg)
    if op in (WriteOperation.UPSERT, WriteOperation.DELETE) or options.combine_before_insert:
        records = precombine(records, cfg.ordering_field)
    user_avro = _writer_schema(table, data, op)
    full_avro = with_meta_fields(user_avro) if cfg.populate_meta_fields else user_avro

    def locate(keyed: pa.Table) -> tuple[pa.Table, dict[tuple[str, str], FileSlice]]:
        view = table.fs_view()
        latest = {(s.partition_path, s.file_id): s for s in view.latest_file_slices()}
        # Look keys up in the merged slices: a group under pending compaction keeps its keys in the previous slice
        # (the new slice at the compaction instant is empty until the compaction commits).
        last_commit = table.timeline.latest_completed_commit_time()
        lookup = view.latest_merged_file_slices_before_or_on(str(last_commit)) if last_commit else []
        tagged = _tag(table, keyed, op, lookup)
        return _assign_inserts(table, tagged, op, options, list(latest.values())), latest

    t_index = time.monotonic()
    seen = table.refresh().timeline.instants
    located, latest = locate(records)
    # updates to file groups under pending clustering: refused, or (allow strategy) their clustering rolled back
    if handle_updates(table, located, options.options, pending_clustering_file_groups(table), rollback_clustering):
        seen = table.refresh().timeline.instants
        located, latest = locate(records)
    index_seconds = time.monotonic() - t_index

    action = Action.DELTA_COMMIT if cfg.is_mor else Action.COMMIT
    # The instant is created under the table lock, from file locations that are current: if another writer or
    # service changed the timeline since they were computed (e.g. scheduled a compaction, whose file groups take
    # new log files at its instant), they are computed again inside the lock.
    with table_lock(table, operation="write (instant creation)", config=options.lock):
        if table.timeline.instants != seen:
            located, latest = locate(records)
            handle_updates(table, located, options.options, pending_clustering_file_groups(table))
        instant = InstantTime(instant_time) if instant_time is not None else table.new_instant_time()
        last = table.timeline.commits().last  # (a rollback of a failed bootstrap may sort after 00000000000002)
        if instant_time is not None and last is not None and str(last.time) >= str(instant):
            raise InvalidInstantStateError(
                table.base_uri, str(instant), f"is not after the timeline's last write instant {last.time}"
            )
        requested = table.create_requested(Instant(instant, action, State.REQUESTED))
        # before the lock is released: a stale-write rollback never sees this instant without a heartbeat
        heartbeat = Heartbeat(table.storage, str(instant), interval_ms=options.heartbeat_interval_ms).start()
        # what the file locations were computed from: the conflict check at commit compares against it
        started = table.timeline
    records = located
    section_warnings: list[str] = []
    try:
        groups = _group(records)
        # Java's bulk insert writes an empty inflight (SparkBulkInsertHelper.bulkInsert: Option.empty()), the other
        # operations their workload profile (BaseCommitActionExecutor.saveWorkloadProfileMetadataToInflight).
        profile = b"" if op is WriteOperation.BULK_INSERT else _workload_profile(op, groups, latest).to_bytes()
        inflight = table.transition_to_inflight(requested, profile)
        tasks = _tasks(table, cfg, groups, latest, str(instant), op, options, full_avro, parquet)
        t_write = time.monotonic()
        if engine.in_process:
            stats = run_tasks_locally(tasks)
        else:
            stats = engine.map_record_groups(write_group, tasks, description=f"write {instant}: file groups")
        write_seconds = time.monotonic() - t_write
        by_partition: dict[str, list[WriteStat]] = defaultdict(list)
        for s in stats:
            by_partition[s.partitionPath or ""].append(s)
        md = CommitMetadata(
            partition_to_write_stats=dict(by_partition),
            extra_metadata={"schema": json.dumps(user_avro, separators=(",", ":"))},
            operation_type=op.name,
        )
        # Under the table lock: no rollback of another process can take this instant for a failed one between the
        # check that it is still inflight (transition_to_completed) and the commit; no other writer commits between
        # the conflict check and the commit point.
        conflict: Conflict | None = None
        with commit_section(table, operation=f"write commit {instant}", lock=options.lock) as section:
            conflict = check_write_conflicts(table, inflight, md, started)
            if conflict is None:
                reconcile_markers(table.storage, str(instant), {s.path for s in stats if s.path})
                section.complete(inflight, md.to_bytes())
        section_warnings = section.warnings
    except BaseException:
        heartbeat.stop(delete=False)  # the expiring heartbeat tells the rollback service the writer is gone
        raise
    if conflict is not None:
        _abort_conflicting_write(table, str(instant), conflict, heartbeat, on_conflict)
    # the commit is durable: what follows never turns it into a failure (a retry would duplicate the rows)
    after_commit(
        str(instant), "deleting the markers", lambda: delete_markers(table.storage, str(instant)), section_warnings
    )
    after_commit(str(instant), "deleting the heartbeat", lambda: heartbeat.stop(delete=True), section_warnings)
    ops = records.column(OP_COLUMN).to_numpy(zero_copy_only=False) if records.num_rows else np.array([])
    return WriteResult(
        instant=str(instant),
        action=action.value,
        metadata=md,
        inserted=int((ops == "I").sum()),
        updated=int((ops == "U").sum()),
        deleted=int((ops == "D").sum()),
        files_written=[s.path or "" for s in stats],
        index_seconds=index_seconds,
        write_seconds=write_seconds,
        operation=op.value,
        warnings=section_warnings,
    )


ConflictRollback = Callable[[HudiTable, str], object]
"""Rolls back the pending write instant it is given (e.g. the rollback service's ``rollback_write`` with the write's
options); raises if it cannot. The write layer sits below the services, so the caller hands it in."""


def _abort_conflicting_write(
    table: HudiTable,
    instant: InstantTime,
    conflict: Conflict,
    heartbeat: Heartbeat,
    on_conflict: ConflictRollback | None,
) -> NoReturn:
    """The write ``instant`` lost to ``conflict``: roll it back with ``on_conflict`` (its files deleted, its instant
    removed, a ``.rollback`` on the timeline, as Java's eager rollback of a failed write) and raise
    :class:`WriteConflictError`. Without ``on_conflict``, or if the rollback fails, the write is left inflight with
    its heartbeat stopped: the stale-write rollback takes it once the heartbeat expired."""
    heartbeat.stop(delete=False)
    detail = "" if on_conflict is not None else "no rollback was given to the writer"
    rolled_back = False
    if on_conflict is not None:
        try:
            on_conflict(table, instant)
            rolled_back = True
        except Exception as err:  # the conflict is what the caller must see; the rollback is retried later
            detail = f"its rollback failed: {type(err).__name__}: {err}"
    raise WriteConflictError(
        table_uri=table.base_uri,
        instant=instant,
        other=conflict.describe(),
        file_ids=describe_file_ids(conflict.file_groups),
        rolled_back=rolled_back,
        detail=detail,
    )


_SUPPORTED_KEYGENS = ("SimpleKeyGenerator", "ComplexKeyGenerator", "NonpartitionedKeyGenerator")


def _with_optional_is_deleted(table: HudiTable, data: pa.Table, op: WriteOperation) -> pa.Table:
    """``_hoodie_is_deleted`` is optional, as in Hudi's payloads (a record without it is no delete): rows lacking it
    for a table whose schema has it (a batch with deletes added it) get it as false, typed as in the table, so the
    table's schema is kept and the batch is not refused as missing a column."""
    if op is WriteOperation.DELETE or IS_DELETED_FIELD in data.column_names:
        return data
    existing = table.latest_schema()
    if existing is None or not any(f["name"] == IS_DELETED_FIELD for f in existing["fields"]):
        return data
    field = avro_to_arrow_schema(existing).field(IS_DELETED_FIELD)
    return data.append_column(field, pa.array([False] * data.num_rows, field.type))


def _check_supported(table: HudiTable, data: pa.Table, op: WriteOperation) -> None:
    """Refuse, before any instant exists, writes this writer would get wrong."""
    cfg = table.config
    keygen = (cfg.key_generator_class or "").rsplit(".", 1)[-1]
    if keygen and keygen not in _SUPPORTED_KEYGENS:
        raise ValueError(
            f"{table.base_uri} uses hoodie.table.keygenerator.class={cfg.key_generator_class}: writes support "
            f"{', '.join(_SUPPORTED_KEYGENS)} only (its partition paths would differ from Hudi's)"
        )
    if not cfg.populate_meta_fields:
        raise ValueError(f"{table.base_uri} has hoodie.populate.meta.fields=false: writes need the meta fields")
    if op is WriteOperation.DELETE:
        return
    existing = table.latest_schema()
    if existing is not None:
        needed = [f["name"] for f in existing["fields"] if f["name"] not in META_FIELDS]
        missing = [n for n in needed if n not in data.column_names]
        if missing:
            raise ValueError(
                f"The rows for {table.base_uri} lack the table's column(s) {missing}: an {op.value} writes whole "
                "records (schema evolution is not supported by this writer)"
            )


def _writer_schema(table: HudiTable, data: pa.Table, op: WriteOperation) -> dict[str, Any]:
    existing = table.latest_schema()
    if op is WriteOperation.DELETE and existing is not None:
        # A delete carries only keys: keep the table's schema for the log block header and the commit.
        user = dict(existing)
        user["fields"] = [f for f in existing["fields"] if f["name"] not in META_FIELDS]
        return user
    return arrow_to_avro_schema(
        pa.schema([f for f in data.schema if f.name not in META_FIELDS]), table_name=table.config.name
    )


def _tag(table: HudiTable, records: pa.Table, op: WriteOperation, slices: Sequence[FileSlice]) -> pa.Table:
    """Add ``__lo_op`` (I/U/D) and ``__lo_file_id`` (found location or empty)."""
    n = records.num_rows
    is_del = deleted_mask(records, all_deleted=op is WriteOperation.DELETE)
    fids: pa.Array = constant_strings("", n)
    located = np.zeros(n, dtype=bool)
    if op in (WriteOperation.UPSERT, WriteOperation.DELETE) and n and slices:
        latest = table.timeline.latest_completed_commit_time()
        flt = InstantFilter.from_timeline(table.timeline, latest_instant=str(latest) if latest else None)
        parts = records.column(PARTITION_PATH).combine_chunks()
        keys = records.column(RECORD_KEY).combine_chunks()
        incoming = {p: pc.unique(keys.filter(pc.equal(parts, p))) for p in pc.unique(parts).to_pylist()}
        found = tag_locations(table.storage, slices, flt, incoming)
        if found.num_rows:
            probe = pc.binary_join_element_wise(found.column("p"), found.column("k"), "\x00")
            mine = pc.binary_join_element_wise(parts, keys, "\x00")
            pos = pc.index_in(mine, value_set=probe)
            located = pos.is_valid().to_numpy(zero_copy_only=False)
            fids = pc.fill_null(found.column("f").take(pos), "")
    ops = np.where(located, np.where(is_del, "D", "U"), "I")
    keep = located | ~is_del  # deletes of unknown keys are dropped
    out = records.append_column(OP_COLUMN, pa.array(ops, pa.string())).append_column(FILE_ID_COLUMN, fids)
    return out.filter(pa.array(keep)) if not keep.all() else out


def _assign_inserts(
    table: HudiTable, records: pa.Table, op: WriteOperation, options: WriteOptions, slices: Sequence[FileSlice]
) -> pa.Table:
    """Give every insert a file id: small file groups first (``UpsertPartitioner``), then new file groups.

    Inserts fill the small files of their partition in arrival order; the rest are sorted by key (bulk_insert's
    sort) and cut into new file groups of ``max_rows_per_file``. The rows of new file groups are returned in key
    order (so the file-group task need not sort them again); every other row keeps its place.
    """
    n = records.num_rows
    if n == 0:
        return records
    ops = records.column(OP_COLUMN).to_numpy(zero_copy_only=False)
    ins = np.flatnonzero(ops == "I")
    if not len(ins):
        return records
    codes, partitions = _codes(records.column(PARTITION_PATH).take(pa.array(ins)))
    by_part = np.argsort(codes, kind="stable")  # arrival order within each partition
    starts = np.flatnonzero(np.r_[True, np.diff(codes[by_part]) != 0])
    ends = np.r_[starts[1:], len(by_part)]
    small = _small_files(table, slices, options) if op is not WriteOperation.BULK_INSERT else {}
    keys = records.column(RECORD_KEY)
    group_of = np.full(n, -1, dtype=np.int32)  # index into ``names`` per row; -1 keeps the tagged location
    names: list[str] = []
    new_rows: list[np.ndarray] = []
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        idx = ins[by_part[s:e]]
        p = partitions[int(codes[by_part[s]])]
        pos = 0
        for fid, capacity in small.get(p, []):
            take = idx[pos : pos + capacity]
            group_of[take] = len(names)
            names.append(fid)
            pos += len(take)
            if pos >= len(idx):
                break
        rest = idx[pos:]
        if len(rest):
            rest = rest[pc.sort_indices(keys.take(pa.array(rest))).to_numpy()]  # bulk_insert sorts by key
            for g in range(0, len(rest), options.max_rows_per_file):
                group_of[rest[g : g + options.max_rows_per_file]] = len(names)
                names.append(new_file_id())
            new_rows.append(rest)
    assigned = group_of >= 0
    new_fids = pa.DictionaryArray.from_arrays(
        pa.array(np.where(assigned, group_of, 0), pa.int32()), pa.array(names, pa.string())
    ).dictionary_decode()
    fids = pc.if_else(pa.array(assigned), new_fids, records.column(FILE_ID_COLUMN).combine_chunks())
    out = records.set_column(records.schema.get_field_index(FILE_ID_COLUMN), FILE_ID_COLUMN, fids)
    if new_rows:  # the place of each row in its file group (see _group): new groups in key order
        moved = np.concatenate(new_rows)
        stay = np.ones(n, dtype=bool)
        stay[moved] = False
        place = np.empty(n, dtype=np.int64)
        place[np.concatenate([np.flatnonzero(stay), moved])] = np.arange(n, dtype=np.int64)
        out = out.append_column(ORDER_COLUMN, pa.array(place))
    return out


def _codes(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Dictionary codes of a string column and its distinct values."""
    enc = pc.dictionary_encode(values)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.unify_dictionaries().combine_chunks() if enc.num_chunks != 1 else enc.chunk(0)
    return enc.indices.to_numpy(zero_copy_only=False), enc.dictionary.to_pylist()


def _small_files(
    table: HudiTable, slices: Sequence[FileSlice], options: WriteOptions
) -> dict[str, list[tuple[str, int]]]:
    """Partition -> [(file id, rows it can still take)] for base files below ``hoodie.parquet.small.file.limit``.

    On MERGE_ON_READ only slices without log files count (Hudi, when the index cannot index log files); such a
    group is rewritten into a new base file, not appended to (:func:`_small_file_corrections`).
    """
    out: dict[str, list[tuple[str, int]]] = defaultdict(list)
    in_clustering = pending_clustering_file_groups(table)  # UpsertPartitioner#filterSmallFilesInClustering
    for s in slices:
        bf = s.base_file
        if bf is None or (s.partition_path, s.file_id) in in_clustering or not _is_small_file(table, s, options):
            continue
        rows = table.storage.open_parquet(table.storage.join(bf.relative_path)).metadata.num_rows
        if rows <= 0:
            continue
        avg = max(bf.size / rows, 1.0)
        capacity = min(int((options.max_file_size - bf.size) / avg), options.max_rows_per_file - rows)
        if capacity > 0:
            out[s.partition_path].append((s.file_id, capacity))
    return out


def _is_small_file(table: HudiTable, s: FileSlice, options: WriteOptions) -> bool:
    """A small-file candidate (``UpsertPartitioner.getSmallFiles``; on MERGE_ON_READ
    ``SparkUpsertDeltaCommitPartitioner``, index that cannot index log files): a base file below
    ``hoodie.parquet.small.file.limit`` and, on MERGE_ON_READ, no log files."""
    bf = s.base_file
    if options.small_file_limit <= 0 or bf is None or bf.size >= options.small_file_limit:
        return False
    return not (table.config.is_mor and s.log_files)


def _small_file_corrections(
    table: HudiTable,
    groups: Mapping[tuple[str, str], pa.Table],
    latest: Mapping[tuple[str, str], FileSlice],
    options: WriteOptions,
) -> set[tuple[str, str]]:
    """MERGE_ON_READ file groups this write rewrites into a new base file instead of appending a log block: the
    small-file candidates of every partition with inserts (``UpsertPartitioner.getSmallFileIds``), as
    ``BaseSparkDeltaCommitActionExecutor.handleUpdate`` does when the index cannot index log files. Appended to a
    log instead, inserts would live only in a log file, where Java's bloom and simple indexes never look: Java's
    next upsert of those keys would insert them a second time (a duplicate row in every read)."""
    with_inserts = {p for (p, _), recs in groups.items() if pc.any(pc.equal(recs.column(OP_COLUMN), "I")).as_py()}
    return {
        (p, fid)
        for (p, fid), s in latest.items()
        if p in with_inserts and (p, fid) in groups and _is_small_file(table, s, options)
    }


def _group(records: pa.Table) -> dict[tuple[str, str], pa.Table]:
    """The rows of each (partition, file id), groups in that order; rows within a group in ``__lo_order``
    (when assigned) or else in their order. One ``take`` of the whole table."""
    n = records.num_rows
    if n == 0:
        return {}
    pcodes, pnames = _codes(records.column(PARTITION_PATH))
    fcodes, fnames = _codes(records.column(FILE_ID_COLUMN))
    group = _sorted_rank(pnames)[pcodes] * len(fnames) + _sorted_rank(fnames)[fcodes]
    if ORDER_COLUMN in records.column_names:
        order = np.lexsort((records.column(ORDER_COLUMN).to_numpy(), group))
    else:
        order = np.argsort(group, kind="stable")
    ordered = records.take(pa.array(order))
    group = group[order]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    ends = np.r_[starts[1:], n]
    out = {}
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        first = int(order[s])
        out[(pnames[int(pcodes[first])], fnames[int(fcodes[first])])] = ordered.slice(s, e - s)
    return out


def _sorted_rank(names: list[str]) -> np.ndarray:
    """Rank of each name in Python string order (code points, = UTF-8 byte order)."""
    rank = np.empty(len(names), dtype=np.int64)
    rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names), dtype=np.int64)
    return rank


def _workload_profile(
    op: WriteOperation, groups: Mapping[tuple[str, str], pa.Table], latest: Mapping[tuple[str, str], FileSlice]
) -> CommitMetadata:
    """The inflight file's content: inserts per partition, updates per existing file group."""
    profile = CommitMetadata(operation_type=op.name)
    inserts: dict[str, int] = defaultdict(int)
    for (p, fid), t in groups.items():
        ops = t.column(OP_COLUMN).to_numpy(zero_copy_only=False)
        if (p, fid) in latest:
            profile.partition_to_write_stats.setdefault(p, []).append(
                WriteStat(
                    fileId=fid, prevCommit=str(latest[(p, fid)].base_instant), numUpdateWrites=int((ops != "I").sum())
                )
            )
        else:
            inserts[p] += t.num_rows
    for p, n in inserts.items():
        profile.partition_to_write_stats.setdefault(p, []).insert(0, WriteStat(numInserts=n))
    return profile


def _tasks(
    table: HudiTable,
    cfg: TableConfig,
    groups: Mapping[tuple[str, str], pa.Table],
    latest: Mapping[tuple[str, str], FileSlice],
    instant: InstantTime,
    op: WriteOperation,
    options: WriteOptions,
    full_avro: dict[str, Any],
    parquet: ParquetWriteConfig,
) -> list[tuple[FileGroupWriteContext, pa.Table]]:
    schema_json = json.dumps(full_avro, separators=(",", ":"))
    base = FileGroupWriteContext(
        base_uri=table.base_uri,
        storage_options=table.storage.options,
        instant=instant,
        is_mor=cfg.is_mor,
        partition_path="",
        file_id="",
        avro_schema_json=schema_json,
        ordering_field=cfg.ordering_field,
        merge_semantics=cfg.merge_semantics.value,
        operation=op.name,
        compression=options.compression,
        parquet_block_size=parquet.block_size,
        parquet_page_size=parquet.page_size,
        parquet_dictionary_enabled=parquet.dictionary_enabled,
        # a single key field is unique like _hoodie_record_key: no dictionary (parquet-mr would fall back anyway)
        unique_columns=tuple(cfg.record_key_fields) if len(cfg.record_key_fields) == 1 else (),
        max_rows_per_file=options.max_rows_per_file,
    )
    merge_base = _small_file_corrections(table, groups, latest, options) if cfg.is_mor else set()
    out = []
    for n, ((p, fid), recs) in enumerate(groups.items()):
        s = latest.get((p, fid))
        ctx = replace(
            base,
            partition_path=p,
            file_id=fid,
            merge_base=(p, fid) in merge_base,
            base_instant=str(s.base_instant) if s is not None else None,
            base_file_name=s.base_file.name if s is not None and s.base_file is not None else None,
            base_bootstrap_source=s.base_file.bootstrap_source if s is not None and s.base_file is not None else None,
            attempt=TaskAttempt(n, 1, n),
        )
        out.append((ctx, recs))
    return out
