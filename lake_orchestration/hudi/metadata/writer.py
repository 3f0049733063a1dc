"""Writing the metadata table's ``files`` partition the way Java Hudi 0.15 (table version 6) does: one deltacommit of
``.hoodie/metadata`` at the **same instant time** as the data-table action it records, written before the data
instant completes (``HoodieBackedTableMetadataWriter.update`` -> ``processAndCommit`` -> ``commitInternal``).

One MDT deltacommit is: ``<t>.deltacommit.requested`` (empty) -> ``<t>.deltacommit.inflight`` (the workload
profile) -> an APPEND marker and a **new log file** of the ``files-0000-0`` file group (next version on its latest
slice) holding one HFILE_DATA_BLOCK (header INSTANT_TIME, SCHEMA) -> ``<t>.deltacommit`` (HoodieCommitMetadata,
operation ``UPSERT_PREPPED``) -> the marker folder deleted. The records, their HFile and the log block are what
Java writes, byte for byte (docs/reference/metadata-table-format.md has every fact and its source).

What changes the ``files`` partition comes from the data action's metadata, as Java's
``HoodieTableMetadataUtil.convertMetadataToRecords`` derives it: :func:`update_from_commit`,
:func:`update_from_clean`, :func:`update_from_rollback`.

The MDT compaction (``<t>001``), clean and archival are in :mod:`~.table_services`, the initialisation (``<L>010``)
in :mod:`~.initialize`. Not here yet: the other MDT partitions (``column_stats``, ``bloom_filters``,
``record_index``: refused).
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from lake_orchestration.errors import FileAlreadyExistsError, MetadataTableError
from lake_orchestration.hudi.hfile import Compression, HFileWriter, HFileWriterOptions
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlock, LogBlockType, encode_block, iter_blocks
from lake_orchestration.hudi.log.writer import rollback_command_block, write_log_file
from lake_orchestration.hudi.metadata.records import (
    FILES_PARTITION,
    NON_PARTITIONED_NAME,
    SCHEMA_FILE_INFO_KEY,
    FileInfo,
    MetadataRecord,
    MetadataRecordType,
    encode_value,
    partition_files_record,
    partition_identifier,
    writer_schema_text,
)
from lake_orchestration.hudi.metadata.records import RECORDKEY_PARTITION_LIST as PARTITION_LIST_KEY
from lake_orchestration.hudi.model.avro import (
    CleanMetadata,
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
)
from lake_orchestration.hudi.model.avro.schema import schema_text
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, RuntimeStats, WriteStat
from lake_orchestration.hudi.model.file_group import UNKNOWN_WRITE_TOKEN, FileSlice, LogFile, is_log_file_name
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.model.properties import HoodieKey
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.marker import create_marker, delete_markers
from lake_orchestration.io.hadoop_paths import qualified_path

log = logging.getLogger(__name__)

METADATA_TABLE_DIR = ".hoodie/metadata"
"""``HoodieTableMetaClient.METADATA_TABLE_FOLDER_PATH`` under the data table's base path."""
FILES_FILE_ID = "files-0000-0"
"""The files partition's one file group (``getFileIDForFileGroup(FILES, 0)``: prefix ``files-0000``, index 0)."""
HFILE_BLOCK_SIZE = 1024 * 1024
"""``HoodieHFileDataBlock.DEFAULT_BLOCK_SIZE``."""
HFILE_COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
"""The comparator class a Java-written MDT log block's HFile names in its trailer."""
HFILE_GZIP_OS_BYTE = 255
"""The gzip header's OS byte in a Java 0.15-written MDT block (Hadoop 3's ``BuiltInGzipCompressor``: unknown)."""
MDT_OPERATION = "UPSERT_PREPPED"
"""The operation of every MDT deltacommit after the initial one (``upsertPreppedRecords``)."""
SUPPORTED_PARTITIONS = frozenset({FILES_PARTITION})


