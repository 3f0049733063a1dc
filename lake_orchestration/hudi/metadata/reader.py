"""Reading the ``files`` partition of Hudi's metadata table: the data table's partitions and files, as Java 0.15's
``HoodieBackedTableMetadata`` lists them.

The metadata table (``.hoodie/metadata``) is a MERGE_ON_READ Hudi table of its own (HFile base files, HFile data
blocks in its logs, records :mod:`~lake_orchestration.hudi.metadata.records`). A listing is read from the latest
merged file slice of each file group of its ``files`` partition, as of the metadata table's latest completed
instant:

* the base HFile's records, merged with the log records (``preCombine``, newest last; a delete-block record is a
  tombstone);
* log blocks are read as ``HoodieMetadataLogRecordReader`` reads them (``scanInternalV1``): a block after the
  metadata table's latest completed instant stops the scan, rollback command blocks drop the blocks of their
  target, and a data or delete block counts only if its instant is completed on the metadata table's commits
  timeline **and** is one of ``HoodieTableMetadataUtil.getValidInstantTimestamps``: the data table's completed
  instants (any action), the metadata table's own completed deltacommits with an operation suffix (``<ts>001``
  compaction .. ``<ts>006`` rollback, ``>= 010`` partition initialisation; 20 digits), the instants rolled back by
  the data table's completed rollbacks after the earliest of those, the metadata table's completed rollbacks and
  restores, and its deltacommits starting with ``00000000000000`` (initialised before the first commit). So an MDT
  block whose data-table instant did not complete (a writer killed in between) is ignored.

:func:`metadata_file_listing` is the one entry point for reads: the table's listing from the metadata table when
it has one whose ``files`` partition is available (``hoodie.table.metadata.partitions``) and
``hoodie.metadata.enable`` is not false, else None (list storage).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import CorruptLogBlockError, LakeOrchestrationError, TableNotFoundError
from lake_orchestration.hudi.log.block_content import decode_delete_block
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlock, LogBlockType
from lake_orchestration.hudi.log.scanner import InstantFilter, ScanStats, scan_blocks
from lake_orchestration.hudi.metadata.records import (
    FILES_PARTITION,
    RECORDKEY_PARTITION_LIST,
    MetadataRecord,
    decode_hfile,
    merge_records,
    partition_identifier,
    partition_path,
)
from lake_orchestration.hudi.model.avro import RollbackMetadata, RollbackPlan
from lake_orchestration.hudi.model.file_group import FileSlice
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.timeline import Timeline
from lake_orchestration.hudi.table.hudi_table import HOODIE_DIR, METADATA_DIR, HudiTable
from lake_orchestration.io.storage import FileInfo

log = logging.getLogger(__name__)

SOLO_COMMIT_TIMESTAMP = "00000000000000"
"""``HoodieTableMetadata.SOLO_COMMIT_TIMESTAMP``: the instant before any commit."""
_OPERATION_SUFFIXES = frozenset({"001", "002", "003", "004", "005", "006"})
"""``HoodieTableMetadataUtil.OperationSuffix``: compaction, clean, restore, indexer, log compaction, rollback."""
_PARTITION_INIT_SUFFIX = "010"
_MILLIS_INSTANT_LENGTH = 17


class MetadataTableReadError(LakeOrchestrationError):
    """The metadata table cannot be read as a listing (the caller lists storage instead, as Java falls back)."""


def is_valid_mdt_instant(instant: Instant) -> bool:
    """``HoodieTableMetadataUtil.isValidInstant``: a metadata-table deltacommit with an operation suffix."""
    t = str(instant.time)
    if instant.action is not Action.DELTA_COMMIT or len(t) != _MILLIS_INSTANT_LENGTH + 3:
        return False
    suffix = t[-3:]
    return suffix in _OPERATION_SUFFIXES or suffix >= _PARTITION_INIT_SUFFIX


@dataclass(frozen=True)
class _MetadataInstantFilter(InstantFilter):
    """The log scanner's filter plus the explicit instant range ``withLogBlockTimestamps`` gives it."""

    valid: frozenset[str] = frozenset()

    def is_committed(self, instant: str) -> bool:
        return super().is_committed(instant) and instant in self.valid


