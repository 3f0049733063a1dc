"""The jobs and schedules of a table: schedule-compaction, compaction (the asset job), rollback, clean, archive.

* ``<t>__schedule_compaction`` — schedule-plan (Hudi's trigger strategy decides), with a schedule; a new plan is
  registered as a partition of ``hudi/<t>/compaction`` at once;
* ``<t>__compaction`` — materializes partitions of ``hudi/<t>/compaction`` (a backfill's runs, the pending-compaction
  sensor's runs);
* ``<t>__rollback`` — roll back one pending write, or every stale one (the stale-inflight sensor's runs);
* ``<t>__clean`` — finish pending cleans, then plan, execute and commit a new clean with the table's
  ``clean_options`` (``hoodie.cleaner.*``); deletes run on the ``pyspark`` resource when the table's engine is
  ``spark``;
* ``<t>__archive`` — archive (``hoodie.keep.min/max.commits`` ...) then merge small archive files
  (``hoodie.archive.merge.*``), as two ops, the merge after the archive.

Executors: the light jobs (schedule-compaction, rollback, archive, bootstrap) run their steps in the run worker's
process (Dagster's ``in_process_executor``); so do compaction and clean on a ``local`` table. On a ``spark`` table
those two keep Dagster's default multiprocess executor: the execute step gets its own process and Spark driver.

Clean and archive are destructive, so both run as a **dry run** unless the table says otherwise (``clean_dry_run`` /
``archive_dry_run``) or the run config sets ``dry_run: false``. Every step shares the table's pool and retry policy:
each step resumes from the timeline, so a retry is safe.
"""

from typing import Any

import dagster as dg

from lake_orchestration.dagster.assets import log_health
from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import hudi_step
from lake_orchestration.dagster.resources import table_engine
from lake_orchestration.dagster.translator import LIGHT_EXECUTOR, DagsterHudiTranslator, service_executor, table_op


class RollbackConfig(dg.Config):
    """Run config of ``<t>__rollback``: one instant, or every stale pending write."""

    instant_time: str | None = None
    """Roll back this pending write (or inflight compaction); default: every stale pending write."""
    dry_run: bool = False
    """Only log the plan."""


class MaintenanceRunConfig(dg.Config):
    """Run config of the clean and archive ops."""

    dry_run: bool | None = None
    """Only report what would be deleted/archived; default: the table's ``clean_dry_run`` / ``archive_dry_run``."""


def _dry(config: MaintenanceRunConfig, table_default: bool) -> bool:
    return table_default if config.dry_run is None else config.dry_run


# -- the bodies of the service steps: one implementation, called by a table's ops (``<t>__clean_plan_op`` ...) and by
# the fleet's shared ops (``fleet__clean_plan_op`` ..., :mod:`lake_orchestration.dagster.fleet`), which resolve the
# table of the run first. ``translator`` decides the names the bodies log and whether they observe ``hudi/<t>``.


def schedule_compaction_step(
    context: dg.OpExecutionContext,
    cfg: HudiTableConfig,
    translator: DagsterHudiTranslator,
    *,
    partitions_def: str,
    partition_key: Any,
    asset: str,
) -> None:
    """Schedule-plan on ``cfg`` (Hudi's trigger decides); a new plan ``i`` is registered at once as the partition
    ``partition_key(i)`` of ``partitions_def`` (of the asset ``asset``), then the table's health is observed."""
    from lake_orchestration.hudi.services.compaction import schedule_compaction

    with hudi_step(cfg) as step:
        table = step.open_table()
        r = schedule_compaction(table, config=cfg.compaction_config())
    context.log.info(f"{cfg.name}: {r.reason}" + (f" ({r.instant})" if r.instant else ""))
    key = partition_key(str(r.instant)) if r.instant is not None else ""
    if r.instant is not None:
        # after the plan file exists (the sync sensor reads the partitions before the timeline)
        context.instance.add_dynamic_partitions(partitions_def, [key])
        context.log.info(f"{cfg.name}: plan {r.instant} is the partition {key} of {asset}: backfill it to run it")
    context.add_output_metadata(
        {
            "table": cfg.name,
            "scheduled": r.scheduled,
            "instant": str(r.instant or ""),
            "reason": r.reason,
            "partition": f"{asset}[{key}]" if key else "",
        }
    )
    log_health(context, cfg, translator, table)


