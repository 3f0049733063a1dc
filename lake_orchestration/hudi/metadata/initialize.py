"""Initialising a table's metadata table (its ``files`` partition) from a storage listing, as Java Hudi 0.15 does when a
writer with ``hoodie.metadata.enable=true`` finds none (``HoodieBackedTableMetadataWriter.initializeIfNeeded`` ->
``initializeFromFilesystem``; docs/reference/metadata-table-format.md, "Initialisation", has every fact and its
source).

Steps, under the data table's lock:

1. **Conditions** (``anyPendingDataInstant``): no data instant may be pending (requested or inflight, any action but
   ``indexing``); otherwise nothing is written and the action goes on without a metadata table (Java logs "Cannot
   initialize metadata table as operation(s) are in progress on the dataset" and does the same).
2. **The instant**: the data timeline's latest completed instant ``L`` (any action), ``00000000000000`` when none,
   plus ``010`` (``createIndexInitTimestamp(L, 0)``).
3. **The listing** (``listAllPartitionsFromFilesystem``): every partition (a folder holding
   ``.hoodie_partition_metadata``), each data file (base or log file) whose instant in its name (a log file's base
   instant) is at or before ``L``.
4. **A half-made metadata table is removed**: ``.hoodie/metadata`` while ``hoodie.table.metadata.partitions`` does
   not list ``files`` (a crash of an earlier initialisation before step 7: no reader uses it), or the property
   listing ``files`` while ``.hoodie/metadata`` is gone (the property is cleared first, so readers list storage).
5. **The metadata table** (``initializeMetaClient``, ``initializeFileGroups``): its ``hoodie.properties`` (what
   Java writes, byte for byte but the date), ``files/.hoodie_partition_metadata``, the log file
   ``.files-0000-0_<I>.log.1_0-0-0`` holding an empty DELETE_BLOCK (80 bytes for a 17-digit ``L``).
6. **The bulk commit** (``bulkCommit``): ``<I>.deltacommit.requested`` and ``.inflight`` (both empty), a CREATE
   marker, the base HFile ``files-0000-0_1-0-1_<I>.hfile`` (the partition-list record and one file-list record per
   partition, the same bytes Java writes for them), ``<I>.deltacommit`` (operation ``BULK_INSERT``), markers deleted.
7. **Last**, the data table's ``hoodie.properties``: ``hoodie.table.metadata.partitions=files`` and
   ``hoodie.table.metadata.partitions.inflight=`` (``setMetadataPartitionState``), rewritten as every property change
   is (:meth:`HudiTable.update_properties`). From here readers list through the metadata table and every action
   updates it.

A crash before step 7 leaves a metadata table no reader uses (the property does not name it); the next
initialisation removes it and starts again (step 4).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InvalidFileNameError, MetadataTableError
from lake_orchestration.hudi.log.writer import delete_block
from lake_orchestration.hudi.metadata.records import (
    FILES_PARTITION,
    MetadataRecord,
    partition_files_record,
    partition_identifier,
    partition_list_record,
)
from lake_orchestration.hudi.metadata.table_services import base_hfile
from lake_orchestration.hudi.metadata.writer import (
    FILES_FILE_ID,
    METADATA_TABLE_DIR,
    java_hash_map_order,
    metadata_record_schema,
    metadata_table,
)
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, RuntimeStats, WriteStat
from lake_orchestration.hudi.model.file_group import (
    UNKNOWN_WRITE_TOKEN,
    BaseFile,
    LogFile,
    is_base_file_name,
    is_log_file_name,
)
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.model.properties import format_properties
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
from lake_orchestration.hudi.table.marker import create_marker, delete_markers

log = logging.getLogger(__name__)

SOLO_COMMIT_TIMESTAMP = "00000000000000"
"""``HoodieTableMetadata.SOLO_COMMIT_TIMESTAMP``: the initialisation's ``L`` on a table without completed instants."""
PARTITION_INITIALIZATION_SUFFIX = 10
"""``HoodieTableMetadataUtil.PARTITION_INITIALIZATION_TIME_SUFFIX``: ``createIndexInitTimestamp(L, n)`` is
``L`` + ``%03d`` of ``10 + n``."""
LOG_WRITE_TOKEN = "0-0-0"
"""``HoodieLogFormat.DEFAULT_WRITE_TOKEN``: the token of the file group's first (empty) log file."""
INIT_OPERATION = "BULK_INSERT"
"""The operation of the initialising deltacommit (Java-written file: ``bulkInsertPreppedRecords``)."""
METADATA_TABLE_NAME_SUFFIX = "_metadata"
"""``HoodieTableMetadata.METADATA_TABLE_NAME_SUFFIX``."""


