"""``build_hudi_definitions``: per configured table, the assets, jobs, schedules, sensors and checks of its services.

Per table ``t``:

* ``hudi/t`` — the table; materializing it records its health (file groups, log files, pending instants) as metadata;
* ``hudi/t/compaction`` — one dynamic partition per compaction instant; materializing a partition executes that plan
  and commits it (write stats, rows, bytes, durations and the plan's operations as metadata), so a backfill over the
  partitions runs every pending plan, each exactly once (a committed plan is a no-op);
* ``t__schedule_compaction`` — schedule-plan (Hudi's trigger strategy decides), with a schedule;
* ``t__pending_compaction_sensor`` — adds a partition per newly requested plan and requests its run (run key =
  instant; FIFO/LIFO; a maximum per tick; a cursor of seen instants that fails loudly when unreadable);
* asset checks on ``hudi/t``: oldest pending compaction age, log files per slice, active timeline length.

Runs of one table's services share the concurrency pool ``hudi_<t>`` (set its limit to 1 in the instance). Every
service step retries with the table's retry policy (``retry_max_retries``, exponential backoff from
``retry_delay_seconds``): each step resumes from the timeline, so a retry is safe. Tables are opened with their
storage options (:meth:`HudiTableConfig.open_table`), secrets read from the environment at run time.

The same definitions come from YAML through ``HudiTablesComponent`` (``lake_orchestration.dagster.component``).
"""

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg
import pendulum

from lake_orchestration.dagster.config import HudiConfigError, HudiTableConfig
from lake_orchestration.dagster.failures import fail_fast_on_permanent_errors
from lake_orchestration.dagster.maintenance import (
    archive_job,
    clean_job,
    maintenance_schedules,
    small_archive_files_check,
)
from lake_orchestration.dagster.resources import build_spark_resource
from lake_orchestration.errors import InstantInProgressError
from lake_orchestration.hudi.model.instant import Action, InstantTime
from lake_orchestration.hudi.services.compaction import (
    CompactionConfig,
    execute_compaction,
    schedule_compaction,
)
from lake_orchestration.hudi.table import HudiTable


def table_health(table: HudiTable) -> dict[str, Any]:
    """Health figures of a table, as plain values."""
    view = table.fs_view()
    tl = table.timeline
    latest = tl.latest_completed_commit_time()
    # what a snapshot read merges: under a pending compaction, the previous slice's logs still count
    slices = view.latest_merged_file_slices_before_or_on(str(latest)) if latest else []
    logs = [len(s.log_files) for s in slices]
    return {
        "table_type": table.config.table_type.value,
        "file_groups": len(slices),
        "log_files": sum(logs),
        "max_log_files_per_slice": max(logs, default=0),
        "pending_compactions": len(tl.pending_compactions()),
        "pending_instants": len(tl.pending()),
        "active_timeline_instants": len(tl),
        "latest_commit": str(tl.latest_completed_commit_time() or ""),
        "completed_deltacommits": len(tl.completed().with_actions(Action.DELTA_COMMIT)),
    }


def _table_key(cfg: HudiTableConfig) -> dg.AssetKey:
    return dg.AssetKey(["hudi", cfg.name])


def compaction_partitions(cfg: HudiTableConfig) -> dg.DynamicPartitionsDefinition:
    return dg.DynamicPartitionsDefinition(name=f"{cfg.name}__compaction_instants")


