"""Commit an executed Paimon compaction: a new ``COMPACT`` snapshot, as Java ``FileStoreCommitImpl`` writes it.

One commit attempt (``tryCommitOnce``):

1. Read the latest snapshot (a newer one than the plan's when another writer committed) and check for conflicts as
   Java's ``noConflictsOrFail``: every file the compaction replaces must still be live (same file, same level), and each
   level >= 1 of the touched buckets must stay one sorted run; else
   :class:`~lake_orchestration.errors.PaimonCommitConflictError` (the caller re-plans).
2. Write one manifest ``manifest-<uuid>-<n>`` with the compaction's entries: every *before* file as DELETE (at its
   old level), then every *after* file as ADD (an upgrade is a DELETE at the old level plus an ADD of the same file
   at the new level; a rewrite deletes its inputs and adds new ``_FILE_SOURCE`` = COMPACT files).
3. Write the base manifest list (the latest snapshot's base + delta manifests: Java merges small manifests only
   past ``manifest.merge-min-count``, which this does not do) and the delta manifest list (the new manifest),
   ``manifest-list-<uuid>-<n>``.
4. Create ``snapshot/snapshot-<latest+1>`` with create-if-absent (atomic on local disk and object stores with
   conditional writes): ``commitKind`` COMPACT, ``commitIdentifier`` Long.MAX_VALUE (a batch commit), the
   latest's index manifest, watermark, statistics and next row id carried over, ``deltaRecordCount`` = rows added -
   rows deleted, ``totalRecordCount`` = the latest's + delta. If another writer created it first, delete this
   attempt's manifests and retry from 1. Then overwrite the ``LATEST`` hint.

Expires nothing (snapshot expiration is a separate service).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import (
    CorruptFileError,
    FileAlreadyExistsError,
    PaimonCommitConflictError,
    StorageError,
)
from lake_orchestration.paimon.model.avro import AVRO_CODECS, write_container
from lake_orchestration.paimon.model.binary_row import BinaryRow
from lake_orchestration.paimon.model.levels import Levels
from lake_orchestration.paimon.model.manifest import (
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    merge_entries,
)
from lake_orchestration.paimon.model.schema import TableSchema
from lake_orchestration.paimon.model.snapshot import LATEST_HINT, CommitKind, Snapshot, snapshot_file_name
from lake_orchestration.paimon.services.compaction.executor import PaimonCompactionExecution
from lake_orchestration.paimon.table import MANIFEST_DIR, SNAPSHOT_DIR, PaimonTable

BATCH_COMMIT_IDENTIFIER = 2**63 - 1
SNAPSHOT_VERSION = 3
DEFAULT_MAX_RETRIES = 10


@dataclass(frozen=True, kw_only=True)
class PaimonCompactionCommit:
    """A committed compaction."""

    snapshot: Snapshot
    """The new COMPACT snapshot."""
    deleted_files: int
    """DELETE entries written."""
    added_files: int
    """ADD entries written."""
    attempts: int
    """Commit attempts (more than 1 when another writer committed in between)."""

    def to_json_obj(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "snapshot_id": self.snapshot.id,
            "commit_kind": self.snapshot.commit_kind.value,
            "deleted_files": self.deleted_files,
            "added_files": self.added_files,
            "total_record_count": self.snapshot.total_record_count,
            "attempts": self.attempts,
        }


def compaction_entries(execution: PaimonCompactionExecution) -> list[ManifestEntry]:
    """The delta entries: per bucket its DELETEs (before) then its ADDs (after), as ``collectChanges`` orders them."""
    entries = []
    for result in execution.results:
        c = result.compaction
        for kind, files in ((FileKind.DELETE, result.before), (FileKind.ADD, result.after)):
            entries += [
                ManifestEntry(kind=kind, partition=c.partition, bucket=c.bucket, total_buckets=c.total_buckets, file=f)
                for f in files
            ]
    return entries


def java_json(obj: Any, indent: int = 0) -> str:
    """JSON as Jackson's default pretty printer writes Paimon's snapshot files (``"key" : value``, 2 spaces)."""
    pad = "  " * (indent + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{ }"
        items = [f"{pad}{json.dumps(str(k))} : {java_json(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(obj, list):
        return "[ ]" if not obj else "[ " + ", ".join(java_json(v, indent + 1) for v in obj) + " ]"
    return json.dumps(obj)


def _partition_stats(entries: list[ManifestEntry], schema: TableSchema) -> SimpleStats:
    types = schema.partition_types
    if not types:
        return SimpleStats(min_values=BinaryRow.empty(), max_values=BinaryRow.empty(), null_counts=())
    rows = [e.partition.to_values(types) for e in entries]
    mins, maxs, nulls = [], [], []
    for i in range(len(types)):
        present = [r[i] for r in rows if r[i] is not None]

        def order(v: Any) -> Any:
            return v.encode("utf-8") if isinstance(v, str) else v

        mins.append(min(present, key=order) if present else None)
        maxs.append(max(present, key=order) if present else None)
        nulls.append(len(rows) - len(present))
    return SimpleStats(
        min_values=BinaryRow.from_values(mins, types),
        max_values=BinaryRow.from_values(maxs, types),
        null_counts=tuple(nulls),
    )


class _ManifestWriter:
    """Names and writes this attempt's manifest files (``manifest-<uuid>-<n>``, ``manifest-list-<uuid>-<n>``)."""

    def __init__(self, table: PaimonTable, codec: str) -> None:
        self.table = table
        self.codec = codec
        self.uuid = str(uuid.uuid4())
        self.manifests = 0
        self.lists = 0
        self.written: list[str] = []

    def _write(self, name: str, schema: dict[str, Any], records: list[dict[str, Any]]) -> int:
        data = write_container(schema, records, codec=self.codec)
        path = self.table.storage.join(MANIFEST_DIR, name)
        self.table.storage.write_bytes(path, data)
        self.written.append(path)
        return len(data)

    def manifest(self, entries: list[ManifestEntry], schema: TableSchema) -> ManifestFileMeta:
        name = f"manifest-{self.uuid}-{self.manifests}"
        self.manifests += 1
        size = self._write(name, MANIFEST_ENTRY_SCHEMA, [e.to_avro() for e in entries])
        return ManifestFileMeta(
            file_name=name,
            file_size=size,
            num_added_files=sum(1 for e in entries if e.kind is FileKind.ADD),
            num_deleted_files=sum(1 for e in entries if e.kind is FileKind.DELETE),
            partition_stats=_partition_stats(entries, schema),
            schema_id=schema.id,
            min_bucket=min(e.bucket for e in entries),
            max_bucket=max(e.bucket for e in entries),
            min_level=min(e.file.level for e in entries),
            max_level=max(e.file.level for e in entries),
        )

    def manifest_list(self, metas: list[ManifestFileMeta]) -> tuple[str, int]:
        name = f"manifest-list-{self.uuid}-{self.lists}"
        self.lists += 1
        return name, self._write(name, MANIFEST_FILE_META_SCHEMA, [m.to_avro() for m in metas])

    def delete_written(self) -> None:
        for path in self.written:
            self.table.storage.delete_file(path, missing_ok=True)
        self.written.clear()


