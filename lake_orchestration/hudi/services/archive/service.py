"""Archival end to end: recover a crashed merge, finish a crashed run's deletions, choose instants (:mod:`.planner`),
write and verify the archive file (:mod:`.executor`), delete the archived instant files, their markers and ``.aux``
copies (:mod:`.committer`), then merge small archive files (:mod:`.merge`).

Mirrors ``HoodieTimelineArchiver.archiveIfRequired`` (0.14/0.15). :func:`run_archive` does it all under one hold of
the table lock; :func:`archive` and :func:`merge_archive_files` are the two steps on their own (the Dagster archive
job runs them as two ops).
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.hudi.model.instant import Instant, InstantTime
from lake_orchestration.hudi.services.archive.committer import commit_archive, delete_instant_files
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.archive.executor import (
    CrashHook,
    archive_records,
    no_crash,
    write_archive_file,
)
from lake_orchestration.hudi.services.archive.merge import MergeResult, merge_small_archive_files, recover_merge
from lake_orchestration.hudi.services.archive.planner import plan_archive
from lake_orchestration.hudi.services.archive.recovery import leftover_instant_files
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import (
    MERGE_ARCHIVE_PLAN_NAME,
    ArchiveFile,
    ArchiveFileContent,
    archive_dir,
    archive_files_in,
    list_archive_files,
)
from lake_orchestration.hudi.table.lock import table_lock

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class ArchiveResult:
    """What one archival run did (or, with ``dry_run``, would do)."""

    dry_run: bool
    """True if nothing was written or deleted."""
    archived_instants: tuple[Instant, ...] = ()
    """Instants moved to the archived timeline (latest state of each), in archive order."""
    archived_files: tuple[str, ...] = ()
    """Timeline state files archived (``<ts>.<action>[.<state>]``), one archive record each."""
    archive_file: str | None = None
    """Name of the archive file written (``.commits_.archive.N_1-0-1``)."""
    deleted_files: tuple[str, ...] = ()
    """Timeline files deleted after the archive file was verified."""
    repaired_files: tuple[str, ...] = ()
    """Timeline files a crashed run had archived but not deleted, deleted now."""
    markers_deleted: tuple[str, ...] = ()
    """Leftover marker dirs (``.temp/<ts>``) and ``.aux`` instant files removed."""
    merge: MergeResult = field(default_factory=MergeResult)
    """Recovery and outcome of the small-archive-file merge."""
    min_instants_to_keep: int = 0
    """Effective ``hoodie.keep.min.commits``."""
    max_instants_to_keep: int = 0
    """Effective ``hoodie.keep.max.commits``."""
    earliest_commit_to_retain: InstantTime | None = None
    """The cleaner's earliest commit to retain that archival respected, if any."""

    def to_json_obj(self) -> dict[str, Any]:
        """The result as ``lake-orch archive --json`` prints it."""
        return {
            "dry_run": self.dry_run,
            "archived_instants": [str(i) for i in self.archived_instants],
            "archived_files": list(self.archived_files),
            "archive_file": self.archive_file,
            "deleted_files": list(self.deleted_files),
            "repaired_files": list(self.repaired_files),
            "markers_deleted": list(self.markers_deleted),
            "merge": self.merge.to_json_obj(),
            "min_instants_to_keep": self.min_instants_to_keep,
            "max_instants_to_keep": self.max_instants_to_keep,
        }


def run_archive(
    table: HudiTable,
    config: ArchiveConfig | None = None,
    *,
    dry_run: bool = False,
    strict_retained: bool = True,
    _crash_at: CrashHook | None = None,
) -> ArchiveResult:
    """Archive what Hudi's rules allow, verify the archive file, then remove the instants from the active timeline.

    Args:
        table: The table.
        config: The settings; None = :meth:`ArchiveConfig.for_table` (``hoodie.properties`` over Hudi's defaults).
            Build one from Hudi keys with ``ArchiveConfig.from_options(options, table_properties=table.config.raw)``.
        dry_run: Only compute what would be archived, repaired and merged; write and delete nothing.
        strict_retained: Refuse ``hoodie.keep.min.commits`` <= ``hoodie.cleaner.commits.retained`` (False: only warn,
            as Java 0.15 does; the metadata table's archival, whose settings Java derives that way).
        _crash_at: Test hook called with each stage name (raise from it to simulate a crash).

    Returns:
        What was archived, written, deleted and merged.

    Raises:
        PlanError: Invalid or inconsistent options (e.g. ``hoodie.keep.min.commits`` not above
            ``hoodie.cleaner.commits.retained``).
        CorruptFileError: A timeline or archive file cannot be decoded, or the new archive file does not read back
            as written (then nothing is deleted).
        TableLockedError: Another process holds the table lock (``hoodie.write.lock.*``) past the wait time.

    Example:
        >>> table = HudiTable("/data/trips")                                                # doctest: +SKIP
        >>> config = ArchiveConfig.from_options({"hoodie.keep.min.commits": "20"}, table_properties=table.config.raw)
        >>> result = run_archive(table, config)                                            # doctest: +SKIP
        >>> result.archive_file                                                              # doctest: +SKIP
        '.commits_.archive.1_1-0-1'
    """
    config = config or ArchiveConfig.for_table(table.config.raw)
    config.validate(strict_retained=strict_retained)
    # The whole run, merge included, holds the table lock: two archivals at once would archive the same instants
    # twice, and one's merge recovery would take the other's live merge plan for a crashed one.
    with nullcontext() if dry_run else table_lock(table, operation="archive", config=config.lock):
        return _run_archive(table, config, dry_run=dry_run, crash=_crash_at or no_crash, merge=config.merge_enable)


