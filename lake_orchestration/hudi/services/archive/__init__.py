"""Archival of the active timeline (timeline layout 1) with merge of small archive files.

``run_archive(table, config)`` is the entry point (:mod:`.service`): recover a crashed merge, finish a crashed run's
deletions (:mod:`.recovery`), choose instants (:mod:`.planner`), write and verify the archive file
(:mod:`.executor`), delete the archived instant files, their markers and ``.aux`` copies (:mod:`.committer`), then
merge small archive files (:mod:`.merge`). :func:`archive` and :func:`merge_archive_files` are the two steps alone.
Mirrors ``HoodieTimelineArchiver.archiveIfRequired`` (0.14/0.15).
"""

from lake_orchestration.hudi.services.archive.committer import commit_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.archive.executor import WrittenArchive, archive_records, write_archive_file
from lake_orchestration.hudi.services.archive.merge import MergeResult, merge_small_archive_files, recover_merge
from lake_orchestration.hudi.services.archive.planner import ArchivePlan, plan_archive
from lake_orchestration.hudi.services.archive.recovery import leftover_instant_files
from lake_orchestration.hudi.services.archive.service import ArchiveResult, archive, merge_archive_files, run_archive

__all__ = [
    "ArchiveConfig",
    "ArchivePlan",
    "ArchiveResult",
    "MergeResult",
    "WrittenArchive",
    "archive",
    "archive_records",
    "commit_archive",
    "leftover_instant_files",
    "merge_archive_files",
    "merge_small_archive_files",
    "plan_archive",
    "recover_merge",
    "run_archive",
    "write_archive_file",
]
