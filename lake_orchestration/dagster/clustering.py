"""Clustering of a table (issue 29): ``hudi/<t>/clustering`` (one partition per clustering plan), its jobs, schedule
and sensors, as compaction's (:mod:`.assets`, :mod:`.jobs`, :mod:`.sensors`). Only a table whose
``clustering_options`` set ``hoodie.clustering.async.enabled: true`` gets them (Hudi's switch of the async clustering
service; off by default, as in Hudi).

* ``hudi/<t>/clustering`` — one dynamic partition per clustering instant (``<instant>.replacecommit.requested``
  holding a clustering plan); materializing a partition runs the graph ``execute_plan`` -> ``commit``: the first op
  claims the plan and writes the new file groups (sorted by ``hoodie.clustering.plan.strategy.sort.columns`` in the
  ``hoodie.layout.optimize.strategy`` order), the second writes only ``<instant>.replacecommit``. A committed plan
  makes both a no-op; a partition whose instant has no plan fails at once, without retries;
* ``<t>__schedule_clustering`` — schedule-plan (Hudi's async trigger: ``hoodie.clustering.async.max.commits`` commits
  since the last clustering) with a schedule (``clustering_cron``); a new plan is registered as a partition at once;
* ``<t>__clustering`` — the asset job (a backfill's runs, the pending-clustering sensor's runs);
* ``<t>__sync_clustering_plans_sensor`` (running by default) — keeps the partitions equal to the pending clustering
  plans on the timeline (made by the CLI, Airflow, Java's ``run_clustering``), removes those neither pending nor
  committed; launches nothing;
* ``<t>__pending_clustering_sensor`` (off by default) — adds a partition per newly requested plan and requests its
  run (run key = instant; ``compaction_seq`` order; at most ``max_plans_per_tick`` per tick; the cursor is a
  :class:`~lake_orchestration.dagster.sensors.PendingCompactionCursor` of the instants requested).

The asset, both jobs and both sensors are :mod:`.plan_assets`' factories over :data:`CLUSTERING`, as compaction's.
"""

from typing import Any

import dagster as dg

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.dagster.assets import log_health
from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import PermanentHudiError, hudi_step
from lake_orchestration.dagster.plan_assets import (
    PlanShell,
    build_pending_plans_sensor,
    build_plan_asset,
    build_plan_job,
    build_schedule_plan_job,
    build_sync_plans_sensor,
    plan_commit_step,
    plan_execute_step,
)
from lake_orchestration.dagster.progress import progress_in_run_log
from lake_orchestration.dagster.resources import table_engine
from lake_orchestration.dagster.translator import DagsterHudiTranslator
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.model.properties import TimelineTimezone
from lake_orchestration.hudi.services.clustering import (
    ClusteringResult,
    PlanRun,
    commit_clustering_plan,
    execute_clustering_plan,
    is_clustering_committed,
    pending_clustering_plans,
    schedule_clustering,
    select_pending_plans,
)
from lake_orchestration.hudi.services.clustering.result import ClusteringExecution
from lake_orchestration.hudi.table.health import instant_datetime


def clustering_partitions(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator | None = None
) -> dg.DynamicPartitionsDefinition:
    """The dynamic partitions of ``hudi/<t>/clustering``: one per clustering instant."""
    return dg.DynamicPartitionsDefinition(
        name=(translator or DagsterHudiTranslator()).get_clustering_partitions_def_name(cfg)
    )


def clustering_execution_metadata(execution: ClusteringExecution | ClusteringResult) -> dict[str, dg.MetadataValue]:
    """The ``execute_plan`` op's output metadata (and the totals of a committed plan): counts as ints."""
    return {
        "instant": dg.MetadataValue.text(str(execution.instant)),
        "groups": dg.MetadataValue.int(execution.groups),
        "file_groups_replaced": dg.MetadataValue.int(execution.file_groups_replaced),
        "files_written": dg.MetadataValue.int(execution.files_written),
        "rows_written": dg.MetadataValue.int(execution.rows_written),
        "bytes_written": dg.MetadataValue.int(execution.bytes_written),
        "seconds": dg.MetadataValue.float(round(execution.seconds, 3)),
        "rolled_back_attempt": dg.MetadataValue.text(execution.rolled_back_attempt or ""),
    }


def clustering_metadata(
    result: ClusteringResult, *, timezone: TimelineTimezone | None = None
) -> dict[str, dg.MetadataValue]:
    """The metadata of one committed plan: :func:`clustering_execution_metadata`, the replaced file ids per
    partition (``partitionToReplaceFileIds``) and the instant as a timestamp (given the table's ``timezone``)."""
    from lake_orchestration.hudi.services.clustering.result import replaced_file_ids

    md = clustering_execution_metadata(result) | {
        "partition_to_replace_file_ids": dg.MetadataValue.json(replaced_file_ids(result.plan))
    }
    if timezone is not None:
        md["instant_time"] = dg.MetadataValue.timestamp(instant_datetime(InstantTime(str(result.instant)), timezone))
    return md