def rollback_step(
    context: dg.OpExecutionContext, cfg: HudiTableConfig, translator: DagsterHudiTranslator, config: RollbackConfig
) -> None:
    """Roll back ``config.instant_time`` on ``cfg``, or every stale pending write."""
    from lake_orchestration.hudi.services.rollback import rollback_instant, rollback_stale_writes

    with hudi_step(cfg, instant=config.instant_time) as step:
        table = step.open_table()
        # hoodie.metadata.enable=false among the options lets a metadata table go
        rollback = cfg.rollback_config()
        if config.instant_time:
            # the core routes it: a pending rollback is removed, any other pending write rolled back
            done = [
                (
                    config.instant_time,
                    rollback_instant(table, config.instant_time, dry_run=config.dry_run, config=rollback),
                )
            ]
        else:
            done = [
                (str(s.instant.time), r)
                for s, r in rollback_stale_writes(
                    table,  # judged by the heartbeat settings of ``rollback`` (hoodie.client.heartbeat.*)
                    timeout_s=cfg.inflight_timeout_seconds,
                    dry_run=config.dry_run,
                    config=rollback,
                )
            ]
    for inst, r in done:
        context.log.info(f"{cfg.name}: rolled back {inst}: {r}")
    context.add_output_metadata({"rolled_back": [inst for inst, _ in done], "dry_run": config.dry_run})
    if done and not config.dry_run:
        log_health(context, cfg, translator, table)


def clean_plan_step(context: dg.OpExecutionContext, cfg: HudiTableConfig, config: MaintenanceRunConfig) -> Any:
    """The clean's ``plan`` step (:func:`~lake_orchestration.hudi.services.clean.plan_cleans`): ``CleanPlans``."""
    from lake_orchestration.hudi.services.clean import plan_cleans

    dry = _dry(config, cfg.clean_dry_run)
    with hudi_step(cfg) as step:
        planned = plan_cleans(step.open_table(), cfg.clean_config(), dry_run=dry)
    context.add_output_metadata(
        {
            "table": cfg.name,
            "dry_run": dry,
            "instants": list(planned.instants),
            "files_planned": dg.MetadataValue.int(planned.file_count),
            "reason": planned.reason,
        }
    )
    return planned


def clean_execute_step(context: dg.OpExecutionContext, cfg: HudiTableConfig, planned: Any) -> Any:
    """The clean's ``execute`` step: deletes the planned files (``CleanExecutions``)."""
    from lake_orchestration.hudi.services.clean import CleanExecutions, execute_cleans

    if planned.dry_run or not planned.files_by_instant:
        return CleanExecutions(plans=planned)
    spark = context.resources.pyspark.spark_session if cfg.engine == "spark" else None
    with hudi_step(cfg) as step:
        executed = execute_cleans(
            step.open_table(),
            planned,
            engine=table_engine(cfg.engine, spark),
            config=cfg.clean_config(),
            on_instant=lambda i: setattr(step, "instant", i),
        )
    for instant in executed.skipped:
        context.log.warning(f"Skipping clean {instant} of {cfg.name}: another process is executing it")
    context.add_output_metadata(
        {
            "instants": [e.instant for e in executed.executions],
            "files_deleted": dg.MetadataValue.int(sum(e.metadata.total_files_deleted for e in executed.executions)),
            "skipped": list(executed.skipped),
        }
    )
    return executed


