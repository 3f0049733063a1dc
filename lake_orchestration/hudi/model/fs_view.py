"""The file-system view: partitions x listing x timeline -> file groups and file slices.

Mirrors ``AbstractTableFileSystemView`` / ``HoodieFileGroup`` of Hudi 0.14: only committed slices are visible,
pending compaction adds a slice at the compaction instant (and hides its partial base file), replaced file
groups are excluded. Pure: the caller supplies the listing and the timeline facts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from lake_orchestration.hudi.model.file_group import (
    BaseFile,
    FileGroup,
    FileGroupId,
    FileSlice,
    LogFile,
    is_base_file_name,
    is_log_file_name,
)
from lake_orchestration.hudi.model.instant import METADATA_BOOTSTRAP_INSTANT, InstantTime
from lake_orchestration.hudi.model.timeline import Timeline


@dataclass(frozen=True)
class ListedFile:
    """A file of a partition directory, as listed."""

    name: str
    size: int = -1


@dataclass(frozen=True)
class FileSystemView:
    """File groups of a table as of its timeline.

    Attributes:
        timeline: the active timeline the view was built against.
        file_groups: every file group with its committed slices (newest first), replaced ones included.
        pending_compaction: file group -> instant of the pending compaction that includes it.
        replaced: file group -> instant of the completed replacecommit that replaced it.
    """

    timeline: Timeline
    file_groups: Mapping[FileGroupId, FileGroup]
    pending_compaction: Mapping[FileGroupId, InstantTime] = field(default_factory=dict)
    pending_log_compaction: Mapping[FileGroupId, InstantTime] = field(default_factory=dict)
    replaced: Mapping[FileGroupId, InstantTime] = field(default_factory=dict)
    partitions: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        *,
        timeline: Timeline,
        listing: Mapping[str, Iterable[ListedFile]],
        pending_compaction: Mapping[FileGroupId, InstantTime] | None = None,
        pending_log_compaction: Mapping[FileGroupId, InstantTime] | None = None,
        replaced: Mapping[FileGroupId, InstantTime] | None = None,
        bootstrap_sources: Mapping[FileGroupId, str] | None = None,
    ) -> FileSystemView:
        """Build the view from a listing ``{partition_path: files}``.

        ``bootstrap_sources`` (file group -> source file, from the bootstrap index) is attached to the base file of
        each group written by the METADATA_ONLY bootstrap (instant ``00000000000001``), as Java's
        ``addBootstrapBaseFileIfPresent`` does; later base files of the group (compaction, copy-on-write merges)
        hold whole records and get none.
        """
        bootstrap_sources = bootstrap_sources or {}
        pending_compaction = dict(pending_compaction or {})
        visible = timeline.completed_and_compactions()
        last = visible.last
        raw: dict[FileGroupId, dict[str, list]] = {}  # fg -> base instant -> [base, logs]
        for partition, files in listing.items():
            for f in files:
                if is_base_file_name(f.name):
                    bf = BaseFile.parse(f.name, partition_path=partition, size=f.size, where=partition or "/")
                    source = bootstrap_sources.get(FileGroupId(partition, bf.file_id))
                    if source is not None and bf.instant == METADATA_BOOTSTRAP_INSTANT:
                        bf = replace(bf, bootstrap_source=source)
                    slot = raw.setdefault(FileGroupId(partition, bf.file_id), {}).setdefault(
                        str(bf.instant), [None, []]
                    )
                    slot[0] = bf
                elif is_log_file_name(f.name):
                    lf = LogFile.parse(f.name, partition_path=partition, size=f.size, where=partition or "/")
                    raw.setdefault(FileGroupId(partition, lf.file_id), {}).setdefault(str(lf.base_instant), [None, []])[
                        1
                    ].append(lf)
        for fg_id, instant in pending_compaction.items():
            if fg_id in raw:
                raw[fg_id].setdefault(str(instant), [None, []])

        def committed(base_instant: str) -> bool:
            return last is not None and base_instant <= last.time and visible.contains_or_before_start(base_instant)

        groups: dict[FileGroupId, FileGroup] = {}
        for fg_id, by_instant in raw.items():
            slices = [
                FileSlice(fg_id, InstantTime(t), base, tuple(sorted(logs, key=LogFile.sort_key)))
                for t, (base, logs) in sorted(by_instant.items(), reverse=True)
                if committed(t)
            ]
            if slices:
                groups[fg_id] = FileGroup(fg_id, tuple(slices))
        partitions = tuple(sorted(listing.keys()))
        return cls(
            timeline=timeline,
            file_groups=groups,
            pending_compaction=pending_compaction,
            pending_log_compaction=dict(pending_log_compaction or {}),
            replaced=dict(replaced or {}),
            partitions=partitions,
        )

    # -- queries -------------------------------------------------------------------------------------------------
    def all_file_groups(self, partition: str | None = None, *, include_replaced: bool = False) -> list[FileGroup]:
        return [
            g
            for fid, g in sorted(self.file_groups.items(), key=lambda kv: (kv[0].partition_path, kv[0].file_id))
            if (partition is None or fid.partition_path == partition) and (include_replaced or fid not in self.replaced)
        ]

    def latest_file_slices(self, partition: str | None = None) -> list[FileSlice]:
        """``getLatestFileSlices``: the newest committed slice per group, without a pending compaction's output."""
        out = []
        for g in self.all_file_groups(partition):
            s = g.latest_slice
            if s is None:
                continue
            if self.pending_compaction.get(g.id) == s.base_instant and s.base_file is not None:
                s = FileSlice(s.file_group_id, s.base_instant, None, s.log_files)
            out.append(s)
        return out

    def latest_merged_file_slices_before_or_on(self, max_instant: str, partition: str | None = None) -> list[FileSlice]:
        """``getLatestMergedFileSlicesBeforeOrOn``: what a snapshot read as of ``max_instant`` merges.

        A slice created by a pending compaction is merged with the slice before it: previous base file,
        previous log files, then its own log files.
        """
        out = []
        for g in self.all_file_groups(partition, include_replaced=True):
            r = self.replaced.get(g.id)
            if r is not None and r <= max_instant:
                continue
            candidates = [s for s in g.slices if s.base_instant <= max_instant]
            if not candidates:
                continue
            s = candidates[0]
            if self.pending_compaction.get(g.id) == s.base_instant:
                if len(candidates) > 1:
                    prev = candidates[1]
                    s = FileSlice(g.id, prev.base_instant, prev.base_file, prev.log_files + s.log_files)
                else:
                    s = FileSlice(g.id, s.base_instant, None, s.log_files)
            if not s.is_empty:
                out.append(s)
        return out
