"""How a failed archival is undone: it is finished, never reverted.

An archival that crashed after its archive file was written and verified, before every archived instant file was
deleted, leaves instants both in the newest archive file and on the active timeline; the next run deletes them first
(the roll-forward the archive file promises: :func:`leftover_instant_files`). A crash before the archive file was
complete leaves no instant archived (an unreadable archive file is never trusted). A crashed merge of small archive
files is completed or undone from its plan (:func:`~lake_orchestration.hudi.services.archive.merge.recover_merge`).
"""

from __future__ import annotations

from collections.abc import Sequence

from lake_orchestration.hudi.model.instant import Instant
from lake_orchestration.hudi.services.archive.planner import raw_instants
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import (
    ArchiveFile,
    ArchiveFileContent,
    archive_dir,
    list_archive_files,
    read_archive_file,
)


def leftover_instant_files(
    table: HudiTable,
    folder: str,
    *,
    listed: Sequence[ArchiveFile] | None = None,
    contents: dict[str, ArchiveFileContent] | None = None,
) -> list[Instant]:
    """Active timeline files whose state is already in the newest archive file: a crashed run archived them
    but did not finish deleting them. Finishing the deletion is the roll-forward the archive file promises.
    ``listed``: the archive files the caller has just listed (not listed again); ``contents``: archive file name
    -> content, where the content read is recorded for the rest of the run."""
    if listed is None:
        listed = list_archive_files(table.storage, archive_dir(table.storage, folder))
    files = list(listed)
    if not files:
        return []
    newest = read_archive_file(table.storage, files[-1])
    if contents is not None:
        contents[newest.file.name] = newest
    archived = {e.key for e in newest.entries}
    return [r for r in raw_instants(table) if (str(r.time), r.action.value, int(r.state)) in archived]
