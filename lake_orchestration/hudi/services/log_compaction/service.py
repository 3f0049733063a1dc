"""Log compaction end to end: execute a pending plan and commit it (:mod:`.planner` schedules plans)."""

from __future__ import annotations

from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.log_compaction.committer import commit_log_compaction
from lake_orchestration.hudi.services.log_compaction.executor import execute_log_compaction_attempt
from lake_orchestration.hudi.table.hudi_table import HudiTable


def run_log_compaction(table: HudiTable, instant: str, *, config: CompactionConfig | None = None) -> CommitMetadata:
    """Execute and commit the pending log compaction ``instant``; returns its commit metadata.

    The attempt keeps a heartbeat (``hoodie.client.heartbeat.*``, a token of its own as content) from before the
    requested -> inflight transition until the commit. Under the table lock, a plan found inflight is refused while
    its attempt's heartbeat is fresh (or, without a heartbeat, while its inflight file is younger than the expiry),
    and otherwise rolled back first (the crashed attempt's log files deleted). The commit checks, under the lock,
    that the plan is still inflight, the heartbeat still this attempt's and the written files present.

    Raises:
        InstantNotFoundError: no pending log compaction ``instant``.
        InstantInProgressError: the plan is inflight and its attempt is live (another process executes it).
        InvalidInstantStateError: at the commit, the attempt was taken over or its files are gone (nothing
            committed).
        CorruptLogBlockError: a log block the plan merges does not decode (nothing is written).
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    execution, attempt = execute_log_compaction_attempt(table, instant, config=config)
    return commit_log_compaction(table, execution, config=config, attempt=attempt)
