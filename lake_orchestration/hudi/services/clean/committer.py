"""Clean commit: ``<ts>.clean.inflight`` -> ``<ts>.clean`` (``HoodieCleanMetadata``), the one atomic timeline
transition of a clean, under the table lock.

Mirrors the last step of Hudi 0.14/0.15 ``CleanActionExecutor.runClean``. The commit writes only the completed
instant: given the result of :func:`~lake_orchestration.hudi.services.clean.executor.execute_clean_plan` it never
deletes a file again, and it refuses when another attempt took the clean over meanwhile.
"""

from __future__ import annotations

from lake_orchestration.hudi.model.avro import CleanMetadata
from lake_orchestration.hudi.services.attempt import InstantAttempt
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.clean.executor import CleanExecution, clean_attempt
from lake_orchestration.hudi.table import HudiTable


def commit_clean(
    table: HudiTable,
    execution: CleanExecution,
    *,
    config: CleanConfig | None = None,
    attempt: InstantAttempt | None = None,
) -> CleanMetadata:
    """Write the completed ``<ts>.clean`` of an executed clean; returns its metadata.

    ``config`` (default: Hudi's): its ``lock`` is held while committing. ``attempt``: the executing attempt, its
    heartbeat still beating (from :func:`~lake_orchestration.hudi.services.clean.executor.execute_clean_attempt`); it
    is stopped here. Without it, the attempt is rebuilt from ``execution.attempt`` (its token), only checked.

    The heartbeat of the clean must still hold the executing attempt's token: if another run judged the attempt
    dead and took the clean over, this one does not commit. The heartbeat is deleted after the commit; a failed
    commit keeps it (not beating), so the commit retried alone with the same execution is still this attempt's, as
    compaction's commit does. A clean that is committed already makes this a no-op (the timeline's metadata).
    The commit is :meth:`InstantAttempt.commit` (the one commit path).

    Raises:
        InvalidInstantStateError: the clean is not inflight any more, or its heartbeat is another attempt's.
        CommitStateUnknownError: writing ``<ts>.clean`` failed and the timeline does not show it.
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    cfg = config or CleanConfig()
    instant = execution.instant
    # without the beating attempt: a handle on the attempt's heartbeat file, only checked and deleted here
    attempt = attempt or clean_attempt(table, instant, cfg, token=execution.attempt)
    done = attempt.commit(execution.metadata.to_bytes())
    if done.already_committed:  # committed by an earlier try whose answer was lost: a no-op
        return table.read_model(done.completed, CleanMetadata)
    return execution.metadata