def _no_pending_plan_error(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator, instant: str, timeline: list[str]
) -> PermanentHudiError:
    sync = translator.get_sensor_name(cfg, "sync_clustering_plans")
    return PermanentHudiError(
        f"No pending clustering plan {instant} on {cfg.name}: it was rolled back, or never scheduled on this table, "
        f"so there is nothing to run and a retry cannot help. {sync} removes this partition of "
        f"{translator.get_clustering_asset_key(cfg).to_user_string()} on its next tick (or delete it: "
        f"instance.delete_dynamic_partition({translator.get_clustering_partitions_def_name(cfg)!r}, {instant!r})).",
        table=cfg.name,
        table_uri=cfg.base_path,
        instant=instant,
        timeline=timeline,
        error="NoPendingClusteringPlan",
    )


def clustering_execute_step(
    context: dg.OpExecutionContext, cfg: HudiTableConfig, translator: DagsterHudiTranslator, instant: str
) -> PlanRun:
    """Clustering's ``execute_plan`` step on plan ``instant``: claims the plan, writes the new file groups; a
    committed plan is a no-op, a plan another process executes is skipped."""
    return plan_execute_step(CLUSTERING, context, cfg, translator, instant)


def clustering_commit_step(
    context: dg.OpExecutionContext, cfg: HudiTableConfig, translator: DagsterHudiTranslator, executed: PlanRun
) -> dg.Output[None]:
    """Clustering's ``commit`` step: writes only ``<instant>.replacecommit`` from the executed plan's write stats."""
    return plan_commit_step(CLUSTERING, context, cfg, translator, executed)


def schedule_clustering_step(
    context: dg.OpExecutionContext,
    cfg: HudiTableConfig,
    translator: DagsterHudiTranslator,
    *,
    partitions_def: str,
    partition_key: Any,
    asset: str,
) -> None:
    """Schedule a clustering plan on ``cfg`` (Hudi's trigger decides); a new plan ``i`` is registered at once as
    the partition ``partition_key(i)`` of ``partitions_def`` (of ``asset``), then the table's health is observed."""
    with hudi_step(cfg) as step:
        table = step.open_table()
        r = schedule_clustering(table, config=cfg.clustering_config())
    context.log.info(f"{cfg.name}: {r.reason}" + (f" ({r.instant})" if r.instant else ""))
    key = partition_key(str(r.instant)) if r.instant is not None else ""
    if r.instant is not None:
        context.instance.add_dynamic_partitions(partitions_def, [key])  # after the plan file exists
        context.log.info(f"{cfg.name}: plan {r.instant} is the partition {key} of {asset}: backfill it to run it")
    context.add_output_metadata(
        {
            "table": cfg.name,
            "scheduled": r.scheduled,
            "instant": str(r.instant or ""),
            "reason": r.reason,
            "groups": dg.MetadataValue.int(r.groups),
            "file_groups": dg.MetadataValue.int(r.file_groups),
            "partition": f"{asset}[{key}]" if key else "",
        }
    )
    log_health(context, cfg, translator, table)


def clustering_run_step(
    context: dg.OpExecutionContext, cfg: HudiTableConfig, translator: DagsterHudiTranslator
) -> None:
    """Schedule a clustering plan on ``cfg`` (Hudi's trigger decides), then execute and commit its pending plans
    (FIFO, at most ``max_plans_per_tick``), each a no-op when committed and skipped when another process executes
    it: the fleet model's ``fleet__clustering`` run (``lake-orch clustering run --schedule`` on one table)."""
    from lake_orchestration.hudi.services.clustering import run_clustering_plan

    with hudi_step(cfg) as step:
        table = step.open_table()
        ccfg = cfg.clustering_config()
        scheduled = schedule_clustering(table, config=ccfg)
        context.log.info(f"{cfg.name}: {scheduled.reason}" + (f" ({scheduled.instant})" if scheduled.instant else ""))
        plans = select_pending_plans(table, seq=cfg.compaction_seq, max_plans=cfg.max_plans_per_tick)
        spark = context.resources.pyspark.spark_session if cfg.engine == "spark" else None
        runs = []
        for instant in plans:
            step.instant = instant
            with progress_in_run_log(context, spark):
                runs.append(
                    run_clustering_plan(
                        table, instant, config=ccfg, make_engine=lambda: table_engine(cfg.engine, spark)
                    )
                )
    committed = [r for r in runs if r.result is not None]
    for r in runs:
        if r.skipped:
            context.log.warning(f"Skipping clustering {r.instant} of {cfg.name}: {r.skipped}")
    context.add_output_metadata(
        {
            "table": cfg.name,
            "scheduled": str(scheduled.instant or ""),
            "reason": scheduled.reason,
            "committed": [r.instant for r in committed],
            "rows_written": dg.MetadataValue.int(sum(r.result.rows_written for r in committed if r.result)),
            "file_groups_replaced": dg.MetadataValue.int(
                sum(r.result.file_groups_replaced for r in committed if r.result)
            ),
        }
    )
    if committed:
        log_health(context, cfg, translator, table)


