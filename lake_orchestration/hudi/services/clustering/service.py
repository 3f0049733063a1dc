"""Clustering as one call (:func:`execute_clustering`: execute-plan then commit in this process), the offline job
over pending plans (:func:`run_clustering`, Hudi's ``HoodieClusteringJob`` ``execute`` / ``scheduleAndExecute``), and
the verbs the shells call on one plan, each a no-op on a plan already committed (:class:`PlanRun`):
:func:`execute_clustering_plan` then :func:`commit_clustering_plan` (two steps, e.g. two Dagster ops), or
:func:`run_clustering_plan` (both here, the heartbeat kept until the commit): thin definitions over the services'
one set of plan verbs (:mod:`lake_orchestration.hudi.services.plans`), as are compaction's."""

from __future__ import annotations

import logging
from collections.abc import Callable

from lake_orchestration.engines.base import Engine
from lake_orchestration.errors import InstantInProgressError
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
    return execute_and_commit_here(
        lambda: execute_attempt(table, t, cfg=cfg, engine=engine),
        lambda execution, verify: commit_execution(table, execution, config=cfg, verify=verify),
    )


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


CLUSTERING: PlanService[ClusteringConfig, ClusteringExecution, ClusteringResult] = PlanService(
    name="clustering",
    log=log,
    is_committed=is_clustering_committed,
    pending_instants=pending_clustering_plans,
    execute_plan=execute_plan,
    commit_execution=commit_execution,
    execute_and_commit=execute_clustering,
)
"""Clustering's part in the plan verbs (:mod:`lake_orchestration.hudi.services.plans`)."""


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
    return execute_one_plan(CLUSTERING, table, instant, config=config, engine=engine, make_engine=make_engine)


def commit_clustering_plan(table: HudiTable, executed: PlanRun, *, config: ClusteringConfig | None = None) -> PlanRun:
    """Commit the execution of :func:`execute_clustering_plan`; a no-op run is returned as it is."""
    return commit_one_plan(CLUSTERING, table, executed, config=config)


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
    return run_one_plan(CLUSTERING, table, instant, config=config, engine=engine, make_engine=make_engine)
