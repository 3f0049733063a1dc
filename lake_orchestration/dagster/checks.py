"""The asset checks of ``hudi/<t>``: one ``multi_asset_check`` that lists the table once and judges it four ways.

* ``oldest_pending_compaction_age`` — the oldest pending compaction plan is at most ``max_pending_plan_age_seconds``
  old;
* ``log_files_per_slice`` — no latest merged file slice has more than ``max_log_files_per_slice`` log files;
* ``active_timeline_length`` — the active timeline has at most ``max_active_timeline_instants`` instants;
* ``small_archive_files`` — at most ``max_small_archive_files`` archive files up to
  ``hoodie.archive.merge.small.file.limit.bytes`` (merge not enabled, or not keeping up).

Each result carries its figures as typed metadata (ints, and the oldest plan's time as a timestamp).
"""

import time
from collections.abc import Iterator

import dagster as dg

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import hudi_step
from lake_orchestration.dagster.translator import DagsterHudiTranslator
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.health import TableHealth, table_health

CHECK_NAMES = (
    "oldest_pending_compaction_age",
    "log_files_per_slice",
    "active_timeline_length",
    "small_archive_files",
)
"""The checks of every table asset."""

_DESCRIPTIONS = {
    "oldest_pending_compaction_age": "The oldest pending compaction plan is not older than the table's limit",
    "log_files_per_slice": "No latest file slice has more log files than the table's limit",
    "active_timeline_length": "The active timeline is not longer than the table's limit (hoodie.keep.max.commits)",
    "small_archive_files": "Small archive files are merged (not piling up)",
}


def _pending_age(cfg: HudiTableConfig, health: TableHealth) -> dg.AssetCheckResult:
    age = health.oldest_pending_compaction_age(now=time.time())
    if age is None or health.oldest_pending_compaction is None:
        return dg.AssetCheckResult(
            check_name="oldest_pending_compaction_age", passed=True, metadata={"pending_plans": 0}
        )
    return dg.AssetCheckResult(
        check_name="oldest_pending_compaction_age",
        passed=age <= cfg.max_pending_plan_age_seconds,
        metadata={
            "pending_plans": dg.MetadataValue.int(health.pending_compactions),
            "oldest_instant": str(health.oldest_pending_compaction),
            "oldest_instant_time": dg.MetadataValue.timestamp(
                health.instant_datetime(health.oldest_pending_compaction)
            ),
            "age_seconds": dg.MetadataValue.int(int(age)),
            "limit_seconds": dg.MetadataValue.int(cfg.max_pending_plan_age_seconds),
        },
    )


def _log_files(cfg: HudiTableConfig, health: TableHealth) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name="log_files_per_slice",
        passed=health.max_log_files_per_slice <= cfg.max_log_files_per_slice,
        metadata={
            "max_log_files_per_slice": dg.MetadataValue.int(health.max_log_files_per_slice),
            "limit": dg.MetadataValue.int(cfg.max_log_files_per_slice),
        },
    )


def _timeline_length(cfg: HudiTableConfig, health: TableHealth) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name="active_timeline_length",
        passed=health.active_timeline_instants <= cfg.max_active_timeline_instants,
        metadata={
            "instants": dg.MetadataValue.int(health.active_timeline_instants),
            HoodieKey.KEEP_MAX_COMMITS.key: dg.MetadataValue.int(cfg.max_active_timeline_instants),
        },
    )


def _small_archive_files(cfg: HudiTableConfig, table: HudiTable) -> dg.AssetCheckResult:
    from lake_orchestration.hudi.table.archived_timeline import archive_dir, list_archive_files

    ac = cfg.archive_config(table.config.raw)
    files = list_archive_files(table.storage, archive_dir(table.storage, table.config.archivelog_folder))
    small = [f for f in files if f.size <= ac.merge_small_file_limit_bytes]
    return dg.AssetCheckResult(
        check_name="small_archive_files",
        passed=len(small) <= cfg.max_small_archive_files,
        metadata={
            "archive_files": dg.MetadataValue.int(len(files)),
            "small_archive_files": dg.MetadataValue.int(len(small)),
            "limit": dg.MetadataValue.int(cfg.max_small_archive_files),
            HoodieKey.ARCHIVE_MERGE_ENABLE.key: ac.merge_enable,
            HoodieKey.ARCHIVE_MERGE_SMALL_FILE_LIMIT_BYTES.key: dg.MetadataValue.int(ac.merge_small_file_limit_bytes),
            "small_files": dg.MetadataValue.json([f.name for f in small[-20:]]),
        },
    )


def build_table_checks(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.AssetChecksDefinition:
    """The checks of ``hudi/<t>`` as one ``multi_asset_check`` (the table is opened and listed once)."""
    key = translator.get_asset_key(cfg)
    specs = [dg.AssetCheckSpec(name, asset=key, description=_DESCRIPTIONS[name]) for name in CHECK_NAMES]

    @dg.multi_asset_check(
        specs=specs,
        name=f"{key.to_python_identifier()}__checks",
        can_subset=True,
    )
    def _checks(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
        selected = {k.name for k in context.selected_asset_check_keys}
        with hudi_step(cfg) as step:
            table = step.open_table()
            health = table_health(table)
            results = {
                "oldest_pending_compaction_age": lambda: _pending_age(cfg, health),
                "log_files_per_slice": lambda: _log_files(cfg, health),
                "active_timeline_length": lambda: _timeline_length(cfg, health),
                "small_archive_files": lambda: _small_archive_files(cfg, table),
            }
            for name in CHECK_NAMES:
                if name in selected:
                    yield results[name]()

    return _checks
