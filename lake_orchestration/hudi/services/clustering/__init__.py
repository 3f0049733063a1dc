"""Clustering (COPY_ON_WRITE and MERGE_ON_READ): schedule-plan -> execute-plan -> commit a ``replacecommit``, as Hudi
0.14/0.15 does it (see ``docs/clustering.md``).

- :mod:`.config`: :class:`ClusteringConfig` from Hudi's ``hoodie.clustering.*`` keys.
- :mod:`.planner`: :func:`schedule_clustering` writes ``<instant>.replacecommit.requested`` (size-based plan
  strategy, partition filters, triggers); :func:`load_plan`, :func:`pending_clustering_file_groups`,
  :func:`select_pending_plans`.
- :mod:`.layout`: the row order of a group (linear, z-order, hilbert).
- :mod:`.executor`: :func:`execute_plan` claims the plan and writes the new file groups on an engine.
- :mod:`.committer`: :func:`commit_execution` writes ``<instant>.replacecommit``.
- :mod:`.service`: :func:`execute_clustering`, :func:`run_clustering` and the shells' verbs
  (:func:`execute_clustering_plan`, :func:`commit_clustering_plan`, :func:`run_clustering_plan`).
- The rollback of a crashed attempt lives in :mod:`lake_orchestration.hudi.services.rollback.clustering`.
"""

from lake_orchestration.hudi.services.clustering.committer import clustering_commit_metadata, commit_execution
from lake_orchestration.hudi.services.clustering.config import ClusteringConfig, LayoutStrategy, PartitionFilterMode
from lake_orchestration.hudi.services.clustering.executor import GroupTask, cluster_group, execute_plan
from lake_orchestration.hudi.services.clustering.planner import (
    ScheduleResult,
    is_clustering,
    is_clustering_committed,
    load_plan,
    pending_clustering_file_groups,
    pending_clustering_instants,
    pending_clustering_plans,
    schedule_clustering,
    select_pending_plans,
)
from lake_orchestration.hudi.services.clustering.result import ClusteringExecution, ClusteringResult
from lake_orchestration.hudi.services.clustering.service import (
    PlanRun,
    commit_clustering_plan,
    execute_clustering,
    execute_clustering_plan,
    run_clustering,
    run_clustering_plan,
)
from lake_orchestration.hudi.services.rollback.clustering import (
    clustering_attempt_files,
    rollback_inflight_clustering,
)

__all__ = [
    "ClusteringConfig",
    "ClusteringExecution",
    "ClusteringResult",
    "GroupTask",
    "LayoutStrategy",
    "PartitionFilterMode",
    "PlanRun",
    "ScheduleResult",
    "cluster_group",
    "clustering_attempt_files",
    "clustering_commit_metadata",
    "commit_clustering_plan",
    "commit_execution",
    "execute_clustering",
    "execute_clustering_plan",
    "execute_plan",
    "is_clustering",
    "is_clustering_committed",
    "load_plan",
    "pending_clustering_file_groups",
    "pending_clustering_instants",
    "pending_clustering_plans",
    "rollback_inflight_clustering",
    "run_clustering",
    "run_clustering_plan",
    "schedule_clustering",
    "select_pending_plans",
]
