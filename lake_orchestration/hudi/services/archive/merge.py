"""Merge small archive files into one, with a plan file so a crash mid-merge is completed or undone.

Mirrors ``HoodieTimelineArchiver.mergeArchiveFilesIfNecessary`` / ``verifyLastMergeArchiveFilesIfNecessary``
(0.14/0.15): candidates are the leading run of files no bigger than ``hoodie.archive.merge.small.file.limit.bytes``
newest to oldest; merge only if there are at least ``hoodie.archive.merge.files.batch.size`` of them; write
``mergeArchivePlan`` (Avro ``HoodieMergeArchiveFilePlan``) first, then the merged file, then delete the
candidates, then the plan. Java merges only on storage without append (local, object stores); this writer never
appends, so small files pile up on every storage and the merge applies everywhere.

Unlike Java, nothing is ever deleted that is not fully present elsewhere: a candidate that does not read completely
(empty, truncated, corrupt blocks, undecodable records) is neither merged nor deleted — it ends the run of
candidates like a big file does, so the archive files keep their order — and the merged file is read back before
any candidate is deleted. Recovery of a crashed merge deletes a merged file only if it is a copy of the
candidates, and a candidate only if the merged file holds every one of its entries.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.errors import CorruptFileError, FileAlreadyExistsError, StorageError
from lake_orchestration.hudi.model.avro import MergeArchiveFilePlan
from lake_orchestration.hudi.services.archive.executor import CrashHook, no_crash, write_archive_file
from lake_orchestration.hudi.table.archived_timeline import (
    MERGE_ARCHIVE_PLAN_NAME,
    ArchiveFile,
    ArchiveFileContent,
    archive_file_name,
    list_archive_files,
    parse_archive_file_name,
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
    skipped: tuple[str, ...] = ()
    """Small archive files left alone because they do not read completely (named in a warning)."""

    def to_json_obj(self) -> dict[str, Any]:
        """The merge outcome as ``lake-orch archive --json`` prints it (its ``merge`` object)."""
        return {
            "recovered": self.recovered,
            "candidates": list(self.candidates),
            "merged_file": self.merged_file,
            "deleted": list(self.deleted),
            "skipped": list(self.skipped),
        }


def _candidate_path(storage: Storage, directory: str, candidate: str) -> str:
    # Plans hold full paths (Java: "file:/t/.hoodie/archived/.commits_.archive.1_1-0-1"); candidates always live
    # in the archive folder, so the name locates them on any storage.
    return storage.join(storage.relative(directory), candidate.rstrip("/").rsplit("/", 1)[-1])


def _plan_uri(storage: Storage, path: str) -> str:
    uri = storage.uri(path)
    return f"file:{uri}" if storage.is_local else uri


def _content(
    storage: Storage, path: str, known: Mapping[str, ArchiveFileContent] | None = None
) -> tuple[ArchiveFileContent | None, str]:
    """The content of the archive file at ``path`` and ``""``, or None and why it does not read completely.
    ``known``: contents this run has already read (archive files are never changed once written)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    file = ArchiveFile(path=path, name=name, version=parse_archive_file_name(name) or 0)
    content = (known or {}).get(name)
    if content is None:
        try:
            content = read_archive_file(storage, file)
        except CorruptFileError as err:
            return None, str(err)
    if content.complete:
        return content, ""
    if not content.records and not content.corrupt_blocks and not content.trailing_bytes:
        return None, "it holds no archive block"
    return None, (
        f"{content.corrupt_blocks} corrupt block(s) and {content.trailing_bytes} trailing byte(s) after "
        f"{len(content.records)} readable record(s)"
    )


def _keys(content: ArchiveFileContent) -> set[tuple[str, str, int]]:
    return {e.key for e in content.entries}


