"""Compaction (MERGE_ON_READ): schedule-plan -> execute-plan -> commit, as Hudi 0.14/0.15 does it.

- :mod:`.planner`: :func:`schedule_compaction` writes ``<instant>.compaction.requested`` (:class:`ScheduleResult`);
  :func:`load_plan`, :func:`pending_compaction_instants`, :func:`select_pending_plans` (FIFO/LIFO, at most N).
- :mod:`.executor`: :func:`execute_plan` claims the plan (requested -> inflight, a crashed inflight attempt rolled
  back first), writes one new base file per operation (with its marker) on an engine, and returns the typed write
  stats (:class:`CompactionExecution`); nothing is committed.
- :mod:`.committer`: :func:`commit_execution` writes only ``<instant>.commit`` from those stats (never executes;
  a committed plan makes it a no-op) and returns a :class:`CompactionResult`.
- :mod:`.result`: what the steps return (:class:`CompactionExecution`, :class:`CompactionResult`).
- :mod:`.attempt`: the plan's attempt (the services' one
  :class:`~lake_orchestration.hudi.services.attempt.InstantAttempt`, with compaction's rollback, which lives in
  :mod:`lake_orchestration.hudi.services.rollback.compaction`: :func:`rollback_inflight_compaction`,
  :func:`files_to_roll_back`, re-exported here).
- :mod:`.service`: :func:`execute_compaction` (both steps in this process, the heartbeat kept until the commit) and
  :func:`run_compaction` (pending plans, ``--seq FIFO|LIFO`` with ``--max-plans``); the verbs the shells call on one
  plan, a no-op on a plan already committed (:class:`PlanRun`): :func:`execute_compaction_plan`,
  :func:`commit_compaction_plan`, :func:`run_compaction_plan`.

A Dagster graph runs ``execute_compaction_plan`` and ``commit_compaction_plan`` as two ops: the commit op gets the
:class:`PlanRun` (its :class:`CompactionExecution`) and retries alone.
"""

from lake_orchestration.hudi.services.compaction.committer import (
    commit_compaction,
    commit_execution,
    compaction_commit_metadata,
)
from lake_orchestration.hudi.services.compaction.config import (
    CompactionConfig,
    CompactionStrategyName,
    TriggerStrategy,
)
from lake_orchestration.hudi.services.compaction.executor import (
    OperationTask,
    check_base_files,
    compaction_tasks,
    execute_operation,
    execute_plan,
)
from lake_orchestration.hudi.services.compaction.planner import (
    ScheduleResult,
    is_compaction_committed,
    load_plan,
    pending_compaction_instants,
    schedule_compaction,
    select_pending_plans,
)
from lake_orchestration.hudi.services.compaction.result import CompactionExecution, CompactionResult, CompactionTotals
from lake_orchestration.hudi.services.compaction.service import (
    PlanRun,
    commit_compaction_plan,
    execute_compaction,
    execute_compaction_plan,
    run_compaction,
    run_compaction_plan,
)
from lake_orchestration.hudi.services.rollback.compaction import files_to_roll_back, rollback_inflight_compaction

__all__ = [
    "CompactionConfig",
    "CompactionExecution",
    "CompactionResult",
    "CompactionStrategyName",
    "CompactionTotals",
    "OperationTask",
    "PlanRun",
    "ScheduleResult",
    "TriggerStrategy",
    "check_base_files",
    "commit_compaction",
    "commit_compaction_plan",
    "commit_execution",
    "compaction_commit_metadata",
    "compaction_tasks",
    "execute_compaction",
    "execute_compaction_plan",
    "execute_operation",
    "execute_plan",
    "files_to_roll_back",
    "is_compaction_committed",
    "load_plan",
    "pending_compaction_instants",
    "rollback_inflight_compaction",
    "run_compaction",
    "run_compaction_plan",
    "schedule_compaction",
    "select_pending_plans",
]
