"""Leftover temporary files of :meth:`Storage.create_if_absent`.

A local create-if-absent writes ``<path>.<32 hex>.tmp`` and hard-links it to ``<path>``; the temp file is removed in
a ``finally``, so only a process killed inside that window leaves one behind (a lock takeover's moved-away stale
lock uses the same form). Nothing reads them; in ``.hoodie/`` they would be reported as unknown files forever.
:func:`remove_stale_temp_files` (run by clean) deletes those older than the heartbeat expiry: a live create
finishes in milliseconds, so such a file belongs to a process that is gone. Object stores and HDFS never get such
files (a create there is one request), so they are not searched.
"""

from __future__ import annotations

import logging
import re
import time

from lake_orchestration.config.options import HeartbeatConfig
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, lock_storage
from lake_orchestration.io.storage import FileInfo, Storage

log = logging.getLogger(__name__)

TEMP_FILE_PATTERN = re.compile(r"\.[0-9a-f]{32}\.tmp$")
"""Name suffix of create-if-absent's temporary files."""


def temp_file_expiry_ms(*, heartbeat: HeartbeatConfig, lock: LockConfig) -> int:
    """Age after which a temp file is surely abandoned: the longer of the writer heartbeat expiry
    (``hoodie.client.heartbeat.interval_in_ms`` x ``hoodie.client.heartbeat.tolerable.misses``, 2 min by default)
    and the table lock's expiry."""
    return max(heartbeat.expiry_ms, lock.expiry_ms)


def stale_temp_files(
    table: HudiTable, *, older_than_ms: int, lock: LockConfig | None = None, now_ms: int | None = None
) -> list[tuple[Storage, FileInfo]]:
    """Temp files of create-if-absent anywhere under the table (and in the lock directory) older than
    ``older_than_ms``, by modification time, with the storage each is on."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    found: dict[str, tuple[Storage, FileInfo]] = {}
    roots = [(table.storage, table.storage.base_path)]
    cfg = lock or LockConfig()
    if cfg.path:
        st, path = lock_storage(table, cfg)
        roots.append((st, path.rsplit("/", 1)[0]))
    for storage, root in roots:
        if not storage.is_local:
            # Only a local create-if-absent (and a local lock takeover) writes temp files: on an object store a
            # create is one PUT, so a recursive listing of the whole table would find nothing and cost requests.
            continue
        for f in storage.walk_files(root):
            if TEMP_FILE_PATTERN.search(f.name) and f.mtime_ms and now - f.mtime_ms > older_than_ms:
                found[storage.uri(f.path)] = (storage, f)
    return [found[k] for k in sorted(found)]


def remove_stale_temp_files(
    table: HudiTable, *, older_than_ms: int, lock: LockConfig | None = None, dry_run: bool = False
) -> list[str]:
    """Delete the abandoned temp files (see :func:`stale_temp_files`); returns their paths relative to the table
    (absolute for files outside it). A dry run only lists them."""
    files = stale_temp_files(table, older_than_ms=older_than_ms, lock=lock)
    out = []
    for storage, f in files:
        if not dry_run:
            log.warning(
                "Removing %s, a temporary file left by a process killed while creating a file", storage.uri(f.path)
            )
            storage.delete_file(f.path, missing_ok=True)
        out.append(table.storage.relative(f.path) if storage is table.storage else storage.uri(f.path))
    return out
