"""Read log files from storage into blocks, with corrupt-block accounting."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from lake_orchestration.hudi.log.log_format import LogBlock, iter_blocks
from lake_orchestration.io.storage import Storage

log = logging.getLogger(__name__)


def read_log_blocks(storage: Storage, path: str) -> Iterator[LogBlock]:
    """Blocks of one log file in file order, each carrying the file's URI; blocks whose framing is corrupt come back
    as CORRUPT_BLOCK with a warning logged."""
    data = storage.read_bytes(path)
    uri = storage.uri(path)
    for block in iter_blocks(data, uri):
        if block.is_corrupt:
            log.warning(
                "Corrupt log block in %s at byte %d (%d bytes): %s; skipped",
                uri,
                block.offset,
                block.size,
                block.corrupt_reason,
            )
        yield block
