"""Merge small archive files into one, with a plan file so a crash mid-merge is completed or undone.

Mirrors ``HoodieTimelineArchiver.mergeArchiveFilesIfNecessary`` / ``verifyLastMergeArchiveFilesIfNecessary``
(0.14/0.15): candidates are the leading run of files no bigger than ``hoodie.archive.merge.small.file.limit.bytes``
newest to oldest; merge only if there are at least ``hoodie.archive.merge.files.batch.size`` of them; write
``mergeArchivePlan`` (Avro ``HoodieMergeArchiveFilePlan``) first, then the merged file, then delete the
candidates, then the plan. Java merges only on storage without append (local, object stores); this writer never
appends, so small files pile up on every storage and the merge applies everywhere.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.hudi.model.avro import MergeArchiveFilePlan
from lake_orchestration.hudi.services.archive.archiver import CrashHook, _no_crash, write_archive_file
from lake_orchestration.hudi.table.archived_timeline import (
    MERGE_ARCHIVE_PLAN_NAME,
    ArchiveFile,
    archive_file_name,
    list_archive_files,
    read_archive_file,
)
from lake_orchestration.io.storage import Storage

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class MergeResult:
    """Outcome of the merge step of one archival run."""

    recovered: str | None = None
    """What recovery did with a previous run's plan: ``discarded`` (unreadable plan), ``reverted`` (merged file
    deleted, candidates kept) or ``completed`` (remaining candidates deleted); None if there was no plan."""
    candidates: tuple[str, ...] = ()
    """Small archive files chosen for this run's merge (names, newest first)."""
    merged_file: str | None = None
    """The merged archive file written, None if nothing was merged."""
    deleted: tuple[str, ...] = field(default=())
    """Archive files deleted (merged candidates, or a reverted merged file)."""


def _candidate_path(storage: Storage, directory: str, candidate: str) -> str:
    # Plans hold full paths (Java: "file:/t/.hoodie/archived/.commits_.archive.1_1-0-1"); candidates always live
    # in the archive folder, so the name locates them on any storage.
    return storage.join(storage.relative(directory), candidate.rstrip("/").rsplit("/", 1)[-1])


def _plan_uri(storage: Storage, path: str) -> str:
    uri = storage.uri(path)
    return f"file:{uri}" if storage.is_local else uri


def recover_merge(storage: Storage, directory: str, *, dry_run: bool = False) -> tuple[str | None, list[str]]:
    """Finish or undo a merge a crashed run left behind (its plan file still exists).

    Returns:
        ``(outcome, deleted file names)``; outcome None if there was no plan.
    """
    plan_path = storage.join(storage.relative(directory), MERGE_ARCHIVE_PLAN_NAME)
    if not storage.exists(plan_path):
        return None, []
    try:
        plan = MergeArchiveFilePlan.from_bytes(storage.read_bytes(plan_path), path=storage.uri(plan_path))
    except CorruptFileError as err:
        # A plan cut short while being written: nothing was merged yet.
        log.warning("Unreadable %s (%s): deleting it", storage.uri(plan_path), err)
        if not dry_run:
            storage.delete_file(plan_path, missing_ok=True)
        return "discarded", []
    merged = storage.join(storage.relative(directory), plan.merged_archive_file_name or "")
    candidates = [_candidate_path(storage, directory, c) for c in plan.candidate or ()]
    deleted: list[str] = []
    if all(storage.exists(c) for c in candidates):
        outcome = "reverted"  # the crash came before any candidate was deleted: the merged file may be partial
        if plan.merged_archive_file_name and storage.exists(merged):
            deleted.append(plan.merged_archive_file_name)
            if not dry_run:
                storage.delete_file(merged)
    else:
        outcome = "completed"  # candidates are deleted only after the merged file is complete
        if plan.merged_archive_file_name and storage.exists(merged):
            for c in candidates:
                if storage.exists(c):
                    deleted.append(c.rsplit("/", 1)[-1])
                    if not dry_run:
                        storage.delete_file(c, missing_ok=True)
    if not dry_run:
        storage.delete_file(plan_path, missing_ok=True)
    return outcome, deleted


def merge_candidates(storage: Storage, directory: str, *, small_file_limit: int) -> list[ArchiveFile]:
    """The leading run of small files, newest version first (an older big file stops the run, keeping order)."""
    out = []
    for f in reversed(list_archive_files(storage, directory)):
        if f.size > small_file_limit:
            break
        out.append(f)
    return out


def merge_small_archive_files(
    storage: Storage,
    directory: str,
    *,
    small_file_limit: int,
    min_files: int,
    batch: int,
    dry_run: bool = False,
    crash: CrashHook = _no_crash,
) -> MergeResult:
    """Merge the small archive files if there are at least ``min_files`` of them.

    Raises:
        CorruptFileError: A candidate cannot be read, or the merged file does not read back as written.
    """
    candidates = merge_candidates(storage, directory, small_file_limit=small_file_limit)
    if len(candidates) < min_files:
        return MergeResult()
    names = tuple(c.name for c in candidates)
    files = list_archive_files(storage, directory)
    merged_name = archive_file_name(files[-1].version + 1)
    if dry_run:
        return MergeResult(candidates=names, merged_file=merged_name)
    plan = MergeArchiveFilePlan(
        candidate=tuple(_plan_uri(storage, c.path) for c in candidates), merged_archive_file_name=merged_name
    )
    storage.create_if_absent(storage.join(storage.relative(directory), MERGE_ARCHIVE_PLAN_NAME), plan.to_bytes())
    crash("merge_plan_written")
    records = []
    for c in candidates:  # newest first, as Java reads them
        records.extend(read_archive_file(storage, c).records)
    written = write_archive_file(storage, directory, records, batch=batch)
    if written.file.name != merged_name:
        log.warning("Merged archive file became %s (%s was taken)", written.file.name, merged_name)
    crash("merged_file_written")
    deleted = []
    for i, c in enumerate(candidates):
        storage.delete_file(c.path, missing_ok=True)
        deleted.append(c.name)
        if i == 0:
            crash("first_candidate_deleted")
    storage.delete_file(storage.join(storage.relative(directory), MERGE_ARCHIVE_PLAN_NAME), missing_ok=True)
    return MergeResult(candidates=names, merged_file=written.file.name, deleted=tuple(deleted))
