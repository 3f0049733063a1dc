"""Clustering as one call (:func:`execute_clustering`: execute-plan then commit in this process), the offline job
over pending plans (:func:`run_clustering`, Hudi's ``HoodieClusteringJob`` ``execute`` / ``scheduleAndExecute``), and
the verbs the shells call on one plan, each a no-op on a plan already committed (:class:`PlanRun`):
:func:`execute_clustering_plan` then :func:`commit_clustering_plan` (two steps, e.g. two Dagster ops), or
:func:`run_clustering_plan` (both here, the heartbeat kept until the commit)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from lake_orchestration.engines.base import Engine
from lake_orchestration.errors import InstantInProgressError, InstantNotFoundError
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.services.clustering.committer import commit_execution
from lake_orchestration.hudi.services.clustering.config import ClusteringConfig
from lake_orchestration.hudi.services.clustering.executor import execute_attempt, execute_plan
from lake_orchestration.hudi.services.clustering.planner import (
    is_clustering_committed,
    pending_clustering_plans,
    schedule_clustering,
    select_pending_plans,
)
from lake_orchestration.hudi.services.clustering.result import ClusteringExecution, ClusteringResult
from lake_orchestration.hudi.table.hudi_table import HudiTable

log = logging.getLogger(__name__)


def execute_clustering(
    table: HudiTable,
    instant: InstantTime | str,
    *,
    config: ClusteringConfig | None = None,
    engine: Engine | None = None,
) -> ClusteringResult:
    """Execute and commit the pending clustering plan ``instant`` (a crashed inflight attempt rolled back first);
    the heartbeat is kept from before the requested -> inflight transition until the commit.

    Raises:
        InstantNotFoundError: no pending plan ``instant`` (or committed already).
        InstantInProgressError: another process is executing the plan; nothing was done.
    """
    cfg = config or ClusteringConfig()
    t = InstantTime(instant, where=table.base_uri)
    t0 = time.monotonic()
    execution, attempt = execute_attempt(table, t, cfg=cfg, engine=engine)
    committed = False
    try:
        result = commit_execution(table, execution, config=cfg, verify=attempt.verify(list(execution.stats)))
        committed = True
    finally:
        attempt.heartbeat.stop(delete=committed)
    result.seconds = time.monotonic() - t0
    return result


def run_clustering(
    table: HudiTable,
    *,
    instant_time: InstantTime | str | None = None,
    schedule: bool = False,
    seq: str = "FIFO",
    max_plans: int = 1,
    config: ClusteringConfig | None = None,
    engine: Engine | None = None,
) -> list[ClusteringResult]:
    """Run pending clustering plans (``HoodieClusteringJob``): exactly ``instant_time``, or up to ``max_plans``
    pending ones in ``seq`` order (FIFO: oldest first); ``schedule``: schedule a plan first (``scheduleAndExecute``;
    nothing to cluster schedules nothing). A plan another process executes is skipped with a warning."""
    cfg = config or ClusteringConfig()
    if schedule:
        scheduled = schedule_clustering(table, config=cfg, force=True)
        if scheduled.instant is not None and instant_time is None:
            instant_time = scheduled.instant
    if instant_time is not None:
        return [execute_clustering(table, instant_time, config=cfg, engine=engine)]
    results: list[ClusteringResult] = []
    for t in select_pending_plans(table, seq=seq, max_plans=max_plans):
        try:
            results.append(execute_clustering(table, t, config=cfg, engine=engine))
        except InstantInProgressError as err:
            log.warning("Skipping clustering %s: %s", t, err.detail)
    return results


@dataclass(frozen=True, kw_only=True)
class PlanRun:
    """What a verb on one clustering plan did (plain values: it pickles). Exactly one of: ``execution`` (executed,
    to commit), ``result`` (committed here), ``already_committed`` (nothing done), ``skipped`` (another process
    executes it)."""

    instant: str
    execution: ClusteringExecution | None = None
    result: ClusteringResult | None = None
    already_committed: bool = False
    skipped: str = ""

    def to_json_obj(self) -> dict[str, Any]:
        if self.result is not None:
            return {**self.result.to_json_obj(), "already_committed": self.result.already_committed}
        if self.execution is not None:
            return {**self.execution.to_json_obj(), "committed": False}
        if self.already_committed:
            return {"instant": self.instant, "already_committed": True}
        return {"instant": self.instant, "skipped": self.skipped}


def _noop(table: HudiTable, instant: InstantTime) -> PlanRun | None:
    """The no-op of a plan already committed (on the timeline the table holds), or None.

    Raises:
        InstantNotFoundError: neither committed nor pending.
    """
    if is_clustering_committed(table, instant):
        log.info("Clustering %s of %s is already committed: nothing to do", instant, table.base_uri)
        return PlanRun(instant=str(instant), already_committed=True)
    if str(instant) not in {str(i.time) for i in pending_clustering_plans(table)}:
        raise InstantNotFoundError(table.base_uri, instant, "no pending clustering plan")
    return None


def _engine(engine: Engine | None, make_engine: Callable[[], Engine] | None) -> Engine | None:
    return make_engine() if make_engine is not None else engine


def execute_clustering_plan(
    table: HudiTable,
    instant: InstantTime | str,
    *,
    config: ClusteringConfig | None = None,
    engine: Engine | None = None,
    make_engine: Callable[[], Engine] | None = None,
) -> PlanRun:
    """Execute-plan only; a committed plan is a no-op, a plan another process executes is ``skipped``.
    ``make_engine``: builds the engine only when the plan is executed."""
    t = InstantTime(instant, where=f"{table.base_uri}: clustering instant")
    noop = _noop(table, t)
    if noop is not None:
        return noop
    try:
        return PlanRun(
            instant=str(t), execution=execute_plan(table, t, config=config, engine=_engine(engine, make_engine))
        )
    except InstantInProgressError as err:
        log.warning("Skipping clustering %s: %s", t, err.detail)
        return PlanRun(instant=str(t), skipped=err.detail)
    except InstantNotFoundError:
        if is_clustering_committed(table.refresh(), t):
            return PlanRun(instant=str(t), already_committed=True)
        raise


def commit_clustering_plan(table: HudiTable, executed: PlanRun, *, config: ClusteringConfig | None = None) -> PlanRun:
    """Commit the execution of :func:`execute_clustering_plan`; a no-op run is returned as it is."""
    if executed.execution is None:
        return executed
    return replace(executed, result=commit_execution(table, executed.execution, config=config))


def run_clustering_plan(
    table: HudiTable,
    instant: InstantTime | str,
    *,
    config: ClusteringConfig | None = None,
    engine: Engine | None = None,
    make_engine: Callable[[], Engine] | None = None,
) -> PlanRun:
    """Execute and commit the plan ``instant`` here (:func:`execute_clustering`), a no-op on a committed plan and on
    one another process executes (``skipped``)."""
    t = InstantTime(instant, where=f"{table.base_uri}: clustering instant")
    noop = _noop(table, t)
    if noop is not None:
        return noop
    try:
        result = execute_clustering(table, t, config=config, engine=_engine(engine, make_engine))
    except InstantInProgressError as err:
        log.warning("Skipping clustering %s: %s", t, err.detail)
        return PlanRun(instant=str(t), skipped=err.detail)
    except InstantNotFoundError:
        if is_clustering_committed(table.refresh(), t):
            return PlanRun(instant=str(t), already_committed=True)
        raise
    return PlanRun(instant=str(t), result=result)
