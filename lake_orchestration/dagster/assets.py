"""The assets of a table: ``hudi/<t>`` (the table and its health) and ``hudi/<t>/compaction`` (one partition per plan).

Materializing ``hudi/<t>`` records the table's :class:`~lake_orchestration.hudi.table.health.TableHealth` as typed
metadata (ints, and the latest commit and oldest pending plan as timestamps), so Dagster plots them over time.

``hudi/<t>/compaction`` has one dynamic partition per compaction instant; materializing a partition executes that
plan and commits it, so a backfill over the partitions runs every pending plan, each exactly once (a committed plan
is a no-op).
"""

from typing import Any

import dagster as dg

from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import hudi_step
from lake_orchestration.dagster.resources import spark_engine
from lake_orchestration.dagster.translator import DagsterHudiTranslator
from lake_orchestration.hudi.table.health import TableHealth, table_health


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

    @dg.asset(
        key=translator.get_asset_key(cfg),
        group_name=translator.get_group_name(cfg),
        kinds={"hudi"},
        description=f"Hudi table {cfg.name} at {cfg.base_path}",
        metadata={"base_path": cfg.base_path},
        deps=[dg.AssetKey.from_user_string(k) for k in cfg.upstream_assets],
        pool=translator.get_pool(cfg),
    )
    def _asset(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        with hudi_step(cfg) as step:
            health = table_health(step.open_table())
        context.log.info(f"{cfg.name}: {health.to_json_obj()}")
        return dg.MaterializeResult(metadata=health_metadata(health))

    return _asset


def compaction_metadata(result: Any) -> dict[str, dg.MetadataValue]:
    """The metadata of one executed and committed plan (a ``CompactionResult``): counts as ints, seconds as a
    float, the write stats of each operation as JSON."""
    ops = [
        {
            "partition": s.partitionPath,
            "file_id": s.fileId,
            "rows": s.numWrites,
            "log_records": s.totalLogRecords,
            "log_files": s.totalLogFilesCompacted,
        }
        for s in result.stats
    ]
    return {
        "instant": dg.MetadataValue.text(str(result.instant)),
        "operations": dg.MetadataValue.int(result.operations),
        "rows_written": dg.MetadataValue.int(result.rows_written),
        "bytes_written": dg.MetadataValue.int(result.bytes_written),
        "log_records_merged": dg.MetadataValue.int(result.log_records),
        "seconds": dg.MetadataValue.float(round(result.seconds, 3)),
        "rolled_back_attempt": dg.MetadataValue.text(result.rolled_back_attempt or ""),
        "write_stats": dg.MetadataValue.json(ops),
    }


def build_compaction_asset(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.AssetsDefinition:
    """``hudi/<t>/compaction``: materializing partition ``<instant>`` executes and commits that plan."""
    from lake_orchestration.errors import InstantInProgressError
    from lake_orchestration.hudi.model.instant import Action
    from lake_orchestration.hudi.services.compaction import CompactionConfig, execute_compaction

    @dg.asset(
        key=translator.get_compaction_asset_key(cfg),
        group_name=translator.get_group_name(cfg),
        kinds={"hudi", "spark"} if cfg.engine == "spark" else {"hudi"},
        partitions_def=compaction_partitions(cfg, translator),
        deps=[translator.get_asset_key(cfg)],
        description=f"Compaction plans of {cfg.name}: one partition per compaction instant",
        retry_policy=cfg.retry_policy(),
        pool=translator.get_pool(cfg),
        required_resource_keys={"pyspark"} if cfg.engine == "spark" else set(),
    )
    def _asset(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        instant = context.partition_key
        with hudi_step(cfg, instant=instant) as step:
            table = step.open_table()
            done = table.timeline.get(instant, Action.COMMIT)
            if done is not None and done.is_completed:
                context.log.info(f"Compaction {instant} of {cfg.name} is already committed: nothing to do")
                return dg.MaterializeResult(metadata={"instant": instant, "already_committed": True})
            spark = context.resources.pyspark.spark_session if cfg.engine == "spark" else None
            try:
                r = execute_compaction(
                    table,
                    instant,
                    config=CompactionConfig.from_options(cfg.service_options("compaction")),
                    engine=spark_engine(spark),
                )
            except InstantInProgressError as err:
                # another process (a second deployment, the CLI) executes this plan and will commit it
                context.log.warning(f"Skipping compaction {instant} of {cfg.name}: {err.detail}")
                return dg.MaterializeResult(metadata={"instant": instant, "skipped": err.detail})
        return dg.MaterializeResult(metadata=compaction_metadata(r))

    return _asset