class MetadataTableReader:
    """The ``files`` partition of a data table's metadata table.

    Args:
        table: the data table (its timeline decides which metadata blocks count).

    Raises:
        TableNotFoundError: ``.hoodie/metadata`` holds no table.
    """

    def __init__(self, table: HudiTable) -> None:
        self.table = table
        self.mdt = HudiTable(
            table.storage.uri(table.storage.join(HOODIE_DIR, METADATA_DIR)), storage_options=table.storage.options
        )
        self.stats = ScanStats()

    # -- timelines -------------------------------------------------------------------------------------------------
    @cached_property
    def valid_instants(self) -> frozenset[str]:
        """``getValidInstantTimestamps(dataMetaClient, metadataMetaClient)``."""
        data_tl: Timeline = self.table.timeline
        mdt_tl: Timeline = self.mdt.timeline
        valid = {str(i.time) for i in data_tl.completed()}
        valid |= {str(i.time) for i in mdt_tl.completed() if is_valid_mdt_instant(i)}
        earliest = min(valid) if valid else SOLO_COMMIT_TIMESTAMP
        for inst in data_tl.completed().with_actions(Action.ROLLBACK, Action.RESTORE):
            if str(inst.time) > earliest:
                valid |= set(self._rolled_back(inst))
        valid |= {str(i.time) for i in mdt_tl.completed().with_actions(Action.ROLLBACK, Action.RESTORE)}
        valid |= {
            str(i.time)
            for i in mdt_tl.completed().with_actions(Action.DELTA_COMMIT)
            if str(i.time).startswith(SOLO_COMMIT_TIMESTAMP)
        }
        return frozenset(valid)

    def _rolled_back(self, inst: Instant) -> tuple[str, ...]:
        """``getRollbackedCommits``: the instants a completed rollback rolled back (from its plan if the completed
        file is empty). A restore (not written by this project) cannot be followed: refused."""
        if inst.action is Action.RESTORE:
            raise MetadataTableReadError(
                f"{self.table.base_uri}: the data timeline has a completed restore ({inst.file_name}); reading the "
                "instants it rolled back (HoodieRestoreMetadata) is not supported, so the metadata table is not used"
            )
        if self.table.read_instant(inst):
            return tuple(self.table.read_model(inst, RollbackMetadata).commits_rollback)
        plan = self.table.read_model(Instant(inst.time, Action.ROLLBACK, State.REQUESTED), RollbackPlan)
        return (plan.instant_to_rollback.commit_time,) if plan.instant_to_rollback else ()

    @cached_property
    def latest_instant(self) -> str:
        """The metadata table's latest completed instant (any action), ``SOLO_COMMIT_TIMESTAMP`` if none."""
        last = self.mdt.timeline.completed().last
        return str(last.time) if last else SOLO_COMMIT_TIMESTAMP

    def _instant_filter(self) -> _MetadataInstantFilter:
        base = InstantFilter.from_timeline(self.mdt.timeline, latest_instant=self.latest_instant)
        return _MetadataInstantFilter(
            latest_instant=base.latest_instant,
            completed=base.completed,
            inflight=base.inflight,
            timeline_start=base.timeline_start,
            valid=self.valid_instants,
        )

    # -- records ---------------------------------------------------------------------------------------------------
    def file_slices(self) -> list[FileSlice]:
        """``getPartitionLatestMergedFileSlices(files)``: one slice per file group of the ``files`` partition."""
        listing = self.mdt.partition_listing([FILES_PARTITION])
        if FILES_PARTITION not in listing:
            raise MetadataTableReadError(
                f"{self.mdt.base_uri}: no '{FILES_PARTITION}' partition (no .hoodie_partition_metadata in "
                f"{self.mdt.storage.uri(FILES_PARTITION)}), expected one since hoodie.table.metadata.partitions "
                f"names it"
            )
        view = self.mdt.fs_view(listing)
        return view.latest_merged_file_slices_before_or_on(self.latest_instant, FILES_PARTITION)

    @cached_property
    def records(self) -> dict[str, MetadataRecord]:
        """Every record of the ``files`` partition, merged (tombstones left out)."""
        out: dict[str, MetadataRecord] = {}
        flt = self._instant_filter()
        for fs in self.file_slices():
            out.update(self._slice_records(fs, flt))
        return {k: r for k, r in out.items() if not r.is_deleted}

    def _slice_records(self, fs: FileSlice, flt: InstantFilter) -> dict[str, MetadataRecord]:
        storage = self.mdt.storage
        log_side: dict[str, MetadataRecord] = {}
        if fs.log_files:
            blocks, stats = scan_blocks(storage, fs.log_files, flt)
            self._add_stats(stats)
            log_side = merge_records(r for b in blocks for r in _block_records(b))
        if fs.base_file is None:
            return log_side
        path = storage.join(fs.base_file.partition_path, fs.base_file.name)
        base = {r.key: r for r in decode_hfile(storage.read_bytes(path), where=storage.uri(path))}
        for key, rec in log_side.items():
            prev = base.get(key)
            base[key] = rec if prev is None else rec.pre_combine(prev)
        return base

    def _add_stats(self, s: ScanStats) -> None:
        self.stats.total_log_files += s.total_log_files
        self.stats.total_log_blocks += s.total_log_blocks
        self.stats.total_corrupt_blocks += s.total_corrupt_blocks
        self.stats.total_rollback_blocks += s.total_rollback_blocks
        self.stats.skipped_uncommitted_blocks += s.skipped_uncommitted_blocks
        self.stats.rolled_back_blocks += s.rolled_back_blocks

    # -- the listing -----------------------------------------------------------------------------------------------
    def partitions(self) -> list[str]:
        """``getAllPartitionPaths``: relative partition paths (``""`` for a non-partitioned table), sorted."""
        rec = self.records.get(RECORDKEY_PARTITION_LIST)
        return sorted(partition_path(p) for p in rec.files()) if rec else []

    def partition_files(self, partition: str) -> dict[str, int]:
        """``getAllFilesInPartition``: file name -> size of one partition (relative path)."""
        rec = self.records.get(partition_identifier(partition))
        return rec.file_sizes() if rec else {}

    def listing(self, partitions: Iterable[str] | None = None) -> dict[str, list[FileInfo]]:
        """Partition -> its files as :meth:`HudiTable.partition_listing` gives them (every partition, or those of
        ``partitions`` the metadata table knows), for :meth:`HudiTable.fs_view`."""
        storage = self.table.storage
        names = self.partitions() if partitions is None else sorted(set(partitions) & set(self.partitions()))
        out: dict[str, list[FileInfo]] = {}
        for p in names:
            out[p] = [
                FileInfo(path=storage.join(p, name) if p else storage.join(name), name=name, size=size, mtime_ms=0)
                for name, size in sorted(self.partition_files(p).items())
            ]
        return out