def archive(
    table: HudiTable,
    config: ArchiveConfig | None = None,
    *,
    dry_run: bool = False,
    _crash_at: CrashHook | None = None,
) -> ArchiveResult:
    """The archive step alone: :func:`run_archive` without the merge of small archive files (a crashed merge is
    still recovered first; :func:`merge_archive_files` is the next step).

    Raises:
        As :func:`run_archive`.
    """
    config = config or ArchiveConfig.for_table(table.config.raw)
    config.validate()
    with nullcontext() if dry_run else table_lock(table, operation="archive", config=config.lock):
        return _run_archive(table, config, dry_run=dry_run, crash=_crash_at or no_crash, merge=False)


def _run_archive(
    table: HudiTable, config: ArchiveConfig, *, dry_run: bool, crash: CrashHook, merge: bool
) -> ArchiveResult:
    folder = table.config.archivelog_folder
    directory = archive_dir(table.storage, folder)
    # Under the lock (not on a dry run) nothing else changes the timeline or the archive folder: each is listed once
    # here (the lock has just dropped the cached timeline) and kept up to date with what this run changes.
    table.refresh()
    entries = table.storage.list_dir(directory)

    # 1. A merge cut short by a crash is completed or undone first (Java: only with merge enabled; a left-over
    #    plan is resolved here regardless, so turning the option off never strands one).
    recovered, recovered_deleted = recover_merge(
        table.storage,
        directory,
        dry_run=dry_run,
        plan_listed=any(f.name == MERGE_ARCHIVE_PLAN_NAME for f in entries),
        check=table.check_lock,
    )
    archive_files = list_archive_files(table.storage, directory) if recovered else archive_files_in(entries)
    # 2. Deletions a crashed archival run did not finish.
    contents: dict[str, ArchiveFileContent] = {}  # archive files read by this run (never changed once written)
    leftovers = leftover_instant_files(table, folder, listed=archive_files, contents=contents)
    repaired: list[str] = []
    if leftovers:
        log.warning("Finishing the deletion of %d archived instant file(s) left by a crashed run", len(leftovers))
        repaired = [f.file_name for f in leftovers] if dry_run else delete_instant_files(table, leftovers)
    # 3. Choose.
    plan = plan_archive(table, config, refresh=False)
    written_name = None
    deleted: list[str] = []
    cleaned: list[str] = []
    if plan and not dry_run:
        records = archive_records(table, plan.files)
        table.check_lock()  # a lost lock: another archival may be archiving the same instants
        written = write_archive_file(
            table.storage, directory, records, batch=config.archival_batch, listed=archive_files
        )
        archive_files = [*archive_files, written.file]
        if written.content is not None:
            contents[written.file.name] = written.content
        written_name = written.file.name
        crash("archive_written")
        deleted, cleaned = commit_archive(table, plan.files, crash=crash)
    merged = _merge_step(
        table,
        config,
        directory,
        (recovered, recovered_deleted),
        dry_run=dry_run,
        crash=crash,
        listed=archive_files,
        known=contents,
        enabled=merge,
    )
    table.refresh()
    return ArchiveResult(
        dry_run=dry_run,
        archived_instants=plan.instants,
        archived_files=tuple(f.file_name for f in plan.files),
        archive_file=written_name,
        deleted_files=tuple(deleted),
        repaired_files=tuple(repaired),
        markers_deleted=tuple(cleaned),
        merge=merged,
        min_instants_to_keep=plan.min_instants_to_keep,
        max_instants_to_keep=plan.max_instants_to_keep,
        earliest_commit_to_retain=plan.earliest_commit_to_retain,
    )


def merge_archive_files(table: HudiTable, config: ArchiveConfig | None = None, *, dry_run: bool = False) -> MergeResult:
    """Only the merge step of archival: resolve a crashed merge, then merge small archive files if enabled.

    For callers that run archive and merge as separate steps (the Dagster ``<t>__archive`` job); ``run_archive``
    already does both. ``config``: as :func:`run_archive`.
    """
    config = config or ArchiveConfig.for_table(table.config.raw)
    config.validate()
    directory = archive_dir(table.storage, table.config.archivelog_folder)
    with nullcontext() if dry_run else table_lock(table, operation="archive merge", config=config.lock):
        recovery = recover_merge(table.storage, directory, dry_run=dry_run, check=table.check_lock)
        return _merge_step(table, config, directory, recovery, dry_run=dry_run, enabled=config.merge_enable)


def _merge_step(
    table: HudiTable,
    config: ArchiveConfig,
    directory: str,
    recovery: tuple[str | None, list[str]],
    *,
    dry_run: bool,
    crash: CrashHook = no_crash,
    listed: list[ArchiveFile] | None = None,
    known: dict[str, ArchiveFileContent] | None = None,
    enabled: bool,
) -> MergeResult:
    """Merge small archive files when ``enabled`` (``hoodie.archive.merge.enable``, or off for the archive step
    alone); the result also reports what recovery did. ``listed``: the archive files as this run knows them (listed
    under the lock plus what it wrote)."""
    merge = MergeResult()
    if enabled:
        merge = merge_small_archive_files(
            table.storage,
            directory,
            small_file_limit=config.merge_small_file_limit_bytes,
            min_files=config.merge_files_batch_size,
            batch=config.archival_batch,
            dry_run=dry_run,
            crash=crash,
            listed=listed,
            known=known,
            check=table.check_lock,
        )
    recovered, recovered_deleted = recovery
    if recovered:
        merge = MergeResult(
            recovered=recovered,
            candidates=merge.candidates,
            merged_file=merge.merged_file,
            deleted=tuple(recovered_deleted) + merge.deleted,
        )
    return merge