def metadata_table_properties(data_table_name: str) -> dict[str, str]:
    """The metadata table's ``hoodie.properties`` as ``initializeMetaClient`` writes it (Java 0.15-written file; the
    checksum is added by :meth:`HudiTable.create`)."""
    return {
        HoodieKey.PAYLOAD_CLASS.key: "org.apache.hudi.metadata.HoodieMetadataPayload",
        HoodieKey.TABLE_TYPE.key: "MERGE_ON_READ",
        HoodieKey.ARCHIVELOG_FOLDER.key: "archived",
        HoodieKey.TIMELINE_LAYOUT_VERSION.key: "1",
        HoodieKey.DROP_PARTITION_COLUMNS.key: "false",
        HoodieKey.RECORDKEY_FIELDS.key: "key",
        HoodieKey.TABLE_NAME.key: data_table_name + METADATA_TABLE_NAME_SUFFIX,
        HoodieKey.RECORD_MERGER_STRATEGY.key: "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
        HoodieKey.POPULATE_META_FIELDS.key: "false",
        HoodieKey.KEYGENERATOR_CLASS.key: "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator",
        HoodieKey.BASE_FILE_FORMAT.key: "HFILE",
        HoodieKey.TABLE_VERSION.key: "6",
    }


@dataclass(frozen=True)
class MetadataInit:
    """What :func:`initialize_metadata_table` did (or, on a dry run, would do)."""

    table: str
    instant: str | None
    """The initialising MDT deltacommit (``<L>010``); None when skipped."""
    partitions: int = 0
    files: int = 0
    base_file: str | None = None
    """Relative to the metadata table (``files/files-0000-0_1-0-1_<I>.hfile``)."""
    removed: tuple[str, ...] = ()
    """What a half-made metadata table left and was (or would be) removed first."""
    skipped: str | None = None
    """Why nothing was written (a pending data instant; already initialised)."""
    dry_run: bool = False
    pending: tuple[str, ...] = field(default=())
    """The pending data instants that blocked the initialisation."""

    @property
    def initialized(self) -> bool:
        return self.skipped is None and not self.dry_run

    def to_json_obj(self) -> dict[str, object]:
        return {
            "table": self.table,
            "instant": self.instant,
            "partitions": self.partitions,
            "files": self.files,
            "base_file": self.base_file,
            "removed": list(self.removed),
            "skipped": self.skipped,
            "pending": list(self.pending),
            "dry_run": self.dry_run,
        }


# -- the pure parts ---------------------------------------------------------------------------------------------
def initialization_instant(latest_completed: str | None) -> str:
    """``createIndexInitTimestamp(L, 0)``: ``L`` (the latest completed data instant, ``00000000000000`` when none)
    followed by ``010``."""
    return f"{latest_completed or SOLO_COMMIT_TIMESTAMP}{PARTITION_INITIALIZATION_SUFFIX:03d}"


def file_instant(name: str) -> str | None:
    """``FSUtils.getCommitTime``: the instant in a data file's name (a log file's base instant); None for a name
    that is neither a base nor a log file."""
    try:
        if is_log_file_name(name):
            return str(LogFile.parse(name).base_instant)
        if is_base_file_name(name):
            return str(BaseFile.parse(name).instant)
    except InvalidFileNameError:
        return None
    return None


def files_to_index(entries: Mapping[str, int], max_instant: str) -> dict[str, int]:
    """``DirectoryInfo``: of a partition's files (name -> size), the data files whose instant is at or before
    ``max_instant`` (the other files -- partition metafile, ``.crc``, unknown names -- are not data files)."""
    out: dict[str, int] = {}
    for name, size in sorted(entries.items()):
        t = file_instant(name)
        if t is not None and t <= max_instant:
            out[name] = size
    return out


def initial_records(listing: Mapping[str, Mapping[str, int]]) -> list[MetadataRecord]:
    """``initializeFilesPartition``: the partition-list record of every partition and one file-list record per
    partition (``createPartitionFilesRecord``), map entries in Java's ``HashMap`` order, sorted by key (the base
    HFile's order).

    Raises:
        MetadataTableError: a listed file has size 0 (Java's ``checkState(fileSize > 0)`` fails the same way).
    """
    partitions = list(listing)
    plist = partition_list_record(partitions)
    fsm = plist.filesystem_metadata or {}
    records = [MetadataRecord(plist.key, plist.type, {k: fsm[k] for k in java_hash_map_order(fsm)})]
    for partition, files in listing.items():
        try:
            rec = partition_files_record(partition, files)
        except ValueError as err:
            raise MetadataTableError(partition_identifier(partition), str(err)) from err
        entries = rec.filesystem_metadata or {}
        records.append(MetadataRecord(rec.key, rec.type, {k: entries[k] for k in java_hash_map_order(entries)}))
    return sorted(records, key=lambda r: r.key.encode())


