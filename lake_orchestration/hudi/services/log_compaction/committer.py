"""Log compaction commit: ``<ts>.logcompaction.inflight`` -> ``<ts>.deltacommit`` (``LOG_COMPACT``), under the
table lock, then the markers and the attempt's heartbeat are removed.

The commit writes only the completed instant: given the result of
:func:`~lake_orchestration.hudi.services.log_compaction.executor.execute_log_compaction` it never writes a log file.
It checks first that the plan is still inflight, the heartbeat still the executing attempt's, every written file
present, and that no other write put a log file into a merged file group while the plan executed (the merged block
would follow it: readers in file order would undo that write with older data, see
:mod:`~lake_orchestration.hudi.services.log_compaction.executor`); otherwise nothing is committed.
"""

from __future__ import annotations

from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.file_group import LogFile
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.services.attempt import InstantAttempt
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.log_compaction.executor import (
    LogCompactionExecution,
    log_compaction_attempt,
    overtaking_log_files,
)
from lake_orchestration.hudi.services.log_compaction.planner import read_log_compaction_plan
from lake_orchestration.hudi.table.commit import CommitSection
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.marker import delete_markers


def commit_log_compaction(
    table: HudiTable,
    execution: LogCompactionExecution,
    *,
    config: CompactionConfig | None = None,
    attempt: InstantAttempt | None = None,
) -> CommitMetadata:
    """Write the completed deltacommit of an executed log compaction; returns its metadata.

    ``attempt``: the executing attempt, its heartbeat still beating (from
    :func:`~lake_orchestration.hudi.services.log_compaction.executor.execute_log_compaction_attempt`); it is stopped
    here. Without it, the attempt is rebuilt from ``execution.attempt`` (its token): the heartbeat file is checked to
    still hold it. The commit is :meth:`InstantAttempt.commit` (the one commit path).

    A plan that is committed already (an earlier commit of this execution whose answer was lost) makes this a
    no-op: the timeline's metadata is returned, nothing is written.

    Raises:
        InvalidInstantStateError: the plan is no longer inflight, the attempt was taken over, or files it wrote are
            gone (nothing committed; the heartbeat is left to expire).
        CommitStateUnknownError: writing the completed instant failed and the timeline does not show it (re-check
            the timeline with the instant time before retrying; the commit retried with this execution is a no-op
            once it shows it).
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    cfg = config or CompactionConfig()
    instant = execution.instant
    attempt = attempt or log_compaction_attempt(table, instant, cfg, token=execution.attempt)
    md = execution.metadata
    verify = attempt.verify(md.write_stats())

    def check(_: CommitSection) -> None:
        verify()
        _check_not_overtaken(table, instant, md)

    done = attempt.commit(
        md.to_bytes(),
        check=check,
        housekeeping={"deleting the markers": lambda: delete_markers(table.storage, instant)},
    )
    if done.already_committed:  # committed by an earlier try whose answer was lost: a no-op
        return table.commit_metadata(done.completed)
    return md


def _check_not_overtaken(table: HudiTable, instant: InstantTime, md: CommitMetadata) -> None:
    """Raise if another write's log file sorts between a merged file group's planned log files and the merged file
    this attempt wrote (added while it executed: the merged block would follow it)."""
    ours = {
        (s.partitionPath or "", s.fileId or ""): LogFile.parse((s.path or "").rsplit("/", 1)[-1]).sort_key()
        for s in md.write_stats()
    }
    later = overtaking_log_files(table.refresh(), read_log_compaction_plan(table, instant))
    foreign = {
        fg: before
        for fg, names in later.items()
        if fg in ours and (before := [n for n in names if LogFile.parse(n).sort_key() < ours[fg]])
    }
    if foreign:
        listed = "; ".join(f"{p}/{fid}: {', '.join(names)}" for (p, fid), names in sorted(foreign.items()))
        raise InvalidInstantStateError(
            table.base_uri,
            instant,
            f"log compaction not committed: another write added log files to merged file groups while it executed "
            f"({listed}); its merged blocks would follow them. Nothing was committed: the attempt is rolled back "
            "and the plan executed again once its heartbeat expires, leaving those file groups out",
        )
