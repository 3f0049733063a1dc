"""What clustering's steps return: :class:`ClusteringExecution` (execute-plan: the write stats of the new file
groups, the attempt's token) and :class:`ClusteringResult` (the committed replacecommit). Plain, picklable values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.hudi.model.avro import ClusteringPlan
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.instant import InstantTime


def replaced_file_ids(plan: ClusteringPlan) -> dict[str, list[str]]:
    """Partition -> the file ids the plan replaces, in plan order (``partitionToReplaceFileIds``)."""
    out: dict[str, list[str]] = {}
    for g in plan.input_groups or ():
        for s in g.slices or ():
            ids = out.setdefault(s.partition_path or "", [])
            if (s.file_id or "") not in ids:
                ids.append(s.file_id or "")
    return out


class _Totals:
    instant: InstantTime
    groups: int
    stats: Any
    plan: ClusteringPlan
    rolled_back_attempt: str | None
    seconds: float

    @property
    def rows_written(self) -> int:
        return sum(s.numWrites for s in self.stats)

    @property
    def bytes_written(self) -> int:
        return sum(s.totalWriteBytes for s in self.stats)

    @property
    def files_written(self) -> int:
        return len(self.stats)

    @property
    def file_groups_replaced(self) -> int:
        return sum(len(v) for v in replaced_file_ids(self.plan).values())

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "instant": str(self.instant),
            "groups": self.groups,
            "file_groups_replaced": self.file_groups_replaced,
            "files_written": self.files_written,
            "rows_written": self.rows_written,
            "bytes_written": self.bytes_written,
            "seconds": round(self.seconds, 3),
            "rolled_back_attempt": self.rolled_back_attempt,
        }


@dataclass(frozen=True, kw_only=True)
class ClusteringExecution(_Totals):
    """What execute-plan wrote for one plan (the new base files and their markers exist; the replacecommit is
    inflight). The commit needs only this."""

    instant: InstantTime
    groups: int
    stats: tuple[WriteStat, ...]
    plan: ClusteringPlan = field(repr=False)
    writer_schema: dict[str, Any] = field(repr=False)
    """The writer schema (with meta fields) the files were written with: the commit's ``schema``."""
    attempt_token: bytes = field(repr=False)
    """The content of this attempt's heartbeat: the commit checks the plan is still this attempt's."""
    rolled_back_attempt: str | None = None
    seconds: float = 0.0


@dataclass
class ClusteringResult(_Totals):
    """One executed and committed clustering plan."""

    instant: InstantTime
    groups: int
    stats: list[WriteStat]
    plan: ClusteringPlan = field(repr=False)
    metadata: CommitMetadata = field(repr=False)
    rolled_back_attempt: str | None = None
    seconds: float = 0.0
    already_committed: bool = False
    """The commit found the plan committed already (nothing written)."""
