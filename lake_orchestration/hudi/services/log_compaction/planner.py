"""Log compaction planning: ``<ts>.logcompaction.requested`` for the slices whose log files hold at least
``hoodie.log.compaction.blocks.threshold`` blocks (no trigger strategy, as Hudi).

Mirrors ``HoodieLogCompactionPlanGenerator``: the plan carries Java's log compaction strategy
(``LogCompactionExecutionHelper``, ``preserveHoodieMetadata = true``), so a Java client resuming it runs a log
compaction, not a full one. Slices under a pending (log) compaction are left out.
"""

from __future__ import annotations

from lake_orchestration.hudi.log.log_format import iter_blocks
from lake_orchestration.hudi.model.avro import CompactionOperation, CompactionPlan, CompactionStrategy
from lake_orchestration.hudi.model.file_group import FileSlice
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.compaction.planner import (
    COMPACTION_PLAN_VERSION,
    ScheduleResult,
    operation_metrics,
    validate_instant,
)
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock

LOG_COMPACTION_EXECUTOR = "org.apache.hudi.table.action.compact.LogCompactionExecutionHelper"
"""``strategy.compactorClassName`` of a log compaction plan (``HoodieLogCompactionPlanGenerator``)."""


def log_compaction_plan(operations: tuple[CompactionOperation, ...]) -> CompactionPlan:
    """A ``HoodieCompactionPlan`` as ``HoodieLogCompactionPlanGenerator.getCompactionPlan`` builds it: the strategy
    names ``LogCompactionExecutionHelper`` (empty ``strategyParams``) and ``preserveHoodieMetadata`` is true."""
    return CompactionPlan(
        operations=operations,
        version=COMPACTION_PLAN_VERSION,
        strategy=CompactionStrategy(compactor_class_name=LOG_COMPACTION_EXECUTOR, strategy_params={}, version=1),
        preserve_hoodie_metadata=True,
    )


def _block_count(table: HudiTable, fs: FileSlice) -> int:
    n = 0
    for lf in fs.log_files:
        n += sum(
            1 for b in iter_blocks(table.storage.read_bytes(table.storage.join(lf.relative_path))) if not b.is_corrupt
        )
    return n


def schedule_log_compaction(
    table: HudiTable, *, config: CompactionConfig | None = None, instant_time: str | None = None
) -> ScheduleResult:
    """Write ``<ts>.logcompaction.requested`` for slices with enough log blocks (no trigger strategy, as Hudi).

    Runs under the table lock (``hoodie.write.lock.*``), as compaction scheduling does.
    """
    cfg = config or CompactionConfig()
    with table_lock(table, operation="log compaction schedule", config=cfg.lock):
        return _schedule_log_compaction(table, cfg, instant_time)


def _schedule_log_compaction(table: HudiTable, cfg: CompactionConfig, instant_time: str | None) -> ScheduleResult:
    table.refresh()
    table.ensure_metadata_table_handled(cfg.metadata_options(), service="log compaction")
    instant = InstantTime(instant_time) if instant_time else table.new_instant_time()
    validate_instant(table, instant)
    view = table.fs_view()
    excluded = set(view.pending_compaction) | set(view.pending_log_compaction)
    ops = []
    for fs in view.latest_file_slices():
        if len(fs.log_files) < 1 or fs.file_group_id in excluded:
            continue
        if _block_count(table, fs) < cfg.log_compaction_blocks_threshold:
            continue
        ops.append(
            CompactionOperation(
                base_instant_time=str(fs.base_instant),
                delta_file_paths=tuple(lf.name for lf in fs.log_files),
                data_file_path=fs.base_file.name if fs.base_file else None,
                file_id=fs.file_id,
                partition_path=fs.partition_path,
                metrics=operation_metrics(fs, max_file_size=cfg.max_file_size),
            )
        )
    if not ops:
        return ScheduleResult(
            None,
            None,
            f"no file slice has >= {cfg.log_compaction_blocks_threshold} log blocks "
            "(hoodie.log.compaction.blocks.threshold)",
        )
    plan = log_compaction_plan(tuple(ops))
    table.create_requested(Instant(instant, Action.LOG_COMPACTION, State.REQUESTED), plan.to_bytes())
    return ScheduleResult(instant, plan, f"scheduled log compaction of {len(ops)} file slice(s)")


def read_log_compaction_plan(table: HudiTable, instant: str) -> CompactionPlan:
    """The plan of the log compaction ``instant`` (its ``.logcompaction.requested``)."""
    return table.read_model(Instant(InstantTime(instant), Action.LOG_COMPACTION, State.REQUESTED), CompactionPlan)
