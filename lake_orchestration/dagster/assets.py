"""The assets of a table: ``hudi/<t>`` (the table and its health) and ``hudi/<t>/compaction`` (one partition per plan).

Materializing ``hudi/<t>`` records the table's :class:`~lake_orchestration.hudi.table.health.TableHealth` as typed
metadata (ints, and the latest commit and oldest pending plan as timestamps), so Dagster plots them over time, with
Dagster's standard table metadata (``dagster/row_count``, ``dagster/column_schema``, ``dagster/uri``). Every service
step that changes the table (schedule, compaction commit, clean, archive, rollback) and the sensors that see it change
record the same health figures as an ``AssetObservation`` of ``hudi/<t>`` (:func:`health_observation`), so the plots
and the checks stay fresh between materializations.

``hudi/<t>/compaction`` has one dynamic partition per compaction instant; materializing a partition runs the graph
``execute_plan`` -> ``commit`` on that plan (a failed commit is retried alone, from the write stats the first op
handed it), so a backfill over the partitions runs every pending plan, each exactly once (a committed plan is a
no-op). A partition whose instant has no plan on the timeline (rolled back, or never scheduled on this table) fails at
once, without retries (:class:`~lake_orchestration.dagster.errors.PermanentHudiError`); the
``<t>__sync_compaction_plans_sensor`` removes such partitions.
"""

from collections.abc import Callable
from typing import Any

import dagster as dg

from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import PermanentHudiError, hudi_step
from lake_orchestration.dagster.translator import DagsterHudiTranslator
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.model.properties import TimelineTimezone
from lake_orchestration.hudi.services.compaction import (
    CompactionResult,
    CompactionTotals,
    PlanRun,
)
from lake_orchestration.hudi.table.health import TableHealth, instant_datetime, table_health


def health_observation(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator, table: Any, *, source: str
) -> dg.AssetObservation:
    """The health of ``table`` (as last listed) as an observation of the table asset ``hudi/<t>``: the figures of
    :func:`health_metadata` (what the asset's plots show) and ``source``, the step or sensor that observed it."""
    health = table_health(table)
    return dg.AssetObservation(
        asset_key=translator.get_asset_key(cfg),
        metadata=health_metadata(health)
        | {"observed_by": dg.MetadataValue.text(source)}
        | {"dagster/uri": dg.MetadataValue.text(cfg.base_path)},
    )


def log_health(
    context: dg.OpExecutionContext, cfg: HudiTableConfig, translator: DagsterHudiTranslator, table: Any
) -> None:
    """Record the health of ``table`` as an observation of ``hudi/<t>`` after a service step (the table listed
    again first: the step changed it). A failure to measure is a warning, never the step's failure (the service's
    work is done). Nothing when the translator's ``observe_health`` is off (the fleet model: its tables have no
    asset of their own; the fleet health asset records them)."""
    if not translator.observe_health:
        return
    try:
        context.log_event(health_observation(cfg, translator, table.refresh(), source=context.op.name))
    except Exception as err:  # the health is a side record; the step's work is done
        context.log.warning(f"{cfg.name}: could not record the table's health: {type(err).__name__}: {err}")


def table_standard_metadata(cfg: HudiTableConfig, table: Any) -> dict[str, Any]:
    """Dagster's standard table metadata of ``table``: ``dagster/row_count`` (the snapshot's rows, logs merged: a
    full read of the latest file slices), ``dagster/column_schema`` (the latest writer schema, Hudi's meta fields
    left out) and ``dagster/uri`` (the base path)."""
    from lake_orchestration.hudi.model.schema import META_FIELDS
    from lake_orchestration.hudi.table.snapshot import read_snapshot, table_arrow_schema

    schema = table_arrow_schema(table)
    columns = (
        [dg.TableColumn(f.name, str(f.type)) for f in schema if f.name not in META_FIELDS] if schema is not None else []
    )
    rows = sum(t.num_rows for t in read_snapshot(table))
    return {
        "dagster/row_count": dg.MetadataValue.int(rows),
        "dagster/column_schema": dg.MetadataValue.table_schema(dg.TableSchema(columns=columns)),
        "dagster/uri": dg.MetadataValue.text(cfg.base_path),
    }


def health_metadata(health: TableHealth) -> dict[str, dg.MetadataValue]:
    """The table asset's metadata: every figure of ``health`` typed (``int``, ``text``, ``timestamp``)."""
    md: dict[str, dg.MetadataValue] = {}
    for k, v in health.to_json_obj().items():
        md[k] = dg.MetadataValue.int(v) if isinstance(v, int) else dg.MetadataValue.text(str(v))
    if health.latest_commit is not None:
        md["latest_commit_time"] = dg.MetadataValue.timestamp(health.instant_datetime(health.latest_commit))
    if health.oldest_pending_compaction is not None:
        md["oldest_pending_compaction"] = dg.MetadataValue.text(str(health.oldest_pending_compaction))
        md["oldest_pending_compaction_time"] = dg.MetadataValue.timestamp(
            health.instant_datetime(health.oldest_pending_compaction)
        )
    return md


def compaction_partitions(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator | None = None
) -> dg.DynamicPartitionsDefinition:
    """The dynamic partitions of ``hudi/<t>/compaction``: one per compaction instant."""
    return dg.DynamicPartitionsDefinition(name=(translator or DagsterHudiTranslator()).get_partitions_def_name(cfg))


