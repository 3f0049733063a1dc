"""What a compaction's steps return: :class:`CompactionExecution` (execute-plan: the write stats, the attempt's
token) and :class:`CompactionResult` (the commit), with their shared totals (:class:`CompactionTotals`).

Plain values in a module of their own: the executor, the committer, the service and the shells depend on them, and
they depend on no step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.hudi.model.avro import CompactionPlan
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.instant import InstantTime


class CompactionTotals:
    """The totals of one plan's write stats and their JSON (what ``lake-orch compaction run --json`` prints for a
    plan): shared by the executed plan (:class:`.executor.CompactionExecution`) and the committed one
    (:class:`CompactionResult`)."""

    instant: InstantTime
    operations: int
    stats: Sequence[WriteStat]
    rolled_back_attempt: str | None
    seconds: float

    @property
    def rows_written(self) -> int:
        return sum(s.numWrites for s in self.stats)

    @property
    def bytes_written(self) -> int:
        return sum(s.totalWriteBytes for s in self.stats)

    @property
    def log_records(self) -> int:
        return sum(s.totalLogRecords for s in self.stats)

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "instant": self.instant,
            "operations": self.operations,
            "rows_written": self.rows_written,
            "bytes_written": self.bytes_written,
            "log_records": self.log_records,
            "seconds": round(self.seconds, 3),
            "rolled_back_attempt": self.rolled_back_attempt,
        }


@dataclass
class CompactionResult(CompactionTotals):
    """One executed and committed compaction plan (:meth:`to_json_obj`: what ``lake-orch compaction run --json``
    prints for it)."""

    instant: InstantTime
    operations: int
    stats: list[WriteStat]
    metadata: CommitMetadata
    rolled_back_attempt: str | None = None
    seconds: float = 0.0
    already_committed: bool = False
    """The commit found the plan committed already (a repeated commit: nothing written)."""

    def operations_json(self) -> list[dict[str, Any]]:
        """One object per written file group (the Dagster ``write_stats`` metadata)."""
        return [
            {
                "partition": s.partitionPath,
                "file_id": s.fileId,
                "rows": s.numWrites,
                "log_records": s.totalLogRecords,
                "log_files": s.totalLogFilesCompacted,
            }
            for s in self.stats
        ]


@dataclass(frozen=True, kw_only=True)
class CompactionExecution(CompactionTotals):
    """What execute-plan wrote for one plan: the write stats of its operations (the new base files, with their
    markers, exist; ``<instant>.compaction.inflight`` is on the timeline). The commit needs only this.

    Picklable (Dagster hands it from the ``execute_plan`` op to the ``commit`` op); :meth:`to_json_obj` is its
    summary.
    """

    instant: InstantTime
    operations: int
    stats: tuple[WriteStat, ...]
    plan: CompactionPlan = field(repr=False)
    writer_schema: dict[str, Any] = field(repr=False)
    """The writer schema (with meta fields) the base files were written with: the commit's ``schema``."""
    attempt_token: bytes = field(repr=False)
    """The content of this attempt's heartbeat ``.hoodie/.heartbeat/<instant>``: the commit checks that the plan is
    still this attempt's (not rolled back and taken over by another process meanwhile)."""
    rolled_back_attempt: str | None = None
    """The crashed attempt rolled back before this one (its rollback instant)."""
    seconds: float = 0.0
