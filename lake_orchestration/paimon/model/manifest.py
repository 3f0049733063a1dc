"""Manifest lists, manifests and data file metadata: Paimon's Avro records, typed.

Mirrors Java ``ManifestFileMetaSerializer``, ``ManifestEntrySerializer`` and ``DataFileMetaSerializer`` (pypaimon
``manifest/schema/``): a manifest list holds :class:`ManifestFileMeta` records, a manifest holds
:class:`ManifestEntry` records (ADD or DELETE of one :class:`DataFileMeta` in a partition and bucket). The writer
schemas below are the ones Java Paimon 1.x embeds in the files (record names included), so files written from them
are read by Java and pypaimon alike. Records are read by field name; fields absent from an older writer schema take
their default.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import CorruptFileError, SchemaError
from lake_orchestration.paimon.model.avro import AvroContainer
from lake_orchestration.paimon.model.binary_row import BinaryRow

_NS = "org.apache.paimon.avro.generated"


def _stats_schema(name: str) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            {"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": None},
        ],
    }


def _opt(name: str, type_: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", type_], "default": None}


#: ``_FILE`` of a manifest entry (Java ``DataFileMeta.SCHEMA``, Paimon 1.x).
DATA_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record__FILE",
    "fields": [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": _stats_schema("record__FILE__KEY_STATS")},
        {"name": "_VALUE_STATS", "type": _stats_schema("record__FILE__VALUE_STATS")},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
        _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
        _opt("_DELETE_ROW_COUNT", "long"),
        _opt("_EMBEDDED_FILE_INDEX", "bytes"),
        _opt("_FILE_SOURCE", "int"),
        _opt("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_FIRST_ROW_ID", "long"),
        _opt("_WRITE_COLS", {"type": "array", "items": "string"}),
    ],
}

#: A manifest's record (Java ``ManifestEntry.SCHEMA`` with ``_VERSION``, as ``ManifestEntrySerializer`` writes).
MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record",
    "namespace": _NS,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": DATA_FILE_META_SCHEMA},
    ],
}

#: A manifest list's record (Java ``ManifestFileMeta.SCHEMA`` with ``_VERSION``).
MANIFEST_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record",
    "namespace": _NS,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats_schema("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _opt("_MIN_BUCKET", "int"),
        _opt("_MAX_BUCKET", "int"),
        _opt("_MIN_LEVEL", "int"),
        _opt("_MAX_LEVEL", "int"),
        _opt("_MIN_ROW_ID", "long"),
        _opt("_MAX_ROW_ID", "long"),
    ],
}

#: ``_VERSION`` Java's serializers write (``ManifestEntrySerializer`` / ``ManifestFileMetaSerializer``: 2).
MANIFEST_ENTRY_VERSION = 2
MANIFEST_FILE_META_VERSION = 2


class FileKind(enum.IntEnum):
    """``_KIND`` of a manifest entry (Java ``FileKind``)."""

    ADD = 0
    DELETE = 1


class FileSource(enum.IntEnum):
    """``_FILE_SOURCE`` of a data file (Java ``FileSource``)."""

    APPEND = 0
    """Written by a writer (flush of the write buffer)."""
    COMPACT = 1
    """Written by a compaction rewrite."""


def _field(record: dict[str, Any], name: str, where: str, default: Any = ...) -> Any:
    if name in record:
        return record[name]
    if default is ...:
        raise SchemaError(f"{where} record lacks the field {name!r}, which has no default")
    return default


@dataclass(frozen=True, kw_only=True)
class SimpleStats:
    """Min/max values (``BinaryRow`` bytes) and null counts of some columns (Java ``SimpleStats``)."""

    min_values: BinaryRow
    """Minimum of each column."""
    max_values: BinaryRow
    """Maximum of each column."""
    null_counts: tuple[int | None, ...] | None
    """Nulls per column (None: unknown)."""

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> SimpleStats:
        """From a decoded ``_*_STATS`` record."""
        nulls = record.get("_NULL_COUNTS")
        return cls(
            min_values=BinaryRow(_field(record, "_MIN_VALUES", "SimpleStats")),
            max_values=BinaryRow(_field(record, "_MAX_VALUES", "SimpleStats")),
            null_counts=None if nulls is None else tuple(nulls),
        )

    def to_avro(self) -> dict[str, Any]:
        """The Avro record."""
        return {
            "_MIN_VALUES": self.min_values.data,
            "_MAX_VALUES": self.max_values.data,
            "_NULL_COUNTS": None if self.null_counts is None else list(self.null_counts),
        }


@dataclass(frozen=True, kw_only=True)
class DataFileMeta:
    """A data file of a bucket (Java ``DataFileMeta``): its key range, sequence numbers and LSM level."""

    file_name: str
    """File name inside ``<partition>/bucket-N/``."""
    file_size: int
    """Size in bytes."""
    row_count: int
    """Rows in the file, including retractions (``-D``/``-U``)."""
    min_key: BinaryRow
    """Smallest key (trimmed primary key)."""
    max_key: BinaryRow
    """Largest key."""
    key_stats: SimpleStats
    """Statistics of the key columns."""
    value_stats: SimpleStats
    """Statistics of the value columns (or of :attr:`value_stats_cols`)."""
    min_sequence_number: int
    """Smallest ``_SEQUENCE_NUMBER`` in the file."""
    max_sequence_number: int
    """Largest ``_SEQUENCE_NUMBER``: orders level-0 files (newest first)."""
    schema_id: int
    """Schema the file was written with."""
    level: int
    """LSM level: 0 = unsorted runs of new data, 1..num-levels-1 = one sorted run per level."""
    extra_files: tuple[str, ...] = ()
    """Files that belong to this one (e.g. index files)."""
    creation_time: int | None = None
    """Creation time as Java writes it: epoch millis of a local date-time."""
    delete_row_count: int | None = None
    """Retraction rows (``-D``/``-U``) in the file; None when the writer did not record it."""
    embedded_index: bytes | None = None
    """File index embedded in the manifest."""
    file_source: FileSource | None = None
    """APPEND (writer) or COMPACT (compaction output)."""
    value_stats_cols: tuple[str, ...] | None = None
    """Columns of :attr:`value_stats` when not all columns (dense statistics)."""
    external_path: str | None = None
    """Full path when the file lives outside the table directory."""
    first_row_id: int | None = None
    """First row id (row tracking)."""
    write_cols: tuple[str, ...] | None = None
    """Columns written to the file, when not all."""

    @property
    def add_row_count(self) -> int | None:
        """Rows that are not retractions (``row_count - delete_row_count``), None when unknown."""
        return None if self.delete_row_count is None else self.row_count - self.delete_row_count

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> DataFileMeta:
        """From a decoded ``_FILE`` record.

        Raises:
            SchemaError: A field without default is missing.
        """
        w = "DataFileMeta"
        source = record.get("_FILE_SOURCE")
        return cls(
            file_name=_field(record, "_FILE_NAME", w),
            file_size=_field(record, "_FILE_SIZE", w),
            row_count=_field(record, "_ROW_COUNT", w),
            min_key=BinaryRow(_field(record, "_MIN_KEY", w)),
            max_key=BinaryRow(_field(record, "_MAX_KEY", w)),
            key_stats=SimpleStats.from_avro(_field(record, "_KEY_STATS", w)),
            value_stats=SimpleStats.from_avro(_field(record, "_VALUE_STATS", w)),
            min_sequence_number=_field(record, "_MIN_SEQUENCE_NUMBER", w),
            max_sequence_number=_field(record, "_MAX_SEQUENCE_NUMBER", w),
            schema_id=_field(record, "_SCHEMA_ID", w),
            level=_field(record, "_LEVEL", w),
            extra_files=tuple(_field(record, "_EXTRA_FILES", w)),
            creation_time=record.get("_CREATION_TIME"),
            delete_row_count=record.get("_DELETE_ROW_COUNT"),
            embedded_index=record.get("_EMBEDDED_FILE_INDEX"),
            file_source=None if source is None else FileSource(source),
            value_stats_cols=_tuple_or_none(record.get("_VALUE_STATS_COLS")),
            external_path=record.get("_EXTERNAL_PATH"),
            first_row_id=record.get("_FIRST_ROW_ID"),
            write_cols=_tuple_or_none(record.get("_WRITE_COLS")),
        )

    def to_avro(self) -> dict[str, Any]:
        """The Avro ``_FILE`` record (for :data:`DATA_FILE_META_SCHEMA`)."""
        return {
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key.data,
            "_MAX_KEY": self.max_key.data,
            "_KEY_STATS": self.key_stats.to_avro(),
            "_VALUE_STATS": self.value_stats.to_avro(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id,
            "_LEVEL": self.level,
            "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": self.creation_time,
            "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_index,
            "_FILE_SOURCE": None if self.file_source is None else int(self.file_source),
            "_VALUE_STATS_COLS": None if self.value_stats_cols is None else list(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path,
            "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": None if self.write_cols is None else list(self.write_cols),
        }


def _tuple_or_none(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


@dataclass(frozen=True, kw_only=True)
class FileIdentifier:
    """What makes two manifest entries the same file (Java ``FileEntry.Identifier``): a DELETE cancels the ADD with
    the same identifier, so an upgrade (same file name, new level) is a DELETE at the old level plus an ADD."""

    partition: bytes
    """Serialized partition row."""
    bucket: int
    """Bucket."""
    level: int
    """LSM level."""
    file_name: str
    """Data file name."""
    extra_files: tuple[str, ...]
    """Extra files."""
    embedded_index: bytes | None
    """Embedded index bytes."""
    external_path: str | None
    """External path."""


@dataclass(frozen=True, kw_only=True)
class ManifestEntry:
    """One record of a manifest: ADD or DELETE of a data file in a partition and bucket."""

    kind: FileKind
    """ADD or DELETE."""
    partition: BinaryRow
    """The partition (empty row for an unpartitioned table)."""
    bucket: int
    """Bucket number."""
    total_buckets: int
    """Number of buckets of the table when the entry was written."""
    file: DataFileMeta
    """The data file."""
    version: int = MANIFEST_ENTRY_VERSION
    """``_VERSION`` of the record."""

    @property
    def identifier(self) -> FileIdentifier:
        """The file's identity for ADD/DELETE matching."""
        f = self.file
        return FileIdentifier(
            partition=self.partition.data,
            bucket=self.bucket,
            level=f.level,
            file_name=f.file_name,
            extra_files=f.extra_files,
            embedded_index=f.embedded_index,
            external_path=f.external_path,
        )

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> ManifestEntry:
        """From a decoded manifest record.

        Raises:
            SchemaError: A required field is missing or ``_KIND`` is neither 0 nor 1.
        """
        w = "ManifestEntry"
        kind = _field(record, "_KIND", w)
        if kind not in (0, 1):
            raise SchemaError(f"ManifestEntry _KIND {kind!r}: expected 0 (ADD) or 1 (DELETE)")
        return cls(
            kind=FileKind(kind),
            partition=BinaryRow(_field(record, "_PARTITION", w)),
            bucket=_field(record, "_BUCKET", w),
            total_buckets=_field(record, "_TOTAL_BUCKETS", w),
            file=DataFileMeta.from_avro(_field(record, "_FILE", w)),
            version=record.get("_VERSION", MANIFEST_ENTRY_VERSION),
        )

    def to_avro(self) -> dict[str, Any]:
        """The Avro record (for :data:`MANIFEST_ENTRY_SCHEMA`)."""
        return {
            "_VERSION": self.version,
            "_KIND": int(self.kind),
            "_PARTITION": self.partition.data,
            "_BUCKET": self.bucket,
            "_TOTAL_BUCKETS": self.total_buckets,
            "_FILE": self.file.to_avro(),
        }