def clean_commit_step(
    context: dg.OpExecutionContext, cfg: HudiTableConfig, translator: DagsterHudiTranslator, executed: Any
) -> None:
    """The clean's ``commit`` step: the completed ``.clean`` of each clean, then abandoned temp files removed."""
    from lake_orchestration.hudi.services.clean import commit_cleans

    with hudi_step(cfg) as step:
        table = step.open_table()
        r = commit_cleans(table, executed, config=cfg.clean_config(), on_instant=lambda i: setattr(step, "instant", i))
    dry = r.dry_run
    context.log.info(
        f"{cfg.name}: clean {list(r.instants) or 'none'} {'would delete' if dry else 'deleted'} "
        f"{r.file_count if dry else r.deleted} file(s); {r.reason}"
    )
    context.add_output_metadata(
        {
            "table": cfg.name,
            "dry_run": dry,
            "instants": list(r.instants),
            "earliest_commit_to_retain": r.earliest_commit_to_retain or "",
            "policy": r.policy,
            "files_planned": dg.MetadataValue.int(r.file_count),
            "files_deleted": dg.MetadataValue.int(r.deleted),
            "files_failed": dg.MetadataValue.int(r.failed),
            "partitions": dg.MetadataValue.int(len(r.files)),
            "temp_files_removed": dg.MetadataValue.int(len(r.temp_files)),
            "reason": r.reason,
            "files": dg.MetadataValue.json({p: v[:50] for p, v in sorted(r.files.items())[:50]}),
        }
    )
    if not dry and (executed.executions or r.temp_files):
        log_health(context, cfg, translator, table)


def archive_step(context: dg.OpExecutionContext, cfg: HudiTableConfig, config: MaintenanceRunConfig) -> bool:
    """Archive (the merge is :func:`merge_archive_files_step`'s); returns whether it was a dry run."""
    from lake_orchestration.hudi.services.archive import run_archive

    dry = _dry(config, cfg.archive_dry_run)
    with hudi_step(cfg) as step:
        table = step.open_table()
        res = run_archive(table, cfg.archive_config(table.config.raw, merge_enable=False), dry_run=dry)
    context.log.info(
        f"{cfg.name}: {'would archive' if dry else 'archived'} {len(res.archived_instants)} instant(s)"
        + (f" into {res.archive_file}" if res.archive_file else "")
    )
    context.add_output_metadata(
        {
            "table": cfg.name,
            "dry_run": dry,
            "archived_instants": dg.MetadataValue.int(len(res.archived_instants)),
            "first_archived": str(res.archived_instants[0].time) if res.archived_instants else "",
            "last_archived": str(res.archived_instants[-1].time) if res.archived_instants else "",
            "archive_file": res.archive_file or "",
            "timeline_files_deleted": dg.MetadataValue.int(len(res.deleted_files)),
            "repaired_files": dg.MetadataValue.int(len(res.repaired_files)),
            "keep_min_max": f"{res.min_instants_to_keep}/{res.max_instants_to_keep}",
        }
    )
    return dry


def merge_archive_files_step(
    context: dg.OpExecutionContext, cfg: HudiTableConfig, translator: DagsterHudiTranslator, dry: bool
) -> None:
    """Merge small archive files (``hoodie.archive.merge.*``)."""
    from lake_orchestration.hudi.services.archive import merge_archive_files

    with hudi_step(cfg) as step:
        table = step.open_table()
        m = merge_archive_files(table, cfg.archive_config(table.config.raw), dry_run=dry)
    context.log.info(
        f"{cfg.name}: merge of small archive files: "
        + (f"{len(m.candidates)} file(s) into {m.merged_file}" if m.merged_file else "nothing to merge")
        + (f" (recovered a crashed merge: {m.recovered})" if m.recovered else "")
    )
    context.add_output_metadata(
        {
            "dry_run": dry,
            "candidates": dg.MetadataValue.int(len(m.candidates)),
            "merged_file": m.merged_file or "",
            "recovered": m.recovered or "",
        }
    )
    if not dry:
        log_health(context, cfg, translator, table)


def build_compaction_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> Any:
    """``<t>__compaction``: the asset job of ``hudi/<t>/compaction`` (one run per partition, i.e. per plan)."""
    from lake_orchestration.dagster.plan_assets import COMPACTION, build_plan_job

    return build_plan_job(COMPACTION, cfg, translator)


