"""The Dagster shell of a table service that runs plans (plan -> execute -> commit), the same for every such service
(compaction, clustering): one factory each for its per-plan partitioned asset ``hudi/<t>/<service>`` (the graph
``execute_plan`` -> ``commit``), its asset job ``<t>__<service>``, its schedule-plan job
``<t>__schedule_<service>``, its ``<t>__sync_<service>_plans_sensor`` and its ``<t>__pending_<service>_sensor``,
over a :class:`PlanShell` per service (:data:`COMPACTION` here; clustering's in :mod:`.clustering`). The services'
own builders (:func:`~.assets.build_compaction_asset`, :func:`~.clustering.build_clustering_asset` ...) are thin
definitions over these, so asset keys, job, sensor and op names (the step keys) stay what they were (they import
this module when called: it builds on the step bodies those modules define)."""

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import dagster as dg

from lake_orchestration.dagster.assets import (
    compaction_metadata,
    compaction_partitions,
    execution_metadata,
    health_observation,
    log_health,
    no_pending_plan_error,
)
from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import PermanentHudiError, hudi_step
from lake_orchestration.dagster.jobs import schedule_compaction_step
from lake_orchestration.dagster.progress import progress_in_run_log
from lake_orchestration.dagster.resources import table_engine
from lake_orchestration.dagster.sensors import PendingCompactionCursor
from lake_orchestration.dagster.translator import (
    LIGHT_EXECUTOR,
    DagsterHudiTranslator,
    HudiStep,
    service_executor,
    table_op,
)
from lake_orchestration.hudi.services.compaction import (
    commit_compaction_plan,
    execute_compaction_plan,
    is_compaction_committed,
    select_pending_plans,
)
from lake_orchestration.hudi.services.plans import PlanRun
from lake_orchestration.hudi.table.hudi_table import HudiTable

ScheduleStep = Callable[..., None]
"""``(context, cfg, translator, *, partitions_def, partition_key, asset)``: schedule a plan, register it."""


@dataclass(frozen=True, kw_only=True)
class PlanShell:
    """What the Dagster factories need of one plan-running service (its names and words in descriptions included,
    so every definition keeps its name and text)."""

    service: str
    """``compaction``, ``clustering``: in op, job and sensor names, tags and descriptions."""
    asset_key: Callable[[DagsterHudiTranslator, HudiTableConfig], dg.AssetKey]
    """The per-plan asset's key (``hudi/<t>/<service>``)."""
    partitions: Callable[[HudiTableConfig, DagsterHudiTranslator], dg.DynamicPartitionsDefinition]
    """The asset's dynamic partitions: one per plan instant."""
    execute_plan: Callable[..., PlanRun]
    """The core's execute-plan verb: ``(table, instant, *, config, engine) -> PlanRun`` (a no-op when committed)."""
    commit_plan: Callable[..., PlanRun]
    """The core's commit verb: ``(table, executed, *, config) -> PlanRun``."""
    config: Callable[[HudiTableConfig], Any]
    """The service's config of a table (``cfg.compaction_config()``)."""
    no_pending_plan_error: Callable[[HudiTableConfig, DagsterHudiTranslator, str, list[str]], PermanentHudiError]
    """The failure of a partition whose instant has no pending plan and no commit (a retry cannot help)."""
    execution_metadata: Callable[[Any], dict[str, dg.MetadataValue]]
    """The ``execute_plan`` op's output metadata of an execution."""
    result_metadata: Callable[..., dict[str, dg.MetadataValue]]
    """The ``commit`` op's metadata of a committed plan: ``(result, *, timezone)``."""
    schedule_step: ScheduleStep
    """The body of the schedule-plan op."""
    writes: str
    """What execute-plan writes, in the op's description (``the new base files``)."""
    completed: str
    """The completed instant the commit writes, in the op's description (``<instant>.commit``)."""
    asset_description: str
    """The asset's description after ``<Service> plans of <t>: `` (``one partition per compaction instant``)."""
    trigger: str
    """What decides whether a plan is scheduled, in the schedule job's description."""
    pending_plans: Callable[[HudiTable], list[str]]
    """The pending plan instants the sync sensor lists (the table just opened)."""
    is_committed: Callable[[HudiTable, str], bool]
    """Whether a plan instant is committed on the timeline the table holds."""
    select_new_plans: Callable[[HudiTable, HudiTableConfig, set[str]], list[str]]
    """The pending sensor's batch: the pending plans in the table's order, ``exclude`` left out, at most
    ``max_plans_per_tick``."""
    made_by: str
    """Who makes plans, in the sync sensor's description (``CLI, Airflow, the schedule job``)."""
    run_hint: str
    """After ``Materialize -> Missing on <asset>`` in the sync sensor's description (`` (a backfill)`` or empty)."""
    pending_words: str
    """The sync sensor's skip reason: ``<n> <pending_words> on <t>, all registered`` (``pending plan(s)``)."""


