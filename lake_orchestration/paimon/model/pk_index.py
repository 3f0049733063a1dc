"""Paimon 2.x primary-key global indexes in the index manifest: which payloads Java uses and which it ignores.

A primary-key table with ``pk-btree.index.columns``, ``pk-bitmap.index.columns``, ``pk-full-text.index.columns``
or ``pk-vector.index.columns`` (Paimon 2.0) keeps index payloads in the snapshot's index manifest: records with a
``_GLOBAL_INDEX`` whose ``_SOURCE_META`` is a Java ``PrimaryKeyIndexSourceMeta`` (the data level and the ordered
source data files, with their row counts, that the payload indexes). Java builds a payload only from files a
compaction wrote above level 0 (``PrimaryKeyIndexSourcePolicy``: file source ``COMPACT`` and level > 0), one payload
per definition and data level.

Every Java reader and writer validates a payload against the live files before using it
(``PkSortedBucketIndexState``, ``PkFullTextBucketIndexState``, ``PkVectorBucketIndexState.fromActiveDataFiles``):
a payload is used only when its source list equals, in file-name order, the live index-source files of its data
level in that bucket, with the same row counts; otherwise it is *stale*: readers read the files of that level
without it (raw scan, exact vector search), and the next writer commit deletes it and builds a new one. A COMPACT
commit that leaves the index manifest as it was (what Java's writer commits when the index build has not finished,
``waitCompaction`` = false) thus makes the payloads of the levels it changed stale, and nothing else.
"""

from __future__ import annotations

import struct
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.paimon.model.manifest import DataFileMeta, FileSource

SOURCE_META_VERSION = 1
"""``PrimaryKeyIndexSourceMeta.VERSION``."""


@dataclass(frozen=True)
class PrimaryKeyIndexSourceMeta:
    """Java ``PrimaryKeyIndexSourceMeta``: the data level and ordered source files (name, row count) of a payload."""

    data_level: int
    source_files: tuple[tuple[str, int], ...]

    @classmethod
    def deserialize(cls, data: bytes, *, where: str) -> PrimaryKeyIndexSourceMeta:
        """Java's ``DataOutputSerializer`` layout: version, level, count (big-endian ints), then per file
        ``writeUTF(name)`` and ``writeLong(rowCount)``. Raises ``CorruptFileError`` naming ``where``."""
        try:
            version, level, count = struct.unpack_from(">iii", data, 0)
            if version != SOURCE_META_VERSION:
                raise ValueError(f"version {version}, expected {SOURCE_META_VERSION}")
            if level <= 0 or count <= 0:
                raise ValueError(f"data level {level} and {count} source files, expected both > 0")
            pos, files = 12, []
            for _ in range(count):
                (length,) = struct.unpack_from(">H", data, pos)
                name = data[pos + 2 : pos + 2 + length].decode("utf-8")
                (rows,) = struct.unpack_from(">q", data, pos + 2 + length)
                files.append((name, rows))
                pos += 2 + length + 8
            if pos != len(data):
                raise ValueError(f"{len(data) - pos} trailing bytes")
        except (struct.error, UnicodeDecodeError, ValueError) as err:
            raise CorruptFileError(where, f"_SOURCE_META is not a primary-key index source meta: {err}") from err
        return cls(level, tuple(files))

    def serialize(self) -> bytes:
        """The bytes Java writes (ASCII file names, as Paimon's are)."""
        out = [struct.pack(">iii", SOURCE_META_VERSION, self.data_level, len(self.source_files))]
        for name, rows in self.source_files:
            encoded = name.encode("utf-8")
            out.append(struct.pack(">H", len(encoded)) + encoded + struct.pack(">q", rows))
        return b"".join(out)


def is_index_source(file: DataFileMeta) -> bool:
    """Java ``PrimaryKeyIndexSourcePolicy.shouldRead``: a file a compaction wrote, above level 0."""
    return file.file_source is FileSource.COMPACT and file.level > 0


def is_global_index_payload(record: Mapping[str, Any]) -> bool:
    """An index manifest record of a global index (``_GLOBAL_INDEX`` set), not a deletion vector or hash index."""
    return record.get("_GLOBAL_INDEX") is not None


def source_meta(record: Mapping[str, Any], *, where: str) -> PrimaryKeyIndexSourceMeta:
    """The payload's source meta; ``CorruptFileError`` when it has none or it does not decode."""
    meta = record["_GLOBAL_INDEX"].get("_SOURCE_META")
    if meta is None:
        raise CorruptFileError(
            where,
            f"global index {record['_FILE_NAME']} ({record['_INDEX_TYPE']}) has no _SOURCE_META: expected a "
            "primary-key index payload naming its source data files",
        )
    return PrimaryKeyIndexSourceMeta.deserialize(bytes(meta), where=f"{where} {record['_FILE_NAME']}")


def stale_payloads(
    records: Iterable[Mapping[str, Any]],
    live_files: Mapping[tuple[bytes, int], Iterable[DataFileMeta]],
    *,
    where: str,
) -> set[str]:
    """File names of the global index payloads Java would not use, given the live data files per (partition
    bytes, bucket): those whose source list is not exactly their level's live index-source files (sorted by name,
    same row counts), and every payload of a (type, field, level) that has more than one."""
    desired: dict[tuple[bytes, int], dict[int, list[tuple[str, int]]]] = {}
    for key, files in live_files.items():
        by_level: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for f in files:
            if is_index_source(f):
                by_level[f.level].append((f.file_name, f.row_count))
        desired[key] = {level: sorted(sources) for level, sources in by_level.items()}
    payloads = [r for r in records if r.get("_KIND", 0) == 0 and is_global_index_payload(r)]
    stale: set[str] = set()
    valid: list[tuple[tuple[Any, ...], str]] = []
    for r in payloads:
        key = (bytes(r["_PARTITION"]), r["_BUCKET"])
        meta = source_meta(r, where=where)
        if desired.get(key, {}).get(meta.data_level) != list(meta.source_files):
            stale.add(r["_FILE_NAME"])
        else:
            valid.append(
                ((key, r["_INDEX_TYPE"], r["_GLOBAL_INDEX"]["_INDEX_FIELD_ID"], meta.data_level), r["_FILE_NAME"])
            )
    counts = Counter(k for k, _ in valid)
    stale.update(name for k, name in valid if counts[k] > 1)
    return stale