def build_table_asset(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.AssetsDefinition:
    """``hudi/<t>``: the table; a materialization records its health."""

    def measure(table: Any) -> tuple[str, dict[str, dg.MetadataValue]]:
        health = table_health(table)
        return str(health.to_json_obj()), health_metadata(health) | table_standard_metadata(cfg, table)

    return build_health_asset(cfg, translator, kind="hudi", measure=measure)


def build_health_asset(
    cfg: HudiTableConfig,
    translator: DagsterHudiTranslator,
    *,
    kind: str,
    measure: Callable[[Any], tuple[str, dict[str, dg.MetadataValue]]],
) -> dg.AssetsDefinition:
    """The table asset of ``cfg`` (``kind``: ``hudi`` or ``paimon``): a materialization opens the table, logs
    ``<table>: <summary>`` and records the metadata, both from ``measure(table)``."""

    @dg.asset(
        key=translator.get_asset_key(cfg),
        group_name=translator.get_group_name(cfg),
        kinds={kind},
        description=f"{kind.capitalize()} table {cfg.name} at {cfg.base_path}",
        metadata={"base_path": cfg.base_path},
        deps=[dg.AssetKey.from_user_string(k) for k in cfg.upstream_assets],
        pool=translator.get_pool(cfg),
    )
    def _asset(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        with hudi_step(cfg) as step:
            summary, metadata = measure(step.open_table())
        context.log.info(f"{cfg.name}: {summary}")
        return dg.MaterializeResult(metadata=metadata)

    return _asset


def compaction_metadata(
    result: CompactionResult, *, timezone: TimelineTimezone | None = None
) -> dict[str, dg.MetadataValue]:
    """The metadata of one executed and committed plan (a ``CompactionResult``): that of :func:`execution_metadata`,
    the write stats of each operation as JSON and the plan's instant time as a timestamp (given the table's
    ``timezone``)."""
    return (
        execution_metadata(result)
        | {"write_stats": dg.MetadataValue.json(result.operations_json())}
        | (
            {"instant_time": dg.MetadataValue.timestamp(instant_datetime(InstantTime(str(result.instant)), timezone))}
            if timezone is not None
            else {}
        )
    )


ExecutedPlan = PlanRun
"""What the ``execute_plan`` op hands to the ``commit`` op of one compaction partition (pickled by the IO manager, so
a retried or re-executed commit op reads it without executing the plan again): the core's
:class:`~lake_orchestration.hudi.services.compaction.PlanRun` (an alias, kept for the old name)."""


def execution_metadata(execution: CompactionTotals) -> dict[str, dg.MetadataValue]:
    """The ``execute_plan`` op's output metadata (a ``CompactionExecution``; the totals of a ``CompactionResult``):
    counts as ints, seconds as a float."""
    return {
        "instant": dg.MetadataValue.text(str(execution.instant)),
        "operations": dg.MetadataValue.int(execution.operations),
        "rows_written": dg.MetadataValue.int(execution.rows_written),
        "bytes_written": dg.MetadataValue.int(execution.bytes_written),
        "log_records_merged": dg.MetadataValue.int(execution.log_records),
        "seconds": dg.MetadataValue.float(round(execution.seconds, 3)),
        "rolled_back_attempt": dg.MetadataValue.text(execution.rolled_back_attempt or ""),
    }


def no_pending_plan_error(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator, instant: str, timeline: list[str]
) -> PermanentHudiError:
    """The failure of a compaction partition whose instant has no pending plan (and no commit): nothing a retry can
    change, so the step fails at once; the message says how the partition goes away."""
    sync = translator.get_sensor_name(cfg, "sync_compaction_plans")
    return PermanentHudiError(
        f"No pending compaction plan {instant} on {cfg.name}: it was rolled back, or never scheduled on this table, "
        f"so there is nothing to run and a retry cannot help. {sync}"
        f" removes this partition of {translator.get_compaction_asset_key(cfg).to_user_string()} on its next tick (or "
        f"delete it: instance.delete_dynamic_partition({translator.get_partitions_def_name(cfg)!r}, {instant!r})).",
        table=cfg.name,
        table_uri=cfg.base_path,
        instant=instant,
        timeline=timeline,
        error="NoPendingCompactionPlan",
    )


def execute_plan_step(
    context: dg.OpExecutionContext, cfg: HudiTableConfig, translator: DagsterHudiTranslator, instant: str
) -> ExecutedPlan:
    """The compaction's ``execute_plan`` step on plan ``instant`` of ``cfg`` (one body for a table's op and the
    fleet's): claims the plan, writes the new base files; a committed plan is a no-op."""
    from lake_orchestration.dagster.plan_assets import COMPACTION, plan_execute_step

    return plan_execute_step(COMPACTION, context, cfg, translator, instant)


def commit_plan_step(
    context: dg.OpExecutionContext, cfg: HudiTableConfig, translator: DagsterHudiTranslator, executed: ExecutedPlan
) -> dg.Output[None]:
    """The compaction's ``commit`` step: writes only ``<instant>.commit`` from the executed plan's write stats."""
    from lake_orchestration.dagster.plan_assets import COMPACTION, plan_commit_step

    return plan_commit_step(COMPACTION, context, cfg, translator, executed)


def build_compaction_asset(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.AssetsDefinition:
    """``hudi/<t>/compaction``: materializing partition ``<instant>`` runs the graph ``execute_plan`` -> ``commit``.

    ``execute_plan`` (on the ``pyspark`` resource when the table's engine is ``spark``) claims the plan (requested
    -> inflight, rolling a crashed attempt back first) and writes the new base files; its output is the typed write
    stats. ``commit`` writes only ``<instant>.commit`` from them. Each op has the table's retry policy: a failed
    commit is retried alone (the plan is not executed again), and a committed plan makes both a no-op.
    """
    from lake_orchestration.dagster.plan_assets import COMPACTION, build_plan_asset

    return build_plan_asset(COMPACTION, cfg, translator)
