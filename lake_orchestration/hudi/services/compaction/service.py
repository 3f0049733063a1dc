"""Compaction as one call: execute-plan then commit in this process (:func:`execute_compaction`), and the offline
compactor over the pending plans (:func:`run_compaction`, Hudi's ``HoodieCompactor``)."""

from __future__ import annotations

import logging
import time

from lake_orchestration.engines.base import Engine
from lake_orchestration.errors import InstantInProgressError
from lake_orchestration.hudi.services.compaction.committer import commit_execution
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.compaction.executor import execute_attempt
from lake_orchestration.hudi.services.compaction.planner import schedule_compaction, select_pending_plans
from lake_orchestration.hudi.services.compaction.result import CompactionResult
from lake_orchestration.hudi.table.hudi_table import HudiTable

log = logging.getLogger(__name__)


def execute_compaction(
    table: HudiTable, instant: str, *, config: CompactionConfig | None = None, engine: Engine | None = None
) -> CompactionResult:
    """Execute and commit the pending plan ``instant`` (rolling back a crashed inflight attempt first).

    The plan's heartbeat (``.hoodie/.heartbeat/<instant>``, ``hoodie.client.heartbeat.*``) is kept from before the
    requested -> inflight transition until the commit; see :mod:`.attempt`. The two steps on their own:
    :func:`~.executor.execute_plan` and :func:`~.committer.commit_execution`.

    Raises:
        InstantInProgressError: another process is executing the plan (its heartbeat is fresh); nothing was done.
        InvalidInstantStateError: at commit time the plan was no longer this process's (nothing committed).
        CorruptLogBlockError: a log block the plan merges does not decode; raised before anything is written (the
            plan stays as it was, requested or inflight).
    """
    return _execute_compaction(table, instant, cfg=config or CompactionConfig(), engine=engine, refresh=True)


def _execute_compaction(
    table: HudiTable, instant: str, *, cfg: CompactionConfig, engine: Engine | None, refresh: bool
) -> CompactionResult:
    """:func:`execute_compaction`; ``refresh=False`` when the caller has just listed the timeline."""
    t0 = time.monotonic()
    execution, attempt = execute_attempt(table, instant, cfg=cfg, engine=engine, refresh=refresh)
    committed = False
    try:
        result = commit_execution(table, execution, config=cfg, verify=attempt.verify(list(execution.stats)))
        committed = True
    finally:
        attempt.heartbeat.stop(delete=committed)
    result.seconds = time.monotonic() - t0
    return result


def run_compaction(
    table: HudiTable,
    *,
    instant_time: str | None = None,
    seq: str = "FIFO",
    max_plans: int = 1,
    schedule: bool = False,
    config: CompactionConfig | None = None,
    engine: Engine | None = None,
) -> list[CompactionResult]:
    """Run pending compaction plans like Hudi's offline compactor (``HoodieCompactor``).

    Args:
        instant_time: run exactly this plan (``--instant-time``).
        seq: ``FIFO`` (oldest plan first) or ``LIFO`` (``--seq``); a plan another process is executing (fresh
            heartbeat) is skipped with a warning.
        max_plans: at most this many plans (``--max-plans``).
        schedule: schedule a plan first (``--schedule``; the trigger strategy still applies).
        engine: the engine running the operations (default: in this process, one after the other).
    """
    cfg = config or CompactionConfig()
    if seq.upper() not in ("FIFO", "LIFO"):
        raise ValueError(f"--seq {seq!r}: expected FIFO or LIFO")
    if schedule:
        schedule_compaction(table, config=cfg)
    if instant_time is not None:
        return [execute_compaction(table, instant_time, config=cfg, engine=engine)]
    pending = select_pending_plans(table, seq=seq)
    results: list[CompactionResult] = []
    for n, t in enumerate(pending):
        if len(results) >= max(0, max_plans):
            break
        try:
            # the first plan runs on the timeline just listed; later ones on a fresh listing
            results.append(_execute_compaction(table, t, cfg=cfg, engine=engine, refresh=n > 0))
        except InstantInProgressError as err:
            # another process executes this plan: leave it to it (plans never share a file group)
            log.warning("Skipping compaction %s: %s", t, err.detail)
    return results