def build_schedule_compaction_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.JobDefinition:
    """``<t>__schedule_compaction``: schedule-plan; a new plan is registered at once as a partition of
    ``hudi/<t>/compaction`` (so *Materialize -> Missing* offers it) and the table's health is observed."""
    from lake_orchestration.dagster.plan_assets import COMPACTION, build_schedule_plan_job

    return build_schedule_plan_job(COMPACTION, cfg, translator)


def build_rollback_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.JobDefinition:
    """``<t>__rollback``: roll back ``instant_time``, or every stale pending write."""

    @table_op(cfg, translator, "rollback", "rollback")
    def rollback_op(context: dg.OpExecutionContext, config: RollbackConfig) -> None:
        rollback_step(context, cfg, translator, config)

    @dg.job(
        name=translator.get_job_name(cfg, "rollback"),
        executor_def=LIGHT_EXECUTOR,
        description=f"Roll back one pending write of {cfg.name} (run config instant_time), or every stale one",
    )
    def job() -> None:
        rollback_op()

    return job


class BootstrapRunConfig(dg.Config):
    """Run config of ``<t>__bootstrap``."""

    dry_run: bool = False
    """Only log the per-partition plan."""


def build_bootstrap_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.JobDefinition | None:
    """``<t>__bootstrap``: bootstrap the table from the parquet dataset its ``bootstrap_options`` name, once (None
    for a table without a bootstrap source). The core decides (:func:`~lake_orchestration.hudi.services.bootstrap.
    prepare_bootstrap` with ``retry_failed``): a table that already has commits (but a resumable METADATA_ONLY
    half) fails the run without retries, as does every refusal of the plan; a bootstrap that failed earlier (its
    pending ``00000000000001``) is rolled back first, so a retry starts over. Runs in-process (the skeleton files
    only read key columns)."""
    from lake_orchestration.errors import PlanError, TableNotFoundError
    from lake_orchestration.hudi.model.instant import METADATA_BOOTSTRAP_INSTANT
    from lake_orchestration.hudi.services.bootstrap import BootstrapResult, execute_bootstrap, prepare_bootstrap

    bootstrap_config = cfg.bootstrap_config()
    if bootstrap_config is None:
        return None

    @table_op(cfg, translator, "bootstrap", "bootstrap")
    def bootstrap_op(context: dg.OpExecutionContext, config: BootstrapRunConfig) -> None:
        with hudi_step(cfg, instant=METADATA_BOOTSTRAP_INSTANT) as step:
            try:
                prepared = prepare_bootstrap(
                    cfg.base_path,
                    bootstrap_config,
                    storage_options=cfg.storage_options(),
                    dry_run=config.dry_run,
                    retry_failed=True,
                    rollback_config=cfg.rollback_config(),
                )
            except PlanError as err:  # decided before anything was written: a retry cannot change it
                try:
                    step.open_table()
                except TableNotFoundError:
                    pass
                raise step.error(err, permanent=True) from err
            for rb in prepared.rolled_back:
                context.log.warning(f"{cfg.name}: rolled back a failed bootstrap ({rb})")
            if config.dry_run:
                result = BootstrapResult(plan=prepared.plan, dry_run=True)
            else:
                result = execute_bootstrap(
                    cfg.base_path, prepared, bootstrap_config, storage_options=cfg.storage_options()
                )
        for p in result.plan.partitions:
            context.log.info(f"{cfg.name}: {p.partition_path or '(top level)'} {p.mode.value} ({len(p.files)} files)")
        context.add_output_metadata(
            {
                "dry_run": result.dry_run,
                "partitions": len(result.plan.partitions),
                "metadata_only_instant": result.metadata_only_instant or "",
                "full_record_instant": result.full_record_instant or "",
                "skeleton_files": result.skeleton_files,
                "full_record_rows": result.full_record_rows,
            }
        )

    @dg.job(
        name=translator.get_job_name(cfg, "bootstrap"),
        executor_def=LIGHT_EXECUTOR,
        tags=translator.get_tags(cfg, "bootstrap"),
        description=f"Bootstrap {cfg.name} from its parquet source, once (an empty table only)",
    )
    def job() -> None:
        bootstrap_op()

    return job


