"""The Paimon table model: no I/O (options, schema, snapshot, manifests, data file metadata, LSM levels)."""

from lake_orchestration.paimon.model.avro import AvroContainer, read_container
from lake_orchestration.paimon.model.binary_row import BinaryRow
from lake_orchestration.paimon.model.levels import Bucket, CompactUnit, Levels, LevelSortedRun, SortedRun
from lake_orchestration.paimon.model.manifest import (
    DataFileMeta,
    FileIdentifier,
    FileKind,
    FileSource,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    merge_entries,
)
from lake_orchestration.paimon.model.options import ChangelogProducer, ConfigOption, CoreOptions, MergeEngine
from lake_orchestration.paimon.model.schema import DataField, DataType, TableSchema
from lake_orchestration.paimon.model.snapshot import CommitKind, Snapshot

__all__ = [
    "AvroContainer",
    "BinaryRow",
    "Bucket",
    "ChangelogProducer",
    "CommitKind",
    "CompactUnit",
    "ConfigOption",
    "CoreOptions",
    "DataField",
    "DataFileMeta",
    "DataType",
    "FileIdentifier",
    "FileKind",
    "FileSource",
    "LevelSortedRun",
    "Levels",
    "ManifestEntry",
    "ManifestFileMeta",
    "MergeEngine",
    "SimpleStats",
    "Snapshot",
    "SortedRun",
    "TableSchema",
    "merge_entries",
    "read_container",
]