def _check_conflicts(table: PaimonTable, latest: Snapshot, entries: list[ManifestEntry], schema: TableSchema) -> None:
    """Java ``noConflictsOrFail``: every file to delete is live in ``latest``, and the files of a level >= 1 still
    form one sorted run once the entries are applied (no key-range overlap with what another writer added)."""
    live_entries = table.live_entries(latest)
    live = {e.identifier for e in live_entries}
    missing = [
        f"{e.file.file_name} (bucket {e.bucket}, level {e.file.level}) is no longer live"
        for e in entries
        if e.kind is FileKind.DELETE and e.identifier not in live
    ]
    if missing:
        raise PaimonCommitConflictError(table.uri, latest.id, missing)
    merged = merge_entries([*live_entries, *entries], where=f"{table.uri} snapshot {latest.id} + compaction")
    touched = {(e.partition.data, e.bucket) for e in entries}
    key_types = schema.key_types
    for partition, bucket in touched:
        files = [e.file for e in merged if (e.partition.data, e.bucket) == (partition, bucket)]
        try:
            Levels.from_files(files, num_levels=2, key_order=lambda row: row.sort_key(key_types), where="commit")
        except CorruptFileError as err:
            raise PaimonCommitConflictError(table.uri, latest.id, [f"bucket {bucket}: {err}"]) from err


