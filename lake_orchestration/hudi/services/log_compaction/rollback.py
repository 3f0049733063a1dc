"""How a failed log compaction attempt is undone: its new log files are deleted and the plan is requested again.

An attempt only adds new log files to the plan's file groups (log files are never appended to), whose blocks carry
the log compaction instant; left in place, they would be read as soon as the re-executed instant completes, twice.
Java rolls the attempt back too (``rollbackInflightLogCompaction``) and then asks for a new plan; re-executing the
same plan gives the same result. An attempt whose heartbeat is fresh is live and never rolled back. The rollback
itself is :func:`~lake_orchestration.hudi.services.rollback.compaction.rollback_inflight_log_compaction` (a rollback
instant, as for a compaction attempt).
"""

from __future__ import annotations

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.hudi.model.instant import Instant
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.rollback.compaction import rollback_inflight_log_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable


def rollback_log_compaction_attempt(
    table: HudiTable, instant: str, *, config: CompactionConfig | None = None
) -> Instant | None:
    """Roll back the crashed attempt of log compaction ``instant``; for a caller that judged it dead under the table
    lock it holds (the liveness is not checked again, the nested lock is the same). Returns the rollback instant."""
    return rollback_inflight_log_compaction(
        table, instant, options=_options(config or CompactionConfig()), check_liveness=False
    )


def _options(cfg: CompactionConfig) -> dict[str, str]:
    return {
        **cfg.lock.to_options(),  # the nested rollback locks the same file as its caller
        **cfg.metadata_options(),
        HoodieKey.HEARTBEAT_INTERVAL_MS.key: str(cfg.heartbeat_interval_ms),
        HoodieKey.HEARTBEAT_TOLERABLE_MISSES.key: str(cfg.heartbeat_tolerable_misses),
    }
