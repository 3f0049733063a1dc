"""The bootstrap index of a bootstrapped table, as Hudi 0.14's ``HFileBootstrapIndex`` writes and reads it.

Two HFiles under ``.hoodie/.aux/.bootstrap/``, both named
``00000000-0000-0000-0000-000000000000-0_1-0-1_00000000000001.hfile``:

* ``.partitions/``: key ``part=<partition>`` -> an Avro container of ``HoodieBootstrapPartitionMetadata`` (the
  partition's file ids and their source files);
* ``.fileids/``: key ``part=<partition>;fileid=<fileId>`` -> an Avro container of
  ``HoodieBootstrapFilePartitionInfo``.

Each carries the file-info entry ``INDEX_INFO`` = an Avro container of ``HoodieBootstrapIndexInfo`` (source base
path, creation time, key count). The HFiles are what HBase 2.4's writer makes from
``new HFileContextBuilder().withCellComparator(new HoodieKVComparator()).build()``: 64 KB blocks, no compression,
CRC32C, creation time 0 and the comparator ``HFileBootstrapIndex$HoodieKVComparator`` in the trailer (Java's
HBase-based reader instantiates that class, so the name must be exact).

This module encodes and decodes bytes only; the caller writes them with the table's storage.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.hudi.hfile.reader import HFileReader
from lake_orchestration.hudi.hfile.writer import HFileWriter, HFileWriterOptions
from lake_orchestration.hudi.model.avro.bootstrap import (
    BootstrapFilePartitionInfo,
    BootstrapIndexInfo,
    BootstrapPartitionMetadata,
    FileStatus,
)

BOOTSTRAP_INDEX_FILE_ID = "00000000-0000-0000-0000-000000000000-0"
METADATA_BOOTSTRAP_INSTANT_TS = "00000000000001"
"""``HoodieTimeline.METADATA_BOOTSTRAP_INSTANT_TS``."""
BOOTSTRAP_INDEX_COMPARATOR = "org.apache.hudi.common.bootstrap.index.HFileBootstrapIndex$HoodieKVComparator"
BOOTSTRAP_INDEX_CLASS = "org.apache.hudi.common.bootstrap.index.hfile.HFileBootstrapIndex"
"""Value of ``hoodie.bootstrap.index.class`` for this index, as Hudi 0.15 writes it (``HoodieTableConfig``'s default).
Java 0.15 instantiates the class named there with a ``HoodieTableMetaClient``: the 0.14 name below only holds the
HFile comparator in 0.15, so a table naming it fails every 0.15 read (``NoSuchMethodException``)."""
LEGACY_BOOTSTRAP_INDEX_CLASS = "org.apache.hudi.common.bootstrap.index.HFileBootstrapIndex"
"""``hoodie.bootstrap.index.class`` of Hudi 0.14 (the same index files; read by us as well)."""
INDEX_INFO_KEY = "INDEX_INFO"
BOOTSTRAP_INDEX_ROOT = ".hoodie/.aux/.bootstrap"
PARTITION_INDEX_DIR = f"{BOOTSTRAP_INDEX_ROOT}/.partitions"
FILE_ID_INDEX_DIR = f"{BOOTSTRAP_INDEX_ROOT}/.fileids"
INDEX_FILE_NAME = f"{BOOTSTRAP_INDEX_FILE_ID}_1-0-1_{METADATA_BOOTSTRAP_INSTANT_TS}.hfile"
"""``FSUtils.makeBootstrapIndexFileName(METADATA_BOOTSTRAP_INSTANT_TS, BOOTSTRAP_INDEX_FILE_ID, ".hfile")``."""
PARTITION_INDEX_PATH = f"{PARTITION_INDEX_DIR}/{INDEX_FILE_NAME}"
"""Partition index, relative to the table base path."""
FILE_ID_INDEX_PATH = f"{FILE_ID_INDEX_DIR}/{INDEX_FILE_NAME}"
"""File-id index, relative to the table base path."""

INDEX_HFILE_OPTIONS = HFileWriterOptions(comparator_class_name=BOOTSTRAP_INDEX_COMPARATOR)
"""``HFileContextBuilder`` defaults (64 KB blocks, NONE, CRC32C, create time 0) with Hudi's comparator."""


def partition_key(partition: str) -> str:
    return f"part={partition}"


def file_group_key(partition: str, file_id: str) -> str:
    return f"{partition_key(partition)};fileid={file_id}"


def _partition_from_key(key: str, path: str) -> str:
    prefix, sep, partition = key.partition("=")
    if prefix != "part" or not sep:
        raise CorruptFileError(path, f"bootstrap index key {key!r} is not part=<partition>")
    return partition


def _file_group_from_key(key: str, path: str) -> tuple[str, str]:
    part, sep, file_part = key.partition(";")
    prefix, sep2, file_id = file_part.partition("=")
    if not sep or prefix != "fileid" or not sep2:
        raise CorruptFileError(path, f"bootstrap index key {key!r} is not part=<partition>;fileid=<fileId>")
    return _partition_from_key(part, path), file_id


@dataclass(frozen=True, kw_only=True)
class BootstrapFileMapping:
    """A skeleton file group and the source file it stands for (Java ``BootstrapFileMapping``)."""

    bootstrap_base_path: str
    """Base path of the source dataset."""
    bootstrap_partition_path: str
    """Partition path in the source dataset."""
    partition_path: str
    """Partition path in the Hudi table."""
    file_id: str
    """Hudi file id of the skeleton file group."""
    bootstrap_file_status: FileStatus
    """The source file."""

    @property
    def sort_key(self) -> tuple[str, str]:
        """``HoodieFileGroupId`` order: partition path, then file id."""
        return (self.partition_path, self.file_id)


@dataclass(frozen=True, kw_only=True)
class BootstrapIndexFiles:
    """The two index files' bytes, to be written at :data:`PARTITION_INDEX_PATH` and :data:`FILE_ID_INDEX_PATH`."""

    partition_index: bytes
    """Content of the partition index HFile."""
    file_id_index: bytes
    """Content of the file-id index HFile."""


def write_bootstrap_index(
    mappings: Iterable[BootstrapFileMapping], *, bootstrap_base_path: str, created_timestamp: int
) -> BootstrapIndexFiles:
    """Build both index files from the bootstrapped file groups (``HFileBootstrapIndexWriter.finish``).

    Partitions are written in sorted order, each with the ``bootstrapPartitionPath`` of its first mapping; the
    file-id entries in ``HoodieFileGroupId`` order. Values are built as Java builds them: ``version`` left null
    in the partition metadata, file partition info and file status (no-arg constructors), 1 in the index info, the
    file status's ``HoodiePath`` and ``HoodieFSPermission`` (built with ``newBuilder()``).

    Raises:
        ValueError: Two file groups with the same key, or keys that do not sort as the HFile needs (a partition
            path whose ``part=...;fileid=...`` key sorts differently from its (partition, file id) order, which
            Java's writer rejects too).
    """
    by_partition: dict[str, list[BootstrapFileMapping]] = {}
    for mapping in mappings:
        by_partition.setdefault(mapping.partition_path, []).append(mapping)

    partitions = HFileWriter(INDEX_HFILE_OPTIONS)
    for partition in sorted(by_partition):
        group = by_partition[partition]
        metadata = BootstrapPartitionMetadata(
            bootstrap_partition_path=group[0].bootstrap_partition_path,
            partition_path=partition,
            file_id_to_bootstrap_file={m.file_id: m.bootstrap_file_status for m in group},
        )
        partitions.append(partition_key(partition), metadata.to_bytes())

    file_ids = HFileWriter(INDEX_HFILE_OPTIONS)
    ordered = sorted((m for group in by_partition.values() for m in group), key=lambda m: m.sort_key)
    for previous, mapping in zip([None, *ordered], ordered, strict=False):
        if previous is not None and previous.sort_key == mapping.sort_key:
            raise ValueError(f"file group {mapping.sort_key} is mapped to two source files")
        info = BootstrapFilePartitionInfo(
            bootstrap_partition_path=mapping.bootstrap_partition_path,
            bootstrap_file_status=mapping.bootstrap_file_status,
            partition_path=mapping.partition_path,
        )
        file_ids.append(file_group_key(mapping.partition_path, mapping.file_id), info.to_bytes())

    for writer, count in ((partitions, len(by_partition)), (file_ids, len(ordered))):
        index_info = BootstrapIndexInfo(
            bootstrap_base_path=bootstrap_base_path, created_timestamp=created_timestamp, num_keys=count
        )
        writer.append_file_info(INDEX_INFO_KEY, index_info.to_bytes())
    return BootstrapIndexFiles(partition_index=partitions.finish(), file_id_index=file_ids.finish())


class BootstrapIndexReader:
    """Reads the two index files (``HFileBootstrapIndex.HFileBootstrapIndexReader``).

    Args:
        partition_index: Bytes of the partition index HFile.
        file_id_index: Bytes of the file-id index HFile.
        base_path: The table base path, for error messages.

    Raises:
        CorruptFileError: A file is not an HFile, lacks ``INDEX_INFO``, or holds undecodable values.
    """

    def __init__(self, partition_index: bytes, file_id_index: bytes, *, base_path: str = "") -> None:
        prefix = f"{base_path.rstrip('/')}/" if base_path else ""
        self._partition_path = prefix + PARTITION_INDEX_PATH
        self._file_id_path = prefix + FILE_ID_INDEX_PATH
        self._partitions = HFileReader(partition_index, path=self._partition_path)
        self._file_ids = HFileReader(file_id_index, path=self._file_id_path)
        self.index_info = self._index_info(self._partitions)
        """``INDEX_INFO`` of the partition index (Java reads it from that file)."""
        self.file_id_index_info = self._index_info(self._file_ids)
        """``INDEX_INFO`` of the file-id index."""

    @staticmethod
    def _index_info(reader: HFileReader) -> BootstrapIndexInfo:
        raw = reader.file_info.get(INDEX_INFO_KEY)
        if raw is None:
            raise CorruptFileError(reader.path, f"the bootstrap index has no {INDEX_INFO_KEY} file-info entry")
        return BootstrapIndexInfo.from_bytes(raw, path=f"{reader.path}#{INDEX_INFO_KEY}")

    @property
    def bootstrap_base_path(self) -> str:
        if not self.index_info.bootstrap_base_path:
            raise CorruptFileError(self._partition_path, "INDEX_INFO has no bootstrapBasePath")
        return self.index_info.bootstrap_base_path

    def indexed_partitions(self) -> list[str]:
        """Partition paths in the partition index, in key order (``getIndexedPartitionPaths``)."""
        return [_partition_from_key(r.key.decode("utf-8"), self._partition_path) for r in self._partitions.records()]

    def indexed_file_groups(self) -> list[tuple[str, str]]:
        """(partition, file id) of every indexed file group, in key order (``getIndexedFileGroupIds``)."""
        return [_file_group_from_key(r.key.decode("utf-8"), self._file_id_path) for r in self._file_ids.records()]

    def mappings_for_partition(self, partition: str) -> list[BootstrapFileMapping]:
        """The partition's file groups and source files (``getSourceFileMappingForPartition``); [] when absent."""
        raw = self._partitions.get(partition_key(partition))
        if raw is None:
            return []
        metadata = BootstrapPartitionMetadata.from_bytes(raw, path=f"{self._partition_path}#{partition_key(partition)}")
        return [
            BootstrapFileMapping(
                bootstrap_base_path=self.bootstrap_base_path,
                bootstrap_partition_path=metadata.bootstrap_partition_path or "",
                partition_path=partition,
                file_id=file_id,
                bootstrap_file_status=status,
            )
            for file_id, status in (metadata.file_id_to_bootstrap_file or {}).items()
        ]

    def mappings_for_file_groups(
        self, file_groups: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], BootstrapFileMapping]:
        """Source files of the (partition, file id) groups found in the index (``getSourceFileMappingForFileIds``)."""
        result = {}
        for partition, file_id in sorted(file_groups):
            key = file_group_key(partition, file_id)
            raw = self._file_ids.get(key)
            if raw is None:
                continue
            info = BootstrapFilePartitionInfo.from_bytes(raw, path=f"{self._file_id_path}#{key}")
            if info.bootstrap_file_status is None:
                raise CorruptFileError(self._file_id_path, f"{key} has no bootstrapFileStatus")
            result[(partition, file_id)] = BootstrapFileMapping(
                bootstrap_base_path=self.bootstrap_base_path,
                bootstrap_partition_path=info.bootstrap_partition_path or "",
                partition_path=info.partition_path or partition,
                file_id=file_id,
                bootstrap_file_status=info.bootstrap_file_status,
            )
        return result
