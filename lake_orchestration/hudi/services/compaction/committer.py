"""Commit: the compaction's write stats become ``<instant>.commit`` (``compacted: true``, ``COMPACT``).

The completed file is the single commit point and is written with create-if-absent, so a plan can never be
committed twice. If writing it fails ambiguously, the timeline is re-checked with the instant time (the
idempotency key): nothing is cleaned up.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from lake_orchestration.errors import CommitStateUnknownError, StorageError
from lake_orchestration.hudi.model.avro import CompactionPlan
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.model.schema import META_FIELDS
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
from lake_orchestration.hudi.table.marker import MARKERS_DIR, reconcile_markers


def compaction_commit_metadata(
    stats: list[WriteStat], plan: CompactionPlan, writer_schema: dict[str, Any]
) -> CommitMetadata:
    by_partition: dict[str, list[WriteStat]] = defaultdict(list)
    for s in stats:
        by_partition[s.partitionPath or ""].append(s)
    user = dict(writer_schema)
    user["fields"] = [f for f in writer_schema["fields"] if f["name"] not in META_FIELDS]
    extra = dict(plan.extra_metadata or {})
    extra["schema"] = json.dumps(user, separators=(",", ":"))
    return CommitMetadata(
        partition_to_write_stats=dict(by_partition), compacted=True, extra_metadata=extra, operation_type="COMPACT"
    )


def commit_compaction(
    table: HudiTable,
    instant: str,
    metadata: CommitMetadata,
    *,
    lock: LockConfig | None = None,
    verify: Callable[[], None] | None = None,
) -> Instant:
    """``<instant>.compaction.inflight`` -> ``<instant>.commit``; then the markers are removed.

    The marker reconciliation and the completed-file write run under the table lock (``lock``), so no rollback,
    clean or archive of another process changes the instant's files between the check and the commit.

    Raises:
        InvalidInstantStateError: already committed (a second commit is impossible), or the inflight file is gone.
        CommitStateUnknownError: the write failed and the timeline does not show the commit.
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    inflight = Instant(InstantTime(instant), Action.COMPACTION, State.INFLIGHT)
    with table_lock(table, operation=f"compaction commit {instant}", config=lock):
        if verify is not None:
            verify()  # e.g. the attempt is still this process's (raises; nothing written)
        reconcile_markers(table.storage, instant, {s.path for s in metadata.write_stats() if s.path})
        try:
            completed = table.transition_to_completed(inflight, metadata.to_bytes())
        except StorageError as err:
            table.refresh()
            done = table.timeline.get(instant, Action.COMMIT)
            if done is None or not done.is_completed:
                raise CommitStateUnknownError(
                    f"Commit of compaction {instant} on {table.base_uri} failed ({err}) and the timeline does not "
                    "show it; re-check the timeline before retrying (the instant time is the idempotency key)"
                ) from err
            completed = done
        table.storage.delete_dir(table.storage.join(MARKERS_DIR, instant))
    return completed
