"""Plan, execute and commit a Paimon compaction in one call, re-planning on a commit conflict as Java's dedicated
compaction job does (its commit fails; the next run plans from the new latest snapshot)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lake_orchestration.engines.base import Engine
from lake_orchestration.errors import PaimonCommitConflictError
from lake_orchestration.paimon.services.compaction.committer import PaimonCompactionCommit, commit_compaction
from lake_orchestration.paimon.services.compaction.executor import PaimonCompactionExecution, execute_compaction
from lake_orchestration.paimon.services.compaction.orphans import abort_execution
from lake_orchestration.paimon.services.compaction.planner import PaimonCompactionPlan, plan_compaction
from lake_orchestration.paimon.table import PaimonTable

DEFAULT_MAX_REPLANS = 3


@dataclass(frozen=True, kw_only=True)
class PaimonCompactionResult:
    """What :func:`run_compaction` did."""

    plan: PaimonCompactionPlan
    """The plan that was committed (the last one after re-plans)."""
    execution: PaimonCompactionExecution | None
    """Its execution (None for an empty plan)."""
    commit: PaimonCompactionCommit | None
    """The commit (None when nothing changed)."""
    replans: int
    """Plans discarded after a commit conflict."""

    def to_json_obj(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "plan": self.plan.to_json_obj(),
            "execution": None if self.execution is None else self.execution.to_json_obj(),
            "commit": None if self.commit is None else self.commit.to_json_obj(),
            "replans": self.replans,
        }


def run_compaction(
    table: PaimonTable,
    *,
    full: bool = False,
    engine: Engine | None = None,
    max_replans: int = DEFAULT_MAX_REPLANS,
) -> PaimonCompactionResult:
    """Schedule, execute and commit a compaction of every bucket that needs one.

    On :class:`~lake_orchestration.errors.PaimonCommitConflictError` the execution's files are deleted and the
    compaction planned again from the new latest snapshot, at most ``max_replans`` times (then the error is raised).
    """
    replans = 0
    while True:
        plan = plan_compaction(table, full=full)
        if plan.is_empty:
            return PaimonCompactionResult(plan=plan, execution=None, commit=None, replans=replans)
        execution = execute_compaction(plan, storage=table.storage, engine=engine)
        try:
            commit = commit_compaction(table, execution)
        except PaimonCommitConflictError:
            abort_execution(table, execution)
            if replans >= max_replans:
                raise
            replans += 1
            continue
        return PaimonCompactionResult(plan=plan, execution=execution, commit=commit, replans=replans)