def _block_records(block: LogBlock) -> list[MetadataRecord]:
    """The records of a valid data or delete block of the ``files`` partition (oldest first within the block)."""
    where = f"{block.path}@{block.offset}"
    if block.block_type is LogBlockType.HFILE_DATA_BLOCK:
        try:
            return decode_hfile(block.content, where=where, schema_json=block.get(HeaderKey.SCHEMA))
        except LakeOrchestrationError:
            raise
        except Exception as err:  # the HFile framing inside the block
            raise CorruptLogBlockError(where, f"HFile data block does not decode: {err}") from err
    if block.block_type is LogBlockType.DELETE_BLOCK:
        return [MetadataRecord(d.record_key or "", 0, None, is_deleted=True) for d in decode_delete_block(block)]
    raise CorruptLogBlockError(
        where, f"metadata table log block of type {block.block_type.name}: expected HFILE_DATA_BLOCK or DELETE_BLOCK"
    )


def metadata_enabled(table: HudiTable, options: Mapping[str, str] | None = None) -> bool:
    """True if reads list files through the metadata table: ``files`` is in ``hoodie.table.metadata.partitions``
    and ``hoodie.metadata.enable`` (in ``options``) is not ``false`` (Java's reader default: true). No request."""
    if str((options or {}).get(HoodieKey.METADATA_ENABLE.key, "true")).strip().lower() == "false":
        return False
    parts = (table.config.raw.get(HoodieKey.METADATA_PARTITIONS.key) or "").split(",")
    return FILES_PARTITION in {p.strip() for p in parts}


def metadata_file_listing(
    table: HudiTable, options: Mapping[str, str] | None = None, *, partitions: Iterable[str] | None = None
) -> dict[str, list[FileInfo]] | None:
    """The table's partition -> files listing from its metadata table, or None when reads should list storage: no
    ``files`` partition, ``hoodie.metadata.enable=false``, or a metadata table that cannot be read as a listing
    (missing, or a restore on the data timeline), as Java falls back to ``FileSystemBackedTableMetadata`` (logged).
    """
    if not metadata_enabled(table, options):
        return None
    try:
        return MetadataTableReader(table).listing(partitions)
    except (TableNotFoundError, MetadataTableReadError) as err:
        log.warning("Listing %s from storage, not from its metadata table: %s", table.base_uri, err)
        return None
