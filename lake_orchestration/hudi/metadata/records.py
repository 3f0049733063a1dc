"""``HoodieMetadataRecord``, the records of Hudi's metadata table (table version 6, Hudi 0.14/0.15), decoded and
encoded for the ``files`` partition, and merged as ``HoodieMetadataPayload.preCombine`` merges them.

Record layout (``HoodieMetadataPayload``): ``key`` (string), ``type`` (int) and one payload field by type:

=====  =======================  =====================================================================
type   key                      payload
=====  =======================  =====================================================================
1      ``__all_partitions__``   ``filesystemMetadata``: partition identifier -> ``{size: 0, isDeleted}``
2      partition identifier     ``filesystemMetadata``: file name -> ``{size, isDeleted}``
3      column stats key         ``ColumnStatsMetadata`` (``column_stats`` partition; decoded, not interpreted)
4      bloom filter key         ``BloomFilterMetadata`` (``bloom_filters`` partition; decoded, not interpreted)
5      record key               ``recordIndexMetadata`` (``record_index`` partition; decoded, not interpreted)
=====  =======================  =====================================================================

A partition's identifier is its relative path, ``"."`` for the table's root (``NON_PARTITIONED_NAME``).

On storage (verified on Java 0.15-written files, tests/hudi/metadata): both the base HFiles of the metadata table
and the HFile data blocks of its logs hold one HFile entry per record, **key = the record key** (UTF-8), **value =
the Avro binary datum of the record under the writer schema** ``HoodieAvroUtils.addMetadataFields(
HoodieMetadataRecord)`` — five nullable meta fields first (all null in log blocks; a base file fills
``_hoodie_file_name`` with its own name, the metadata table has ``hoodie.populate.meta.fields=false``) — with the
``key`` field set to ``""`` (the HFile key holds it; the reader puts it back). That writer schema is the block's
SCHEMA header and the HFile's ``schema`` file-info entry. Entries are sorted by key (HFile order).

API (helper H7's MDT writer builds on it):

* :class:`FileInfo`, :class:`MetadataRecord` (``key``, ``type``, ``filesystem_metadata``, ``other``, ``is_deleted``),
  :func:`partition_list_record`, :func:`partition_files_record` (``createPartitionListRecord`` /
  ``createPartitionFilesRecord``), :meth:`MetadataRecord.pre_combine` (``preCombine``),
  :func:`partition_identifier` / :func:`partition_path` (``"" <-> "."``).
* :func:`writer_schema_text` (the SCHEMA header / ``schema`` file info, byte-identical to Java's),
  :func:`encode_value` (``record, file_name=None`` -> HFile value), :func:`decode_value` (``key, value, schema`` ->
  record), :func:`decode_hfile` (an HFile's bytes -> records, any writer schema in its file info).
"""

from __future__ import annotations

import enum
import functools
import io
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import fastavro

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.hudi.hfile import HFileReader
from lake_orchestration.hudi.model.avro.schema import schema_text
from lake_orchestration.hudi.model.schema import META_FIELDS

log = logging.getLogger(__name__)

RECORDKEY_PARTITION_LIST = "__all_partitions__"
"""``HoodieTableMetadata.RECORDKEY_PARTITION_LIST``: the key of the partition-list record."""
NON_PARTITIONED_NAME = "."
"""``HoodieTableMetadata.NON_PARTITIONED_NAME``: the identifier of a non-partitioned table's only partition."""
FILES_PARTITION = "files"
"""``MetadataPartitionType.FILES.getPartitionPath()``."""
SCHEMA_FILE_INFO_KEY = "schema"
"""File-info key of the writer schema in an MDT HFile (``HoodieAvroHFileReaderImplBase.SCHEMA_KEY``)."""


class MetadataRecordType(enum.IntEnum):
    """``HoodieMetadataPayload.METADATA_TYPE_*``."""

    PARTITION_LIST = 1
    FILE_LIST = 2
    COLUMN_STATS = 3
    BLOOM_FILTER = 4
    RECORD_INDEX = 5


@dataclass(frozen=True)
class FileInfo:
    """``HoodieMetadataFileInfo``: a file's size and whether the record marks it deleted."""

    size: int
    is_deleted: bool = False


DELETED = FileInfo(0, True)
"""``HoodieMetadataPayload.DELETE_FILE_METADATA``."""


