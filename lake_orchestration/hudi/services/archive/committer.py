"""Archive commit: remove the archived instants from the active timeline, once their archive file is verified.

Mirrors ``HoodieTimelineArchiver.deleteArchivedInstants`` / ``deleteAnyLeftOverMarkers`` (0.14/0.15): pending state
files are deleted before completed ones, completed ones in ascending time (HUDI-7207); then the instants' leftover
marker folders and ``.aux`` copies. A crash in the middle leaves instants both archived and active: the next run
finishes their deletion (:mod:`.recovery`), so an instant is never lost nor archived twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from lake_orchestration.hudi.model.instant import Action, Instant
from lake_orchestration.hudi.services.archive.executor import CrashHook, no_crash
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.marker import MARKERS_DIR


def commit_archive(
    table: HudiTable, files: Sequence[Instant], *, crash: CrashHook = no_crash
) -> tuple[list[str], list[str]]:
    """Remove the archived timeline files ``files`` (their archive file written and verified): the markers, the
    instant files, the ``.aux`` copies. Returns (timeline files deleted, marker folders and ``.aux`` files removed).

    Raises:
        TableLockLostError: the table lock of this run was lost (nothing deleted).
    """
    cleaned = delete_markers(table, files)
    deleted = delete_instant_files(table, files, crash=crash)
    cleaned += delete_aux_instants(table, files)
    return deleted, cleaned


def delete_instant_files(table: HudiTable, files: Sequence[Instant], *, crash: CrashHook = no_crash) -> list[str]:
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
