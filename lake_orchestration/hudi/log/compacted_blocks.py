"""Where a log-compacted block applies: in the place of the newest block it replaced (Hudi's ``scanInternalV2``).

A log compaction writes its merged blocks (header ``COMPACTED_BLOCK_TIMES`` = the instants they replace) into a new
log file, after every block already in the file group. Read in file order they come after any block written after
the plan was made -- a delete written between the plan and its execution would be undone by the older data of the
merged block. Java's optimized scan (``AbstractHoodieLogRecordReader.scanInternalV2``, used by log compaction
planning and execution) walks the instants newest first and queues a compacted block where the newest instant it
replaced was, once, instead of the replaced blocks; blocks of instants it did not replace keep their place.
"""

from __future__ import annotations

from collections.abc import Sequence

from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlock


def place_compacted_blocks(blocks: Sequence[LogBlock]) -> tuple[list[LogBlock], list[str]]:
    """``blocks`` (valid data/delete blocks, file order) in merge order, oldest first, with each log-compacted block
    in the place of the blocks it replaced; and the instants queued, newest first (``getValidBlockInstants()``).

    Without a compacted block the order is unchanged.
    """
    by_instant: dict[str, list[LogBlock]] = {}
    ordered: list[str] = []
    for b in blocks:
        instant = b.instant_time or ""
        if instant not in by_instant:
            by_instant[instant] = []
            ordered.append(instant)
        by_instant[instant].append(b)
    queue: list[list[LogBlock]] = []  # newest instant first
    valid: list[str] = []
    included: set[str] = set()
    compacted_into: dict[str, str] = {}
    for instant in reversed(ordered):
        replaced = by_instant[instant][0].get(HeaderKey.COMPACTED_BLOCK_TIMES)
        if replaced is not None:
            final = compacted_into.get(instant, instant)
            for original in replaced.split(","):
                compacted_into[original] = final
            continue
        final = compacted_into.get(instant, instant)
        if final not in included:
            queue.append(by_instant[final])
            valid.append(final)
            included.add(final)
    return [b for group in reversed(queue) for b in group], valid


def has_compacted_block(blocks: Sequence[LogBlock]) -> bool:
    """Whether a log compaction's output is among ``blocks``."""
    return any(b.get(HeaderKey.COMPACTED_BLOCK_TIMES) is not None for b in blocks)
