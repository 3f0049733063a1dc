"""Savepoints: create and delete, as Hudi 0.14/0.15's ``SavepointActionExecutor`` / ``SavepointHelpers`` do.

A savepoint of completed commit ``T`` is ``<T>.savepoint.inflight`` (empty) then ``<T>.savepoint``
(``HoodieSavepointMetadata``: per partition the names of the base and log files of the file slices a read as of ``T``
merges). Clean never deletes a file a savepoint lists; archival stops at the first savepoint. Deleting a savepoint
removes the completed file, then the inflight one.
"""

from __future__ import annotations

import getpass
import time
from dataclasses import dataclass

from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.model.avro import CleanerPlan, SavepointMetadata, SavepointPartitionMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.services.clean.planner import last_clean_metadata
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock

SAVEPOINT_METADATA_VERSION = 1


@dataclass(frozen=True)
class SavepointInfo:
    """A savepoint on the active timeline."""

    instant_time: str
    savepointed_by: str
    savepointed_at_ms: int
    comments: str
    files: int


def _last_commit_retained(table: HudiTable) -> str:
    """The oldest commit a savepoint may still name: the last clean's ECTR, else the first completed commit."""
    tl = table.timeline
    last_clean = tl.with_actions(Action.CLEAN).last
    if last_clean is not None:
        if last_clean.is_completed:
            done = last_clean_metadata(table)
            if done is not None and done[1].earliest_commit_to_retain:
                return done[1].earliest_commit_to_retain
        else:
            req = Instant(last_clean.time, Action.CLEAN, State.REQUESTED)
            plan = table.read_model(req, CleanerPlan)
            if plan.earliest_instant_to_retain is not None:
                return plan.earliest_instant_to_retain.timestamp
    first = tl.completed_commits().first
    return str(first.time) if first is not None else ""


def savepoint_metadata(
    table: HudiTable, instant_time: str, *, user: str | None = None, comments: str = ""
) -> SavepointMetadata:
    """The metadata a savepoint of ``instant_time`` would record (validates like Hudi; writes nothing).

    Raises:
        InvalidInstantStateError: not a completed commit, already savepointed, or older than what the cleaner keeps.
    """
    table = table.refresh()
    tl = table.timeline
    if tl.completed_commits().get(instant_time) is None:
        raise InvalidInstantStateError(
            table.base_uri, instant_time, "is not a completed commit/deltacommit/replacecommit: cannot savepoint it"
        )
    if tl.completed().with_actions(Action.SAVEPOINT).get(instant_time) is not None:
        raise InvalidInstantStateError(table.base_uri, instant_time, "is already savepointed")
    retained = _last_commit_retained(table)
    if retained and instant_time < retained:
        raise InvalidInstantStateError(
            table.base_uri,
            instant_time,
            f"is older than the earliest commit the cleaner retained ({retained}): its files may be gone",
        )
    listing = table.partition_listing()  # one listing per folder, shared by the view
    view = table.fs_view(listing)
    per_partition: dict[str, list[str]] = {}
    for p in sorted(listing):
        names: list[str] = []
        for s in view.latest_merged_file_slices_before_or_on(instant_time, p):
            if s.base_file is not None:
                names.append(s.base_file.name)
            names.extend(lf.name for lf in s.log_files)
        per_partition[p] = names
    return SavepointMetadata(
        savepointed_by=user or getpass.getuser(),
        savepointed_at=int(time.time() * 1000),  # Hudi records System.currentTimeMillis()
        comments=comments,
        partition_metadata={
            p: SavepointPartitionMetadata(partition_path=p, savepoint_data_file=tuple(v))
            for p, v in sorted(per_partition.items())
        },
        version=SAVEPOINT_METADATA_VERSION,
    )


def create_savepoint(
    table: HudiTable,
    instant_time: str,
    *,
    user: str | None = None,
    comments: str = "",
    dry_run: bool = False,
    lock: LockConfig | None = None,
) -> SavepointMetadata:
    """Savepoint the completed commit ``instant_time``; ``dry_run`` only returns the metadata it would write.

    Raises:
        TableLockedError: another process holds the table lock (``lock``) past its wait time.
    """
    if dry_run:
        return savepoint_metadata(table, instant_time, user=user, comments=comments)
    # Under the table lock: a clean or archive of another process must not remove the commit or its files between
    # the metadata (the files it pins) and the completed savepoint.
    with table_lock(table, operation=f"savepoint create {instant_time}", config=lock):
        md = savepoint_metadata(table, instant_time, user=user, comments=comments)
        inflight = Instant(instant_time, Action.SAVEPOINT, State.INFLIGHT)  # type: ignore[arg-type]
        if table.timeline.get(instant_time, Action.SAVEPOINT) is None:
            table.create_inflight(inflight)
        table.transition_to_completed(inflight, md.to_bytes())
    return md


def delete_savepoint(
    table: HudiTable, instant_time: str, *, dry_run: bool = False, lock: LockConfig | None = None
) -> bool:
    """Delete the savepoint at ``instant_time`` (completed file first, then the inflight one), under the table lock.

    Returns False when there is no such savepoint (as Hudi, which only warns). A leftover inflight savepoint of an
    interrupted create or delete is removed too.

    Raises:
        TableLockedError: another process holds the table lock (``lock``) past its wait time.
    """
    table = table.refresh()
    sp = table.timeline.with_actions(Action.SAVEPOINT).get(instant_time)
    if sp is None:
        return False
    if dry_run:
        return True
    with table_lock(table, operation=f"savepoint delete {instant_time}", config=lock):
        st = table.storage
        st.delete_file(table.instant_path(Instant(sp.time, Action.SAVEPOINT, State.COMPLETED)), missing_ok=True)
        st.delete_file(table.instant_path(Instant(sp.time, Action.SAVEPOINT, State.INFLIGHT)), missing_ok=True)
    return True


def list_savepoints(table: HudiTable) -> list[SavepointInfo]:
    """Completed savepoints, oldest first."""
    out = []
    for sp in table.refresh().timeline.completed().with_actions(Action.SAVEPOINT):
        md = table.read_model(sp, SavepointMetadata)
        out.append(
            SavepointInfo(
                instant_time=str(sp.time),
                savepointed_by=md.savepointed_by,
                savepointed_at_ms=md.savepointed_at,
                comments=md.comments,
                files=sum(len(pm.savepoint_data_file) for pm in md.partition_metadata.values()),
            )
        )
    return out
