"""Merge-tree compaction of Paimon primary-key tables: plan -> execute -> commit, as Java Paimon 1.x.

:mod:`.universal` (the universal compaction picker), :mod:`.planner` (:func:`plan_compaction`: a unit per bucket),
:mod:`.executor` (:func:`execute_compaction`: ``MergeTreeCompactTask.doCompact`` per bucket, data files only),
:mod:`.merge` (sort-merge with the merge engine), :mod:`.committer` (:func:`commit_compaction`: the COMPACT
snapshot), :mod:`.orphans` (orphans of failed attempts), :mod:`.service` (:func:`run_compaction`: all of them).
"""

from lake_orchestration.paimon.services.compaction.committer import PaimonCompactionCommit, commit_compaction
from lake_orchestration.paimon.services.compaction.executor import (
    BucketCompactResult,
    BucketCompactTask,
    PaimonCompactionExecution,
    compact_bucket,
    execute_compaction,
    interval_partition,
)
from lake_orchestration.paimon.services.compaction.orphans import (
    OrphanFiles,
    abort_execution,
    orphan_files,
    remove_orphan_files,
)
from lake_orchestration.paimon.services.compaction.planner import (
    BucketCompaction,
    PaimonCompactionPlan,
    plan_compaction,
)
from lake_orchestration.paimon.services.compaction.service import PaimonCompactionResult, run_compaction
from lake_orchestration.paimon.services.compaction.universal import (
    UniversalCompaction,
    drop_delete,
    pick_full_compaction,
    pick_unit,
)

__all__ = [
    "BucketCompactResult",
    "BucketCompactTask",
    "BucketCompaction",
    "OrphanFiles",
    "PaimonCompactionCommit",
    "PaimonCompactionExecution",
    "PaimonCompactionPlan",
    "PaimonCompactionResult",
    "UniversalCompaction",
    "abort_execution",
    "commit_compaction",
    "compact_bucket",
    "drop_delete",
    "execute_compaction",
    "interval_partition",
    "orphan_files",
    "pick_full_compaction",
    "pick_unit",
    "plan_compaction",
    "remove_orphan_files",
    "run_compaction",
]