CLUSTERING = PlanShell(
    service="clustering",
    asset_key=lambda translator, cfg: translator.get_clustering_asset_key(cfg),
    partitions=clustering_partitions,
    execute_plan=execute_clustering_plan,
    commit_plan=commit_clustering_plan,
    config=lambda cfg: cfg.clustering_config(),
    no_pending_plan_error=_no_pending_plan_error,
    execution_metadata=clustering_execution_metadata,
    result_metadata=clustering_metadata,
    schedule_step=schedule_clustering_step,
    writes="the new file groups",
    completed="<instant>.replacecommit",
    asset_description="one partition per clustering instant (replacecommit)",
    trigger=HoodieKey.CLUSTERING_ASYNC_MAX_COMMITS.key,
    pending_plans=lambda table: [str(i.time) for i in pending_clustering_plans(table.refresh())],
    is_committed=is_clustering_committed,
    select_new_plans=lambda table, cfg, exclude: select_pending_plans(
        table, seq=cfg.compaction_seq, max_plans=cfg.max_plans_per_tick, exclude=exclude
    ),
    made_by="CLI, Airflow, Java, the schedule job",
    run_hint="",
    pending_words="pending clustering plan(s)",
)
"""Clustering's Dagster shell (:mod:`.plan_assets`): the same factories as compaction's."""


def build_clustering_asset(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.AssetsDefinition:
    """``hudi/<t>/clustering``: materializing partition ``<instant>`` runs ``execute_plan`` -> ``commit``."""
    return build_plan_asset(CLUSTERING, cfg, translator)


def build_clustering_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> Any:
    """``<t>__clustering``: the asset job of ``hudi/<t>/clustering`` (one run per partition, i.e. per plan)."""
    return build_plan_job(CLUSTERING, cfg, translator)


def build_schedule_clustering_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.JobDefinition:
    """``<t>__schedule_clustering``: schedule-plan; a new plan is registered at once as a partition."""
    return build_schedule_plan_job(CLUSTERING, cfg, translator)


def build_clustering_schedule(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator, job: dg.JobDefinition
) -> dg.ScheduleDefinition:
    """``<t>__schedule_clustering_schedule``: runs the schedule-clustering job on ``clustering_cron``."""
    return dg.ScheduleDefinition(
        name=translator.get_schedule_name(cfg, "schedule_clustering"),
        job=job,
        cron_schedule=cfg.clustering_cron,
        description=f"Runs {job.name} ({cfg.clustering_cron}): a new clustering plan becomes a partition",
    )


def build_pending_clustering_sensor(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator, job: Any
) -> dg.SensorDefinition:
    """``<t>__pending_clustering_sensor``: a partition and a run per newly requested clustering plan."""
    return build_pending_plans_sensor(CLUSTERING, cfg, translator, job)


def build_sync_clustering_plans_sensor(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.SensorDefinition:
    """``<t>__sync_clustering_plans_sensor``: the partitions of ``hudi/<t>/clustering`` follow the timeline's
    clustering plans (added when pending, removed when neither pending nor committed); launches nothing. The
    registered partitions are read before the timeline is listed (a plan the schedule job writes, then registers,
    in between is never removed)."""
    return build_sync_plans_sensor(CLUSTERING, cfg, translator)


def build_clustering_definitions(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator
) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """The clustering asset, jobs, schedule and sensors of ``cfg`` (all empty unless ``clustering_enabled``):
    ``(assets, jobs, schedules, sensors)``."""
    if not cfg.clustering_enabled:
        return [], [], [], []
    job = build_clustering_job(cfg, translator)
    schedule_job = build_schedule_clustering_job(cfg, translator)
    return (
        [build_clustering_asset(cfg, translator)],
        [job, schedule_job],
        [build_clustering_schedule(cfg, translator, schedule_job)],
        [build_sync_clustering_plans_sensor(cfg, translator), build_pending_clustering_sensor(cfg, translator, job)],
    )