@dataclass(frozen=True)
class MetadataRecord:
    """One ``HoodieMetadataRecord``.

    Attributes:
        key: the record key (``__all_partitions__``, a partition identifier, or an index key).
        type: :class:`MetadataRecordType` code.
        filesystem_metadata: name -> :class:`FileInfo` (types 1 and 2), else None.
        other: the other payload fields as decoded (``BloomFilterMetadata``, ``ColumnStatsMetadata``,
            ``recordIndexMetadata``), for the partitions this module does not interpret.
        is_deleted: a tombstone (a delete-block record: ``HoodieMetadataPayload`` with no record), which wins over
            any earlier record of its key.
    """

    key: str
    type: int
    filesystem_metadata: Mapping[str, FileInfo] | None = None
    other: Mapping[str, Any] = field(default_factory=dict)
    is_deleted: bool = False

    # -- HoodieMetadataPayload -----------------------------------------------------------------------------------
    def pre_combine(self, previous: MetadataRecord) -> MetadataRecord:
        """``HoodieMetadataPayload.preCombine(previous)``: ``self`` is the newer record.

        For the ``files`` partition (types 1, 2): entries of both, the newer taking precedence; a newer deletion
        removes an older added file (and is dropped itself), a deletion of a file the older record does not have
        is kept (it must still cancel the file in the base file), a repeated deletion is kept; a file added in both
        keeps the larger size (log files grow; the merge is commutative). A tombstone wins; a record after a
        tombstone replaces it. Bloom filters and the record index: the newer record. Column stats: not merged
        here (the newer one; Java merges min/max ranges).

        Raises:
            ValueError: the records' keys or types differ, as Java's ``checkArgument`` refuses.
        """
        if self.is_deleted or previous.is_deleted:
            return self
        if previous.type != self.type:
            raise ValueError(f"Cannot combine metadata record type {previous.type} with {self.type} (key {self.key!r})")
        if previous.key != self.key:
            raise ValueError(f"Cannot combine metadata record {previous.key!r} with {self.key!r}: the keys differ")
        if self.type in (MetadataRecordType.PARTITION_LIST, MetadataRecordType.FILE_LIST):
            return MetadataRecord(self.key, self.type, _combine_files(previous, self))
        return self

    def files(self) -> list[str]:
        """``getFilenames``: names not marked deleted, sorted."""
        return sorted(n for n, i in (self.filesystem_metadata or {}).items() if not i.is_deleted)

    def deletions(self) -> list[str]:
        """``getDeletions``: names marked deleted, sorted."""
        return sorted(n for n, i in (self.filesystem_metadata or {}).items() if i.is_deleted)

    def file_sizes(self) -> dict[str, int]:
        """Files not marked deleted -> size."""
        return {n: i.size for n, i in (self.filesystem_metadata or {}).items() if not i.is_deleted}


def _combine_files(previous: MetadataRecord, newer: MetadataRecord) -> dict[str, FileInfo]:
    """``combineFileSystemMetadata``."""
    combined: dict[str, FileInfo] = dict(previous.filesystem_metadata or {})
    entries = newer.filesystem_metadata or {}
    if newer.type == MetadataRecordType.FILE_LIST:
        for name, info in entries.items():  # validatePayload
            if not info.is_deleted and info.size <= 0:
                raise ValueError(
                    f"Metadata table record {newer.key!r} lists file {name!r} with size {info.size}: "
                    "existing files should have size > 0"
                )
    for name, info in entries.items():
        old = combined.get(name)
        if old is None:
            combined[name] = info
        elif info.is_deleted:
            if old.is_deleted:
                log.warning("A file is repeatedly deleted in the files partition of the metadata table: %s", newer.key)
                combined[name] = info
            else:
                del combined[name]
        else:
            combined[name] = FileInfo(max(info.size, old.size), False)
    return combined


def merge_records(records: Iterable[MetadataRecord]) -> dict[str, MetadataRecord]:
    """Records oldest first -> the merged record per key (``preCombine`` of each newer record with the result)."""
    out: dict[str, MetadataRecord] = {}
    for rec in records:
        prev = out.get(rec.key)
        out[rec.key] = rec if prev is None else rec.pre_combine(prev)
    return out


# -- record constructors (HoodieMetadataPayload.create*) ----------------------------------------------------------
def partition_identifier(relative_partition_path: str) -> str:
    """``getPartitionIdentifierForFilesPartition``: ``""`` (a non-partitioned table) -> ``"."``."""
    return NON_PARTITIONED_NAME if relative_partition_path == "" else relative_partition_path


def partition_path(identifier: str) -> str:
    """The relative partition path of a ``files`` record key (``"."`` -> ``""``)."""
    return "" if identifier == NON_PARTITIONED_NAME else identifier


def partition_list_record(partitions: Iterable[str], *, is_deleted: bool = False) -> MetadataRecord:
    """``createPartitionListRecord``: every partition (relative path) with size 0, flagged ``is_deleted`` for
    partitions a ``delete_partition`` removed."""
    info = FileInfo(0, is_deleted)
    return MetadataRecord(
        RECORDKEY_PARTITION_LIST,
        MetadataRecordType.PARTITION_LIST,
        {partition_identifier(p): info for p in partitions},
    )


def partition_files_record(
    partition: str, added: Mapping[str, int] | None = None, deleted: Iterable[str] = ()
) -> MetadataRecord:
    """``createPartitionFilesRecord``: files added (name -> size, sizes > 0) and deleted (names) in a partition.

    Raises:
        ValueError: an added file has size <= 0 (Java's ``checkState``: Hudi writes no empty files).
    """
    entries: dict[str, FileInfo] = {}
    for name, size in (added or {}).items():
        if size <= 0:
            raise ValueError(f"File {name!r} added to partition {partition!r} has size {size}: expected > 0")
        entries[name] = FileInfo(int(size), False)
    for name in deleted:
        entries[name] = DELETED
    return MetadataRecord(partition_identifier(partition), MetadataRecordType.FILE_LIST, entries)


