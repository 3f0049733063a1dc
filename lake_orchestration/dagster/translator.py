"""``DagsterHudiTranslator``: every Dagster-facing name of a table's definitions, in one overridable place.

As ``DagsterDbtTranslator`` and ``DagsterSlingTranslator`` do for their integrations: subclass it and override a
method to change asset keys, group names, pools, job, op, schedule, sensor or partitions-definition names, then
hand the instance to :func:`~lake_orchestration.dagster.build_hudi_definitions` (``translator=``). The defaults are
the names the definitions have always had, for a table ``t``:

========================  =============================================================
asset keys                ``hudi/t`` (the table), ``hudi/t/compaction`` (its plans), ``hudi/t/clustering``
                          (its clustering plans; a table with ``hoodie.clustering.async.enabled``)
group                     ``hudi``
pool                      ``hudi_t`` (one per table: set its limit to 1 in the instance)
partitions definitions    ``t__compaction_instants``, ``t__clustering_instants``
jobs                      ``t__compaction``, ``t__schedule_compaction``, ``t__clustering``,
                          ``t__schedule_clustering``, ``t__clean``, ``t__archive``,
                          ``t__rollback``, ``t__bootstrap`` (a table with ``bootstrap_options``)
ops                       ``t__<step>_op`` (``t__compaction_execute_plan_op``, ``t__compaction_commit_op``,
                          ``t__clean_plan_op`` ...)
schedules                 ``t__<job>_schedule``
sensors                   ``t__sync_compaction_plans_sensor``, ``t__pending_compaction_sensor``,
                          ``t__sync_clustering_plans_sensor``, ``t__pending_clustering_sensor``,
                          ``t__stale_inflight_sensor``
========================  =============================================================

A ``format: paimon`` table gets the same names under its format's prefix: asset keys ``paimon/t`` and
``paimon/t/compaction``, group ``paimon``, pool ``paimon_t``, tags ``paimon/table`` and ``paimon/service``; job
``t__compaction`` (schedule ``t__compaction_schedule``), ops ``t__compaction_execute_op`` and
``t__compaction_commit_op``, sensor ``t__new_snapshots_sensor``.
"""

from __future__ import annotations

from typing import Any, Literal

import dagster as dg

from lake_orchestration.dagster.config import HudiTableConfig

HudiJob = Literal[
    "compaction",
    "schedule_compaction",
    "clustering",
    "schedule_clustering",
    "clean",
    "archive",
    "rollback",
    "bootstrap",
    "ingest",
]
"""The jobs of a table (``bootstrap`` only for a table with a bootstrap source; ``ingest`` is the demo's)."""
HudiStep = Literal[
    "schedule_compaction",
    "compaction_execute_plan",
    "compaction_commit",
    "clean_plan",
    "clean_execute",
    "clean_commit",
    "archive",
    "merge_archive_files",
    "rollback",
    "bootstrap",
    "compaction_execute",
    "schedule_clustering",
    "clustering_execute_plan",
    "clustering_commit",
]
"""The ops of a table's services (``compaction_execute``: a Paimon table's plan + execute)."""
HudiSensor = Literal[
    "pending_compaction",
    "sync_compaction_plans",
    "pending_clustering",
    "sync_clustering_plans",
    "stale_inflight",
    "new_snapshots",
]
"""The sensors of a table (``new_snapshots``: a Paimon table's)."""


