"""Savepoint commit: ``<T>.savepoint.inflight`` (empty) then ``<T>.savepoint`` (``HoodieSavepointMetadata``), under the
table lock, as Hudi 0.14/0.15's ``SavepointActionExecutor`` does.

A savepoint writes no data file: planning (:mod:`.planner`) computes the metadata, and this commit is the whole
action (there is no executor step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lake_orchestration.hudi.model.avro import SavepointMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.savepoint.planner import savepoint_metadata
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.commit import commit_section
from lake_orchestration.hudi.table.lock import LockConfig


@dataclass(frozen=True, kw_only=True)
class SavepointResult:
    """A savepoint created (or, on a dry run, the one that would be)."""

    instant: InstantTime
    """The savepointed commit."""
    dry_run: bool
    """True if nothing was written."""
    metadata: SavepointMetadata
    """What the savepoint records (or would)."""

    @property
    def files(self) -> dict[str, list[str]]:
        """Partition -> names of the files the savepoint keeps."""
        return {p: list(pm.savepoint_data_file) for p, pm in self.metadata.partition_metadata.items()}

    @property
    def file_count(self) -> int:
        return sum(len(v) for v in self.files.values())

    def to_json_obj(self) -> dict[str, Any]:
        """The result as ``lake-orch savepoint create --json`` prints it."""
        return {
            "instant": self.instant,
            "dry_run": self.dry_run,
            "savepointed_by": self.metadata.savepointed_by,
            "files": self.files,
        }


def create_savepoint(
    table: HudiTable,
    instant_time: InstantTime | str,
    *,
    user: str | None = None,
    comments: str = "",
    dry_run: bool = False,
    lock: LockConfig | None = None,
) -> SavepointMetadata:
    """Savepoint the completed commit ``instant_time``; ``dry_run`` only returns the metadata it would write.

    Raises:
        InvalidInstantStateError: not a completed commit, already savepointed, or older than what the cleaner keeps.
        TableLockedError: another process holds the table lock (``lock``) past its wait time.
    """
    instant_time = InstantTime(instant_time, where=table.base_uri)
    if dry_run:
        return savepoint_metadata(table, instant_time, user=user, comments=comments)
    # Under the table lock: a clean or archive of another process must not remove the commit or its files between
    # the metadata (the files it pins) and the completed savepoint.
    with commit_section(table, operation=f"savepoint create {instant_time}", lock=lock) as section:
        md = savepoint_metadata(table, instant_time, user=user, comments=comments)
        inflight = Instant(instant_time, Action.SAVEPOINT, State.INFLIGHT)
        if table.timeline.get(instant_time, Action.SAVEPOINT) is None:
            table.create_inflight(inflight)
        section.complete(inflight, md.to_bytes())
    return md
