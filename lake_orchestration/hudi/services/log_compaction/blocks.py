"""The log blocks a log compaction sees: Hudi's optimized scan (``scanInternalV2``), which puts a log-compacted block
in the place of the blocks it replaced.

Java 0.15 scans a file slice with ``AbstractHoodieLogRecordReader.scanInternalV2`` both to decide whether the slice
is worth log-compacting (``HoodieLogCompactionPlanGenerator.isFileSliceEligibleForLogCompaction`` counts
``getCurrentInstantLogBlocks()``) and to merge it (``HoodieCompactor.compact`` with
``LogCompactionExecutionHelper``, whose scan bound is the log compaction instant itself). The scan:

1. walks the blocks in log-file order; corrupt blocks are ignored, a block after the bound stops the scan, data and
   delete blocks of instants not committed (or inflight) are skipped, and a ROLLBACK command block drops every block
   of its target instant seen so far; the remaining blocks are grouped by instant, in order of first arrival;
2. walks those instants newest first: a block carrying ``COMPACTED_BLOCK_TIMES`` (a log compaction's output) maps
   each instant it replaced to itself (or to the block that later replaced it in turn); an instant that was not
   replaced queues its own blocks, a replaced one queues its final compacted blocks, once, in its place.

So a slice log-compacted once counts its merged blocks plus the blocks written after them, not every block on
disk, and a merged block is applied where its newest replaced instant was, before any later block (a delete
written after the plan was made still wins over the merged block's older data).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lake_orchestration.hudi.log.compacted_blocks import place_compacted_blocks
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlock, LogBlockType
from lake_orchestration.hudi.log.reader import read_log_blocks
from lake_orchestration.hudi.log.scanner import InstantFilter
from lake_orchestration.hudi.model.file_group import LogFile
from lake_orchestration.hudi.model.instant import Action, InstantTime
from lake_orchestration.hudi.model.timeline import Timeline
from lake_orchestration.io.storage import Storage

_DATA_TYPES = (
    LogBlockType.AVRO_DATA_BLOCK,
    LogBlockType.PARQUET_DATA_BLOCK,
    LogBlockType.HFILE_DATA_BLOCK,
    LogBlockType.DELETE_BLOCK,
)


@dataclass
class OptimizedScan:
    """What ``scanInternalV2`` leaves: the blocks to merge and the instants they stand for."""

    blocks: list[LogBlock] = field(default_factory=list)
    """The valid blocks, oldest first (merge order): a compacted block in the place of the blocks it replaced."""
    valid_block_instants: list[str] = field(default_factory=list)
    """Instants of the queued blocks, newest first (``getValidBlockInstants()``: a log compaction's
    ``COMPACTED_BLOCK_TIMES`` is these joined with ``,``)."""
    total_log_files: int = 0
    total_log_blocks: int = 0
    total_corrupt_blocks: int = 0
    total_rollback_blocks: int = 0
    total_log_size: int = 0


def log_compaction_plan_filter(timeline: Timeline) -> InstantFilter:
    """The bound of the planner's scan: the last completed commit, deltacommit or rollback
    (``BaseHoodieCompactionPlanGenerator.generateCompactionPlan``'s ``lastCompletedInstantTime``)."""
    last = timeline.completed().filter(lambda i: i.action in (Action.COMMIT, Action.DELTA_COMMIT, Action.ROLLBACK)).last
    return InstantFilter.from_timeline(timeline, latest_instant=str(last.time) if last else "0")


def log_compaction_execution_filter(timeline: Timeline, instant: InstantTime) -> InstantFilter:
    """The bound of the executor's scan: the log compaction instant itself
    (``LogCompactionExecutionHelper.instantTimeToUseForScanning``): blocks written after the plan are not merged."""
    return InstantFilter.from_timeline(timeline, latest_instant=instant)


def optimized_scan(storage: Storage, log_files: Sequence[LogFile], instant_filter: InstantFilter) -> OptimizedScan:
    """``scanInternalV2`` over ``log_files`` (sorted by Hudi's log file comparator here) without merging records."""
    out = OptimizedScan()
    files = sorted(log_files, key=LogFile.sort_key)
    out.total_log_files = len(files)
    by_instant: dict[str, list[LogBlock]] = {}
    ordered: list[str] = []
    stop = False
    for lf in files:
        if stop:
            break
        for block in read_log_blocks(storage, storage.join(lf.partition_path, lf.name)):
            out.total_log_blocks += 1
            if block.is_corrupt:
                out.total_corrupt_blocks += 1
                continue
            instant = block.instant_time or ""
            if instant > instant_filter.latest_instant:
                stop = True  # Java: "hit a block with instant time greater than should be processed"
                break
            if block.block_type is LogBlockType.COMMAND_BLOCK:
                if block.is_rollback:
                    out.total_rollback_blocks += 1
                    target = block.get(HeaderKey.TARGET_INSTANT_TIME) or ""
                    if target in by_instant:
                        del by_instant[target]
                        ordered.remove(target)
                continue
            if not instant_filter.is_committed(instant) or block.block_type not in _DATA_TYPES:
                continue
            if instant not in by_instant:
                by_instant[instant] = []
                ordered.append(instant)
            by_instant[instant].append(block)
        out.total_log_size += lf.size if lf.size >= 0 else 0

    kept = [b for instant in ordered for b in by_instant[instant]]
    out.blocks, out.valid_block_instants = place_compacted_blocks(kept)
    return out
