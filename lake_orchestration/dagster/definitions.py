"""``build_hudi_definitions``: per configured table, the assets, jobs, schedules, sensors and checks of its services.

Per table ``t`` (names from :class:`~lake_orchestration.dagster.translator.DagsterHudiTranslator`, overridable):

* ``hudi/t`` — the table; materializing it records its health (file groups, log files, pending instants) as typed
  metadata (:mod:`.assets`);
* ``hudi/t/compaction`` — one dynamic partition per compaction instant; materializing a partition executes that plan
  and commits it (write stats, rows, bytes, durations and the plan's operations as metadata), so a backfill over the
  partitions runs every pending plan, each exactly once (a committed plan is a no-op) (:mod:`.assets`);
* ``t__compaction``, ``t__schedule_compaction`` (with a schedule; a new plan becomes a partition at once),
  ``t__rollback``, ``t__clean`` and ``t__archive`` (with schedules) (:mod:`.jobs`);
* ``t__sync_compaction_plans_sensor`` (running by default) — keeps the partitions of ``hudi/t/compaction`` equal to
  the plans on the timeline (made by the CLI, Airflow or the schedule job, which registers its own at once) and
  launches nothing, so *Materialize -> Missing* is the backfill of the pending plans;
  ``t__pending_compaction_sensor`` (off by default) — adds a partition per newly requested plan and requests its run
  (run key = instant; FIFO/LIFO; a maximum per tick; a typed cursor of seen instants that fails loudly when
  unreadable);
  ``t__stale_inflight_sensor`` — requests the rollback of writes whose heartbeat expired (:mod:`.sensors`);
* with ``clustering_options: {hoodie.clustering.async.enabled: true, ...}`` (off by default, as in Hudi):
  ``hudi/t/clustering`` (one partition per clustering plan), ``t__clustering``, ``t__schedule_clustering`` (with a
  schedule on ``clustering_cron``), ``t__sync_clustering_plans_sensor`` (running) and
  ``t__pending_clustering_sensor`` (off), as compaction's (:mod:`.clustering`);
* asset checks on ``hudi/t``: oldest pending compaction age, log files per slice, active timeline length, small
  archive files — one ``multi_asset_check`` listing the table once (:mod:`.checks`).

A ``format: paimon`` table gets ``paimon/t``, ``paimon/t/compaction``, ``t__compaction`` with its schedule,
``t__new_snapshots_sensor`` and a stop-trigger check instead (:mod:`.paimon`).

Runs of one table's services share the concurrency pool ``hudi_<t>`` (set its limit to 1 in the instance:
``concurrency: pools: default_limit: 1`` in ``dagster.yaml``, as the demo instance has it). With every table on the
``local`` engine (the default) the steps run in the run worker's process (``in_process_executor``, also for the UI's
*Materialize* and backfills); a ``spark`` table's compaction and clean give the execute step its own process. Every
service step retries with the table's retry policy (``retry_max_retries``, exponential backoff from
``retry_delay_seconds``): each step resumes from the timeline, so a retry is safe; errors a retry cannot fix fail
the step at once (:mod:`.errors`). Tables are opened with their storage options
(:meth:`HudiTableConfig.open_table`), secrets read from the environment at run time.

The same definitions come from YAML through ``HudiTablesComponent`` (``lake_orchestration.dagster.component``).
"""

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from lake_orchestration.dagster.assets import build_compaction_asset, build_table_asset
from lake_orchestration.dagster.checks import build_table_checks
from lake_orchestration.dagster.clustering import build_clustering_definitions
from lake_orchestration.dagster.config import HudiConfigError, HudiTableConfig
from lake_orchestration.dagster.jobs import (
    build_archive_job,
    build_bootstrap_job,
    build_clean_job,
    build_compaction_job,
    build_rollback_job,
    build_schedule_compaction_job,
    build_schedules,
)
from lake_orchestration.dagster.paimon import build_paimon_table_definitions
from lake_orchestration.dagster.resources import build_spark_resource
from lake_orchestration.dagster.sensors import (
    build_pending_compaction_sensor,
    build_stale_inflight_sensor,
    build_sync_compaction_plans_sensor,
)
from lake_orchestration.dagster.translator import DagsterHudiTranslator, definitions_executor


def build_hudi_definitions(
    *,
    tables: Sequence[HudiTableConfig],
    spark_config: Mapping[str, Any] | None = None,
    translator: DagsterHudiTranslator | None = None,
) -> dg.Definitions:
    """Definitions for every configured table (see the module docstring), with a lazy ``pyspark`` resource.

    Args:
        tables: the tables (names must be unique).
        spark_config: ``spark.*`` configuration of the ``pyspark`` resource over the embedded default
            (``spark.master=local[*]``).
        translator: names of the assets, jobs, ops, schedules, sensors, pools and partitions (default:
            :class:`DagsterHudiTranslator`, the names above).

    Returns:
        The assets, checks, jobs, schedules, sensors and the ``pyspark`` resource of every table.

    Raises:
        HudiConfigError: two tables share a name, or a ``spark_config`` key is not a ``spark.*`` key.

    Example:
        >>> defs = build_hudi_definitions(tables=[HudiTableConfig(name="trips", base_path="/data/trips")])
        >>> {"trips__compaction", "trips__clean", "trips__archive"} <= {j.name for j in defs.jobs}
        True
    """
    names = [t.name for t in tables]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise HudiConfigError("tables", f"duplicate table names {dupes}: each table needs its own name")
    tr = translator or DagsterHudiTranslator()
    assets: list[Any] = []
    jobs: list[Any] = []
    schedules: list[Any] = []
    sensors: list[Any] = []
    checks: list[Any] = []
    for cfg in tables:
        if cfg.format == "paimon":
            paimon = build_paimon_table_definitions(cfg, tr)
            assets += paimon.assets
            jobs += paimon.jobs
            schedules += paimon.schedules
            sensors += paimon.sensors
            checks += paimon.checks
            continue
        assets += [build_table_asset(cfg, tr), build_compaction_asset(cfg, tr)]
        compaction = build_compaction_job(cfg, tr)
        schedule = build_schedule_compaction_job(cfg, tr)
        rollback = build_rollback_job(cfg, tr)
        clean, archive = build_clean_job(cfg, tr), build_archive_job(cfg, tr)
        jobs += [compaction, schedule, rollback, clean, archive]
        bootstrap = build_bootstrap_job(cfg, tr)  # only for a table with a bootstrap source
        if bootstrap is not None:
            jobs.append(bootstrap)
        schedules += build_schedules(cfg, tr, schedule_compaction=schedule, clean=clean, archive=archive)
        sensors += [
            build_sync_compaction_plans_sensor(cfg, tr),
            build_pending_compaction_sensor(cfg, tr, compaction),
            build_stale_inflight_sensor(cfg, tr, rollback),
        ]
        c_assets, c_jobs, c_schedules, c_sensors = build_clustering_definitions(cfg, tr)  # opt-in per table
        assets += c_assets
        jobs += c_jobs
        schedules += c_schedules
        sensors += c_sensors
        checks.append(build_table_checks(cfg, tr))
    return dg.Definitions(
        assets=assets,
        jobs=jobs,
        schedules=schedules,
        sensors=sensors,
        asset_checks=checks,
        resources={"pyspark": build_spark_resource(spark_config)},
        executor=definitions_executor(list(tables)),
    )