def plan_execute_step(
    shell: PlanShell,
    context: dg.OpExecutionContext,
    cfg: HudiTableConfig,
    translator: DagsterHudiTranslator,
    instant: str,
) -> PlanRun:
    """The ``execute_plan`` step on plan ``instant`` of ``cfg`` (one body for a table's op and the fleet's): claims
    the plan, writes the new files; a committed plan is the core's no-op, a plan another process (a second
    deployment, the CLI) executes is skipped: it will commit it."""
    from lake_orchestration.errors import InstantNotFoundError

    with hudi_step(cfg, instant=instant) as step:
        table = step.open_table()
        spark = context.resources.pyspark.spark_session if cfg.engine == "spark" else None
        try:
            with progress_in_run_log(context, spark):
                executed = shell.execute_plan(
                    table, instant, config=shell.config(cfg), engine=table_engine(cfg.engine, spark)
                )
        except InstantNotFoundError as err:
            raise shell.no_pending_plan_error(cfg, translator, instant, step.timeline_excerpt()) from err
    if executed.already_committed:
        context.log.info(f"{shell.service.capitalize()} {instant} of {cfg.name} is already committed: nothing to do")
    elif executed.skipped:
        context.log.warning(f"Skipping {shell.service} {instant} of {cfg.name}: {executed.skipped}")
    else:
        assert executed.execution is not None
        context.add_output_metadata(shell.execution_metadata(executed.execution))
    return executed


def plan_commit_step(
    shell: PlanShell,
    context: dg.OpExecutionContext,
    cfg: HudiTableConfig,
    translator: DagsterHudiTranslator,
    executed: PlanRun,
) -> dg.Output[None]:
    """The ``commit`` step: writes only the completed instant from the executed plan's write stats."""
    instant = executed.instant
    if executed.execution is None:  # the core's no-op: committed before, or another process's
        md: dict[str, Any] = {"table": cfg.name, "instant": instant}
        md.update({"already_committed": True} if executed.already_committed else {"skipped": executed.skipped})
        return dg.Output(None, metadata=md)
    with hudi_step(cfg, instant=instant) as step:
        table = step.open_table()
        result = shell.commit_plan(table, executed, config=shell.config(cfg)).result
    assert result is not None
    if result.already_committed:
        context.log.info(f"{shell.service.capitalize()} {instant} of {cfg.name} was committed already: nothing written")
    log_health(context, cfg, translator, table)
    return dg.Output(
        None,
        metadata={"table": dg.MetadataValue.text(cfg.name)}
        | shell.result_metadata(result, timezone=table.config.timeline_timezone),
    )


