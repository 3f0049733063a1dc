"""``TableHealth``: the figures an operator watches on a table (file groups, log files per slice, pending work).

Read from one listing of the table (its timeline and file-system view); the Dagster table asset records them as
metadata on every materialization and its asset checks judge them, the demo prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pendulum

from lake_orchestration.hudi.model.instant import Action, InstantTime
from lake_orchestration.hudi.model.properties import TimelineTimezone
from lake_orchestration.hudi.table.hudi_table import HudiTable


@dataclass(frozen=True, kw_only=True)
class TableHealth:
    """Health figures of a table at one listing of its timeline and files."""

    table_type: str
    """``COPY_ON_WRITE`` or ``MERGE_ON_READ``."""
    file_groups: int
    """File groups a snapshot read merges (latest merged slices before or on the latest completed commit)."""
    log_files: int
    """Log files of those slices (under a pending compaction, the previous slice's logs still count)."""
    max_log_files_per_slice: int
    """Most log files of one of those slices."""
    pending_compactions: int
    """Compaction plans requested or inflight."""
    pending_instants: int
    """Instants of any action requested or inflight."""
    active_timeline_instants: int
    """Instants on the active timeline."""
    latest_commit: InstantTime | None
    """Latest completed commit, deltacommit or replacecommit (None: none yet)."""
    completed_deltacommits: int
    """Completed deltacommits on the active timeline."""
    oldest_pending_compaction: InstantTime | None
    """The oldest pending compaction plan (None: none)."""
    timeline_timezone: TimelineTimezone = TimelineTimezone.LOCAL
    """``hoodie.table.timeline.timezone``: how to read an instant time as a point in time."""

    def instant_datetime(self, instant: InstantTime) -> pendulum.DateTime:
        """``instant`` as a point in time, in the table's timeline timezone."""
        return instant_datetime(instant, self.timeline_timezone)

    def oldest_pending_compaction_age(self, *, now: float) -> float | None:
        """Seconds from the oldest pending compaction plan's instant time to ``now`` (epoch seconds), or None."""
        if self.oldest_pending_compaction is None:
            return None
        return now - self.instant_datetime(self.oldest_pending_compaction).timestamp()

    def to_json_obj(self) -> dict[str, Any]:
        """The figures as plain values (``latest_commit`` ``""`` when there is none)."""
        return {
            "table_type": self.table_type,
            "file_groups": self.file_groups,
            "log_files": self.log_files,
            "max_log_files_per_slice": self.max_log_files_per_slice,
            "pending_compactions": self.pending_compactions,
            "pending_instants": self.pending_instants,
            "active_timeline_instants": self.active_timeline_instants,
            "latest_commit": str(self.latest_commit or ""),
            "completed_deltacommits": self.completed_deltacommits,
        }


def instant_datetime(instant: InstantTime, timezone: TimelineTimezone) -> pendulum.DateTime:
    """``instant`` as a point in time: its digits read in ``hoodie.table.timeline.timezone`` (UTC, or this machine's
    local time for ``LOCAL``, as Hudi generates them)."""
    tz = "UTC" if timezone is TimelineTimezone.UTC else pendulum.local_timezone().name
    return instant.to_datetime(str(tz))


def table_health(table: HudiTable) -> TableHealth:
    """The :class:`TableHealth` of ``table`` as last listed (call ``table.refresh()`` first for a new listing)."""
    view = table.fs_view()
    tl = table.timeline
    latest = tl.latest_completed_commit_time()
    # what a snapshot read merges: under a pending compaction, the previous slice's logs still count
    slices = view.latest_merged_file_slices_before_or_on(str(latest)) if latest else []
    logs = [len(s.log_files) for s in slices]
    pending = list(tl.pending_compactions())
    return TableHealth(
        table_type=table.config.table_type.value,
        file_groups=len(slices),
        log_files=sum(logs),
        max_log_files_per_slice=max(logs, default=0),
        pending_compactions=len(pending),
        pending_instants=len(tl.pending()),
        active_timeline_instants=len(tl),
        latest_commit=InstantTime(str(latest)) if latest else None,
        completed_deltacommits=len(tl.completed().with_actions(Action.DELTA_COMMIT)),
        oldest_pending_compaction=InstantTime(str(pending[0].time)) if pending else None,
        timeline_timezone=table.config.timeline_timezone,
    )
