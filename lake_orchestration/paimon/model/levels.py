"""The LSM levels of one bucket: sorted runs and compaction units (Java ``Levels``, ``SortedRun``,
``LevelSortedRun``, ``CompactUnit``).

Level 0 holds unsorted files, each its own sorted run, newest first (larger ``maxSequenceNumber`` first, then file
name). Each level >= 1 is one sorted run: its files ordered by min key with disjoint key ranges.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.paimon.model.binary_row import BinaryRow
from lake_orchestration.paimon.model.manifest import DataFileMeta


@dataclass(frozen=True)
class SortedRun:
    """Files whose key ranges do not overlap, ordered by key."""

    files: tuple[DataFileMeta, ...]
    """The files, in key order."""

    @property
    def total_size(self) -> int:
        """Sum of the file sizes (what universal compaction compares)."""
        return sum(f.file_size for f in self.files)

    @property
    def row_count(self) -> int:
        """Sum of the files' row counts."""
        return sum(f.row_count for f in self.files)


@dataclass(frozen=True)
class LevelSortedRun:
    """A sorted run and its level."""

    level: int
    """0 for a single level-0 file, else the level of the run."""
    run: SortedRun
    """The run."""


@dataclass(frozen=True, kw_only=True)
class CompactUnit:
    """What one compaction of a bucket rewrites (Java ``CompactUnit``): input files and the output level."""

    output_level: int
    """Level the output files (or upgraded files) go to."""
    files: tuple[DataFileMeta, ...]
    """Input files, run by run in the order of the picked runs."""
    file_rewrite: bool = False
    """True for a unit made of single files to rewrite in place (``fromFiles``), not of sorted runs."""

    @classmethod
    def from_level_runs(cls, output_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit:
        """All files of ``runs`` (Java ``CompactUnit.fromLevelRuns``)."""
        return cls(output_level=output_level, files=tuple(f for r in runs for f in r.run.files))

    @classmethod
    def from_files(cls, output_level: int, files: Sequence[DataFileMeta], *, file_rewrite: bool = False) -> CompactUnit:
        """Given files (Java ``CompactUnit.fromFiles``)."""
        return cls(output_level=output_level, files=tuple(files), file_rewrite=file_rewrite)


def _level0_order(f: DataFileMeta) -> tuple[int, str]:
    return (-f.max_sequence_number, f.file_name)


@dataclass(frozen=True)
class Levels:
    """The files of one bucket by level.

    Build with :meth:`from_files`; ``num_levels`` grows to fit the highest level present, as Java's ``Levels``
    constructor does.
    """

    level0: tuple[DataFileMeta, ...]
    """Level-0 files, newest first."""
    runs: tuple[SortedRun, ...]
    """Run of level 1, 2, ... ``num_levels - 1`` (possibly empty)."""

    @classmethod
    def from_files(
        cls,
        files: Iterable[DataFileMeta],
        *,
        num_levels: int,
        key_order: Callable[[BinaryRow], Any] | None = None,
        where: str = "bucket",
    ) -> Levels:
        """Place files in their levels.

        Args:
            files: The live files of the bucket.
            num_levels: ``CoreOptions.num_levels`` (at least 2).
            key_order: Sort key of a key row (e.g. ``lambda row: row.sort_key(key_types)``, Paimon's key
                comparator); None keeps the files of a level in the order given.
            where: Names the bucket in error messages.

        Raises:
            ValueError: ``num_levels`` < 2 and no file above level 0.
            CorruptFileError: Two files of one level >= 1 overlap in key range (checked when ``key_order`` is given).
        """
        files = list(files)
        restored = max(num_levels, max((f.level for f in files), default=-1) + 1)
        if restored < 2:
            raise ValueError(f"Number of levels must be at least 2, got {num_levels}")
        level0 = tuple(sorted((f for f in files if f.level == 0), key=_level0_order))
        runs = []
        for level in range(1, restored):
            in_level = [f for f in files if f.level == level]
            if key_order is not None:
                in_level.sort(key=lambda f: key_order(f.min_key))
                for prev, cur in itertools.pairwise(in_level):
                    if key_order(cur.min_key) <= key_order(prev.max_key):
                        raise CorruptFileError(
                            where,
                            f"files {prev.file_name} and {cur.file_name} of level {level} overlap in key range: a "
                            "level >= 1 must be one sorted run",
                        )
            runs.append(SortedRun(tuple(in_level)))
        return cls(level0, tuple(runs))

    @property
    def number_of_levels(self) -> int:
        """Levels including level 0."""
        return len(self.runs) + 1

    @property
    def max_level(self) -> int:
        """Highest level (``number_of_levels - 1``)."""
        return len(self.runs)

    def run_of_level(self, level: int) -> SortedRun:
        """The run of ``level`` >= 1."""
        if level < 1:
            raise ValueError("Level0 does not have one single sorted run.")
        return self.runs[level - 1]

    def level_sorted_runs(self) -> list[LevelSortedRun]:
        """Runs in pick order: each level-0 file (newest first), then each non-empty level upward."""
        out = [LevelSortedRun(0, SortedRun((f,))) for f in self.level0]
        out += [LevelSortedRun(i + 1, run) for i, run in enumerate(self.runs) if run.files]
        return out

    @property
    def number_of_sorted_runs(self) -> int:
        """Level-0 files plus non-empty levels."""
        return len(self.level0) + sum(1 for r in self.runs if r.files)

    def non_empty_highest_level(self) -> int:
        """Highest level with files, 0 if only level 0 has files, -1 if empty."""
        for i in range(len(self.runs) - 1, -1, -1):
            if self.runs[i].files:
                return i + 1
        return 0 if self.level0 else -1

    def all_files(self) -> list[DataFileMeta]:
        """Every file, in run order."""
        return [f for r in self.level_sorted_runs() for f in r.run.files]

    @property
    def total_file_size(self) -> int:
        """Bytes in all files."""
        return sum(f.file_size for f in self.all_files())


@dataclass(frozen=True, kw_only=True)
class Bucket:
    """The live files of one (partition, bucket) of a snapshot, by level."""

    partition: BinaryRow
    """The partition row (arity 0 when unpartitioned)."""
    bucket: int
    """Bucket number."""
    total_buckets: int
    """``_TOTAL_BUCKETS`` of the entries."""
    levels: Levels
    """The files by level."""

    @property
    def files(self) -> list[DataFileMeta]:
        """Every live file, in run order."""
        return self.levels.all_files()

    @property
    def row_count(self) -> int:
        """Rows in all files (retractions included, as ``DataFileMeta.rowCount``)."""
        return sum(f.row_count for f in self.files)
