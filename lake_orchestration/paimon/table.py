"""Read a Paimon primary-key table of a filesystem catalog: schema, snapshots, manifests and live files by bucket.

Layout (Java ``SchemaManager``, ``SnapshotManager``, ``FileStorePathFactory``)::

    <table>/schema/schema-<id>                JSON TableSchema
    <table>/snapshot/snapshot-<id>            JSON Snapshot; LATEST / EARLIEST hold hint ids
    <table>/manifest/manifest-list-*          Avro ManifestFileMeta records
    <table>/manifest/manifest-*               Avro ManifestEntry records
    <table>/<k1=v1/...>/bucket-<n>/data-*     data files (parquet by default)
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import CorruptFileError, PaimonTableNotFoundError, StorageError
from lake_orchestration.io.storage import FileInfo, Storage
from lake_orchestration.paimon.model.avro import read_container
from lake_orchestration.paimon.model.binary_row import BinaryRow
from lake_orchestration.paimon.model.levels import Bucket, Levels
from lake_orchestration.paimon.model.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    manifest_entries,
    manifest_file_metas,
    merge_entries,
)
from lake_orchestration.paimon.model.options import CoreOptions
from lake_orchestration.paimon.model.schema import TableSchema
from lake_orchestration.paimon.model.snapshot import (
    EARLIEST_HINT,
    LATEST_HINT,
    SNAPSHOT_PREFIX,
    Snapshot,
    snapshot_file_name,
)

SCHEMA_DIR = "schema"
SNAPSHOT_DIR = "snapshot"
MANIFEST_DIR = "manifest"
SCHEMA_PREFIX = "schema-"
BUCKET_PREFIX = "bucket-"
DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
# Java PartitionPathUtils.CHAR_TO_ESCAPE (Hive's escapePathName)
_ESCAPE = {chr(c) for c in range(1, 32)} | set("\"#%'*/:=?\\\x7f{[]^")


def escape_path_name(value: str) -> str:
    """Escape a partition value for a path segment (``%XX``), as Java ``PartitionPathUtils.escapePathName``."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in value)


def _partition_value_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


