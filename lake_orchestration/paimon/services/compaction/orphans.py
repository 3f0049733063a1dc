"""Failed Paimon compactions: nothing to undo in the table, only files to clean.

A compaction changes the table in one step: the create-if-absent of ``snapshot-N`` (:mod:`.committer`). Before it,
the executor has written data files and the committer manifests, none referenced by any snapshot, so a crash
between execute and commit leaves no visible change: readers and the next plan see the latest snapshot only, and a
rerun plans the same buckets and writes new files (new UUIDs), ignoring the orphans. They are removed by
:func:`abort_execution` (the caller still holds the failed execution) or :func:`remove_orphan_files` (Java's
``RemoveOrphanFilesAction``: files under the table that no snapshot references, older than a safety margin so a
running writer's files survive).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import PlanError
from lake_orchestration.io.storage import FileInfo
from lake_orchestration.paimon.services.compaction.executor import DATA_FILE_PREFIX, PaimonCompactionExecution
from lake_orchestration.paimon.table import MANIFEST_DIR, PaimonTable

#: Java ``RemoveOrphanFilesAction``'s default ``older_than``: one day.
DEFAULT_ORPHAN_AGE_MS = 24 * 3600 * 1000
_MANIFEST_PREFIXES = ("manifest-", "index-manifest-")


@dataclass(frozen=True, kw_only=True)
class OrphanFiles:
    """Files no snapshot references."""

    data_files: tuple[str, ...]
    """Data files (paths relative to the table root)."""
    manifest_files: tuple[str, ...]
    """Manifests and manifest lists (relative paths)."""

    def to_json_obj(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {"data_files": list(self.data_files), "manifest_files": list(self.manifest_files)}


def referenced_files(table: PaimonTable) -> tuple[set[str], set[str]]:
    """Names of the data files and manifest files any existing snapshot references (ADD or DELETE entries)."""
    data: set[str] = set()
    manifests: set[str] = set()
    for snapshot_id in table.snapshot_ids():
        snapshot = table.snapshot(snapshot_id)
        lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list, snapshot.changelog_manifest_list]
        for name in filter(None, lists):
            manifests.add(name)
            for meta in table.manifest_list(name, snapshot_id=snapshot_id):
                manifests.add(meta.file_name)
                data |= {e.file.file_name for e in table.manifest(meta.file_name, snapshot_id=snapshot_id)}
        if snapshot.index_manifest:
            manifests.add(snapshot.index_manifest)
    return data, manifests


def orphan_files(table: PaimonTable, *, older_than_ms: int = DEFAULT_ORPHAN_AGE_MS) -> OrphanFiles:
    """Data and manifest files no snapshot references, last modified more than ``older_than_ms`` ago."""
    data_refs, manifest_refs = referenced_files(table)
    cutoff = int(time.time() * 1000) - older_than_ms
    storage = table.storage

    def old(info: FileInfo) -> bool:
        return info.mtime_ms <= cutoff

    data = [
        storage.relative(info.path)
        for info in storage.walk_files(storage.join(""))
        if info.name.startswith(DATA_FILE_PREFIX)
        and "/bucket-" in f"/{storage.relative(info.path)}"
        and info.name not in data_refs
        and old(info)
    ]
    manifests = [
        storage.relative(info.path)
        for info in storage.list_dir(storage.join(MANIFEST_DIR))
        if info.name.startswith(_MANIFEST_PREFIXES) and info.name not in manifest_refs and old(info)
    ]
    return OrphanFiles(data_files=tuple(sorted(data)), manifest_files=tuple(sorted(manifests)))


def remove_orphan_files(table: PaimonTable, *, older_than_ms: int = DEFAULT_ORPHAN_AGE_MS) -> OrphanFiles:
    """Delete :func:`orphan_files` and return what was deleted."""
    orphans = orphan_files(table, older_than_ms=older_than_ms)
    for rel in (*orphans.data_files, *orphans.manifest_files):
        table.storage.delete_file(table.storage.join(rel), missing_ok=True)
    return orphans


def abort_execution(table: PaimonTable, execution: PaimonCompactionExecution) -> int:
    """Delete the data files of an execution that was not committed; returns how many existed.

    Raises:
        PlanError: A file of the execution is referenced by a snapshot (it was committed: deleting would lose data).
    """
    data_refs, _ = referenced_files(table)
    written = execution.written
    committed = [p for p in written if p.rsplit("/", 1)[-1] in data_refs]
    if committed:
        raise PlanError(
            f"{table.uri}: the compaction's files {committed[:3]} are referenced by a snapshot: it was committed, "
            "expected an uncommitted execution to abort"
        )
    removed = 0
    for rel in written:
        path = table.storage.join(rel)
        if table.storage.exists(path):
            table.storage.delete_file(path, missing_ok=True)
            removed += 1
    return removed
