"""Savepoint planning: validate a savepoint of a completed commit and compute the metadata it records (nothing is
written); the savepoints on the active timeline.

Mirrors Hudi 0.14/0.15 ``SavepointActionExecutor`` (its checks, and the file slices a read as of the commit merges).
"""

from __future__ import annotations

import getpass
import time
from dataclasses import asdict, dataclass
from typing import Any

from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.model.avro import CleanerPlan, SavepointMetadata, SavepointPartitionMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.clean.planner import last_clean_metadata
from lake_orchestration.hudi.table import HudiTable

SAVEPOINT_METADATA_VERSION = 1


@dataclass(frozen=True)
class SavepointInfo:
    """A savepoint on the active timeline."""

    instant_time: InstantTime
    savepointed_by: str
    savepointed_at_ms: int
    comments: str
    files: int

    def to_json_obj(self) -> dict[str, Any]:
        """One row of ``lake-orch savepoint show --json``."""
        return asdict(self)


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
    table: HudiTable, instant_time: InstantTime | str, *, user: str | None = None, comments: str = ""
) -> SavepointMetadata:
    """The metadata a savepoint of ``instant_time`` would record (validates like Hudi; writes nothing).

    Raises:
        InvalidInstantStateError: not a completed commit, already savepointed, or older than what the cleaner keeps.
    """
    instant_time = InstantTime(instant_time, where=table.base_uri)
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


def list_savepoints(table: HudiTable) -> list[SavepointInfo]:
    """Completed savepoints, oldest first."""
    out = []
    for sp in table.refresh().timeline.completed().with_actions(Action.SAVEPOINT):
        md = table.read_model(sp, SavepointMetadata)
        out.append(
            SavepointInfo(
                instant_time=sp.time,
                savepointed_by=md.savepointed_by,
                savepointed_at_ms=md.savepointed_at,
                comments=md.comments,
                files=sum(len(pm.savepoint_data_file) for pm in md.partition_metadata.values()),
            )
        )
    return out
