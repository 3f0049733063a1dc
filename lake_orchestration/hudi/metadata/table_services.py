"""The metadata table's own compaction, run as Java Hudi 0.15 (table version 6) runs it.

Java's ``HoodieBackedTableMetadataWriter.performTableServices`` runs when a data write starts (before the write's
own MDT deltacommit, after the eager rollback of failed writes); :func:`run_metadata_table_services` is called at
the same point, by :func:`~lake_orchestration.hudi.metadata.sync.sync_metadata_table` before it writes the MDT
deltacommit of a commit, deltacommit, replacecommit or clean about to complete (not of a rollback: its target's
timeline files are already deleted then, so its MDT deltacommit would be compacted and could no longer be rolled
back), under the table lock:

1. ``runPendingTableServicesOperations``: a pending MDT compaction (a crash in an earlier run) is finished from its
   plan; the partial base file an interrupted attempt may have left is replaced.
2. ``validateTimelineBeforeSchedulingCompaction``: no MDT compaction when a data-table instant at or before the
   MDT's latest completed deltacommit ``L`` is pending (requested or inflight, any action): the MDT base file must
   only hold completed data instants. A pending data-table rollback also blocks it (see the code).
3. ``compactIfNecessary``: once ``hoodie.metadata.compact.max.delta.commits`` (default 10) MDT deltacommits have
   completed since the MDT's latest compaction (all of them when there is none), the ``files-0000-0`` slice is
   compacted at ``L001`` (``createCompactionTimestamp``), unless that instant is already completed.

The compaction is a normal Hudi compaction of the MDT: ``L001.compaction.requested`` (a ``HoodieCompactionPlan`` of
the slice), ``.inflight``, a new base HFile ``files-0000-0_<token>_L001.hfile`` (records merged as the MDT's log
scanner merges them, byte for byte what Java's ``HoodieAvroHFileWriter`` writes for the same records: GZ, 1 MB
blocks, ``DYNAMIC_V0`` bloom filter meta block, ``minRecordKey``/``maxRecordKey``/``schema`` file info), then
``L001.commit`` (operation ``COMPACT``). Nothing is deleted: the replaced slice stays until an MDT clean (Java's,
``<ts>002``; not done here).

``hoodie.metadata.compact.max.delta.commits`` is a Java *write* option; this project's commit path has no write
options, so it is read from the data table's ``hoodie.properties`` when set there (Java ignores it there).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import MetadataTableError
from lake_orchestration.hudi.hfile import Compression, HFileWriter, HFileWriterOptions
from lake_orchestration.hudi.log.scanner import InstantFilter, scan_blocks
from lake_orchestration.hudi.metadata.maintenance_loader import load_metadata_table_maintenance
from lake_orchestration.hudi.metadata.reader import _block_records
from lake_orchestration.hudi.metadata.records import (
    FILES_PARTITION,
    SCHEMA_FILE_INFO_KEY,
    MetadataRecord,
    decode_hfile,
    encode_value,
    merge_records,
    writer_schema_text,
)
from lake_orchestration.hudi.metadata.writer import (
    FILES_FILE_ID,
    HFILE_BLOCK_SIZE,
    HFILE_COMPARATOR,
    HFILE_GZIP_OS_BYTE,
    files_slice,
    java_hash_map_order,
    metadata_record_schema,
)
from lake_orchestration.hudi.model.avro import CompactionOperation, CompactionPlan
from lake_orchestration.hudi.model.bloom_filter import TYPE_DYNAMIC_V0, HoodieBloomFilter
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, RuntimeStats, WriteStat
from lake_orchestration.hudi.model.file_group import UNKNOWN_WRITE_TOKEN, LogFile
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.marker import create_marker, delete_markers

log = logging.getLogger(__name__)

COMPACTION_SUFFIX = "001"
"""``HoodieTableMetadataUtil.createCompactionTimestamp``: the MDT compaction after deltacommit ``L`` is ``L001``."""
CLEAN_SUFFIX = "002"
"""``HoodieTableMetadataUtil.createCleanTimestamp``: the MDT clean after deltacommit ``L`` is ``L002``."""
CLEAN_BUFFER_INSTANTS = 3
"""``cleanIfNecessary``: completed MDT instants needed after the latest MDT compaction before an MDT clean."""
METADATA_CLEANER_COMMITS_RETAINED = 20
"""``HoodieMetadataConfig.DEFAULT_METADATA_CLEANER_COMMITS_RETAINED``: the MDT retains at least 20 commits."""
MAX_DELTA_COMMITS_KEY = HoodieKey.METADATA_COMPACT_MAX_DELTA_COMMITS.key
DEFAULT_MAX_DELTA_COMMITS = 10
"""``HoodieMetadataConfig.COMPACT_NUM_DELTA_COMMITS`` default."""
_MB = 1024 * 1024
# HoodieAvroHFileWriter's file info keys and meta block (HoodieAvroHFileReaderImplBase)
KEY_MIN_RECORD = "minRecordKey"
KEY_MAX_RECORD = "maxRecordKey"
KEY_BLOOM_FILTER_TYPE_CODE = "bloomFilterTypeCode"
KEY_BLOOM_FILTER_META_BLOCK = "bloomFilter"


@dataclass(frozen=True)
class MetadataCompaction:
    """An MDT compaction completed by :func:`run_metadata_table_services`."""

    instant: str
    base_file: str
    """Relative to the MDT base path (``files/files-0000-0_…hfile``)."""
    records: int
    resumed: bool = False
    """A pending compaction of an earlier run, finished."""


def max_delta_commits(table: HudiTable) -> int:
    """``hoodie.metadata.compact.max.delta.commits`` from the data table's ``hoodie.properties`` (default 10).

    Raises:
        MetadataTableError: the value is not a positive integer.
    """
    raw = table.config.raw.get(MAX_DELTA_COMMITS_KEY)
    if raw is None or str(raw).strip() == "":
        return DEFAULT_MAX_DELTA_COMMITS
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise MetadataTableError(table.base_uri, f"{MAX_DELTA_COMMITS_KEY}={raw!r}: expected a positive integer")
    return value


def metadata_write_options(table: HudiTable) -> dict[str, str]:
    """The settings of the metadata table's own write client, as ``HoodieMetadataWriteUtils.createMetadataWriteConfig``
    (Java 0.15) derives them from the data writer's: the data table's cleaner policy, its retention scaled by 1.2
    (``hoodie.cleaner.commits.retained``: at least 20), ``hoodie.keep.min/max.commits`` plus one, a fresh clean
    trigger (``hoodie.clean.max.commits`` 1) and the MDT compaction's ``hoodie.metadata.compact.max.delta.commits``
    as its ``hoodie.compact.inline.max.delta.commits``. The data writer's settings are read from the data table's
    ``hoodie.properties`` (this project's commit path has no write options), else Java's defaults.

    Raises:
        MetadataTableError: a setting in ``hoodie.properties`` that is not a number or a known policy.
    """
    raw = table.config.raw

    def number(key: HoodieKey) -> int:
        value = str(raw.get(key.key, key.default)).strip()
        try:
            return int(value)
        except ValueError:
            raise MetadataTableError(table.base_uri, f"{key.key}={value!r}: expected an integer") from None

    policy = str(raw.get(HoodieKey.CLEANER_POLICY.key, HoodieKey.CLEANER_POLICY.default)).strip().upper()
    out = {HoodieKey.CLEANER_POLICY.key: policy}
    if policy == "KEEP_LATEST_COMMITS":
        # (int) Math.max(DEFAULT_METADATA_CLEANER_COMMITS_RETAINED, retained * 1.2): Java's double arithmetic
        out[HoodieKey.CLEANER_COMMITS_RETAINED.key] = str(
            int(max(METADATA_CLEANER_COMMITS_RETAINED, number(HoodieKey.CLEANER_COMMITS_RETAINED) * 1.2))
        )
    elif policy == "KEEP_LATEST_FILE_VERSIONS":
        out[HoodieKey.CLEANER_FILEVERSIONS_RETAINED.key] = str(
            math.ceil(number(HoodieKey.CLEANER_FILEVERSIONS_RETAINED) * 1.2)
        )
    elif policy == "KEEP_LATEST_BY_HOURS":
        out[HoodieKey.CLEANER_HOURS_RETAINED.key] = str(math.ceil(number(HoodieKey.CLEANER_HOURS_RETAINED) * 1.2))
    else:
        raise MetadataTableError(
            table.base_uri,
            f"{HoodieKey.CLEANER_POLICY.key}={policy!r}: expected KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS or "
            "KEEP_LATEST_BY_HOURS",
        )
    out[HoodieKey.KEEP_MIN_COMMITS.key] = str(number(HoodieKey.KEEP_MIN_COMMITS) + 1)
    out[HoodieKey.KEEP_MAX_COMMITS.key] = str(number(HoodieKey.KEEP_MAX_COMMITS) + 1)
    out[HoodieKey.COMPACT_MAX_DELTA_COMMITS.key] = str(max_delta_commits(table))
    return out


MetadataTableClean = Callable[[HudiTable, str, Mapping[str, str]], object]
"""Cleans the metadata table (first argument) at the instant (second) with the settings (third, Hudi keys)."""
MetadataTableArchive = Callable[[HudiTable, Mapping[str, str]], object]
"""Archives the metadata table's timeline with the settings (Hudi keys)."""


@dataclass
class _Maintenance:
    clean: MetadataTableClean | None = None
    archive: MetadataTableArchive | None = None


_MAINTENANCE = _Maintenance()


def register_metadata_table_maintenance(*, clean: MetadataTableClean, archive: MetadataTableArchive) -> None:
    """Install the cleaner and archiver the MDT's table services run (the project's clean and archive services,
    :mod:`lake_orchestration.hudi.services.metadata_table`, which registers them on import: the commit path sits
    below the services layer, so it calls them through this hook)."""
    _MAINTENANCE.clean = clean
    _MAINTENANCE.archive = archive


def _maintenance() -> _Maintenance:
    if _MAINTENANCE.clean is None or _MAINTENANCE.archive is None:
        load_metadata_table_maintenance()  # the package root's loader imports the registering module
    if _MAINTENANCE.clean is None or _MAINTENANCE.archive is None:
        # the package root sets the loader; a process that got here without it is misassembled
        raise MetadataTableError(
            "lake_orchestration.hudi.services.metadata_table",
            "the metadata table's clean and archive are not registered: import lake_orchestration first",
        )
    return _MAINTENANCE


def clean_is_due(mdt: HudiTable) -> bool:
    """``cleanIfNecessary``'s guard: no MDT clean until 3 instants completed on the MDT after its latest compaction
    (a reader that opened the replaced slice's logs before the compaction must not lose them); with no compaction
    yet, always."""
    last = mdt.timeline.completed().with_actions(Action.COMMIT, Action.REPLACE_COMMIT).last
    if last is None:
        return True
    return sum(1 for i in mdt.timeline.completed() if str(i.time) > str(last.time)) >= CLEAN_BUFFER_INSTANTS


def run_metadata_table_services(table: HudiTable, mdt: HudiTable) -> list[MetadataCompaction]:
    """Java's ``performTableServices`` on the MDT (module docstring): finish a pending MDT compaction; then, with a
    completed MDT deltacommit ``L``: clean at ``L002`` when due, compact at ``L001`` when due, archive. Call under
    the data table's lock, before the MDT deltacommit of the action about to complete. Returns what was compacted."""
    maintenance = _maintenance()
    done: list[MetadataCompaction] = []
    for pending in sorted(mdt.refresh().timeline.pending(), key=lambda i: str(i.time)):
        if pending.action is Action.COMPACTION:
            log.info("Finishing the pending metadata-table compaction %s of %s", pending.time, mdt.base_uri)
            done.append(_execute(mdt, str(pending.time), resumed=True))
    if done:  # the listing above is current unless a compaction was finished
        mdt.refresh()
    latest = mdt.timeline.completed().with_actions(Action.DELTA_COMMIT).last
    if latest is None:
        return done
    latest_time = str(latest.time)
    options = metadata_write_options(table)
    if clean_is_due(mdt):
        maintenance.clean(mdt, latest_time + CLEAN_SUFFIX, options)
        mdt.refresh()
    compaction = _compact_if_necessary(table, mdt, latest_time)
    if compaction is not None:
        done.append(compaction)
    maintenance.archive(mdt, options)
    mdt.refresh()
    return done


def _compact_if_necessary(table: HudiTable, mdt: HudiTable, latest_time: str) -> MetadataCompaction | None:
    """``validateTimelineBeforeSchedulingCompaction`` then ``compactIfNecessary``."""
    # a pending rollback too, whatever its time: it deletes its target's timeline files before it completes, so
    # its target (with an MDT deltacommit at or before L) may no longer show as pending (Java finishes failed
    # writes' rollbacks before performTableServices)
    blocking = [
        i for i in table.refresh().timeline.pending() if str(i.time) <= latest_time or i.action is Action.ROLLBACK
    ]
    if blocking:
        log.info(
            "Not compacting the metadata table: data instants at or before its latest deltacommit %s are pending: %s",
            latest_time,
            [i.file_name for i in blocking],
        )
        return None
    if any(i.action in (Action.COMPACTION, Action.LOG_COMPACTION) for i in mdt.timeline.pending()):
        return None
    compaction_time = latest_time + COMPACTION_SUFFIX
    if any(str(i.time) == compaction_time for i in mdt.timeline.instants):
        return None  # "Compaction with same time is already present in the timeline"
    last_compaction = mdt.timeline.completed().with_actions(Action.COMMIT).last
    since = [
        i
        for i in mdt.timeline.completed().with_actions(Action.DELTA_COMMIT)
        if last_compaction is None or str(i.time) > str(last_compaction.time)
    ]
    if len(since) < max_delta_commits(table):
        return None
    _schedule(mdt, compaction_time)
    return _execute(mdt, compaction_time)


def _schedule(mdt: HudiTable, compaction_time: str) -> Instant:
    """``scheduleCompactionAtInstant``: the plan of the ``files-0000-0`` slice."""
    fs = files_slice(mdt)
    log_size = sum(max(lf.size, 0) for lf in fs.log_files)
    base_size = fs.base_file.size if fs.base_file is not None and fs.base_file.size >= 0 else 0
    read_mb = (base_size + log_size) // _MB
    write_mb = base_size // _MB
    op = CompactionOperation(
        base_instant_time=str(fs.base_instant),
        delta_file_paths=tuple(lf.name for lf in sorted(fs.log_files, key=LogFile.sort_key)),
        data_file_path=fs.base_file.name if fs.base_file is not None else None,
        file_id=FILES_FILE_ID,
        partition_path=FILES_PARTITION,
        metrics={
            "TOTAL_LOG_FILES": float(len(fs.log_files)),
            "TOTAL_IO_MB": float(read_mb + write_mb),
            "TOTAL_IO_READ_MB": float(read_mb),
            "TOTAL_LOG_FILES_SIZE": float(log_size),
            "TOTAL_IO_WRITE_MB": float(write_mb),
        },
        bootstrap_file_path=None,
    )
    plan = CompactionPlan(operations=(op,), extra_metadata=None, version=2, strategy=None)
    log.info("Scheduling the metadata-table compaction %s of %s", compaction_time, mdt.base_uri)
    return mdt.create_requested(
        Instant(InstantTime(compaction_time), Action.COMPACTION, State.REQUESTED), plan.to_bytes()
    )


def _execute(mdt: HudiTable, compaction_time: str, *, resumed: bool = False) -> MetadataCompaction:
    """Run the compaction ``compaction_time`` from its plan: merge the slice, write the base HFile, commit."""
    storage = mdt.storage
    requested = Instant(InstantTime(compaction_time), Action.COMPACTION, State.REQUESTED)
    plan = mdt.read_model(requested, CompactionPlan)
    ops = plan.operations or ()
    if len(ops) != 1 or ops[0].file_id != FILES_FILE_ID or ops[0].partition_path != FILES_PARTITION:
        raise MetadataTableError(
            storage.uri(mdt.instant_path(requested)),
            f"metadata-table compaction plan with operations {[(o.partition_path, o.file_id) for o in ops]}: "
            f"expected one operation on {FILES_PARTITION}/{FILES_FILE_ID} (the files partition only)",
        )
    op = ops[0]
    start = time.monotonic()
    current = mdt.timeline.get(compaction_time, Action.COMPACTION)
    inflight = mdt.transition_to_inflight(requested) if current is None or current.state is State.REQUESTED else current
    # the slice the plan names, read as the compactor reads it (blocks completed on the MDT, up to the compaction)
    log_files = []
    for name in op.delta_file_paths or ():
        size = storage.size(storage.join(FILES_PARTITION, name))
        log_files.append(LogFile.parse(name, partition_path=FILES_PARTITION, size=size))
    flt = InstantFilter.from_timeline(mdt.timeline, latest_instant=compaction_time)
    blocks, stats = scan_blocks(storage, log_files, flt)
    log_records = [r for b in blocks for r in _block_records(b)]
    merged_log = merge_records(log_records)
    base: dict[str, MetadataRecord] = {}
    if op.data_file_path:
        path = storage.join(FILES_PARTITION, op.data_file_path)
        base = {r.key: r for r in decode_hfile(storage.read_bytes(path), where=storage.uri(path))}
    updates = sum(1 for k in merged_log if k in base)
    out = dict(base)
    for key, rec in merged_log.items():
        prev = out.get(key)
        out[key] = rec if prev is None else rec.pre_combine(prev)
    records = [_java_map_order(r) for k, r in sorted(out.items(), key=lambda kv: kv[0].encode()) if not r.is_deleted]
    scan_ms = int((time.monotonic() - start) * 1000)

    name = f"{FILES_FILE_ID}_{UNKNOWN_WRITE_TOKEN}_{compaction_time}.hfile"
    content = base_hfile(records, name)
    rel = storage.join(FILES_PARTITION, name)
    create_marker(storage, InstantTime(compaction_time), FILES_PARTITION, name, "CREATE")
    storage.write_bytes(rel, content)  # a partial file of an interrupted attempt is replaced
    stat = WriteStat(
        fileId=FILES_FILE_ID,
        path=f"{FILES_PARTITION}/{name}",
        prevCommit=str(op.base_instant_time),
        numWrites=len(records),
        numDeletes=0,
        numUpdateWrites=updates,
        numInserts=len(records) - updates if op.data_file_path else 0,
        totalWriteBytes=len(content),
        partitionPath=FILES_PARTITION,
        totalLogRecords=len(log_records),
        totalLogFilesCompacted=len(log_files),
        totalLogSizeCompacted=sum(lf.size for lf in log_files),
        totalUpdatedRecordsCompacted=len(merged_log),
        totalLogBlocks=stats.total_log_blocks,
        totalCorruptLogBlock=stats.total_corrupt_blocks,
        totalRollbackBlocks=stats.total_rollback_blocks,
        fileSizeInBytes=len(content),
        runtimeStats=RuntimeStats(totalScanTime=scan_ms, totalUpsertTime=int((time.monotonic() - start) * 1000)),
    )
    metadata = CommitMetadata(
        partition_to_write_stats={FILES_PARTITION: [stat]},
        compacted=True,
        extra_metadata={"schema": metadata_record_schema()},
        operation_type="COMPACT",
    )
    mdt.transition_to_completed(inflight, metadata.to_bytes())
    try:
        delete_markers(storage, compaction_time)
    except Exception as err:  # the commit stands; leftover markers are ignored by readers
        log.warning("MDT compaction %s is committed, deleting its markers failed: %s", compaction_time, err)
    mdt.refresh()
    return MetadataCompaction(compaction_time, f"{FILES_PARTITION}/{name}", len(records), resumed)


def _java_map_order(rec: MetadataRecord) -> MetadataRecord:
    """The merged record's file map in the order of Java's ``HashMap`` built by ``combineFileSystemMetadata``."""
    if rec.filesystem_metadata is None:
        return rec
    fsm = rec.filesystem_metadata
    ordered = {k: fsm[k] for k in java_hash_map_order(list(fsm))}
    return MetadataRecord(rec.key, rec.type, ordered, rec.other)


def base_hfile(records: list[MetadataRecord], file_name: str) -> bytes:
    """The MDT base HFile ``HoodieAvroHFileWriter`` writes for ``records`` (sorted by key): values with
    ``_hoodie_file_name`` = ``file_name``, GZ blocks of 1 MB, file info ``schema``, ``minRecordKey``,
    ``maxRecordKey``, ``bloomFilterTypeCode`` and the ``bloomFilter`` meta block (a default ``DYNAMIC_V0`` filter of
    the keys, base64 text). Byte for byte Java's (tests/java/test_metadata_table_compaction.py)."""
    writer = HFileWriter(
        HFileWriterOptions(
            block_size=HFILE_BLOCK_SIZE,
            compression=Compression.GZ,
            comparator_class_name=HFILE_COMPARATOR,
            gzip_os_byte=HFILE_GZIP_OS_BYTE,
        )
    )
    bloom = HoodieBloomFilter.create(filter_type=TYPE_DYNAMIC_V0)
    for rec in records:
        writer.append(rec.key, encode_value(rec, file_name=file_name))
        bloom.add(rec.key)
    writer.append_file_info(SCHEMA_FILE_INFO_KEY, writer_schema_text().encode())
    if records:
        writer.append_file_info(KEY_MIN_RECORD, records[0].key.encode())
        writer.append_file_info(KEY_MAX_RECORD, records[-1].key.encode())
    writer.append_file_info(KEY_BLOOM_FILTER_TYPE_CODE, TYPE_DYNAMIC_V0.encode())
    writer.append_meta_block(KEY_BLOOM_FILTER_META_BLOCK, bloom.serialize().encode())
    return writer.finish()


__all__ = [
    "MetadataCompaction",
    "base_hfile",
    "clean_is_due",
    "max_delta_commits",
    "metadata_write_options",
    "register_metadata_table_maintenance",
    "run_metadata_table_services",
]
