"""The jobs and schedules of a table: schedule-compaction, compaction (the asset job), rollback, clean, archive.

* ``<t>__schedule_compaction`` — schedule-plan (Hudi's trigger strategy decides), with a schedule;
* ``<t>__compaction`` — materializes partitions of ``hudi/<t>/compaction`` (the pending-compaction sensor's runs);
* ``<t>__rollback`` — roll back one pending write, or every stale one (the stale-inflight sensor's runs);
* ``<t>__clean`` — finish pending cleans, then plan, execute and commit a new clean with the table's
  ``clean_options`` (``hoodie.cleaner.*``); deletes run on the ``pyspark`` resource when the table's engine is
  ``spark``;
* ``<t>__archive`` — archive (``hoodie.keep.min/max.commits`` ...) then merge small archive files
  (``hoodie.archive.merge.*``), as two ops, the merge after the archive.

Clean and archive are destructive, so both run as a **dry run** unless the table says otherwise (``clean_dry_run`` /
``archive_dry_run``) or the run config sets ``dry_run: false``. Every step shares the table's pool and retry policy:
each step resumes from the timeline, so a retry is safe.
"""

from typing import Any

import dagster as dg

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import hudi_step
from lake_orchestration.dagster.resources import spark_engine
from lake_orchestration.dagster.translator import DagsterHudiTranslator


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


def build_compaction_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> Any:
    """``<t>__compaction``: the asset job of ``hudi/<t>/compaction`` (one run per partition, i.e. per plan)."""
    return dg.define_asset_job(
        translator.get_job_name(cfg, "compaction"),
        selection=dg.AssetSelection.assets(translator.get_compaction_asset_key(cfg)),
    )


def build_schedule_compaction_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.JobDefinition:
    """``<t>__schedule_compaction``: schedule-plan."""
    from lake_orchestration.hudi.services.compaction import CompactionConfig, schedule_compaction

    @dg.op(
        name=translator.get_op_name(cfg, "schedule_compaction"),
        pool=translator.get_pool(cfg),
        retry_policy=cfg.retry_policy(),
        tags=translator.get_tags(cfg, "compaction"),
    )
    def schedule_op(context: dg.OpExecutionContext) -> None:
        with hudi_step(cfg) as step:
            r = schedule_compaction(
                step.open_table(), config=CompactionConfig.from_options(cfg.service_options("compaction"))
            )
        context.log.info(f"{cfg.name}: {r.reason}" + (f" ({r.instant})" if r.instant else ""))
        context.add_output_metadata({"scheduled": r.scheduled, "instant": str(r.instant or ""), "reason": r.reason})

    @dg.job(name=translator.get_job_name(cfg, "schedule_compaction"))
    def job() -> None:
        schedule_op()

    return job


def build_rollback_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.JobDefinition:
    """``<t>__rollback``: roll back ``instant_time``, or every stale pending write."""
    from lake_orchestration.hudi.services.rollback import rollback_stale_writes, rollback_write

    @dg.op(
        name=translator.get_op_name(cfg, "rollback"),
        pool=translator.get_pool(cfg),
        retry_policy=cfg.retry_policy(),
        tags=translator.get_tags(cfg, "rollback"),
    )
    def rollback_op(context: dg.OpExecutionContext, config: RollbackConfig) -> None:
        with hudi_step(cfg, instant=config.instant_time) as step:
            table = step.open_table()
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

    @dg.job(name=translator.get_job_name(cfg, "rollback"))
    def job() -> None:
        rollback_op()

    return job


