"""Which sorted runs of a bucket to compact, and to which level: Paimon's universal compaction, as pure functions.

Mirrors Java ``UniversalCompaction`` (Paimon 1.x; itself RocksDB's universal compaction), ``ForceUpLevel0Compaction``
(used when the table needs lookup: deletion vectors, ``changelog-producer=lookup``), ``CompactStrategy
.pickFullCompaction`` and the filter and drop-delete decision of ``MergeTreeCompactManager.triggerCompaction``.

Runs come in :meth:`Levels.level_sorted_runs` order: level-0 files newest first, then levels upward, so index 0 is
the newest data and the last run the oldest. The writer-side timers of Java (``compaction.optimization-interval``,
``lookup-compact.max-interval``, off-peak hours) are state of a long-running writer, not of a snapshot; a dedicated
compaction job gets the same effect from ``full=True`` or a schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lake_orchestration.paimon.model.levels import CompactUnit, Levels, LevelSortedRun
from lake_orchestration.paimon.model.options import CoreOptions


@dataclass(frozen=True, kw_only=True)
class UniversalCompaction:
    """Universal compaction settings (Java ``UniversalCompaction(maxSizeAmp, sizeRatio, numRunCompactionTrigger)``).

    Example:
        >>> from lake_orchestration.paimon.model import CoreOptions
        >>> UniversalCompaction.from_options(CoreOptions({}))
        UniversalCompaction(max_size_amp=200, size_ratio=1, num_run_compaction_trigger=5)
    """

    max_size_amp: int
    """``compaction.max-size-amplification-percent``."""
    size_ratio: int
    """``compaction.size-ratio``."""
    num_run_compaction_trigger: int
    """``num-sorted-run.compaction-trigger``."""

    @classmethod
    def from_options(cls, options: CoreOptions) -> UniversalCompaction:
        """The table's settings."""
        return cls(
            max_size_amp=options.max_size_amplification_percent,
            size_ratio=options.size_ratio,
            num_run_compaction_trigger=options.num_sorted_runs_compaction_trigger,
        )

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """Java ``UniversalCompaction.pick``: size amplification, then size ratio, then number of runs."""
        max_level = num_levels - 1
        unit = self.pick_for_size_amp(max_level, runs)
        if unit is not None:
            return unit
        unit = self.pick_for_size_ratio(max_level, runs)
        if unit is not None:
            return unit
        if len(runs) > self.num_run_compaction_trigger:
            # compacting for file num
            candidate_count = len(runs) - self.num_run_compaction_trigger + 1
            return self.pick_for_size_ratio_from(max_level, runs, candidate_count)
        return None

    def pick_for_size_amp(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """All runs to the max level when the newer runs are more than ``max_size_amp`` percent of the oldest."""
        if len(runs) < self.num_run_compaction_trigger:
            return None
        candidate_size = sum(r.run.total_size for r in runs[:-1])
        earliest_run_size = runs[-1].run.total_size
        # size amplification = percentage of additional size
        if candidate_size * 100 > self.max_size_amp * earliest_run_size:
            return CompactUnit.from_level_runs(max_level, runs)
        return None

    def pick_for_size_ratio(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """Java ``pickForSizeRatio(maxLevel, runs)``: from the newest run while sizes stay within the ratio."""
        if len(runs) < self.num_run_compaction_trigger:
            return None
        return self.pick_for_size_ratio_from(max_level, runs, 1)

    def pick_for_size_ratio_from(
        self, max_level: int, runs: Sequence[LevelSortedRun], candidate_count: int, *, force_pick: bool = False
    ) -> CompactUnit | None:
        """Java ``pickForSizeRatio(maxLevel, runs, candidateCount, forcePick)``: extend the first
        ``candidate_count`` runs with each next run whose size is at most ``(100 + size_ratio)%`` of the candidates'
        (once triggered, runs of level 0 and 1 join regardless)."""
        candidate_size = sum(r.run.total_size for r in runs[:candidate_count])
        triggered = force_pick or candidate_count > 1
        for i in range(candidate_count, len(runs)):
            nxt = runs[i]
            if candidate_size * (100.0 + self.size_ratio) / 100.0 < nxt.run.total_size and (
                not triggered or nxt.level > 1
            ):
                break
            candidate_size += nxt.run.total_size
            candidate_count += 1
            triggered = True
        return create_unit(runs, max_level, candidate_count) if triggered else None

    def force_pick_l0(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """Java ``forcePickL0``: every level-0 run (plus what the size ratio adds), or None without level-0 files."""
        candidate_count = 0
        for r in runs:
            if r.level > 0:
                break
            candidate_count += 1
        if candidate_count == 0:
            return None
        return self.pick_for_size_ratio_from(num_levels - 1, runs, candidate_count, force_pick=True)

    def pick_force_up_level0(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """Java ``ForceUpLevel0Compaction.pick``: the universal pick, else force level-0 files up (lookup tables
        keep no file at level 0 after a compaction)."""
        unit = self.pick(num_levels, runs)
        return unit if unit is not None else self.force_pick_l0(num_levels, runs)


def create_unit(runs: Sequence[LevelSortedRun], max_level: int, run_count: int) -> CompactUnit:
    """Java ``UniversalCompaction.createUnit``: the first ``run_count`` runs, output one level below the next run
    (never level 0: level-0 runs after the candidates join them; all runs -> the max level)."""
    if run_count == len(runs):
        output_level = max_level
    else:
        # level of next run - 1
        output_level = max(0, runs[run_count].level - 1)
    if output_level == 0:
        # do not output level 0
        for i in range(run_count, len(runs)):
            nxt = runs[i]
            run_count += 1
            if nxt.level != 0:
                output_level = nxt.level
                break
    if run_count == len(runs):
        output_level = max_level
    return CompactUnit.from_level_runs(output_level, runs[:run_count])


def pick_full_compaction(num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
    """Java ``CompactStrategy.pickFullCompaction`` without record-level expiry or deletion vectors: every run to the
    max level; None when there is nothing or only one run already at the max level."""
    max_level = num_levels - 1
    if not runs or (len(runs) == 1 and runs[0].level == max_level):
        return None
    return CompactUnit.from_level_runs(max_level, runs)


def pick_unit(
    levels: Levels,
    options: CoreOptions,
    *,
    full: bool = False,
    force_up_level0: bool | None = None,
) -> CompactUnit | None:
    """The unit a ``MergeTreeCompactManager.triggerCompaction`` would submit for this bucket, or None.

    Args:
        levels: The bucket's files by level.
        options: The table's options.
        full: Full compaction (``compact --full``): every run to the max level.
        force_up_level0: Use ``ForceUpLevel0Compaction`` (Java does when the table needs lookup: deletion vectors
            or ``changelog-producer=lookup``); None decides from ``options``.

    Returns:
        The unit, or None when nothing is to be done (Java drops a unit of one file already at its output level).
    """
    runs = levels.level_sorted_runs()
    num_levels = levels.number_of_levels
    if full:
        return pick_full_compaction(num_levels, runs)
    if force_up_level0 is None:
        force_up_level0 = options.deletion_vectors_enabled or options.changelog_producer.value == "lookup"
    strategy = UniversalCompaction.from_options(options)
    unit = strategy.pick_force_up_level0(num_levels, runs) if force_up_level0 else strategy.pick(num_levels, runs)
    if unit is None or not unit.files:
        return None
    if len(unit.files) == 1 and unit.files[0].level == unit.output_level:
        return None
    return unit


def drop_delete(unit: CompactUnit, levels: Levels, *, deletion_vectors: bool, force_keep_delete: bool = False) -> bool:
    """Whether the rewrite may drop retractions (Java ``MergeTreeCompactManager``): the output is above level 0 and
    holds the oldest data of the bucket (at or above the highest non-empty level), or deletion vectors are on."""
    return (
        not force_keep_delete
        and unit.output_level != 0
        and (unit.output_level >= levels.non_empty_highest_level() or deletion_vectors)
    )