def metadata_record_schema() -> str:
    """``HoodieMetadataRecord.getClassSchema().toString()``: the ``schema`` of an MDT deltacommit's extraMetadata."""
    return schema_text("HoodieMetadataRecord")


# -- what changes: HoodieTableMetadataUtil.convertMetadataToRecords ------------------------------------------------
@dataclass(frozen=True)
class FilesPartitionUpdate:
    """What one data-table action changes in the ``files`` partition.

    Partition names are relative partition paths (``""`` for a non-partitioned table). The dicts and lists are in
    the order in which Java's map of each record receives the entries (it decides the order of colliding entries
    on disk, :func:`java_hash_map_order`).
    """

    files_added: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Partition -> file name -> size in bytes (> 0)."""
    files_deleted: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Partition -> names of files deleted (cleaned)."""
    partitions_added: Sequence[str] | None = None
    """Keys the ``__all_partitions__`` record lists as present (partition identifiers: ``"."`` for ``""``); None:
    no partition-list record (a clean without deleted partitions, a rollback)."""
    partitions_deleted: Sequence[str] = ()
    """Keys the ``__all_partitions__`` record flags deleted (a clean passes the partition names unmapped)."""


def update_from_commit(metadata: CommitMetadata) -> FilesPartitionUpdate:
    """``convertMetadataToFilesPartitionRecords(HoodieCommitMetadata)``: every partition of the write stats is
    (re-)added to the partition list; each stat's file with its ``fileSizeInBytes`` (the largest when a file appears
    twice); stats without a path are skipped. A ``DELETE_PARTITION`` replacecommit flags its replaced partitions
    deleted.

    The files come in the **reverse** of the write stats' order: measured on Java-written blocks of deltacommits
    and compaction commits (colliding entries on disk are in reverse write-stat order; a clean's are in
    ``deletePathPatterns`` order)."""
    added: dict[str, dict[str, int]] = {}
    for partition, stats in metadata.partition_to_write_stats.items():
        files: dict[str, int] = {}
        for stat in reversed(stats):
            if stat.path is None:
                log.warning("Write stat without a path in partition %r: not in the metadata table", partition)
                continue
            name = _file_name(stat.path, partition)
            files[name] = max(files.get(name, stat.fileSizeInBytes), stat.fileSizeInBytes)
        added[partition] = files
    deleted: list[str] = []
    if metadata.partition_to_replace_file_ids is not None and metadata.operation_type == "DELETE_PARTITION":
        deleted = [partition_identifier(p) for p in metadata.partition_to_replace_file_ids]
    return FilesPartitionUpdate(
        files_added=added, partitions_added=[partition_identifier(p) for p in added], partitions_deleted=deleted
    )


def update_from_clean(metadata: CleanMetadata) -> FilesPartitionUpdate:
    """``convertMetadataToFilesPartitionRecords(HoodieCleanMetadata)``: the ``deletePathPatterns`` (file names) of
    each partition are flagged deleted; partitions the clean deleted (``isPartitionDeleted``) flagged deleted in the
    partition list."""
    deleted = {p: list(pm.delete_path_patterns) for p, pm in metadata.partition_metadata.items()}
    gone = [p for p, pm in metadata.partition_metadata.items() if pm.is_partition_deleted]
    return FilesPartitionUpdate(files_deleted=deleted, partitions_added=[] if gone else None, partitions_deleted=gone)


def update_from_rollback(metadata: RollbackMetadata) -> FilesPartitionUpdate:
    """``convertMetadataToRollbackRecords`` (0.15): only files a rollback *adds* -- its rollback-block log files
    (``rollbackLogFiles``) and the log files of the failed commit (``logFilesFromFailedCommit``), the larger size
    when both name a file. What the rolled-back instant added to the MDT is undone by rolling back that MDT
    deltacommit itself (not done here yet)."""
    added: dict[str, dict[str, int]] = {}
    for pm in metadata.partition_metadata.values():
        if not pm.rollback_log_files:
            continue
        files = added.setdefault(pm.partition_path, {})
        for path, size in [*pm.rollback_log_files.items(), *(pm.log_files_from_failed_commit or {}).items()]:
            name = path.rpartition("/")[2]
            files[name] = max(files.get(name, size), size)
    return FilesPartitionUpdate(files_added=added)