def commit_compaction(
    table: PaimonTable,
    execution: PaimonCompactionExecution,
    *,
    commit_user: str | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> PaimonCompactionCommit | None:
    """Commit ``execution`` as a COMPACT snapshot (see the module doc).

    Args:
        table: The table the plan was made for.
        execution: The executed plan.
        commit_user: ``commitUser`` of the snapshot (default: a new UUID, as a Java job's).
        max_retries: Attempts when other writers keep creating the next snapshot first.

    Returns:
        The commit, or None when the execution changed nothing (no snapshot is written, as Java skips an empty
        compaction commit).

    Raises:
        PaimonCommitConflictError: A compacted file is no longer live in the latest snapshot.
        StorageError: Writing a manifest or the snapshot failed (this attempt's manifests are deleted).
        CommitStateUnknownError: The snapshot's create failed ambiguously and could not be read back (see
            :meth:`Storage.create_if_absent`): the snapshot may be committed, so nothing is deleted. A create whose
            answer was lost but whose object holds this snapshot is a success.
    """
    entries = compaction_entries(execution)
    if not entries:
        return None
    schema = execution.plan.schema
    codec = AVRO_CODECS.get(schema.options.get("manifest.compression", "zstd").strip().lower(), "zstandard")
    user = commit_user or str(uuid.uuid4())
    for attempt in range(1, max_retries + 1):
        latest = table.latest_snapshot()
        if latest is None:
            raise PaimonCommitConflictError(table.uri, 0, [e.file.file_name for e in entries[:5]])
        _check_conflicts(table, latest, entries, schema)
        writer = _ManifestWriter(table, codec)
        try:
            delta_meta = writer.manifest(entries, schema)
            base_metas = list(table.manifest_list(latest.base_manifest_list, snapshot_id=latest.id))
            base_metas += table.manifest_list(latest.delta_manifest_list, snapshot_id=latest.id)
            base_name, base_size = writer.manifest_list(base_metas)
            delta_name, delta_size = writer.manifest_list([delta_meta])
            delta_records = sum(e.file.row_count if e.kind is FileKind.ADD else -e.file.row_count for e in entries)
            snapshot = Snapshot(
                version=SNAPSHOT_VERSION,
                id=latest.id + 1,
                schema_id=schema.id,
                base_manifest_list=base_name,
                base_manifest_list_size=base_size,
                delta_manifest_list=delta_name,
                delta_manifest_list_size=delta_size,
                index_manifest=latest.index_manifest,
                commit_user=user,
                commit_identifier=BATCH_COMMIT_IDENTIFIER,
                commit_kind=CommitKind.COMPACT,
                time_millis=int(time.time() * 1000),
                log_offsets=latest.log_offsets,
                total_record_count=(latest.total_record_count or 0) + delta_records,
                delta_record_count=delta_records,
                watermark=latest.watermark,
                statistics=latest.statistics,
                next_row_id=latest.next_row_id,
            )
            path = table.storage.join(SNAPSHOT_DIR, snapshot_file_name(snapshot.id))
            table.storage.create_if_absent(path, java_json(snapshot.to_json_obj()).encode("utf-8"))
        except FileAlreadyExistsError:
            writer.delete_written()
            continue
        except (StorageError, OSError):
            # a plain failure: the snapshot was not created (CommitStateUnknownError is no StorageError and passes
            # through untouched: a possibly committed snapshot references these manifests)
            writer.delete_written()
            raise
        try:
            table.storage.write_bytes(table.storage.join(SNAPSHOT_DIR, LATEST_HINT), str(snapshot.id).encode())
        except StorageError:
            pass  # the hint is only a hint: readers fall back to listing (Java ignores a failed hint write too)
        return PaimonCompactionCommit(
            snapshot=snapshot,
            deleted_files=delta_meta.num_deleted_files,
            added_files=delta_meta.num_added_files,
            attempts=attempt,
        )
    raise StorageError(
        f"Paimon compaction commit gave up after {max_retries} attempts: snapshot-N kept being created by other "
        "writers",
        path=table.storage.uri(table.storage.join(SNAPSHOT_DIR)),
    )
