"""Archive execution: write the chosen instants' records (``HoodieArchivedMetaEntry``) as a new archive file and verify
it; nothing is removed from the active timeline here (:mod:`.committer` does that once the file is verified).

Mirrors ``HoodieTimelineArchiver.archive`` (0.14/0.15): one new archive file per run
(``.commits_.archive.{max+1}_1-0-1``, never an append), Avro blocks of ``hoodie.commits.archival.batch`` records.
Unlike Java, the file is read back and compared record by record before anything is deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import CorruptFileError, FileAlreadyExistsError
from lake_orchestration.hudi.model.instant import Instant
from lake_orchestration.hudi.services.archive.entry import meta_entry
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import (
    ArchiveFile,
    ArchiveFileContent,
    archive_file_name,
    encode_archive_block,
    list_archive_files,
    read_archive_file,
)
from lake_orchestration.io.storage import Storage

log = logging.getLogger(__name__)

CrashHook = Callable[[str], None]
"""Called with a stage name at each stage boundary (tests inject crashes through it)."""


def no_crash(stage: str) -> None:
    return None


@dataclass(frozen=True, kw_only=True)
class WrittenArchive:
    """An archive file written and verified."""

    file: ArchiveFile
    """The new archive file."""
    records: int
    """Records written."""
    blocks: int
    """Avro data blocks written."""
    content: ArchiveFileContent | None = None
    """The file as read back and verified."""


def next_archive_version(storage: Storage, directory: str) -> int:
    """1 + the highest archive file version in ``directory`` (1 if none)."""
    files = list_archive_files(storage, directory)
    return (files[-1].version + 1) if files else 1


def write_archive_file(
    storage: Storage,
    directory: str,
    records: Sequence[dict[str, Any]],
    *,
    batch: int,
    version: int | None = None,
    listed: Sequence[ArchiveFile] | None = None,
) -> WrittenArchive:
    """Write ``records`` as a new archive file (blocks of ``batch`` records), then read it back and compare.

    The file is created with create-if-absent at the next version; if another writer takes that version first,
    the next one is used (a log writer's roll-over). With ``version``, exactly that version is written (a merge
    writes the file its plan names). ``listed``: the archive files the caller has just listed (not listed again).

    Raises:
        FileAlreadyExistsError: ``version`` was given and that file exists.
        CorruptFileError: The file read back differs from what was written (it is left for inspection; the
            active timeline is untouched).
    """
    blocks = [encode_archive_block(records[i : i + batch]) for i in range(0, len(records), batch)]
    data = b"".join(blocks)
    exact = version is not None
    if version is None and listed is not None:
        version = listed[-1].version + 1 if listed else 1
    elif version is None:
        version = next_archive_version(storage, directory)
    for _ in range(100):
        path = storage.join(storage.relative(directory), archive_file_name(version))
        try:
            storage.create_if_absent(path, data)
            break
        except FileAlreadyExistsError:
            if exact:
                raise
            version += 1
    else:  # pragma: no cover - 100 concurrent archivers
        raise FileAlreadyExistsError(storage.uri(storage.join(storage.relative(directory), archive_file_name(version))))
    written = ArchiveFile(path=path, name=archive_file_name(version), version=version, size=len(data))
    content = read_archive_file(storage, written)
    if content.corrupt_blocks or list(content.records) != list(records):
        raise CorruptFileError(
            storage.uri(path),
            f"archive file read back does not match what was written ({len(content.records)} of {len(records)} "
            f"records, {content.corrupt_blocks} corrupt block(s)); no instant was removed from the active timeline",
        )
    return WrittenArchive(file=written, records=len(records), blocks=len(blocks), content=content)


def archive_records(table: HudiTable, files: Sequence[Instant]) -> list[dict[str, Any]]:
    """The ``HoodieArchivedMetaEntry`` records of ``files``, in order."""
    return [meta_entry(table, f).to_avro() for f in files]
