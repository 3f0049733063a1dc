"""Rollback of failed writes, and repairs of broken pending rollbacks (an inflight compaction or log compaction
attempt is rolled back by :mod:`lake_orchestration.hudi.services.compaction.rollback`, through these steps).

:mod:`.planner` (stale writes, :func:`plan_rollback`), :mod:`.executor` (:func:`execute_rollback`: delete files,
write rollback command blocks, remove the rolled-back instant), :mod:`.committer` (:func:`commit_rollback`),
:mod:`.service` (:func:`rollback_write`, :func:`rollback_stale_writes`: all of them under the table lock; a failed
rollback is resumed from its plan), :mod:`.repair` (:func:`remove_unreadable_rollback`).
"""

from lake_orchestration.hudi.services.rollback.committer import commit_rollback, rollback_metadata
from lake_orchestration.hudi.services.rollback.executor import execute_rollback
from lake_orchestration.hudi.services.rollback.planner import (
    StaleWrite,
    pending_rollback_of,
    plan_rollback,
    stale_writes,
)
from lake_orchestration.hudi.services.rollback.repair import (
    RemovedRollback,
    read_rollback_plan,
    remove_unreadable_rollback,
)
from lake_orchestration.hudi.services.rollback.service import RollbackResult, rollback_stale_writes, rollback_write

__all__ = [
    "RemovedRollback",
    "RollbackResult",
    "StaleWrite",
    "commit_rollback",
    "execute_rollback",
    "pending_rollback_of",
    "plan_rollback",
    "read_rollback_plan",
    "remove_unreadable_rollback",
    "rollback_metadata",
    "rollback_stale_writes",
    "rollback_write",
    "stale_writes",
]
