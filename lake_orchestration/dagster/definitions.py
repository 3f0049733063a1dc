"""``build_hudi_definitions``: one ``hudi/<table>`` asset per configured table, carrying its health.

The table asset is observed, not rebuilt: materializing it records the table's health (file groups, log files
per slice, pending instants, timeline length) as metadata. Table services (compaction, clean, archive, rollback)
attach to these assets as they land.
"""

from collections.abc import Sequence
from typing import Any

import dagster as dg

from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.table import HudiTable


class HudiTableConfig(dg.Config):
    """One Hudi table managed by lake_orchestration."""

    name: str
    """Dagster-facing table name (asset key ``hudi/<name>``)."""
    base_path: str
    """Table base path or URI."""


def table_health(table: HudiTable) -> dict[str, Any]:
    """Health figures of a table, as plain values (also used by asset checks later)."""
    view = table.fs_view()
    slices = view.latest_file_slices()
    tl = table.timeline
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


def _table_asset(cfg: HudiTableConfig) -> dg.AssetsDefinition:
    @dg.asset(
        key=dg.AssetKey(["hudi", cfg.name]),
        group_name="hudi",
        kinds={"hudi"},
        description=f"Hudi table {cfg.name} at {cfg.base_path}",
        metadata={"base_path": cfg.base_path},
    )
    def _asset(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        health = table_health(HudiTable(cfg.base_path))
        context.log.info(f"{cfg.name}: {health}")
        return dg.MaterializeResult(metadata=health)

    return _asset


def build_hudi_definitions(*, tables: Sequence[HudiTableConfig]) -> dg.Definitions:
    """Definitions for every configured table."""
    return dg.Definitions(assets=[_table_asset(t) for t in tables])
