"""Log compaction end to end: execute a pending plan and commit it (:func:`run_log_compaction`), or every pending
plan (:func:`run_log_compactions`, what ``lake-orch log-compaction run`` does); :mod:`.planner` schedules plans."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from lake_orchestration.errors import InstantInProgressError
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.log_compaction.committer import commit_log_compaction
from lake_orchestration.hudi.services.log_compaction.executor import execute_log_compaction_attempt
from lake_orchestration.hudi.table.hudi_table import HudiTable

log = logging.getLogger(__name__)


def run_log_compaction(
    table: HudiTable, instant: InstantTime | str, *, config: CompactionConfig | None = None
) -> CommitMetadata:
    """Execute and commit the pending log compaction ``instant``; returns its commit metadata.

    The attempt keeps a heartbeat (``hoodie.client.heartbeat.*``, a token of its own as content) from before the
    requested -> inflight transition until the commit. Under the table lock, a plan found inflight is refused while
    its attempt's heartbeat is fresh (or, without a heartbeat, while its inflight file is younger than the expiry),
    and otherwise rolled back first (the crashed attempt's log files deleted). The commit checks, under the lock,
    that the plan is still inflight, the heartbeat still this attempt's and the written files present.

    Raises:
        InstantNotFoundError: no pending log compaction ``instant``.
        InstantInProgressError: the plan is inflight and its attempt is live (another process executes it).
        InvalidInstantStateError: at the commit, the attempt was taken over or its files are gone (nothing
            committed).
        CorruptLogBlockError: a log block the plan merges does not decode (nothing is written).
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    instant = InstantTime(instant, where=table.base_uri)
    execution, attempt = execute_log_compaction_attempt(table, instant, config=config)
    return commit_log_compaction(table, execution, config=config, attempt=attempt)


@dataclass(frozen=True)
class LogCompactionRun:
    """One plan of :func:`run_log_compactions`: committed (``metadata``) or skipped (``skipped``: why)."""

    instant: str
    metadata: CommitMetadata | None = None
    """The committed deltacommit's metadata (None: skipped)."""
    skipped: str = ""
    """Another process executes the plan (its heartbeat is fresh): left to it."""


def run_log_compactions(
    table: HudiTable, instant: InstantTime | str | None = None, *, config: CompactionConfig | None = None
) -> Iterator[LogCompactionRun]:
    """Execute and commit every pending log compaction, oldest first, or only ``instant``; yields each plan's
    outcome as it is done (nothing: no pending plan). A plan another process executes is skipped when running every
    plan, and raises when it is ``instant``.

    Raises:
        As :func:`run_log_compaction`; ``InstantInProgressError`` only for ``instant``.
    """
    if instant is not None:
        t = InstantTime(instant, where=f"{table.base_uri}: log compaction instant")
        yield LogCompactionRun(str(t), metadata=run_log_compaction(table, str(t), config=config))
        return
    for pending in [str(i.time) for i in table.timeline.pending_log_compactions()]:
        try:
            md = run_log_compaction(table, pending, config=config)
        except InstantInProgressError as err:  # another process executes it: leave it to it
            log.warning("Skipping log compaction %s: %s", pending, err.detail)
            yield LogCompactionRun(pending, skipped=err.detail)
            continue
        yield LogCompactionRun(pending, metadata=md)