def build_clean_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.JobDefinition:
    """``<t>__clean``."""

    @dg.op(
        name=translator.get_op_name(cfg, "clean"),
        pool=translator.get_pool(cfg),
        retry_policy=cfg.retry_policy(),
        required_resource_keys={"pyspark"} if cfg.engine == "spark" else set(),
        tags=translator.get_tags(cfg, "clean"),
    )
    def clean_op(context: dg.OpExecutionContext, config: MaintenanceRunConfig) -> None:
        from lake_orchestration.hudi.services.clean import CleanConfig, run_clean

        dry = _dry(config, cfg.clean_dry_run)
        spark = context.resources.pyspark.spark_session if cfg.engine == "spark" and not dry else None
        with hudi_step(cfg) as step:
            clean = CleanConfig.from_options(cfg.service_options("clean"))
            res = run_clean(step.open_table(), clean, dry_run=dry, engine=spark_engine(spark))
        what = "would delete" if dry else "deleted"
        context.log.info(
            f"{cfg.name}: clean {list(res.instants) or 'none'} {what} "
            f"{res.file_count if dry else res.deleted} file(s); {res.reason}"
        )
        context.add_output_metadata(
            {
                "dry_run": dry,
                "instants": list(res.instants),
                "earliest_commit_to_retain": res.earliest_commit_to_retain or "",
                "policy": res.policy,
                "files_planned": dg.MetadataValue.int(res.file_count),
                "files_deleted": dg.MetadataValue.int(res.deleted),
                "files_failed": dg.MetadataValue.int(res.failed),
                "partitions": dg.MetadataValue.int(len(res.files)),
                "reason": res.reason,
                "files": dg.MetadataValue.json({p: v[:50] for p, v in sorted(res.files.items())[:50]}),
            }
        )

    @dg.job(
        name=translator.get_job_name(cfg, "clean"),
        tags={"hudi/table": cfg.name},
        description=f"Clean table {cfg.name}",
    )
    def job() -> None:
        clean_op()

    return job


def build_archive_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.JobDefinition:
    """``<t>__archive``: archive, then merge small archive files."""
    tags = translator.get_tags(cfg, "archive")

    @dg.op(
        name=translator.get_op_name(cfg, "archive"),
        pool=translator.get_pool(cfg),
        retry_policy=cfg.retry_policy(),
        tags=tags,
    )
    def archive_op(context: dg.OpExecutionContext, config: MaintenanceRunConfig) -> bool:
        from lake_orchestration.hudi.services.archive import ArchiveConfig, run_archive

        dry = _dry(config, cfg.archive_dry_run)
        # the merge is the next op's; here archive only
        with hudi_step(cfg) as step:
            table = step.open_table()
            options = {**cfg.service_options("archive"), HoodieKey.ARCHIVE_MERGE_ENABLE.key: "false"}
            res = run_archive(
                table, ArchiveConfig.from_options(options, table_properties=table.config.raw), dry_run=dry
            )
        context.log.info(
            f"{cfg.name}: {'would archive' if dry else 'archived'} {len(res.archived_instants)} instant(s)"
            + (f" into {res.archive_file}" if res.archive_file else "")
        )
        context.add_output_metadata(
            {
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

    @dg.op(
        name=translator.get_op_name(cfg, "merge_archive_files"),
        pool=translator.get_pool(cfg),
        retry_policy=cfg.retry_policy(),
        tags=tags,
    )
    def merge_op(context: dg.OpExecutionContext, dry: bool) -> None:
        from lake_orchestration.hudi.services.archive import ArchiveConfig, merge_archive_files

        with hudi_step(cfg) as step:
            table = step.open_table()
            archive = ArchiveConfig.from_options(cfg.service_options("archive"), table_properties=table.config.raw)
            m = merge_archive_files(table, archive, dry_run=dry)
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

    @dg.job(
        name=translator.get_job_name(cfg, "archive"),
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
        )
    ]
    if cfg.clean_cron:
        out.append(
            dg.ScheduleDefinition(
                name=translator.get_schedule_name(cfg, "clean"), job=clean, cron_schedule=cfg.clean_cron
            )
        )
    if cfg.archive_cron:
        out.append(
            dg.ScheduleDefinition(
                name=translator.get_schedule_name(cfg, "archive"), job=archive, cron_schedule=cfg.archive_cron
            )
        )
    return out
