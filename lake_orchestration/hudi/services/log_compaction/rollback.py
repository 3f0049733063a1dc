"""How a failed log compaction attempt is undone: its new log files are deleted and the plan is requested again.

An attempt only adds new log files to the plan's file groups (log files are never appended to), whose blocks carry
the log compaction instant; left in place, they would be read as soon as the re-executed instant completes, twice.
Java rolls the attempt back too (``rollbackInflightLogCompaction``) and then asks for a new plan; re-executing the
same plan gives the same result. An attempt whose heartbeat is fresh is live and never rolled back. The rollback
itself is :func:`~lake_orchestration.hudi.services.compaction.rollback.rollback_inflight_log_compaction` (a rollback
instant, as for a compaction attempt).
"""

from __future__ import annotations

from lake_orchestration.hudi.model.instant import Instant
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.compaction.rollback import rollback_inflight_log_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable


def rollback_log_compaction_attempt(
    table: HudiTable, instant: str, *, config: CompactionConfig | None = None
) -> Instant | None:
    """Roll back the crashed attempt of log compaction ``instant``; for a caller that judged it dead under the table
    lock it holds (the liveness is not checked again, the nested lock is the same). Returns the rollback instant."""
    return rollback_inflight_log_compaction(
        table, instant, config=(config or CompactionConfig()).rollback_config(), check_liveness=False
    )
