"""Log compaction: merge a file slice's log blocks into one log file, without rewriting the base file.

``<ts>.logcompaction.requested`` (a ``HoodieCompactionPlan``) -> new merged log files -> ``<ts>.deltacommit``
(``LOG_COMPACT``). :mod:`.planner` (:func:`schedule_log_compaction`), :mod:`.executor`
(:func:`execute_log_compaction`), :mod:`.committer` (:func:`commit_log_compaction`), :mod:`.service`
(:func:`run_log_compaction`; every pending plan: :func:`run_log_compactions`). A crashed attempt's log files are
deleted before the plan runs again by :func:`rollback_log_compaction_attempt`
(:mod:`lake_orchestration.hudi.services.rollback.compaction`, re-exported here).
"""

from lake_orchestration.hudi.services.log_compaction.committer import commit_log_compaction
from lake_orchestration.hudi.services.log_compaction.executor import (
    LogCompactionExecution,
    execute_log_compaction,
    execute_log_compaction_attempt,
)
from lake_orchestration.hudi.services.log_compaction.planner import (
    LOG_COMPACTION_EXECUTOR,
    log_compaction_plan,
    read_log_compaction_plan,
    schedule_log_compaction,
)
from lake_orchestration.hudi.services.log_compaction.service import (
    LogCompactionRun,
    run_log_compaction,
    run_log_compactions,
)
from lake_orchestration.hudi.services.rollback.compaction import rollback_log_compaction_attempt

__all__ = [
    "LOG_COMPACTION_EXECUTOR",
    "LogCompactionExecution",
    "LogCompactionRun",
    "commit_log_compaction",
    "execute_log_compaction",
    "execute_log_compaction_attempt",
    "log_compaction_plan",
    "read_log_compaction_plan",
    "rollback_log_compaction_attempt",
    "run_log_compaction",
    "run_log_compactions",
    "schedule_log_compaction",
]