def _table_asset(cfg: HudiTableConfig) -> dg.AssetsDefinition:
    @dg.asset(
        key=_table_key(cfg),
        group_name="hudi",
        kinds={"hudi"},
        description=f"Hudi table {cfg.name} at {cfg.base_path}",
        metadata={"base_path": cfg.base_path},
        deps=[dg.AssetKey.from_user_string(k) for k in cfg.upstream_assets],
        pool=f"hudi_{cfg.name}",
    )
    def _asset(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        health = table_health(cfg.open_table())
        context.log.info(f"{cfg.name}: {health}")
        return dg.MaterializeResult(metadata=health)

    return _asset


def _compaction_asset(cfg: HudiTableConfig) -> dg.AssetsDefinition:
    parts = compaction_partitions(cfg)

    @dg.asset(
        key=dg.AssetKey(["hudi", cfg.name, "compaction"]),
        group_name="hudi",
        kinds={"hudi", "spark"} if cfg.engine == "spark" else {"hudi"},
        partitions_def=parts,
        deps=[_table_key(cfg)],
        description=f"Compaction plans of {cfg.name}: one partition per compaction instant",
        retry_policy=cfg.retry_policy(),
        pool=f"hudi_{cfg.name}",
        required_resource_keys={"pyspark"} if cfg.engine == "spark" else set(),
    )
    def _asset(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        instant = context.partition_key
        with fail_fast_on_permanent_errors():
            table = cfg.open_table()
            done = table.timeline.get(instant, Action.COMMIT)
            if done is not None and done.is_completed:
                context.log.info(f"Compaction {instant} of {cfg.name} is already committed: nothing to do")
                return dg.MaterializeResult(metadata={"instant": instant, "already_committed": True})
            spark = context.resources.pyspark.spark_session if cfg.engine == "spark" else None
            try:
                r = execute_compaction(
                    table, instant, config=CompactionConfig.from_options(cfg.service_options("compaction")), spark=spark
                )
            except InstantInProgressError as err:
                # another process (a second deployment, the CLI) executes this plan and will commit it
                context.log.warning(f"Skipping compaction {instant} of {cfg.name}: {err.detail}")
                return dg.MaterializeResult(metadata={"instant": instant, "skipped": err.detail})
        ops = [
            {
                "partition": s.partitionPath,
                "file_id": s.fileId,
                "rows": s.numWrites,
                "log_records": s.totalLogRecords,
                "log_files": s.totalLogFilesCompacted,
            }
            for s in r.stats
        ]
        return dg.MaterializeResult(
            metadata={
                "instant": instant,
                "operations": r.operations,
                "rows_written": r.rows_written,
                "bytes_written": r.bytes_written,
                "log_records_merged": r.log_records,
                "seconds": round(r.seconds, 3),
                "rolled_back_attempt": r.rolled_back_attempt or "",
                "write_stats": dg.MetadataValue.json(ops),
            }
        )

    return _asset


def _schedule_job(cfg: HudiTableConfig) -> dg.JobDefinition:
    @dg.op(name=f"{cfg.name}__schedule_compaction_op", pool=f"hudi_{cfg.name}", retry_policy=cfg.retry_policy())
    def schedule_op(context: dg.OpExecutionContext) -> None:
        with fail_fast_on_permanent_errors():
            r = schedule_compaction(
                cfg.open_table(), config=CompactionConfig.from_options(cfg.service_options("compaction"))
            )
        context.log.info(f"{cfg.name}: {r.reason}" + (f" ({r.instant})" if r.instant else ""))
        context.add_output_metadata({"scheduled": r.scheduled, "instant": str(r.instant or ""), "reason": r.reason})

    @dg.job(name=f"{cfg.name}__schedule_compaction")
    def job() -> None:
        schedule_op()

    return job


def _pending_sensor(cfg: HudiTableConfig, job: Any) -> dg.SensorDefinition:
    parts = compaction_partitions(cfg)

    @dg.sensor(name=f"{cfg.name}__pending_compaction_sensor", job=job, minimum_interval_seconds=30)
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        seen = _read_cursor(context.cursor, cfg.name)
        pending = [str(i.time) for i in cfg.open_table().timeline.pending_compactions()]
        new = [t for t in pending if t not in seen]
        if cfg.compaction_seq == "LIFO":
            new.reverse()
        batch = new[: cfg.max_plans_per_tick]
        if not batch:
            return dg.SensorResult(skip_reason=f"no new pending compaction plan on {cfg.name}")
        known = set(context.instance.get_dynamic_partitions(parts.name)) if context.instance else set()
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=t, partition_key=t, tags={"hudi/instant": t}) for t in batch],
            dynamic_partitions_requests=[parts.build_add_request([t for t in batch if t not in known])],
            cursor=json.dumps({"seen": sorted(seen | set(batch))}),
        )

    return _sensor


def _read_cursor(cursor: str | None, table: str) -> set[str]:
    if not cursor:
        return set()
    try:
        data = json.loads(cursor)
        seen = data["seen"]
        if not isinstance(seen, list):
            raise TypeError("'seen' is not a list")
        return {str(InstantTime(s)) for s in seen}
    except (ValueError, KeyError, TypeError) as err:
        # never restart silently: that would re-request every plan
        raise dg.Failure(
            f"Cannot decode the cursor of {table}__pending_compaction_sensor: {cursor[:200]!r} ({err}); expected "
            '{"seen": [instants]}. Reset the cursor explicitly in the UI if intended.'
        ) from err


class RollbackConfig(dg.Config):
    """Run config of ``<t>__rollback``: one instant, or every stale pending write."""

    instant_time: str | None = None
    """Roll back this pending write (or inflight compaction); default: every stale pending write."""
    dry_run: bool = False
    """Only log the plan."""


def _rollback_job(cfg: HudiTableConfig) -> dg.JobDefinition:
    @dg.op(name=f"{cfg.name}__rollback_op", pool=f"hudi_{cfg.name}", retry_policy=cfg.retry_policy())
    def rollback_op(context: dg.OpExecutionContext, config: RollbackConfig) -> None:
        from lake_orchestration.hudi.services.rollback.write import rollback_stale_writes, rollback_write

        with fail_fast_on_permanent_errors():
            table = cfg.open_table()
            options = cfg.service_options()  # hoodie.metadata.enable=false among them lets a metadata table go
            if config.instant_time:
                done = [
                    (
                        config.instant_time,
                        rollback_write(table, config.instant_time, dry_run=config.dry_run, options=options),
                    )
                ]
            else:
                done = [
                    (str(s.instant.time), r)
                    for s, r in rollback_stale_writes(
                        table,
                        interval_ms=cfg.heartbeat_interval_ms,
                        tolerable_misses=cfg.heartbeat_tolerable_misses,
                        timeout_s=cfg.inflight_timeout_seconds,
                        dry_run=config.dry_run,
                        options=options,
                    )
                ]
        for inst, r in done:
            context.log.info(f"{cfg.name}: rolled back {inst}: {r}")
        context.add_output_metadata({"rolled_back": [inst for inst, _ in done], "dry_run": config.dry_run})

    @dg.job(name=f"{cfg.name}__rollback")
    def job() -> None:
        rollback_op()

    return job


