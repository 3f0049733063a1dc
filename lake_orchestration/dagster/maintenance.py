"""Timeline maintenance in Dagster: the ``<t>__clean`` and ``<t>__archive`` jobs, their schedules, and the
small-archive-files asset check.

* ``<t>__clean`` — one op: finish pending cleans, then plan, execute and commit a new clean with the table's
  ``clean_options`` (``hoodie.cleaner.*``); deletes run on the ``pyspark`` resource when the table's engine is
  ``spark``.
* ``<t>__archive`` — archive (``hoodie.keep.min/max.commits`` ...) then merge small archive files
  (``hoodie.archive.merge.*``), as two ops, the merge after the archive.

Both are destructive, so both run as a **dry run** unless the table says otherwise (``clean_dry_run`` /
``archive_dry_run``) or the run config sets ``dry_run: false``. Both share the table's pool ``hudi_<t>`` and retry
policy: each step resumes from the timeline, so a retry is safe.
"""

from typing import Any

import dagster as dg

from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.failures import fail_fast_on_permanent_errors


class MaintenanceRunConfig(dg.Config):
    """Run config of the clean and archive ops."""

    dry_run: bool | None = None
    """Only report what would be deleted/archived; default: the table's ``clean_dry_run`` / ``archive_dry_run``."""


def _dry(config: MaintenanceRunConfig, table_default: bool) -> bool:
    return table_default if config.dry_run is None else config.dry_run


def clean_job(cfg: HudiTableConfig) -> dg.JobDefinition:
    """``<t>__clean``."""

    @dg.op(
        name=f"{cfg.name}__clean_op",
        pool=f"hudi_{cfg.name}",
        retry_policy=cfg.retry_policy(),
        required_resource_keys={"pyspark"} if cfg.engine == "spark" else set(),
        tags={"hudi/table": cfg.name, "hudi/service": "clean"},
    )
    def clean_op(context: dg.OpExecutionContext, config: MaintenanceRunConfig) -> None:
        from lake_orchestration.hudi.services.clean import run_clean

        dry = _dry(config, cfg.clean_dry_run)
        spark = context.resources.pyspark.spark_session if cfg.engine == "spark" and not dry else None
        with fail_fast_on_permanent_errors():
            res = run_clean(cfg.open_table(), cfg.service_options("clean"), dry_run=dry, spark=spark)
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
                "files_planned": res.file_count,
                "files_deleted": res.deleted,
                "files_failed": res.failed,
                "partitions": len(res.files),
                "reason": res.reason,
                "files": dg.MetadataValue.json({p: v[:50] for p, v in sorted(res.files.items())[:50]}),
            }
        )

    @dg.job(name=f"{cfg.name}__clean", tags={"hudi/table": cfg.name}, description=f"Clean table {cfg.name}")
    def job() -> None:
        clean_op()

    return job


def archive_job(cfg: HudiTableConfig) -> dg.JobDefinition:
    """``<t>__archive``: archive, then merge small archive files."""
    tags = {"hudi/table": cfg.name, "hudi/service": "archive"}

    @dg.op(name=f"{cfg.name}__archive_op", pool=f"hudi_{cfg.name}", retry_policy=cfg.retry_policy(), tags=tags)
    def archive_op(context: dg.OpExecutionContext, config: MaintenanceRunConfig) -> bool:
        from lake_orchestration.hudi.services.archive import run_archive

        dry = _dry(config, cfg.archive_dry_run)
        # the merge is the next op's; here archive only
        with fail_fast_on_permanent_errors():
            res = run_archive(
                cfg.open_table(),
                {**cfg.service_options("archive"), "hoodie.archive.merge.enable": "false"},
                dry_run=dry,
            )
        context.log.info(
            f"{cfg.name}: {'would archive' if dry else 'archived'} {len(res.archived_instants)} instant(s)"
            + (f" into {res.archive_file}" if res.archive_file else "")
        )
        context.add_output_metadata(
            {
                "dry_run": dry,
                "archived_instants": len(res.archived_instants),
                "first_archived": str(res.archived_instants[0].time) if res.archived_instants else "",
                "last_archived": str(res.archived_instants[-1].time) if res.archived_instants else "",
                "archive_file": res.archive_file or "",
                "timeline_files_deleted": len(res.deleted_files),
                "repaired_files": len(res.repaired_files),
                "keep_min_max": f"{res.min_instants_to_keep}/{res.max_instants_to_keep}",
            }
        )
        return dry

    @dg.op(
        name=f"{cfg.name}__merge_archive_files_op",
        pool=f"hudi_{cfg.name}",
        retry_policy=cfg.retry_policy(),
        tags=tags,
    )
    def merge_op(context: dg.OpExecutionContext, dry: bool) -> None:
        from lake_orchestration.hudi.services.archive import merge_archive_files

        with fail_fast_on_permanent_errors():
            m = merge_archive_files(cfg.open_table(), cfg.service_options("archive"), dry_run=dry)
        context.log.info(
            f"{cfg.name}: merge of small archive files: "
            + (f"{len(m.candidates)} file(s) into {m.merged_file}" if m.merged_file else "nothing to merge")
            + (f" (recovered a crashed merge: {m.recovered})" if m.recovered else "")
        )
        context.add_output_metadata(
            {
                "dry_run": dry,
                "candidates": len(m.candidates),
                "merged_file": m.merged_file or "",
                "recovered": m.recovered or "",
            }
        )

    @dg.job(name=f"{cfg.name}__archive", tags={"hudi/table": cfg.name}, description=f"Archive table {cfg.name}")
    def job() -> None:
        merge_op(archive_op())

    return job


def maintenance_schedules(cfg: HudiTableConfig, clean: dg.JobDefinition, archive: dg.JobDefinition) -> list[Any]:
    """Schedules of the clean and archive jobs (a table may switch either off with ``None``)."""
    out: list[Any] = []
    if cfg.clean_cron:
        out.append(dg.ScheduleDefinition(name=f"{cfg.name}__clean_schedule", job=clean, cron_schedule=cfg.clean_cron))
    if cfg.archive_cron:
        out.append(
            dg.ScheduleDefinition(name=f"{cfg.name}__archive_schedule", job=archive, cron_schedule=cfg.archive_cron)
        )
    return out


def small_archive_files_check(cfg: HudiTableConfig, key: dg.AssetKey) -> dg.AssetChecksDefinition:
    """Asset check: the archived timeline is not piling up small archive files (merge not enabled or not keeping up)."""

    @dg.asset_check(asset=key, name="small_archive_files")
    def check() -> dg.AssetCheckResult:
        from lake_orchestration.hudi.services.archive import ArchiveConfig
        from lake_orchestration.hudi.table.archived_timeline import archive_dir, list_archive_files

        table = cfg.open_table()
        ac = ArchiveConfig.from_options(cfg.service_options("archive"), table_properties=table.config.raw)
        files = list_archive_files(table.storage, archive_dir(table.storage, table.config.archivelog_folder))
        small = [f for f in files if f.size <= ac.merge_small_file_limit_bytes]
        return dg.AssetCheckResult(
            passed=len(small) <= cfg.max_small_archive_files,
            metadata={
                "archive_files": len(files),
                "small_archive_files": len(small),
                "limit": cfg.max_small_archive_files,
                "hoodie.archive.merge.enable": ac.merge_enable,
                "hoodie.archive.merge.small.file.limit.bytes": ac.merge_small_file_limit_bytes,
                "small_files": dg.MetadataValue.json([f.name for f in small[-20:]]),
            },
        )

    return check