# -- Avro ---------------------------------------------------------------------------------------------------------
@functools.cache
def writer_schema_text() -> str:
    """``HoodieAvroUtils.addMetadataFields(HoodieMetadataRecord.getClassSchema()).toString()``: the SCHEMA header of
    the metadata table's HFile data blocks and the ``schema`` file info of its HFiles, byte for byte as Java."""
    base = schema_text("HoodieMetadataRecord")
    marker = '"fields":['
    at = base.index(marker) + len(marker)
    meta = ",".join(f'{{"name":"{n}","type":["null","string"],"doc":"","default":null}}' for n in META_FIELDS)
    return f"{base[:at]}{meta},{base[at:]}"


@functools.cache
def _parsed(text: str) -> Any:
    return fastavro.parse_schema(json.loads(text))


def _info_to_avro(m: Mapping[str, FileInfo] | None) -> dict[str, dict[str, Any]] | None:
    if m is None:
        return None
    return {n: {"size": i.size, "isDeleted": i.is_deleted} for n, i in m.items()}


def to_avro(record: MetadataRecord, *, key: str | None = None, file_name: str | None = None) -> dict[str, Any]:
    """The record as an Avro datum of :func:`writer_schema_text` (``key`` overrides the key field)."""
    if record.is_deleted:
        raise ValueError(f"Metadata record {record.key!r} is a tombstone: it goes to a delete block, not into a value")
    datum: dict[str, Any] = {n: None for n in META_FIELDS}
    datum["_hoodie_file_name"] = file_name
    datum.update(
        {
            "key": record.key if key is None else key,
            "type": int(record.type),
            "filesystemMetadata": _info_to_avro(record.filesystem_metadata),
            "BloomFilterMetadata": record.other.get("BloomFilterMetadata"),
            "ColumnStatsMetadata": record.other.get("ColumnStatsMetadata"),
            "recordIndexMetadata": record.other.get("recordIndexMetadata"),
        }
    )
    return datum


def encode_value(record: MetadataRecord, *, file_name: str | None = None) -> bytes:
    """The HFile value Java writes for ``record``: its Avro datum under :func:`writer_schema_text` with ``key`` set
    to ``""``. ``file_name``: the base HFile's own name, which Java's base-file writer puts in
    ``_hoodie_file_name`` (None in log blocks)."""
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _parsed(writer_schema_text()), to_avro(record, key="", file_name=file_name))
    return buf.getvalue()


def from_avro(datum: Mapping[str, Any], *, key: str | None = None) -> MetadataRecord:
    """A decoded Avro datum -> :class:`MetadataRecord` (``key``: the HFile key, used when the datum's is empty)."""
    k = datum.get("key") or key or ""
    fsm = datum.get("filesystemMetadata")
    files = None if fsm is None else {n: FileInfo(int(v["size"]), bool(v["isDeleted"])) for n, v in fsm.items()}
    other = {
        n: datum[n]
        for n in ("BloomFilterMetadata", "ColumnStatsMetadata", "recordIndexMetadata")
        if datum.get(n) is not None
    }
    return MetadataRecord(k, int(datum["type"]), files, other)


def decode_value(key: bytes | str, value: bytes, schema_json: str | None = None, *, where: str = "") -> MetadataRecord:
    """One HFile entry of the metadata table -> :class:`MetadataRecord` (``schema_json``: the writer schema, default
    :func:`writer_schema_text`).

    Raises:
        CorruptFileError: the value does not decode under the schema.
    """
    k = key.decode() if isinstance(key, bytes) else key
    try:
        datum = fastavro.schemaless_reader(io.BytesIO(value), _parsed(schema_json or writer_schema_text()), None)
        return from_avro(datum, key=k)  # type: ignore[arg-type]
    except Exception as err:  # fastavro raises EOFError, ValueError, IndexError ... on bad bytes
        raise CorruptFileError(
            where or "<metadata table HFile>",
            f"the value of key {k!r} ({len(value)} bytes) is not a HoodieMetadataRecord: {err}",
        ) from err


def iter_hfile_records(data: bytes, *, where: str = "", schema_json: str | None = None) -> Iterator[MetadataRecord]:
    """The records of a metadata-table HFile (a base file or an HFile data block's content), in key order; the
    writer schema is the ``schema`` file-info entry (else ``schema_json``, else :func:`writer_schema_text`)."""
    reader = HFileReader(data, path=where or "<bytes>")
    info_schema = reader.file_info.get(SCHEMA_FILE_INFO_KEY)
    text = info_schema.decode() if info_schema else (schema_json or writer_schema_text())
    for rec in reader.records():
        yield decode_value(rec.key, rec.value, text, where=where)


def decode_hfile(data: bytes, *, where: str = "", schema_json: str | None = None) -> list[MetadataRecord]:
    """:func:`iter_hfile_records` as a list."""
    return list(iter_hfile_records(data, where=where, schema_json=schema_json))
