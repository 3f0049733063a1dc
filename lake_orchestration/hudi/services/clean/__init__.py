"""Clean: plan (``.clean.requested``) -> execute (parallel deletes) -> commit (``.clean``), as Hudi 0.14/0.15 does.

:mod:`.planner` (:func:`plan_clean`, :func:`schedule_clean`), :mod:`.executor` (:func:`execute_clean_plan`),
:mod:`.committer` (:func:`commit_clean`), :mod:`.recovery` (a failed attempt is finished: :func:`pending_cleans`),
:mod:`.service` (the verbs the shells call: :func:`plan_cleans` -> :func:`execute_cleans` -> :func:`commit_cleans`;
:func:`run_clean`: all of them, as Hudi's ``clean()``; ``dry_run`` only reports).
"""

from lake_orchestration.hudi.services.clean.committer import commit_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig, CleaningPolicy, CleaningTriggerStrategy
from lake_orchestration.hudi.services.clean.executor import (
    CleanExecution,
    execute_clean_attempt,
    execute_clean_plan,
    failed_deletes,
)
from lake_orchestration.hudi.services.clean.planner import (
    CleanPlanning,
    earliest_commit_to_retain,
    plan_clean,
    planned_file_names,
    read_plan,
    schedule_clean,
)
from lake_orchestration.hudi.services.clean.recovery import pending_cleans
from lake_orchestration.hudi.services.clean.service import (
    CleanExecutions,
    CleanPlans,
    CleanResult,
    commit_cleans,
    execute_clean,
    execute_cleans,
    plan_cleans,
    run_clean,
)

__all__ = [
    "CleanConfig",
    "CleanExecution",
    "CleanExecutions",
    "CleanPlanning",
    "CleanPlans",
    "CleanResult",
    "CleaningPolicy",
    "CleaningTriggerStrategy",
    "commit_clean",
    "commit_cleans",
    "earliest_commit_to_retain",
    "execute_clean",
    "execute_clean_attempt",
    "execute_clean_plan",
    "execute_cleans",
    "failed_deletes",
    "pending_cleans",
    "plan_clean",
    "plan_cleans",
    "planned_file_names",
    "read_plan",
    "run_clean",
    "schedule_clean",
]