def build_clean_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.JobDefinition:
    """``<t>__clean``: ``plan`` -> ``execute`` -> ``commit``, the core's clean verbs one per op.

    ``plan`` (:func:`~lake_orchestration.hudi.services.clean.plan_cleans`) resumes the pending cleans (a failed clean
    is finished, not undone) or, when there is none, schedules a new one (``.clean.requested``) if Hudi's trigger
    fires; ``execute`` deletes the planned files (on the ``pyspark`` resource when the table's engine is ``spark``)
    and leaves each clean inflight; ``commit`` writes the completed ``.clean`` of each, then removes abandoned temp
    files. A dry run plans without writing and deletes nothing.
    """
    from lake_orchestration.hudi.services.clean import CleanExecutions, CleanPlans

    @table_op(cfg, translator, "clean_plan", "clean")
    def plan_op(context: dg.OpExecutionContext, config: MaintenanceRunConfig) -> CleanPlans:
        return clean_plan_step(context, cfg, config)

    @table_op(cfg, translator, "clean_execute", "clean", spark=True)
    def execute_op(context: dg.OpExecutionContext, planned: CleanPlans) -> CleanExecutions:
        return clean_execute_step(context, cfg, planned)

    @table_op(cfg, translator, "clean_commit", "clean")
    def commit_op(context: dg.OpExecutionContext, executed: CleanExecutions) -> None:
        clean_commit_step(context, cfg, translator, executed)

    @dg.job(
        name=translator.get_job_name(cfg, "clean"),
        executor_def=service_executor(cfg),
        tags={"hudi/table": cfg.name},
        description=f"Clean table {cfg.name}: plan, execute (delete), commit",
    )
    def job() -> None:
        commit_op(execute_op(plan_op()))

    return job


def build_archive_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.JobDefinition:
    """``<t>__archive``: archive, then merge small archive files."""

    @table_op(cfg, translator, "archive", "archive")
    def archive_op(context: dg.OpExecutionContext, config: MaintenanceRunConfig) -> bool:
        return archive_step(context, cfg, config)

    @table_op(cfg, translator, "merge_archive_files", "archive")
    def merge_op(context: dg.OpExecutionContext, dry: bool) -> None:
        merge_archive_files_step(context, cfg, translator, dry)

    @dg.job(
        name=translator.get_job_name(cfg, "archive"),
        executor_def=LIGHT_EXECUTOR,
        tags={"hudi/table": cfg.name},
        description=f"Archive table {cfg.name}",
    )
    def job() -> None:
        merge_op(archive_op())

    return job


def build_schedules(
    cfg: HudiTableConfig,
    translator: DagsterHudiTranslator,
    *,
    schedule_compaction: dg.JobDefinition,
    clean: dg.JobDefinition,
    archive: dg.JobDefinition,
) -> list[Any]:
    """The schedules of schedule-compaction, clean and archive (a table may switch clean or archive off with
    ``None``)."""
    out: list[Any] = [
        dg.ScheduleDefinition(
            name=translator.get_schedule_name(cfg, "schedule_compaction"),
            job=schedule_compaction,
            cron_schedule=cfg.schedule_cron,
            description=f"Runs {schedule_compaction.name} ({cfg.schedule_cron}): a new plan becomes a partition",
        )
    ]
    if cfg.clean_cron:
        out.append(
            dg.ScheduleDefinition(
                name=translator.get_schedule_name(cfg, "clean"),
                job=clean,
                cron_schedule=cfg.clean_cron,
                description=f"Runs {clean.name} ({cfg.clean_cron}; dry run unless the table says otherwise)",
            )
        )
    if cfg.archive_cron:
        out.append(
            dg.ScheduleDefinition(
                name=translator.get_schedule_name(cfg, "archive"),
                job=archive,
                cron_schedule=cfg.archive_cron,
                description=f"Runs {archive.name} ({cfg.archive_cron}; dry run unless the table says otherwise)",
            )
        )
    return out