def pending_data_instants(table: HudiTable) -> list[Instant]:
    """``anyPendingDataInstant``: the data instants not completed, ``indexing`` left out."""
    return [i for i in table.timeline.instants if not i.is_completed and i.action is not Action.INDEXING]


def needs_initialization(table: HudiTable) -> bool:
    """True unless ``hoodie.table.metadata.partitions`` lists ``files`` and ``.hoodie/metadata`` holds a table
    (Java's ``metadataTableExists``)."""
    return FILES_PARTITION not in table.metadata_partitions() or not table.metadata_table_exists()


def metadata_enable_requested(options: Mapping[str, str] | None) -> bool:
    """True when ``options`` set ``hoodie.metadata.enable=true`` explicitly (this project initialises a metadata
    table only when asked: its writers' default keeps a table without one as it is)."""
    return str((options or {}).get(HoodieKey.METADATA_ENABLE.key, "")).strip().lower() == "true"


# -- the initialisation -----------------------------------------------------------------------------------------
def initialize_if_requested(
    table: HudiTable, options: Mapping[str, str] | None, *, lock: LockConfig | None = None
) -> MetadataInit | None:
    """The hook at the start of a write (Java: ``BaseHoodieWriteClient.initTable`` -> ``initMetadataTable`` ->
    ``initializeIfNeeded``): when ``options`` set ``hoodie.metadata.enable=true`` and the table has no metadata
    table, initialise it (skipped, with a warning, while a data instant is pending: the write goes on without
    one). Returns what was done, None when nothing was asked or needed."""
    if not metadata_enable_requested(options) or not needs_initialization(table):
        return None
    done = initialize_metadata_table(table, lock=lock)
    return done


def initialize_metadata_table(
    table: HudiTable, *, dry_run: bool = False, lock: LockConfig | None = None
) -> MetadataInit:
    """Initialise the ``files`` partition of ``table``'s metadata table from a storage listing (module docstring),
    under the table lock. Nothing is written when the table already has one, when a data instant is pending, or
    on a dry run (the result says what would be written).

    Raises:
        MetadataTableError: a listed data file is empty; the metadata table cannot be written.
        TableLockedError: another process holds the table lock past the wait time.
    """
    with table_lock(table, operation="metadata table initialisation", config=lock):
        table.refresh()
        if not needs_initialization(table):
            return MetadataInit(table.base_uri, None, skipped="already initialised", dry_run=dry_run)
        pending = pending_data_instants(table)
        if pending:
            names = tuple(i.file_name for i in pending)
            log.warning(
                "Cannot initialize the metadata table of %s: instant(s) in progress on the table %s (as Java, "
                "it is initialised by a later action when none is pending)",
                table.base_uri,
                list(names),
            )
            return MetadataInit(
                table.base_uri, None, skipped="data instants are pending", dry_run=dry_run, pending=names
            )
        last = table.timeline.completed().last
        latest = str(last.time) if last is not None else None
        instant = initialization_instant(latest)
        listing = {
            p: files_to_index({f.name: f.size for f in entries if not f.is_dir}, latest or SOLO_COMMIT_TIMESTAMP)
            for p, entries in table.partition_listing().items()
        }
        records = initial_records(listing)
        removed = _leftovers(table)
        base_name = f"{FILES_FILE_ID}_{UNKNOWN_WRITE_TOKEN}_{instant}.hfile"
        result = MetadataInit(
            table.base_uri,
            instant,
            partitions=len(listing),
            files=sum(len(f) for f in listing.values()),
            base_file=f"{FILES_PARTITION}/{base_name}",
            removed=removed,
            dry_run=dry_run,
        )
        if dry_run:
            return result
        _remove_half_made(table, removed)
        mdt = _create_metadata_table(table, instant)
        _bulk_commit(mdt, instant, base_name, records)
        # last: from here readers list through the metadata table (setMetadataPartitionState)
        table.update_properties(
            {HoodieKey.METADATA_PARTITIONS.key: FILES_PARTITION, HoodieKey.METADATA_PARTITIONS_INFLIGHT.key: ""}
        )
        table.refresh()
        log.info(
            "Initialised the metadata table of %s at %s: %d partitions, %d files",
            table.base_uri,
            instant,
            result.partitions,
            result.files,
        )
        return result