def recover_merge(
    storage: Storage,
    directory: str,
    *,
    dry_run: bool = False,
    plan_listed: bool | None = None,
    check: Callable[[], None] = lambda: None,
) -> tuple[str | None, list[str]]:
    """Finish or undo a merge a crashed run left behind (its plan file still exists).

    Never deletes what is not fully present elsewhere: the merged file only if every entry it holds is in the
    candidates (a partial copy), a candidate only if it reads completely and the merged file holds each of its
    entries. Whatever cannot be verified is kept, with a warning (duplicated entries are recoverable, lost ones are
    not). The table lock keeps another process's live merge from being taken for a crashed one.

    ``plan_listed``: whether a listing of ``directory`` the caller has just made shows the plan (None: check).
    ``check`` runs before anything is deleted (the table lock's :meth:`HudiTable.check_lock`: a run whose lock was
    lost must not take another run's live plan for a crashed one).

    Returns:
        ``(outcome, deleted file names)``; outcome None if there was no plan.
    """
    plan_path = storage.join(storage.relative(directory), MERGE_ARCHIVE_PLAN_NAME)
    if not (plan_listed if plan_listed is not None else storage.exists(plan_path)):
        return None, []
    if not dry_run:
        check()
    try:
        plan = MergeArchiveFilePlan.from_bytes(storage.read_bytes(plan_path), path=storage.uri(plan_path))
    except CorruptFileError as err:
        # A plan cut short while being written: nothing was merged yet.
        log.warning("Unreadable %s (%s): deleting it", storage.uri(plan_path), err)
        if not dry_run:
            storage.delete_file(plan_path, missing_ok=True)
        return "discarded", []
    merged_name = plan.merged_archive_file_name or ""
    merged = storage.join(storage.relative(directory), merged_name)
    candidates = [_candidate_path(storage, directory, c) for c in plan.candidate or ()]
    present = [c for c in candidates if storage.exists(c)]
    merged_exists = bool(merged_name) and storage.exists(merged)
    deleted: list[str] = []
    if len(present) == len(candidates):
        outcome = "reverted"  # the crash came before any candidate was deleted: the merged file may be partial
        if merged_exists:
            merged_content, why = _content(storage, merged)
            held: set[tuple[str, str, int]] = set()
            for c in present:
                content, _ = _content(storage, c)
                held |= _keys(content) if content is not None else set()
            if merged_content is not None and _keys(merged_content) <= held:
                deleted.append(merged_name)
                if not dry_run:
                    storage.delete_file(merged)
            else:
                log.warning(
                    "Merge plan %s names %s as its merged file, but that file %s: it is kept (it is not a copy of "
                    "the candidates %s)",
                    storage.uri(plan_path),
                    storage.uri(merged),
                    f"does not read completely ({why})" if merged_content is None else "holds other entries",
                    ", ".join(c.rsplit("/", 1)[-1] for c in present),
                )
    else:
        outcome = "completed"  # candidates are deleted only after the merged file was written and read back
        merged_content, why = _content(storage, merged) if merged_exists else (None, "it does not exist")
        merged_keys = _keys(merged_content) if merged_content is not None else set()
        for c in present:
            content, cwhy = _content(storage, c)
            name = c.rsplit("/", 1)[-1]
            if merged_content is not None and content is not None and _keys(content) <= merged_keys:
                deleted.append(name)
                if not dry_run:
                    storage.delete_file(c, missing_ok=True)
            else:
                log.warning(
                    "Merge recovery keeps %s: %s",
                    storage.uri(c),
                    f"it does not read completely ({cwhy})"
                    if content is None
                    else f"the merged file {storage.uri(merged)} does not hold all its entries ({why or 'missing'})",
                )
    if not dry_run:
        storage.delete_file(plan_path, missing_ok=True)
    return outcome, deleted


def _reads_as(storage: Storage, path: str, data: bytes) -> bool:
    """True if ``path`` exists and holds ``data`` (one read; a missing or unreadable file is False)."""
    try:
        return storage.read_bytes(path) == data
    except StorageError:
        return False


