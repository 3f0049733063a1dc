"""Compaction as one call: execute-plan then commit in this process (:func:`execute_compaction`), and the offline
compactor over the pending plans (:func:`run_compaction`, Hudi's ``HoodieCompactor``).

The verbs the shells call on one plan, each a no-op on a plan already committed (:class:`PlanRun`, its
``already_committed``), so no shell checks it first: :func:`execute_compaction_plan` (execute only; Paimon's
``execute``) then :func:`commit_compaction_plan` (two steps, e.g. two Dagster ops), or :func:`run_compaction_plan`
(both in this process, the heartbeat kept until the commit): thin definitions over the services' one set of plan
verbs (:mod:`lake_orchestration.hudi.services.plans`), as are clustering's."""

from __future__ import annotations

import logging
from collections.abc import Callable

from lake_orchestration.engines.base import Engine
from lake_orchestration.errors import InstantInProgressError
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.services.compaction.committer import commit_execution
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.compaction.executor import execute_attempt, execute_plan
from lake_orchestration.hudi.services.compaction.planner import (
    is_compaction_committed,
    schedule_compaction,
    select_pending_plans,
)
from lake_orchestration.hudi.services.compaction.result import CompactionExecution, CompactionResult
from lake_orchestration.hudi.services.plans import (
    PlanRun,
    PlanService,
    commit_one_plan,
    execute_and_commit_here,
    execute_one_plan,
    run_one_plan,
)
from lake_orchestration.hudi.table.hudi_table import HudiTable

log = logging.getLogger(__name__)


def execute_compaction(
    table: HudiTable,
    instant: InstantTime | str,
    *,
    config: CompactionConfig | None = None,
    engine: Engine | None = None,
) -> CompactionResult:
    """Execute and commit the pending plan ``instant`` (rolling back a crashed inflight attempt first); a plan
    already committed raises (the shells' verb with a no-op for it: :func:`run_compaction_plan`).

    The plan's heartbeat (``.hoodie/.heartbeat/<instant>``, ``hoodie.client.heartbeat.*``) is kept from before the
    requested -> inflight transition until the commit; see :mod:`.attempt`. The two steps on their own:
    :func:`~.executor.execute_plan` and :func:`~.committer.commit_execution`.

    Raises:
        InstantInProgressError: another process is executing the plan (its heartbeat is fresh); nothing was done.
        InvalidInstantStateError: at commit time the plan was no longer this process's (nothing committed).
        CorruptLogBlockError: a log block the plan merges does not decode; raised before anything is written (the
            plan stays as it was, requested or inflight).
    """
    instant = InstantTime(instant, where=table.base_uri)
    return _execute_compaction(table, instant, cfg=config or CompactionConfig(), engine=engine, refresh=True)


def _execute_compaction(
    table: HudiTable, instant: InstantTime, *, cfg: CompactionConfig, engine: Engine | None, refresh: bool
) -> CompactionResult:
    """:func:`execute_compaction`; ``refresh=False`` when the caller has just listed the timeline."""
    return execute_and_commit_here(
        lambda: execute_attempt(table, instant, cfg=cfg, engine=engine, refresh=refresh),
        lambda execution, verify: commit_execution(table, execution, config=cfg, verify=verify),
    )


def run_compaction(
    table: HudiTable,
    *,
    instant_time: InstantTime | str | None = None,
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
            results.append(
                _execute_compaction(table, InstantTime(t, where=table.base_uri), cfg=cfg, engine=engine, refresh=n > 0)
            )
        except InstantInProgressError as err:
            # another process executes this plan: leave it to it (plans never share a file group)
            log.warning("Skipping compaction %s: %s", t, err.detail)
    return results


COMPACTION: PlanService[CompactionConfig, CompactionExecution, CompactionResult] = PlanService(
    name="compaction",
    log=log,
    is_committed=is_compaction_committed,
    pending_instants=lambda table: table.timeline.pending_compactions(),
    execute_plan=execute_plan,
    commit_execution=commit_execution,
    execute_and_commit=execute_compaction,
)
"""Compaction's part in the plan verbs (:mod:`lake_orchestration.hudi.services.plans`)."""


def execute_compaction_plan(
    table: HudiTable,
    instant: InstantTime | str,
    *,
    config: CompactionConfig | None = None,
    engine: Engine | None = None,
    make_engine: Callable[[], Engine] | None = None,
) -> PlanRun:
    """Execute-plan only (:func:`~.executor.execute_plan`), as Paimon's ``execute``: a plan already committed (on
    the timeline the table holds; the execution lists it again) is a no-op (``already_committed``), a plan another
    process executes is ``skipped``; else the :class:`PlanRun` holds the execution for
    :func:`commit_compaction_plan`. ``make_engine``: builds the engine when the plan is executed (so no Spark
    session starts for a no-op); else ``engine``.

    Raises:
        InstantNotFoundError: no pending plan ``instant`` and no commit of it.
        CorruptLogBlockError: as :func:`~.executor.execute_plan`.
    """
    return execute_one_plan(COMPACTION, table, instant, config=config, engine=engine, make_engine=make_engine)


def commit_compaction_plan(table: HudiTable, executed: PlanRun, *, config: CompactionConfig | None = None) -> PlanRun:
    """Commit the execution of :func:`execute_compaction_plan` (:func:`~.committer.commit_execution`); a no-op run
    (already committed, skipped) is returned as it is.

    Raises:
        As :func:`~.committer.commit_execution`.
    """
    return commit_one_plan(COMPACTION, table, executed, config=config)


def run_compaction_plan(
    table: HudiTable,
    instant: InstantTime | str,
    *,
    config: CompactionConfig | None = None,
    engine: Engine | None = None,
    make_engine: Callable[[], Engine] | None = None,
) -> PlanRun:
    """Execute and commit the plan ``instant`` in this process (:func:`execute_compaction`), a no-op on a plan
    already committed (``already_committed``) and on one another process executes (``skipped``). ``make_engine``:
    builds the engine when the plan is executed (so no Spark session starts for a no-op); else ``engine``.

    Raises:
        InstantNotFoundError: no pending plan ``instant`` and no commit of it.
        InvalidInstantStateError, CorruptLogBlockError: as :func:`execute_compaction`.
    """
    return run_one_plan(COMPACTION, table, instant, config=config, engine=engine, make_engine=make_engine)