@dataclass(frozen=True, kw_only=True)
class ManifestFileMeta:
    """One record of a manifest list: a manifest file and its summary."""

    file_name: str
    """Manifest file name (in ``manifest/``)."""
    file_size: int
    """Its size in bytes."""
    num_added_files: int
    """ADD entries in it."""
    num_deleted_files: int
    """DELETE entries in it."""
    partition_stats: SimpleStats
    """Min/max of the partitions it covers."""
    schema_id: int
    """Schema of the writer."""
    min_bucket: int | None = None
    """Smallest bucket (Paimon >= 1.1)."""
    max_bucket: int | None = None
    """Largest bucket."""
    min_level: int | None = None
    """Smallest level."""
    max_level: int | None = None
    """Largest level."""
    min_row_id: int | None = None
    """Smallest row id (row tracking)."""
    max_row_id: int | None = None
    """Largest row id."""
    version: int = MANIFEST_FILE_META_VERSION
    """``_VERSION`` of the record."""

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> ManifestFileMeta:
        """From a decoded manifest-list record.

        Raises:
            SchemaError: A required field is missing.
        """
        w = "ManifestFileMeta"
        return cls(
            file_name=_field(record, "_FILE_NAME", w),
            file_size=_field(record, "_FILE_SIZE", w),
            num_added_files=_field(record, "_NUM_ADDED_FILES", w),
            num_deleted_files=_field(record, "_NUM_DELETED_FILES", w),
            partition_stats=SimpleStats.from_avro(_field(record, "_PARTITION_STATS", w)),
            schema_id=_field(record, "_SCHEMA_ID", w),
            min_bucket=record.get("_MIN_BUCKET"),
            max_bucket=record.get("_MAX_BUCKET"),
            min_level=record.get("_MIN_LEVEL"),
            max_level=record.get("_MAX_LEVEL"),
            min_row_id=record.get("_MIN_ROW_ID"),
            max_row_id=record.get("_MAX_ROW_ID"),
            version=record.get("_VERSION", MANIFEST_FILE_META_VERSION),
        )

    def to_avro(self) -> dict[str, Any]:
        """The Avro record (for :data:`MANIFEST_FILE_META_SCHEMA`)."""
        return {
            "_VERSION": self.version,
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_NUM_ADDED_FILES": self.num_added_files,
            "_NUM_DELETED_FILES": self.num_deleted_files,
            "_PARTITION_STATS": self.partition_stats.to_avro(),
            "_SCHEMA_ID": self.schema_id,
            "_MIN_BUCKET": self.min_bucket,
            "_MAX_BUCKET": self.max_bucket,
            "_MIN_LEVEL": self.min_level,
            "_MAX_LEVEL": self.max_level,
            "_MIN_ROW_ID": self.min_row_id,
            "_MAX_ROW_ID": self.max_row_id,
        }


