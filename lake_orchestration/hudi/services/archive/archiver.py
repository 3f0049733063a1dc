"""Write the archive file, verify it, then remove the archived instants from the active timeline.

Mirrors ``HoodieTimelineArchiver.archive`` / ``deleteArchivedInstants`` (0.14/0.15): one new archive file per
run (``.commits_.archive.{max+1}_1-0-1``, never an append), Avro blocks of ``hoodie.commits.archival.batch``
records; pending state files are deleted before completed ones, completed ones in ascending time (HUDI-7207).
Unlike Java, the file is read back and compared record by record before anything is deleted, and a run first
finishes the deletions a crashed run left behind (instants present both in the newest archive file and on the
active timeline), so a crash never loses or duplicates an instant.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import CorruptFileError, FileAlreadyExistsError
from lake_orchestration.hudi.model.instant import Action, Instant
from lake_orchestration.hudi.services.archive.entry import meta_entry
from lake_orchestration.hudi.services.archive.planner import raw_instants
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import (
    ArchiveFile,
    ArchiveFileContent,
    archive_dir,
    archive_file_name,
    encode_archive_block,
    list_archive_files,
    read_archive_file,
)
from lake_orchestration.hudi.table.marker import MARKERS_DIR
from lake_orchestration.io.storage import Storage

log = logging.getLogger(__name__)

CrashHook = Callable[[str], None]
"""Called with a stage name at each stage boundary (tests inject crashes through it)."""


def _no_crash(stage: str) -> None:
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


def delete_instant_files(table: HudiTable, files: Sequence[Instant], *, crash: CrashHook = _no_crash) -> list[str]:
    """Delete timeline files: requested/inflight first, then completed ones in ascending time (HUDI-7207).

    Missing files count as deleted (a crashed run may have removed them). Returns the names deleted.

    Raises:
        TableLockLostError: the table lock of this run was lost (nothing deleted).
    """
    table.check_lock()
    pending = [f for f in files if not f.is_completed]
    completed = sorted((f for f in files if f.is_completed), key=lambda i: str(i.time))
    done = []
    for i, f in enumerate([*pending, *completed]):
        if i == len(pending) and pending:
            crash("after_pending_deleted")
        table.storage.delete_file(table.instant_path(f), missing_ok=True)
        done.append(f.file_name)
        if i == 0:
            crash("after_first_instant_deleted")
    table.refresh()
    return done


def delete_markers(table: HudiTable, files: Sequence[Instant]) -> list[str]:
    """Leftover marker dirs ``.hoodie/.temp/<ts>`` of archived instants (``deleteAnyLeftOverMarkers``)."""
    out = []
    times = {str(f.time) for f in files}
    if not times:
        return out
    # one listing of .hoodie/.temp instead of a check per instant
    present = {f.name for f in table.storage.list_dir(table.storage.join(MARKERS_DIR)) if f.is_dir}
    for ts in sorted(times & present):
        table.storage.delete_dir(table.storage.join(MARKERS_DIR, ts))
        out.append(f".temp/{ts}")
    return out


def delete_aux_instants(table: HudiTable, files: Sequence[Instant]) -> list[str]:
    """Instant files in ``.hoodie/.aux`` (pre-0.7 compaction plan copies) up to the newest archived completed
    commit/deltacommit, as ``deleteAllInstantsOlderOrEqualsInAuxMetaFolder`` did."""
    done = [f.time for f in files if f.is_completed and f.action in (Action.COMMIT, Action.DELTA_COMMIT)]
    if not done:
        return []
    threshold = max(done)
    out = []
    aux = table.storage.join(".hoodie", ".aux")
    for f in table.storage.list_dir(aux):
        if f.is_dir:
            continue
        try:
            inst = Instant.from_file_name(f.name)
        except ValueError:
            continue
        if inst.time <= threshold:
            table.storage.delete_file(f.path, missing_ok=True)
            out.append(f".aux/{f.name}")
    return out


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
