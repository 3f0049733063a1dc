"""Clean commit: ``<ts>.clean.inflight`` -> ``<ts>.clean`` (``HoodieCleanMetadata``), the one atomic timeline
transition of a clean, under the table lock.

Mirrors the last step of Hudi 0.14/0.15 ``CleanActionExecutor.runClean``. The commit writes only the completed
instant: given the result of :func:`~lake_orchestration.hudi.services.clean.executor.execute_clean_plan` it never
deletes a file again, and it refuses when another attempt took the clean over meanwhile.
"""

from __future__ import annotations

from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.model.avro import CleanMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.clean.executor import CleanExecution
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.commit import after_commit, commit_section
from lake_orchestration.hudi.table.heartbeat import Heartbeat


def commit_clean(
    table: HudiTable,
    execution: CleanExecution,
    *,
    config: CleanConfig | None = None,
    heartbeat: Heartbeat | None = None,
) -> CleanMetadata:
    """Write the completed ``<ts>.clean`` of an executed clean; returns its metadata.

    ``config`` (default: Hudi's): its ``lock`` is held while committing. ``heartbeat``: the attempt's heartbeat,
    still beating (from :func:`~lake_orchestration.hudi.services.clean.executor.execute_clean_plan_beating`); it is
    stopped here.

    The heartbeat of the clean must still hold the executing attempt's token: if another run judged the attempt
    dead and took the clean over, this one does not commit. The heartbeat is deleted after the commit; a failed
    commit keeps it (not beating), so the commit retried alone with the same execution is still this attempt's, as
    compaction's commit does. A clean that is committed already makes this a no-op (the timeline's metadata).

    Raises:
        InvalidInstantStateError: the clean is not inflight any more, or its heartbeat is another attempt's.
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    cfg = config or CleanConfig()
    instant = execution.instant
    # without the beating heartbeat: a handle on the attempt's heartbeat file, only checked and deleted here
    beat = heartbeat or Heartbeat(table.storage, instant, content=execution.attempt)
    try:
        with commit_section(table, operation=f"clean commit {instant}", lock=cfg.lock) as section:
            # one existence check of the completed file instead of a listing of .hoodie/ (object stores: a HEAD)
            completed = Instant(InstantTime(instant), Action.CLEAN, State.COMPLETED)
            done = completed if table.storage.exists(table.instant_path(completed)) else None
            if done is None:
                if beat.lost or not beat.is_ours():
                    raise InvalidInstantStateError(
                        table.base_uri,
                        instant,
                        "its heartbeat is no longer this process's (another run judged it dead and took the clean "
                        "over); not committed by this process",
                    )
                inflight = Instant(InstantTime(instant), Action.CLEAN, State.INFLIGHT)
                section.complete(inflight, execution.metadata.to_bytes())
    except BaseException:
        beat.stop(delete=False)  # kept: a retried commit of this execution is still this attempt's
        raise
    after_commit(instant, "deleting the heartbeat", lambda: beat.stop(delete=True))  # only if still this attempt's
    if done is not None:  # committed by an earlier try whose answer was lost: a no-op
        return table.read_model(done, CleanMetadata)
    return execution.metadata
