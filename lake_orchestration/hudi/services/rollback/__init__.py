"""Every rollback: of failed writes, of an inflight compaction or log compaction attempt, of a failed bootstrap, and
repairs of broken pending rollbacks. Services depend on this package, never the other way round.

:mod:`.planner` (stale writes, :func:`plan_rollback`), :mod:`.executor` (:func:`execute_rollback`: delete files,
write rollback command blocks, remove the rolled-back instant), :mod:`.committer` (:func:`commit_rollback`),
:mod:`.service` (:func:`rollback_write`, :func:`rollback_stale_writes`: all of them under the table lock; a failed
rollback is resumed from its plan), :mod:`.compaction` (an inflight compaction or log compaction attempt:
:func:`rollback_inflight_compaction`, :func:`rollback_inflight_log_compaction`), :mod:`.bootstrap`
(:func:`rollback_bootstrap`), :mod:`.repair` (:func:`remove_unreadable_rollback`).
"""

from lake_orchestration.hudi.services.rollback.bootstrap import pending_bootstrap_instants, rollback_bootstrap
from lake_orchestration.hudi.services.rollback.committer import commit_rollback, rollback_metadata
from lake_orchestration.hudi.services.rollback.compaction import (
    files_to_roll_back,
    rollback_inflight_compaction,
    rollback_inflight_log_compaction,
    rollback_log_compaction_attempt,
)
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
from lake_orchestration.hudi.services.rollback.service import (
    RollbackResult,
    rollback_instant,
    rollback_stale_writes,
    rollback_write,
)

__all__ = [
    "RemovedRollback",
    "RollbackResult",
    "StaleWrite",
    "commit_rollback",
    "execute_rollback",
    "files_to_roll_back",
    "pending_bootstrap_instants",
    "pending_rollback_of",
    "plan_rollback",
    "read_rollback_plan",
    "remove_unreadable_rollback",
    "rollback_bootstrap",
    "rollback_inflight_compaction",
    "rollback_inflight_log_compaction",
    "rollback_instant",
    "rollback_log_compaction_attempt",
    "rollback_metadata",
    "rollback_stale_writes",
    "rollback_write",
    "stale_writes",
]
