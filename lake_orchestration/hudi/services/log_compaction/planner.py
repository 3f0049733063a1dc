"""Log compaction planning: ``<ts>.logcompaction.requested`` for the slices with at least
``hoodie.log.compaction.blocks.threshold`` valid log blocks (no trigger strategy, as Hudi).

Mirrors ``HoodieLogCompactionPlanGenerator``: a slice's blocks are counted as Java 0.15 counts them
(``isFileSliceEligibleForLogCompaction``: the blocks ``scanInternalV2`` queues up to the last completed commit,
deltacommit or rollback -- committed, not rolled back, not corrupt, a log-compacted block standing for the blocks
it replaced, see :mod:`.blocks`), so a slice log-compacted once is not planned again until enough new blocks
arrive. The plan carries Java's log compaction strategy (``LogCompactionExecutionHelper``,
``preserveHoodieMetadata = true``), so a Java client resuming it runs a log compaction, not a full one; each
operation names a bootstrap skeleton's source file (``bootstrapFilePath``) as ``CompactionUtils`` does. Slices under
a pending (log) compaction are left out.
"""

from __future__ import annotations

from lake_orchestration.hudi.log.scanner import InstantFilter
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
from lake_orchestration.hudi.services.log_compaction.blocks import log_compaction_plan_filter, optimized_scan
from lake_orchestration.hudi.table.clustering import pending_clustering_file_groups
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


def valid_block_count(table: HudiTable, fs: FileSlice, instant_filter: InstantFilter) -> int:
    """The slice's blocks as Java counts them for ``hoodie.log.compaction.blocks.threshold``
    (``getCurrentInstantLogBlocks().size()`` after ``scanInternalV2``)."""
    return len(optimized_scan(table.storage, fs.log_files, instant_filter).blocks)


def schedule_log_compaction(
    table: HudiTable, *, config: CompactionConfig | None = None, instant_time: InstantTime | str | None = None
) -> ScheduleResult:
    """Write ``<ts>.logcompaction.requested`` for slices with enough log blocks (no trigger strategy, as Hudi).

    Runs under the table lock (``hoodie.write.lock.*``), as compaction scheduling does.
    """
    cfg = config or CompactionConfig()
    # a malformed instant fails here, before the lock or any file is written
    given = InstantTime(instant_time, where=table.base_uri) if instant_time else None
    with table_lock(table, operation="log compaction schedule", config=cfg.lock):
        return _schedule_log_compaction(table, cfg, given)


def _schedule_log_compaction(table: HudiTable, cfg: CompactionConfig, given: InstantTime | None) -> ScheduleResult:
    table.refresh()
    table.ensure_metadata_table_handled(cfg.metadata_options(), service="log compaction")
    instant = given or table.new_instant_time()
    validate_instant(table, instant, multi_writer=cfg.multi_writer)
    view = table.fs_view()
    excluded = set(view.pending_compaction) | set(view.pending_log_compaction)
    # and the file groups of pending clustering plans (BaseHoodieCompactionPlanGenerator#generateCompactionPlan)
    excluded |= set(pending_clustering_file_groups(table))
    flt = log_compaction_plan_filter(table.timeline)
    ops = []
    for fs in view.latest_file_slices():
        if len(fs.log_files) < 1 or fs.file_group_id in excluded:
            continue
        if valid_block_count(table, fs, flt) < cfg.log_compaction_blocks_threshold:
            continue
        ops.append(
            CompactionOperation(
                base_instant_time=str(fs.base_instant),
                delta_file_paths=tuple(lf.name for lf in fs.log_files),
                data_file_path=fs.base_file.name if fs.base_file else None,
                file_id=fs.file_id,
                partition_path=fs.partition_path,
                metrics=operation_metrics(fs, max_file_size=cfg.max_file_size),
                # a bootstrap skeleton's source file (CompactionUtils.buildHoodieCompactionOperation), else null
                bootstrap_file_path=fs.base_file.bootstrap_source if fs.base_file is not None else None,
            )
        )
    if not ops:
        return ScheduleResult(
            None,
            None,
            f"no file slice has >= {cfg.log_compaction_blocks_threshold} valid log blocks "
            "(hoodie.log.compaction.blocks.threshold)",
        )
    plan = log_compaction_plan(tuple(ops))
    table.create_requested(Instant(instant, Action.LOG_COMPACTION, State.REQUESTED), plan.to_bytes())
    return ScheduleResult(instant, plan, f"scheduled log compaction of {len(ops)} file slice(s)")


def read_log_compaction_plan(table: HudiTable, instant: InstantTime) -> CompactionPlan:
    """The plan of the log compaction ``instant`` (its ``.logcompaction.requested``)."""
    return table.read_model(Instant(InstantTime(instant), Action.LOG_COMPACTION, State.REQUESTED), CompactionPlan)