def merge_candidates(
    storage: Storage, directory: str, *, small_file_limit: int, listed: Sequence[ArchiveFile] | None = None
) -> list[ArchiveFile]:
    """The leading run of small files, newest version first (an older big file stops the run, keeping order).
    ``listed``: the archive files the caller has just listed (not listed again)."""
    out = []
    for f in reversed(list(listed) if listed is not None else list_archive_files(storage, directory)):
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
    crash: CrashHook = no_crash,
    listed: Sequence[ArchiveFile] | None = None,
    known: Mapping[str, ArchiveFileContent] | None = None,
    check: Callable[[], None] = lambda: None,
) -> MergeResult:
    """Merge the small archive files if there are at least ``min_files`` of them (``listed``: the archive files the
    caller has just listed, under the table lock, not listed again; ``known``: contents it has already read).

    Every candidate is read before anything is written. A candidate that does not read completely is skipped with
    a warning naming it, and so is every older one: merging the newer files past it into the new (newest) file
    would put their entries after it in the archive order. Nothing is then deleted that is not in the merged file,
    read back before the candidates are deleted.

    ``check`` runs before the plan is written and before the candidates are deleted (the table lock's
    :meth:`HudiTable.check_lock`: it raises if the lock was lost meanwhile).

    Raises:
        CorruptFileError: The merged file does not read back as written (no candidate is deleted).
        TableLockLostError: ``check`` found the table lock lost (no candidate is deleted).
    """
    files = list(listed) if listed is not None else list_archive_files(storage, directory)
    candidates = merge_candidates(storage, directory, small_file_limit=small_file_limit, listed=files)
    readable: list[ArchiveFile] = []
    records: list[dict] = []
    skipped: tuple[str, ...] = ()
    for c in candidates:  # newest first, as Java reads them
        content, why = _content(storage, c.path, known)
        if content is None:
            older = [o.name for o in candidates[len(readable) + 1 :]]
            log.warning(
                "Archive file %s does not read completely (%s): it is neither merged nor deleted%s",
                storage.uri(c.path),
                why,
                f"; the older small files {', '.join(older)} are not merged past it, to keep the archive order"
                if older
                else "",
            )
            skipped = (c.name,)
            break
        readable.append(c)
        records.extend(content.records)
    if len(readable) < min_files:
        return MergeResult(skipped=skipped)
    names = tuple(c.name for c in readable)
    version = files[-1].version + 1
    merged_name = archive_file_name(version)
    if dry_run:
        return MergeResult(candidates=names, merged_file=merged_name, skipped=skipped)
    plan = MergeArchiveFilePlan(
        candidate=tuple(_plan_uri(storage, c.path) for c in readable), merged_archive_file_name=merged_name
    )
    plan_path = storage.join(storage.relative(directory), MERGE_ARCHIVE_PLAN_NAME)
    plan_bytes = plan.to_bytes()
    check()
    try:
        storage.create_if_absent(plan_path, plan_bytes)
    except FileAlreadyExistsError:
        log.warning("%s appeared meanwhile (another merge is running): not merging", storage.uri(plan_path))
        return MergeResult(skipped=skipped)
    crash("merge_plan_written")
    try:
        written = write_archive_file(storage, directory, records, batch=batch, version=version)
    except FileAlreadyExistsError:
        # another archival run took that version: the plan would name its file; nothing was merged
        storage.delete_file(plan_path, missing_ok=True)
        log.warning("%s was written meanwhile by another run: not merging", merged_name)
        return MergeResult(skipped=skipped)
    crash("merged_file_written")
    if not (_reads_as(storage, plan_path, plan_bytes) and storage.exists(written.file.path)):
        # another process resolved our plan as a crashed one: keep every candidate (entries may be duplicated,
        # never lost)
        log.warning("The merge plan or merged file %s changed under this run: no candidate is deleted", merged_name)
        return MergeResult(candidates=names, merged_file=written.file.name, skipped=skipped)
    check()  # lost lock: another run may take this plan for a crashed one; keep every candidate (plan recovers)
    deleted = []
    for i, c in enumerate(readable):
        storage.delete_file(c.path, missing_ok=True)
        deleted.append(c.name)
        if i == 0:
            crash("first_candidate_deleted")
    storage.delete_file(plan_path, missing_ok=True)
    return MergeResult(candidates=names, merged_file=written.file.name, deleted=tuple(deleted), skipped=skipped)