def build_plan_asset(shell: PlanShell, cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.AssetsDefinition:
    """``hudi/<t>/<service>``: materializing partition ``<instant>`` runs the graph ``execute_plan`` -> ``commit``
    (each op with the table's retry policy: a failed commit is retried alone, from the execute op's output)."""
    service = shell.service

    @table_op(
        cfg,
        translator,
        cast(HudiStep, f"{service}_execute_plan"),
        service,
        spark=True,
        ins={"table": dg.In(dg.Nothing)},
        description=f"Execute-plan: write {shell.writes} of a {service} plan of {cfg.name}",
    )
    def execute_plan_op(context: dg.OpExecutionContext) -> PlanRun:
        return plan_execute_step(shell, context, cfg, translator, context.partition_key)

    @table_op(
        cfg,
        translator,
        cast(HudiStep, f"{service}_commit"),
        service,
        description=f"Commit: write {shell.completed} of an executed {service} plan of {cfg.name}",
    )
    def commit_op(context: dg.OpExecutionContext, executed: PlanRun) -> dg.Output[None]:
        return plan_commit_step(shell, context, cfg, translator, executed)

    @dg.graph_asset(
        key=shell.asset_key(translator, cfg),
        group_name=translator.get_group_name(cfg),
        kinds={"hudi", "spark"} if cfg.engine == "spark" else {"hudi"},
        partitions_def=shell.partitions(cfg, translator),
        ins={"table": dg.AssetIn(key=translator.get_asset_key(cfg), dagster_type=dg.Nothing)},
        description=f"{service.capitalize()} plans of {cfg.name}: {shell.asset_description}",
    )
    def _asset(table: None) -> Any:
        return commit_op(execute_plan_op(table))

    return _asset


def build_plan_job(shell: PlanShell, cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> Any:
    """``<t>__<service>``: the asset job of ``hudi/<t>/<service>`` (one run per partition, i.e. per plan)."""
    key = shell.asset_key(translator, cfg)
    return dg.define_asset_job(
        translator.get_job_name(cfg, shell.service),
        selection=dg.AssetSelection.assets(key),
        executor_def=service_executor(cfg),
        description=(
            f"Run one {shell.service} plan of {cfg.name}: materializes a partition (a plan instant) of "
            f"{key.to_user_string()}, execute-plan then commit"
        ),
    )


def build_schedule_plan_job(
    shell: PlanShell, cfg: HudiTableConfig, translator: DagsterHudiTranslator
) -> dg.JobDefinition:
    """``<t>__schedule_<service>``: schedule-plan; a new plan is registered at once as a partition of
    ``hudi/<t>/<service>`` (so *Materialize -> Missing* offers it) and the table's health is observed."""
    service = shell.service
    parts = shell.partitions(cfg, translator)
    asset = shell.asset_key(translator, cfg).to_user_string()

    @table_op(
        cfg,
        translator,
        cast(HudiStep, f"schedule_{service}"),
        service,
        description=f"Schedule a {service} plan of {cfg.name} if Hudi's trigger fires; register it as a partition",
    )
    def schedule_op(context: dg.OpExecutionContext) -> None:
        shell.schedule_step(context, cfg, translator, partitions_def=parts.name, partition_key=str, asset=asset)

    @dg.job(
        name=translator.get_job_name(cfg, f"schedule_{service}"),
        executor_def=LIGHT_EXECUTOR,
        description=(
            f"Schedule a {service} plan of {cfg.name} ({shell.trigger} decides) and register it as a "
            f"partition of {asset}"
        ),
    )
    def job() -> None:
        schedule_op()

    return job


def build_pending_plans_sensor(
    shell: PlanShell, cfg: HudiTableConfig, translator: DagsterHudiTranslator, job: Any
) -> dg.SensorDefinition:
    """``<t>__pending_<service>_sensor``: a partition and a run per newly requested plan (run key = instant;
    ``compaction_seq`` order; at most ``max_plans_per_tick`` per tick). Its cursor is a
    :class:`~.sensors.PendingCompactionCursor` of the instants requested."""
    service = shell.service
    parts = shell.partitions(cfg, translator)
    name = translator.get_sensor_name(cfg, f"pending_{service}")

    @dg.sensor(
        name=name,
        job=job,
        minimum_interval_seconds=30,
        description=(
            f"Runs every new pending {service} plan of {cfg.name} at once ({cfg.compaction_seq}, at most "
            f"{cfg.max_plans_per_tick} per tick): adds its partition of "
            f"{shell.asset_key(translator, cfg).to_user_string()} and requests a run keyed by the instant. "
            f"Off by default: turn it on for automatic {service}, or backfill the partitions from the UI."
        ),
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        cursor = PendingCompactionCursor.from_json(context.cursor, table=cfg.name, sensor=name)
        with hudi_step(cfg) as step:
            table = step.open_table()
            batch = shell.select_new_plans(table, cfg, {str(t) for t in cursor.seen})
            observed = [health_observation(cfg, translator, table, source=name)] if batch else []
        if not batch:
            return dg.SensorResult(skip_reason=f"no new pending {service} plan on {cfg.name}")
        known = set(context.instance.get_dynamic_partitions(parts.name)) if context.instance else set()
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=t, partition_key=t, tags={"hudi/instant": t}) for t in batch],
            dynamic_partitions_requests=[parts.build_add_request([t for t in batch if t not in known])],
            cursor=cursor.with_requested(batch).to_json(),
            asset_events=observed,
        )

    return _sensor