def _file_name(path_with_partition: str, partition: str) -> str:
    """``FSUtils.getFileName``: the stat path without its partition prefix."""
    return path_with_partition[len(partition) + 1 :] if partition else path_with_partition


# -- the records: HoodieMetadataPayload + HoodieHFileDataBlock.serializeRecord --------------------------------------
def _java_string_hash(s: str) -> int:
    h = 0
    for unit in struct.unpack(f">{len(s.encode('utf-16-be')) // 2}H", s.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


def _hash_map_capacity(n: int) -> int:
    """Table size of a ``new HashMap<>()`` after ``n`` puts (16, doubled whenever size > 0.75 * capacity)."""
    cap = 16
    while n > cap * 3 // 4:
        cap *= 2
    return cap


def java_hash_map_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a default ``java.util.HashMap<String, ?>`` into which ``keys`` were put in that order:
    by bucket ``(h ^ h >>> 16) & (capacity - 1)`` (capacity 16, doubled whenever size > 0.75 capacity), keys
    colliding in a bucket in insertion order. The order in which Java writes an MDT record's
    ``filesystemMetadata`` entries, given them in the order its map received them (see :class:`FilesPartitionUpdate`).
    """
    ordered = list(keys)
    mask = _hash_map_capacity(len(ordered)) - 1

    def bucket(k: str) -> int:
        h = _java_string_hash(k)
        return (h ^ (h >> 16)) & mask

    return sorted(ordered, key=bucket)  # stable: colliding keys keep their insertion order


def _ordered(entries: Mapping[str, FileInfo]) -> dict[str, FileInfo]:
    return {name: entries[name] for name in java_hash_map_order(entries)}


def files_partition_records(update: FilesPartitionUpdate) -> dict[str, bytes]:
    """HFile key -> value of every record ``update`` makes (``createPartitionListRecord``,
    ``createPartitionFilesRecord``; values by :func:`records.encode_value`, map entries in Java's order), in key
    order as the block's ``TreeMap`` sorts them.

    Raises:
        MetadataTableError: a file added with a size <= 0 (Java's ``checkState(fileSize > 0)``), or two records of
            one partition.
    """
    out: dict[str, bytes] = {}
    if update.partitions_added is not None or update.partitions_deleted:
        listed = {p: FileInfo(0, False) for p in update.partitions_added or ()}
        listed.update({p: FileInfo(0, True) for p in update.partitions_deleted})
        rec = MetadataRecord(PARTITION_LIST_KEY, MetadataRecordType.PARTITION_LIST, _ordered(listed))
        out[rec.key] = encode_value(rec)
    for partition in dict.fromkeys([*update.files_added, *update.files_deleted]):
        try:
            rec = partition_files_record(
                partition, update.files_added.get(partition), update.files_deleted.get(partition) or ()
            )
        except ValueError as err:
            raise MetadataTableError(partition or NON_PARTITIONED_NAME, str(err)) from err
        if rec.key in out:
            raise MetadataTableError(rec.key, f"two records for partition {rec.key!r} in one metadata table commit")
        out[rec.key] = encode_value(replace(rec, filesystem_metadata=_ordered(rec.filesystem_metadata or {})))
    return dict(sorted(out.items(), key=lambda kv: kv[0].encode("utf-16-be")))


def hfile_data_block(instant: str, records: Mapping[str, bytes]) -> bytes:
    """One HFILE_DATA_BLOCK as ``HoodieHFileDataBlock`` writes it: header INSTANT_TIME, SCHEMA; content an HFile
    (1 MB blocks, GZ, Hudi's KV comparator, file info ``schema``) of ``records`` in key order."""
    schema = writer_schema_text()
    writer = HFileWriter(
        HFileWriterOptions(
            block_size=HFILE_BLOCK_SIZE,
            compression=Compression.GZ,
            comparator_class_name=HFILE_COMPARATOR,
            gzip_os_byte=HFILE_GZIP_OS_BYTE,
        )
    )
    for key, value in records.items():
        writer.append(key, value)
    writer.append_file_info(SCHEMA_FILE_INFO_KEY, schema.encode())
    return encode_block(
        LogBlockType.HFILE_DATA_BLOCK, [(HeaderKey.INSTANT_TIME, instant), (HeaderKey.SCHEMA, schema)], writer.finish()
    )


# -- the deltacommit ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetadataCommit:
    """The MDT deltacommit written (or found written) for one data-table instant."""

    instant: str
    log_file: str
    """The MDT log file holding the instant's block, relative to the MDT base path (``files/.files-0000-0_…``)."""
    records: int
    rolled_back: tuple[str, ...] = ()
    """Pending MDT deltacommits rolled back first (Java's eager ``rollbackFailedWrites``)."""
    already_completed: bool = False
    """The MDT deltacommit was completed by an earlier attempt with the same records: nothing written."""


def metadata_table(table: HudiTable) -> HudiTable:
    """The metadata table of ``table`` (``.hoodie/metadata``) as a Hudi table."""
    return HudiTable(table.storage.uri(table.storage.join(METADATA_TABLE_DIR)), storage_options=table.storage.options)


def enabled_partitions(table: HudiTable) -> list[str]:
    """``hoodie.table.metadata.partitions`` (plus ``…inflight``) of the data table."""
    return table.metadata_partitions()


def update_metadata_table(
    table: HudiTable,
    instant: str,
    update: FilesPartitionUpdate,
    *,
    write_token: str = UNKNOWN_WRITE_TOKEN,
) -> MetadataCommit:
    """Write the MDT deltacommit of the data-table ``instant`` (before the data instant completes).

    Resumable from the timeline alone: a pending (requested/inflight) MDT deltacommit of ``instant`` -- a crash
    in an earlier attempt -- is rolled back first, as Java's eager ``rollbackFailedWrites`` on the MDT does
    (through our rollback of failed writes, on the MDT table); a completed one whose block holds exactly these
    records is reused (Java would roll it back and write the same records again).

    Raises:
        MetadataTableError: no metadata table, a partition other than ``files`` is enabled, the ``files`` file
            group is missing, or a completed MDT deltacommit of ``instant`` holds other records.
    """
    check_partitions(table)
    mdt = metadata_table(table)
    records = files_partition_records(update)
    block = hfile_data_block(instant, records)
    rolled_back = _roll_back_pending(mdt, instant)
    done = mdt.timeline.get(instant, Action.DELTA_COMMIT)
    if done is not None and done.is_completed:
        reused = _reuse_completed(mdt, done, block, len(records))
        if reused is not None:
            return reused
    slice_ = files_slice(mdt)
    start = time.monotonic()
    requested = mdt.create_requested(Instant(InstantTime(instant), Action.DELTA_COMMIT, State.REQUESTED))
    if not records:  # e.g. a COW rollback: Java's upsert of no records writes no log file
        empty = CommitMetadata(
            partition_to_write_stats={},
            extra_metadata={"schema": metadata_record_schema()},
            operation_type=MDT_OPERATION,
        )
        mdt.transition_to_completed(mdt.transition_to_inflight(requested, b""), empty.to_bytes())
        return MetadataCommit(instant, "", 0, rolled_back)
    inflight = mdt.transition_to_inflight(requested, _workload_profile(slice_, len(records)).to_bytes())
    log_file = _write_log_file(mdt, instant, slice_, block, write_token)
    metadata = _commit_metadata(slice_, log_file, len(records), int((time.monotonic() - start) * 1000))
    mdt.transition_to_completed(inflight, metadata.to_bytes())
    try:
        delete_markers(mdt.storage, instant)
    except Exception as err:  # the commit stands; leftover markers are ignored by readers
        log.warning("MDT deltacommit %s is committed, deleting its markers failed: %s", instant, err)
    return MetadataCommit(instant, f"{FILES_PARTITION}/{log_file.name}", len(records), rolled_back)


def check_partitions(table: HudiTable) -> None:
    enabled = enabled_partitions(table)
    if FILES_PARTITION not in enabled:
        raise MetadataTableError(
            table.base_uri,
            f"{HoodieKey.METADATA_PARTITIONS.key}={','.join(enabled) or '(empty)'} does not list 'files': the metadata "
            "table is not initialised (Java initialises it on its next write; so does lake-orch metadata init)",
        )
    unsupported = [p for p in enabled if p not in SUPPORTED_PARTITIONS]
    if unsupported:
        raise MetadataTableError(
            table.base_uri,
            f"metadata table partitions {unsupported} are enabled and not updated here yet (only 'files'): updating "
            "'files' alone would leave them stale. Run this action with Java Hudi, or disable those indexes",
        )


def files_slice(mdt: HudiTable) -> FileSlice:
    """The latest slice of ``files-0000-0`` (``getPartitionLatestFileSlices``; a slice of a pending MDT compaction
    counts, as for Java's writer)."""
    slices = [s for s in mdt.fs_view().latest_file_slices(FILES_PARTITION) if s.file_id == FILES_FILE_ID]
    if not slices:
        raise MetadataTableError(
            mdt.storage.uri(mdt.storage.join(FILES_PARTITION)),
            f"no file group {FILES_FILE_ID} in the metadata table's files partition: expected the file group Java "
            "initialises",
        )
    return slices[0]


def _roll_back_pending(mdt: HudiTable, instant: str) -> tuple[str, ...]:
    """Roll back every pending MDT deltacommit (Java's ``rollbackFailedWrites`` with the MDT's EAGER policy), after
    finishing any MDT rollback a crash interrupted."""
    interrupted = [i for i in mdt.refresh().timeline.pending() if i.action is Action.ROLLBACK]
    for rb in interrupted:
        plan = mdt.read_model(Instant(rb.time, Action.ROLLBACK, State.REQUESTED), RollbackPlan)
        target = plan.instant_to_rollback.commit_time if plan.instant_to_rollback is not None else ""
        log.info("Finishing the interrupted metadata-table rollback %s of %s", rb.time, target)
        rollback_metadata_deltacommit(mdt, target, str(rb.time))
    if interrupted:  # the listing above is current unless a rollback was finished
        mdt.refresh()
    pending = [i for i in mdt.timeline.pending() if i.action is Action.DELTA_COMMIT]
    done = []
    for inst in sorted(pending, key=lambda i: str(i.time), reverse=True):
        log.info("Rolling back the pending metadata-table deltacommit %s of %s", inst.time, mdt.base_uri)
        rollback_metadata_deltacommit(mdt, str(inst.time))
        done.append(str(inst.time))
    return tuple(done)


def rollback_metadata_deltacommit(mdt: HudiTable, instant: str, rollback_time: str | None = None) -> Instant | None:
    """Roll back the MDT deltacommit ``instant`` (pending or completed) as Java's MDT write client does
    (``withRollbackUsingMarkers(false)``: listing based; a completed instant is first reverted to inflight): a
    rollback plan naming every ``files-0000-0`` log file holding a block of ``instant``, a new log file per slice
    with a ROLLBACK command block targeting it, the instant's timeline files deleted, ``<rollback>.rollback``
    completed. ``rollback_time``: the rollback instant (Java: ``<data rollback>006`` for a data-table rollback; a
    new instant for a failed MDT write; an interrupted rollback's own time to finish it). Returns the completed
    rollback, or None when the MDT has no such deltacommit.

    Every step is repeatable: a crash leaves a pending ``.rollback`` on the MDT, finished by the next MDT write
    (:func:`update_metadata_table`) or by Java's ``rollbackFailedWrites``.
    """
    storage = mdt.storage
    tl = mdt.refresh().timeline
    target = tl.get(instant, Action.DELTA_COMMIT)
    pending_rb = tl.get(rollback_time, Action.ROLLBACK) if rollback_time is not None else None
    if target is None and pending_rb is None:
        return None
    start = time.monotonic()
    logs: dict[str, dict[str, int]] = {}
    for f in storage.list_dir(storage.join(FILES_PARTITION)):
        if f.is_dir or not is_log_file_name(f.name):
            continue
        lf = LogFile.parse(f.name, partition_path=FILES_PARTITION, size=f.size)
        if lf.file_id != FILES_FILE_ID:
            continue
        blocks = iter_blocks(storage.read_bytes(f.path), storage.uri(f.path))
        if any(b.instant_time == instant and b.block_type is not LogBlockType.COMMAND_BLOCK for b in blocks):
            logs.setdefault(str(lf.base_instant), {})[qualified_path(storage, f.path)] = f.size
    if pending_rb is None:
        plan = RollbackPlan(
            instant_to_rollback=InstantInfo(commit_time=instant, action=Action.DELTA_COMMIT.value),
            rollback_requests=tuple(
                RollbackRequest(
                    partition_path=FILES_PARTITION,
                    file_id=FILES_FILE_ID,
                    latest_base_instant=base,
                    files_to_be_deleted=(),
                    log_blocks_to_be_deleted=found,
                )
                for base, found in sorted(logs.items())
            ),
        )
        rb_time = InstantTime(rollback_time) if rollback_time is not None else mdt.new_instant_time()
        pending_rb = mdt.create_requested(Instant(rb_time, Action.ROLLBACK, State.REQUESTED), plan.to_bytes())
    inflight = mdt.transition_to_inflight(pending_rb) if pending_rb.state is State.REQUESTED else pending_rb
    rb = str(inflight.time)
    if target is not None and target.is_completed:  # Java's revertToInflight: readers ignore its block from here
        storage.delete_file(mdt.instant_path(target), missing_ok=True)
    written: dict[str, int] = {}
    failed: dict[str, int] = {}
    for base, found in sorted(logs.items()):
        lf = write_log_file(
            storage,
            partition_path=FILES_PARTITION,
            file_id=FILES_FILE_ID,
            base_instant=base,
            write_token=UNKNOWN_WRITE_TOKEN,
            blocks=[rollback_command_block(instant=rb, target_instant=instant)],
        )
        written[qualified_path(storage, storage.join(lf.relative_path))] = lf.size
        failed.update(found)
    delete_markers(storage, instant)
    for state in (State.INFLIGHT, State.REQUESTED):
        storage.delete_file(
            mdt.instant_path(Instant(InstantTime(instant), Action.DELTA_COMMIT, state)), missing_ok=True
        )
    metadata = RollbackMetadata(
        start_rollback_time=rb,
        time_taken_in_millis=int((time.monotonic() - start) * 1000),
        total_files_deleted=0,
        commits_rollback=(instant,),
        partition_metadata={
            FILES_PARTITION: RollbackPartitionMetadata(
                partition_path=FILES_PARTITION,
                success_delete_files=(),
                failed_delete_files=(),
                rollback_log_files=written,
                log_files_from_failed_commit=failed,
            )
        }
        if written
        else {},
        version=1,
        instants_rollback=(InstantInfo(commit_time=instant, action=Action.DELTA_COMMIT.value),),
    )
    done = mdt.transition_to_completed(inflight, metadata.to_bytes())
    mdt.refresh()
    return done


def _reuse_completed(mdt: HudiTable, done: Instant, block: bytes, n: int) -> MetadataCommit | None:
    """The completed MDT deltacommit ``done`` of an earlier attempt if its block holds exactly these records; else
    it is rolled back (Java's ``commitInternal`` rolls back an already completed instant and writes it again) and
    None is returned."""
    metadata = mdt.commit_metadata(done)
    paths = [s.path for s in metadata.write_stats() if s.path]
    if not paths and n == 0:
        return MetadataCommit(str(done.time), "", 0, already_completed=True)
    for path in paths:
        data = mdt.storage.read_bytes(mdt.storage.join(path))
        blocks = [b for b in iter_blocks(data, mdt.storage.uri(path))]
        if blocks and _same_block(blocks[0], block):
            return MetadataCommit(str(done.time), path, n, already_completed=True)
    log.info("Rolling back the completed metadata-table deltacommit %s (other records): written again", done.time)
    rollback_metadata_deltacommit(mdt, str(done.time))
    return None


def _same_block(found: LogBlock, block: bytes) -> bool:
    expected = next(iter(iter_blocks(block, "<new block>")))
    return found.content == expected.content and found.header_map == expected.header_map


def _workload_profile(slice_: FileSlice, n: int) -> CommitMetadata:
    """The MDT inflight file: the insert stat (``fileId ""``, none) then the file group's update count."""
    return CommitMetadata(
        partition_to_write_stats={
            FILES_PARTITION: [
                WriteStat(),
                WriteStat(fileId=FILES_FILE_ID, prevCommit=str(slice_.base_instant), numUpdateWrites=n),
            ]
        },
        operation_type=MDT_OPERATION,
    )


def _write_log_file(mdt: HudiTable, instant: str, slice_: FileSlice, block: bytes, token: str) -> LogFile:
    """A new log file of the slice (the next free version, never an append), its APPEND marker first."""
    storage = mdt.storage
    version = max((lf.version for lf in slice_.log_files), default=0) + 1
    for _ in range(100):
        lf = LogFile(
            FILES_FILE_ID, slice_.base_instant, version, token, size=len(block), partition_path=FILES_PARTITION
        )
        create_marker(storage, instant, FILES_PARTITION, lf.name, "APPEND")
        try:
            storage.create_if_absent(storage.join(FILES_PARTITION, lf.name), block)
            return lf
        except FileAlreadyExistsError:
            version += 1
    raise FileAlreadyExistsError(storage.join(FILES_PARTITION, f".{FILES_FILE_ID}_{slice_.base_instant}.log.{version}"))


def _commit_metadata(slice_: FileSlice, lf: LogFile, n: int, upsert_ms: int) -> CommitMetadata:
    """The completed MDT deltacommit, as ``HoodieAppendHandle`` fills its ``HoodieDeltaWriteStat``: every log file
    of the slice (newest first) then the new one."""
    stat = WriteStat(
        fileId=FILES_FILE_ID,
        path=f"{FILES_PARTITION}/{lf.name}",
        prevCommit=str(slice_.base_instant),
        numWrites=n,
        numUpdateWrites=n,
        totalWriteBytes=lf.size,
        partitionPath=FILES_PARTITION,
        fileSizeInBytes=lf.size,
        runtimeStats=RuntimeStats(totalUpsertTime=upsert_ms),
        logVersion=lf.version,
        logOffset=0,
        baseFile=slice_.base_file.name if slice_.base_file is not None else "",
        logFiles=[*(f.name for f in sorted(slice_.log_files, key=lambda f: f.version, reverse=True)), lf.name],
    )
    return CommitMetadata(
        partition_to_write_stats={FILES_PARTITION: [stat]},
        extra_metadata={"schema": metadata_record_schema()},
        operation_type=MDT_OPERATION,
    )


__all__ = [
    "FilesPartitionUpdate",
    "MetadataCommit",
    "enabled_partitions",
    "files_partition_records",
    "hfile_data_block",
    "java_hash_map_order",
    "metadata_table",
    "update_from_clean",
    "update_from_commit",
    "update_from_rollback",
    "update_metadata_table",
]