@dataclass(frozen=True)
class PaimonTable:
    """A Paimon table on storage (filesystem catalog layout).

    Example:
        >>> table = PaimonTable.open("/warehouse/default.db/orders")  # doctest: +SKIP
        >>> [(b.bucket, [f.level for f in b.files]) for b in table.buckets()]  # doctest: +SKIP
        [(0, [0, 0, 2])]
    """

    storage: Storage
    """Storage rooted at the table directory."""

    @classmethod
    def open(cls, table_uri: str, *, storage_options: Mapping[str, str] | None = None) -> PaimonTable:
        """Open the table at ``table_uri``.

        Raises:
            PaimonTableNotFoundError: No ``schema/schema-N`` under ``table_uri``.
        """
        table = cls(Storage(table_uri, options=storage_options))
        if table.latest_schema_id() is None:
            raise PaimonTableNotFoundError(table_uri)
        return table

    @property
    def uri(self) -> str:
        """The table URI."""
        return self.storage.base_uri

    # -- schema ----------------------------------------------------------------------------------------------------
    def schema_ids(self) -> list[int]:
        """Ids of the ``schema-N`` files, ascending."""
        return _ids(self.storage.list_dir(self.storage.join(SCHEMA_DIR)), SCHEMA_PREFIX)

    def latest_schema_id(self) -> int | None:
        """Highest schema id (Java ``SchemaManager.latest``), None without schema files."""
        ids = self.schema_ids()
        return ids[-1] if ids else None

    def schema(self, schema_id: int | None = None) -> TableSchema:
        """The schema ``schema_id`` (default: the latest).

        Raises:
            PaimonTableNotFoundError: No schema files.
            StorageError: ``schema-<id>`` cannot be read.
            CorruptFileError: It is not a schema file.
        """
        if schema_id is None:
            schema_id = self.latest_schema_id()
            if schema_id is None:
                raise PaimonTableNotFoundError(self.uri)
        path = self.storage.join(SCHEMA_DIR, f"{SCHEMA_PREFIX}{schema_id}")
        return TableSchema.from_json(self.storage.read_bytes(path), path=self.storage.uri(path))

    def options(self) -> CoreOptions:
        """The latest schema's options."""
        return CoreOptions(self.schema().options)

    # -- snapshots -------------------------------------------------------------------------------------------------
    def snapshot_ids(self) -> list[int]:
        """Ids of the ``snapshot-N`` files, ascending (a listing)."""
        return _ids(self.storage.list_dir(self.storage.join(SNAPSHOT_DIR)), SNAPSHOT_PREFIX)

    def _hint(self, name: str) -> int | None:
        path = self.storage.join(SNAPSHOT_DIR, name)
        try:
            text = self.storage.read_bytes(path).decode("utf-8").strip()
        except StorageError:
            return None
        # Java's HintFileUtils.readHint: an unreadable hint is no hint; the listing decides
        return int(text) if text.isdigit() else None

    def _snapshot_exists(self, snapshot_id: int) -> bool:
        return self.storage.exists(self.storage.join(SNAPSHOT_DIR, snapshot_file_name(snapshot_id)))

    def latest_snapshot_id(self) -> int | None:
        """The latest snapshot id: the ``LATEST`` hint if ``snapshot-<hint+1>`` does not exist, else the highest
        listed id (Java ``HintFileUtils.findLatest``); None when there is no snapshot."""
        hint = self._hint(LATEST_HINT)
        if hint is not None and hint > 0 and not self._snapshot_exists(hint + 1):
            return hint
        ids = self.snapshot_ids()
        return ids[-1] if ids else None

    def earliest_snapshot_id(self) -> int | None:
        """The earliest snapshot id: the ``EARLIEST`` hint if that snapshot exists, else the lowest listed id
        (Java ``HintFileUtils.findEarliest``); None when there is no snapshot."""
        hint = self._hint(EARLIEST_HINT)
        if hint is not None and self._snapshot_exists(hint):
            return hint
        ids = self.snapshot_ids()
        return ids[0] if ids else None

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Read ``snapshot-<id>``.

        Raises:
            StorageError: The file does not exist or cannot be read.
            CorruptFileError: It is not a snapshot, or its id differs from its name.
        """
        path = self.storage.join(SNAPSHOT_DIR, snapshot_file_name(snapshot_id))
        snap = Snapshot.from_json(self.storage.read_bytes(path), path=self.storage.uri(path))
        if snap.id != snapshot_id:
            raise CorruptFileError(self.storage.uri(path), f"holds snapshot id {snap.id}, expected {snapshot_id}")
        return snap

    def latest_snapshot(self) -> Snapshot | None:
        """The latest snapshot, None for a table without commits."""
        snapshot_id = self.latest_snapshot_id()
        return None if snapshot_id is None else self.snapshot(snapshot_id)

    # -- manifests -------------------------------------------------------------------------------------------------
    def manifest_list(self, name: str, *, snapshot_id: int | None = None) -> tuple[ManifestFileMeta, ...]:
        """The records of manifest list ``name`` (``snapshot_id``: the snapshot it is read for, named in errors).

        Raises:
            CorruptFileError: The file does not decode as a manifest list (naming it and ``snapshot_id``).
        """
        path = self.storage.join(MANIFEST_DIR, name)
        uri = self.storage.uri(path)
        data = self.storage.read_bytes(path)
        with _in_snapshot(snapshot_id, "manifest list", "Avro container of ManifestFileMeta records"):
            return manifest_file_metas(read_container(data, path=uri), path=uri)

    def manifest(self, name: str, *, snapshot_id: int | None = None) -> tuple[ManifestEntry, ...]:
        """The entries of manifest ``name`` (``snapshot_id``: the snapshot it is read for, named in errors).

        Raises:
            CorruptFileError: The file does not decode as a manifest (naming it and ``snapshot_id``).
        """
        path = self.storage.join(MANIFEST_DIR, name)
        uri = self.storage.uri(path)
        data = self.storage.read_bytes(path)
        with _in_snapshot(snapshot_id, "manifest", "Avro container of ManifestEntry records"):
            return manifest_entries(read_container(data, path=uri), path=uri)

    def index_manifest_records(self, snapshot: Snapshot) -> tuple[dict[str, Any], ...]:
        """The raw records of the snapshot's index manifest (``_INDEX_TYPE``, ``_BUCKET``, ``_FILE_NAME`` ...:
        deletion vectors and global indexes), empty when the snapshot has none."""
        if snapshot.index_manifest is None:
            return ()
        path = self.storage.join(MANIFEST_DIR, snapshot.index_manifest)
        data = self.storage.read_bytes(path)
        with _in_snapshot(snapshot.id, "index manifest", "Avro container of IndexManifestEntry records"):
            return read_container(data, path=self.storage.uri(path)).records

    def _entries_of_list(self, name: str, snapshot_id: int | None = None) -> list[ManifestEntry]:
        return [
            e
            for meta in self.manifest_list(name, snapshot_id=snapshot_id)
            for e in self.manifest(meta.file_name, snapshot_id=snapshot_id)
        ]

    def delta_entries(self, snapshot: Snapshot) -> tuple[ManifestEntry, ...]:
        """The entries the snapshot's commit wrote (its delta manifest list), in file order."""
        return tuple(self._entries_of_list(snapshot.delta_manifest_list, snapshot.id))

    def live_entries(self, snapshot: Snapshot | None = None) -> tuple[ManifestEntry, ...]:
        """The ADD entries of every live file of ``snapshot`` (default: the latest): base + delta manifest lists
        merged as Java ``FileEntry.mergeEntries`` does.

        Raises:
            CorruptFileError: A file added twice, or a DELETE of a file no manifest adds.
        """
        if snapshot is None:
            snapshot = self.latest_snapshot()
            if snapshot is None:
                return ()
        entries = self._entries_of_list(snapshot.base_manifest_list, snapshot.id)
        entries += self._entries_of_list(snapshot.delta_manifest_list, snapshot.id)
        where = f"{self.uri} snapshot {snapshot.id}"
        merged = merge_entries(entries, where=where)
        orphans = [e for e in merged if e.kind is FileKind.DELETE]
        if orphans:
            names = ", ".join(f"{e.file.file_name} (level {e.file.level})" for e in orphans[:5])
            raise CorruptFileError(where, f"DELETE entries without a matching ADD in base+delta: {names}")
        return merged

    def buckets(self, snapshot: Snapshot | None = None, *, schema: TableSchema | None = None) -> list[Bucket]:
        """The live files of ``snapshot`` (default: the latest) per (partition, bucket), with their LSM levels.

        Level >= 1 runs are ordered by min key with Paimon's key comparator over ``schema``'s (default: the latest
        schema, read here) trimmed primary key; buckets come in (partition bytes, bucket) order.

        Raises:
            CorruptFileError: Manifests that do not merge, or overlapping files in one level.
        """
        if schema is None:
            schema = self.schema()
        options = CoreOptions(schema.options)
        key_types = schema.key_types
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
        for entry in self.live_entries(snapshot):
            groups.setdefault((entry.partition.data, entry.bucket), []).append(entry)
        out = []
        for (partition, bucket), entries in sorted(groups.items()):
            levels = Levels.from_files(
                [e.file for e in entries],
                num_levels=options.num_levels,
                key_order=lambda row: row.sort_key(key_types),
                where=f"{self.uri} bucket {bucket} of partition {partition.hex()}",
            )
            out.append(
                Bucket(
                    partition=BinaryRow(partition),
                    bucket=bucket,
                    total_buckets=entries[0].total_buckets,
                    levels=levels,
                )
            )
        return out

    # -- data file paths -------------------------------------------------------------------------------------------
    def bucket_path(self, partition: BinaryRow, bucket: int, *, schema: TableSchema | None = None) -> str:
        """Storage path of a bucket directory (``k1=v1/.../bucket-N``; null values as ``__DEFAULT_PARTITION__``),
        with ``schema``'s partition keys (default: the latest schema, read here)."""
        if schema is None:
            schema = self.schema()
        default = schema.options.get("partition.default-name", DEFAULT_PARTITION_NAME)
        values = partition.to_values(schema.partition_types)
        parts = []
        for name, dtype, value in zip(schema.partition_keys, schema.partition_types, values, strict=True):
            if value is None:
                text = default
            elif dtype.root == "DATE":
                text = (datetime.date(1970, 1, 1) + datetime.timedelta(days=value)).isoformat()
            else:
                text = _partition_value_string(value)
            parts.append(f"{escape_path_name(name)}={escape_path_name(text)}")
        return self.storage.join(*parts, f"{BUCKET_PREFIX}{bucket}")


@contextlib.contextmanager
def _in_snapshot(snapshot_id: int | None, what: str, expected: str) -> Iterator[None]:
    """Re-raise a :class:`CorruptFileError` (same path) saying what the file should hold and, when known, the
    snapshot it was read for."""
    try:
        yield
    except CorruptFileError as err:
        if type(err) is not CorruptFileError:
            raise
        read_for = "" if snapshot_id is None else f", read for snapshot {snapshot_id}"
        raise CorruptFileError(err.path, f"{err.detail}; expected a {what} ({expected}){read_for}") from err


def _ids(infos: list[FileInfo], prefix: str) -> list[int]:
    ids = []
    for info in infos:
        name = info.name
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            ids.append(int(name[len(prefix) :]))
    return sorted(ids)