def manifest_entries(container: AvroContainer, *, path: str) -> tuple[ManifestEntry, ...]:
    """The entries of a decoded manifest file.

    Raises:
        CorruptFileError: A record is not a manifest entry (a field missing or of the wrong type).
    """
    try:
        return tuple(ManifestEntry.from_avro(r) for r in container.records)
    except (SchemaError, ValueError, TypeError, KeyError, AttributeError) as err:
        raise CorruptFileError(
            path, f"expected a manifest of ManifestEntry records: {type(err).__name__}: {err}"
        ) from err


def manifest_file_metas(container: AvroContainer, *, path: str) -> tuple[ManifestFileMeta, ...]:
    """The records of a decoded manifest list.

    Raises:
        CorruptFileError: A record is not a manifest file meta (a field missing or of the wrong type).
    """
    try:
        return tuple(ManifestFileMeta.from_avro(r) for r in container.records)
    except (SchemaError, ValueError, TypeError, KeyError, AttributeError) as err:
        raise CorruptFileError(
            path, f"expected a manifest list of ManifestFileMeta records: {type(err).__name__}: {err}"
        ) from err


def merge_entries(entries: Iterable[ManifestEntry], *, where: str) -> tuple[ManifestEntry, ...]:
    """The live files of a sequence of entries (Java ``FileEntry.mergeEntries``), in order of addition.

    A DELETE removes the ADD with the same :class:`FileIdentifier`; a DELETE whose ADD has not been seen is kept
    (its ADD is in an earlier manifest) and the result then still holds it as a DELETE.

    Raises:
        CorruptFileError: The same file is added twice (Java: "Trying to add file ... which is already added").
    """
    merged: dict[FileIdentifier, ManifestEntry] = {}
    for entry in entries:
        ident = entry.identifier
        if entry.kind is FileKind.ADD:
            if ident in merged:
                raise CorruptFileError(
                    where, f"file {entry.file.file_name} (bucket {entry.bucket}, level {entry.file.level}) added twice"
                )
            merged[ident] = entry
        elif ident in merged:
            del merged[ident]
        else:
            merged[ident] = entry
    return tuple(merged.values())