def _leftovers(table: HudiTable) -> tuple[str, ...]:
    """What a half-made metadata table left: the folder (not listed by the property) or the stale property."""
    out = []
    if table.metadata_partitions():
        out.append(
            f"{HoodieKey.METADATA_PARTITIONS.key}={','.join(table.metadata_partitions())} "
            "(no metadata table in .hoodie/metadata)"
        )
    if table.metadata_table_exists() or table.storage.exists(table.storage.join(METADATA_TABLE_DIR)):
        out.append(table.storage.uri(table.storage.join(METADATA_TABLE_DIR)))
    return tuple(out)


def _remove_half_made(table: HudiTable, removed: tuple[str, ...]) -> None:
    """Clear a stale property first (readers list storage from here), then delete whatever ``.hoodie/metadata``
    holds (always: a crash may have left files without a ``hoodie.properties``): no reader uses it, since the
    property does not name it."""
    keys = (HoodieKey.METADATA_PARTITIONS.key, HoodieKey.METADATA_PARTITIONS_INFLIGHT.key)
    if any((table.config.raw.get(k) or "").strip() for k in keys):
        table.update_properties({}, remove=keys)
    if removed:
        log.warning("Removing the half-made metadata table of %s before initialising it: %s", table.base_uri, removed)
    table.storage.delete_dir(table.storage.join(METADATA_TABLE_DIR))
    table.refresh()


def _create_metadata_table(table: HudiTable, instant: str) -> HudiTable:
    """``initializeMetaClient`` and ``initializeFileGroups``: the MDT's ``hoodie.properties``, its ``files``
    partition metafile and the file group's first log file (an empty DELETE_BLOCK at the instant)."""
    name = table.config.name
    if not name:
        raise MetadataTableError(
            table.base_uri,
            f"{HoodieKey.TABLE_NAME.key} is not set: the metadata table is named after it (<name>_metadata)",
        )
    mdt = HudiTable.create(
        table.storage.uri(table.storage.join(METADATA_TABLE_DIR)),
        metadata_table_properties(name),
        storage_options=table.storage.options,
    )
    storage = mdt.storage
    text = format_properties({"commitTime": instant, "partitionDepth": "1"})
    text = "#partition metadata\n" + text.split("\n", 1)[1]
    storage.create_if_absent(storage.join(FILES_PARTITION, ".hoodie_partition_metadata"), text.encode("latin-1"))
    first_log = LogFile(FILES_FILE_ID, InstantTime(instant), 1, LOG_WRITE_TOKEN, partition_path=FILES_PARTITION)
    storage.create_if_absent(storage.join(FILES_PARTITION, first_log.name), delete_block([], instant=instant))
    return mdt


def _bulk_commit(mdt: HudiTable, instant: str, base_name: str, records: list[MetadataRecord]) -> None:
    """``bulkCommit``: the deltacommit ``instant`` writing the records as the file group's base HFile."""
    start = time.monotonic()
    storage = mdt.storage
    requested = mdt.create_requested(Instant(InstantTime(instant), Action.DELTA_COMMIT, State.REQUESTED))
    inflight = mdt.transition_to_inflight(requested, b"")
    create_marker(storage, InstantTime(instant), FILES_PARTITION, base_name, "CREATE")
    content = base_hfile(records, base_name)
    storage.create_if_absent(storage.join(FILES_PARTITION, base_name), content)
    stat = WriteStat(
        fileId=FILES_FILE_ID,
        path=f"{FILES_PARTITION}/{base_name}",
        prevCommit="null",
        numWrites=len(records),
        numInserts=len(records),
        totalWriteBytes=len(content),
        partitionPath=FILES_PARTITION,
        fileSizeInBytes=len(content),
        runtimeStats=RuntimeStats(totalCreateTime=int((time.monotonic() - start) * 1000)),
    )
    metadata = CommitMetadata(
        partition_to_write_stats={FILES_PARTITION: [stat]},
        extra_metadata={"schema": metadata_record_schema()},
        operation_type=INIT_OPERATION,
    )
    mdt.transition_to_completed(inflight, metadata.to_bytes())
    try:
        delete_markers(storage, instant)
    except Exception as err:  # the commit stands; leftover markers are ignored by readers
        log.warning("MDT deltacommit %s is committed, deleting its markers failed: %s", instant, err)


__all__ = [
    "MetadataInit",
    "file_instant",
    "files_to_index",
    "initial_records",
    "initialization_instant",
    "initialize_if_requested",
    "initialize_metadata_table",
    "metadata_enable_requested",
    "metadata_table",
    "metadata_table_properties",
    "needs_initialization",
    "pending_data_instants",
]