def _stale_sensor(cfg: HudiTableConfig, job: dg.JobDefinition) -> dg.SensorDefinition:
    @dg.sensor(name=f"{cfg.name}__stale_inflight_sensor", job=job, minimum_interval_seconds=60)
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        from lake_orchestration.hudi.services.rollback.write import stale_writes

        stale = stale_writes(
            cfg.open_table(),
            interval_ms=cfg.heartbeat_interval_ms,
            tolerable_misses=cfg.heartbeat_tolerable_misses,
            timeout_s=cfg.inflight_timeout_seconds,
        )
        if not stale:
            return dg.SensorResult(skip_reason=f"no stale inflight write on {cfg.name}")
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(
                    run_key=f"rollback-{s.instant.time}",
                    run_config={"ops": {f"{cfg.name}__rollback_op": {"config": {"instant_time": str(s.instant.time)}}}},
                    tags={"hudi/instant": str(s.instant.time), "hudi/reason": s.reason},
                )
                for s in stale
            ]
        )

    return _sensor


def _checks(cfg: HudiTableConfig) -> list[dg.AssetChecksDefinition]:
    key = _table_key(cfg)

    @dg.asset_check(asset=key, name="oldest_pending_compaction_age")
    def pending_age() -> dg.AssetCheckResult:
        tl = cfg.open_table().timeline
        pending = list(tl.pending_compactions())
        if not pending:
            return dg.AssetCheckResult(passed=True, metadata={"pending_plans": 0})
        oldest = pending[0].time
        age = time.time() - InstantTime(oldest).to_datetime(str(pendulum.local_timezone().name)).timestamp()
        return dg.AssetCheckResult(
            passed=age <= cfg.max_pending_plan_age_seconds,
            metadata={"pending_plans": len(pending), "oldest_instant": str(oldest), "age_seconds": int(age)},
        )

    @dg.asset_check(asset=key, name="log_files_per_slice")
    def log_files() -> dg.AssetCheckResult:
        h = table_health(cfg.open_table())
        return dg.AssetCheckResult(
            passed=h["max_log_files_per_slice"] <= cfg.max_log_files_per_slice,
            metadata={"max_log_files_per_slice": h["max_log_files_per_slice"], "limit": cfg.max_log_files_per_slice},
        )

    @dg.asset_check(asset=key, name="active_timeline_length")
    def timeline_length() -> dg.AssetCheckResult:
        n = len(cfg.open_table().timeline)
        return dg.AssetCheckResult(
            passed=n <= cfg.max_active_timeline_instants,
            metadata={"instants": n, "hoodie.keep.max.commits": cfg.max_active_timeline_instants},
        )

    return [pending_age, log_files, timeline_length]


def build_hudi_definitions(
    *, tables: Sequence[HudiTableConfig], spark_config: Mapping[str, Any] | None = None
) -> dg.Definitions:
    """Definitions for every configured table (see the module docstring), with a lazy ``pyspark`` resource.

    Args:
        tables: the tables (names must be unique).
        spark_config: ``spark.*`` configuration of the ``pyspark`` resource over the embedded default
            (``spark.master=local[*]``).

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
    assets: list[Any] = []
    jobs: list[Any] = []
    schedules: list[Any] = []
    sensors: list[Any] = []
    checks: list[Any] = []
    for cfg in tables:
        assets += [_table_asset(cfg), _compaction_asset(cfg)]
        compaction_job = dg.define_asset_job(
            f"{cfg.name}__compaction",
            selection=dg.AssetSelection.assets(dg.AssetKey(["hudi", cfg.name, "compaction"])),
        )
        sched_job = _schedule_job(cfg)
        jobs += [compaction_job, sched_job]
        schedules.append(
            dg.ScheduleDefinition(
                name=f"{cfg.name}__schedule_compaction_schedule", job=sched_job, cron_schedule=cfg.schedule_cron
            )
        )
        sensors.append(_pending_sensor(cfg, compaction_job))
        rb_job = _rollback_job(cfg)
        jobs.append(rb_job)
        sensors.append(_stale_sensor(cfg, rb_job))
        clean, archive = clean_job(cfg), archive_job(cfg)
        jobs += [clean, archive]
        schedules += maintenance_schedules(cfg, clean, archive)
        checks += [*_checks(cfg), small_archive_files_check(cfg, _table_key(cfg))]
    return dg.Definitions(
        assets=assets,
        jobs=jobs,
        schedules=schedules,
        sensors=sensors,
        asset_checks=checks,
        resources={"pyspark": build_spark_resource(spark_config)},
    )