def build_sync_plans_sensor(
    shell: PlanShell, cfg: HudiTableConfig, translator: DagsterHudiTranslator
) -> dg.SensorDefinition:
    """``<t>__sync_<service>_plans_sensor``: the partitions of ``hudi/<t>/<service>`` follow the timeline's plans.

    Each tick adds a partition per pending plan not yet registered and removes the partitions whose instant is
    neither pending nor committed on the active timeline (rolled back, or archived), then launches nothing. Its
    cursor is the pending plans it saw last (JSON list); when they change it records the table's health as an
    observation of ``hudi/<t>``. The registered partitions are read before the timeline is listed, so a plan the
    schedule job writes (then registers) between the two is never removed.
    """
    service = shell.service
    parts = shell.partitions(cfg, translator)
    name = translator.get_sensor_name(cfg, f"sync_{service}_plans")
    asset = shell.asset_key(translator, cfg).to_user_string()

    @dg.sensor(
        name=name,
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=(
            f"Keeps the partitions of {asset} equal to the {service} plans on {cfg.name}'s timeline, whoever made "
            f"them ({shell.made_by}): adds pending plans, removes rolled-back ones. Launches nothing: "
            f"run the plans with Materialize -> Missing on {asset}{shell.run_hint} or the pending-{service} sensor."
        ),
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        try:
            last = set(json.loads(context.cursor)) if context.cursor else None
        except ValueError:
            last = None  # only decides whether to observe the health: a bad cursor costs one observation
        known = set(context.instance.get_dynamic_partitions(parts.name))  # before the listing (see above)
        with hudi_step(cfg) as step:
            table = step.open_table()
            pending = shell.pending_plans(table)
            gone = sorted(k for k in known if k not in pending and not shell.is_committed(table, k))
            add = [t for t in pending if t not in known]
            changed = last is None or last != set(pending)
            observed = [health_observation(cfg, translator, table, source=name)] if changed else []
        requests: list[Any] = []
        if add:
            requests.append(parts.build_add_request(add))
        if gone:
            requests.append(parts.build_delete_request(gone))
        if not requests and not observed:
            return dg.SensorResult(skip_reason=f"{len(pending)} {shell.pending_words} on {cfg.name}, all registered")
        return dg.SensorResult(
            dynamic_partitions_requests=requests, asset_events=observed, cursor=json.dumps(sorted(pending))
        )

    return _sensor


COMPACTION = PlanShell(
    service="compaction",
    asset_key=lambda translator, cfg: translator.get_compaction_asset_key(cfg),
    partitions=compaction_partitions,
    execute_plan=execute_compaction_plan,
    commit_plan=commit_compaction_plan,
    config=lambda cfg: cfg.compaction_config(),
    no_pending_plan_error=no_pending_plan_error,
    execution_metadata=execution_metadata,
    result_metadata=compaction_metadata,
    schedule_step=schedule_compaction_step,
    writes="the new base files",
    completed="<instant>.commit",
    asset_description="one partition per compaction instant",
    trigger="Hudi's trigger strategy",
    pending_plans=lambda table: [str(i.time) for i in table.timeline.pending_compactions()],
    is_committed=is_compaction_committed,
    select_new_plans=lambda table, cfg, exclude: select_pending_plans(
        table, seq=cfg.compaction_seq, max_plans=cfg.max_plans_per_tick, exclude=exclude, refresh=False
    ),
    made_by="CLI, Airflow, the schedule job",
    run_hint=" (a backfill)",
    pending_words="pending plan(s)",
)
"""Compaction's Dagster shell (:func:`~.assets.build_compaction_asset`, :func:`~.jobs.build_compaction_job` ...)."""
