"""Typed models of the bootstrap index values (``HFileBootstrapIndex``, Hudi 0.14/0.15).

``HoodieBootstrapPartitionMetadata`` and ``HoodieBootstrapFilePartitionInfo`` are the values of the partition and
file-id index HFiles, ``HoodieBootstrapIndexInfo`` their ``INDEX_INFO`` file-info entry; ``HoodieFileStatus``
(with ``HoodiePath`` and ``HoodieFSPermission``) describes a source file, as ``FileStatusUtils.fromFileStatus``
builds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lake_orchestration.hudi.model.avro.models import AvroModel, _avro

_FS_ACTIONS = ("NONE", "EXECUTE", "WRITE", "WRITE_EXECUTE", "READ", "READ_EXECUTE", "READ_WRITE", "ALL")
"""Hadoop ``FsAction`` names by permission bits (``FsAction.values()[bits]``)."""


@dataclass(frozen=True, kw_only=True)
class FilePath(AvroModel):
    """A Hadoop path (``HoodiePath``)."""

    AVRO_NAME = "HoodiePath"
    version: int | None = field(default=1, metadata=_avro("version"))
    """Schema version: 1, as ``HoodiePath.newBuilder()`` sets it (``HadoopFSUtils.fromPath``, 0.15)."""
    uri: str | None = field(default=None, metadata=_avro("uri"))
    """``Path.toString()``, e.g. ``file:/data/src/2024/a.parquet``."""


@dataclass(frozen=True, kw_only=True)
class FSPermission(AvroModel):
    """POSIX permission of a file (``HoodieFSPermission``)."""

    AVRO_NAME = "HoodieFSPermission"
    version: int | None = field(default=1, metadata=_avro("version"))
    """Schema version (set by the builder Java uses)."""
    user_action: str | None = field(default=None, metadata=_avro("userAction"))
    """``FsAction`` name of the owner bits, e.g. ``READ_WRITE``."""
    group_action: str | None = field(default=None, metadata=_avro("groupAction"))
    """``FsAction`` name of the group bits."""
    other_action: str | None = field(default=None, metadata=_avro("otherAction"))
    """``FsAction`` name of the other bits."""
    sticky_bit: bool | None = field(default=None, metadata=_avro("stickyBit"))
    """Sticky bit."""

    @classmethod
    def from_mode(cls, mode: int) -> FSPermission:
        """From POSIX mode bits (``0o644`` -> READ_WRITE / READ / READ)."""
        return cls(
            user_action=_FS_ACTIONS[(mode >> 6) & 7],
            group_action=_FS_ACTIONS[(mode >> 3) & 7],
            other_action=_FS_ACTIONS[mode & 7],
            sticky_bit=bool(mode & 0o1000),
        )


@dataclass(frozen=True, kw_only=True)
class FileStatus(AvroModel):
    """A source file's status (``HoodieFileStatus``), as ``FileStatusUtils.fromFileStatus`` fills it."""

    AVRO_NAME = "HoodieFileStatus"
    version: int | None = field(default=None, metadata=_avro("version"))
    """Schema version; None as ``new HoodieFileStatus()`` leaves it."""
    path: FilePath | None = field(default=None, metadata=_avro("path"))
    """The file's full path."""
    length: int | None = field(default=None, metadata=_avro("length"))
    """Size in bytes."""
    is_dir: bool | None = field(default=None, metadata=_avro("isDir"))
    """Whether it is a directory."""
    block_replication: int | None = field(default=None, metadata=_avro("blockReplication"))
    """Replication (1 on local and object storage)."""
    block_size: int | None = field(default=None, metadata=_avro("blockSize"))
    """File system block size."""
    modification_time: int | None = field(default=None, metadata=_avro("modificationTime"))
    """Last modification, epoch ms."""
    access_time: int | None = field(default=None, metadata=_avro("accessTime"))
    """Java sets the modification time here too."""
    permission: FSPermission | None = field(default=None, metadata=_avro("permission"))
    """POSIX permission."""
    owner: str | None = field(default=None, metadata=_avro("owner"))
    """Owner name."""
    group: str | None = field(default=None, metadata=_avro("group"))
    """Group name."""
    symlink: FilePath | None = field(default=None, metadata=_avro("symlink"))
    """Link target of a symlink, else None."""

    @property
    def uri(self) -> str | None:
        return self.path.uri if self.path else None


@dataclass(frozen=True, kw_only=True)
class BootstrapPartitionMetadata(AvroModel):
    """Value of a partition-index key ``part=<partition>`` (``HoodieBootstrapPartitionMetadata``)."""

    AVRO_NAME = "HoodieBootstrapPartitionMetadata"
    version: int | None = field(default=None, metadata=_avro("version"))
    """Schema version; None as ``new HoodieBootstrapPartitionMetadata()`` leaves it in ``HFileBootstrapIndex``."""
    bootstrap_partition_path: str | None = field(default=None, metadata=_avro("bootstrapPartitionPath"))
    """Partition path in the source dataset."""
    partition_path: str | None = field(default=None, metadata=_avro("partitionPath"))
    """Partition path in the Hudi table."""
    file_id_to_bootstrap_file: dict[str, FileStatus] | None = field(
        default=None, metadata=_avro("fileIdToBootstrapFile")
    )
    """Hudi file id -> the source file its skeleton stands for."""


@dataclass(frozen=True, kw_only=True)
class BootstrapFilePartitionInfo(AvroModel):
    """Value of a file-id-index key ``part=<partition>;fileid=<fileId>`` (``HoodieBootstrapFilePartitionInfo``)."""

    AVRO_NAME = "HoodieBootstrapFilePartitionInfo"
    version: int | None = field(default=None, metadata=_avro("version"))
    """Schema version; None as ``new HoodieBootstrapFilePartitionInfo()`` leaves it."""
    bootstrap_partition_path: str | None = field(default=None, metadata=_avro("bootstrapPartitionPath"))
    """Partition path in the source dataset."""
    bootstrap_file_status: FileStatus | None = field(default=None, metadata=_avro("bootstrapFileStatus"))
    """The source file."""
    partition_path: str | None = field(default=None, metadata=_avro("partitionPath"))
    """Partition path in the Hudi table."""


@dataclass(frozen=True, kw_only=True)
class BootstrapIndexInfo(AvroModel):
    """The ``INDEX_INFO`` file-info entry of both index files (``HoodieBootstrapIndexInfo``)."""

    AVRO_NAME = "HoodieBootstrapIndexInfo"
    version: int | None = field(default=1, metadata=_avro("version"))
    """Schema version (1, set by the builder)."""
    bootstrap_base_path: str | None = field(default=None, metadata=_avro("bootstrapBasePath"))
    """Base path of the source dataset."""
    created_timestamp: int | None = field(default=None, metadata=_avro("createdTimestamp"))
    """When the index was written, epoch ms."""
    num_keys: int | None = field(default=None, metadata=_avro("numKeys"))
    """Keys in this index file."""