class DagsterHudiTranslator:
    """Names of a table's Dagster objects; override a method to rename (names must stay unique per table)."""

    observe_health: bool = True
    """Service steps record the table's health as an observation of its asset ``hudi/<t>`` (off in the fleet model,
    where tables have no asset of their own)."""

    def get_asset_key(self, table: HudiTableConfig) -> dg.AssetKey:
        """The table asset (default ``hudi/<name>``; ``paimon/<name>`` for a Paimon table)."""
        return dg.AssetKey([table.format, table.name])

    def get_compaction_asset_key(self, table: HudiTableConfig) -> dg.AssetKey:
        """The compaction asset, one partition per plan (default ``hudi/<name>/compaction``)."""
        return dg.AssetKey([*self.get_asset_key(table).path, "compaction"])

    def get_clustering_asset_key(self, table: HudiTableConfig) -> dg.AssetKey:
        """The clustering asset, one partition per plan (default ``hudi/<name>/clustering``)."""
        return dg.AssetKey([*self.get_asset_key(table).path, "clustering"])

    def get_clustering_partitions_def_name(self, table: HudiTableConfig) -> str:
        """The dynamic partitions definition of the clustering asset (default ``<name>__clustering_instants``)."""
        return f"{table.name}__clustering_instants"

    def get_group_name(self, table: HudiTableConfig) -> str:
        """The asset group of both assets (default ``hudi``; ``paimon`` for a Paimon table)."""
        return table.format

    def get_pool(self, table: HudiTableConfig) -> str:
        """The concurrency pool every service step of the table runs in (default ``hudi_<name>``;
        ``paimon_<name>`` for a Paimon table)."""
        return f"{table.format}_{table.name}"

    def get_partitions_def_name(self, table: HudiTableConfig) -> str:
        """The dynamic partitions definition of the compaction asset (default ``<name>__compaction_instants``)."""
        return f"{table.name}__compaction_instants"

    def get_job_name(self, table: HudiTableConfig, job: HudiJob) -> str:
        """A job (default ``<name>__<job>``)."""
        return f"{table.name}__{job}"

    def get_op_name(self, table: HudiTableConfig, step: HudiStep) -> str:
        """An op (default ``<name>__<step>_op``)."""
        return f"{table.name}__{step}_op"

    def get_schedule_name(self, table: HudiTableConfig, job: HudiJob) -> str:
        """The schedule of a job (default ``<job name>_schedule``)."""
        return f"{self.get_job_name(table, job)}_schedule"

    def get_sensor_name(self, table: HudiTableConfig, sensor: HudiSensor) -> str:
        """A sensor (default ``<name>__<sensor>_sensor``)."""
        return f"{table.name}__{sensor}_sensor"

    def get_tags(self, table: HudiTableConfig, service: str) -> dict[str, str]:
        """Tags of a service's ops and jobs (default ``hudi/table`` and ``hudi/service``; ``paimon/...`` for a Paimon
        table)."""
        return {f"{table.format}/table": table.name, f"{table.format}/service": service}


def table_op(
    table: HudiTableConfig,
    translator: DagsterHudiTranslator,
    step: HudiStep,
    service: str,
    *,
    spark: bool = False,
    **kwargs: Any,
) -> Any:
    """``dg.op`` of one step of a table's service: named by ``translator``, in the table's pool, with its retry
    policy and the service's tags; ``spark``: the step needs the ``pyspark`` resource when the table's engine is
    ``spark``. ``kwargs`` go to ``dg.op`` (``ins``, ``description`` ...)."""
    return dg.op(
        name=translator.get_op_name(table, step),
        pool=translator.get_pool(table),
        retry_policy=table.retry_policy(),
        tags=translator.get_tags(table, service),
        required_resource_keys={"pyspark"} if spark and table.engine == "spark" else set(),
        **kwargs,
    )


LIGHT_EXECUTOR = dg.in_process_executor
"""The executor of a job whose steps are all light (schedule-compaction, rollback, archive, bootstrap): they read
and write timeline files, so they run in the run worker's process, without a process per step."""


def service_executor(table: HudiTableConfig) -> dg.ExecutorDefinition | None:
    """The executor of a job with an execute step (compaction, clean): in-process for a ``local`` table (its plan,
    execute and commit steps share the run worker's process: no Python start-up per step); None for a ``spark``
    table, i.e. Dagster's default multiprocess executor, so the execute step has its own process and Spark driver
    while the light steps stay cheap."""
    return LIGHT_EXECUTOR if table.engine == "local" else None


def definitions_executor(tables: list[HudiTableConfig]) -> dg.ExecutorDefinition | None:
    """The executor of the definitions (what the UI's *Materialize* and backfills of ``hudi/<t>/compaction`` run
    with, in Dagster's implicit asset job): in-process when no table runs on Spark, else None (Dagster's default)."""
    return LIGHT_EXECUTOR if all(t.engine == "local" for t in tables) else None
