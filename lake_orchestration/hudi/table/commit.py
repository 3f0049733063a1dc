"""The commit path every completing service shares: the table lock around the commit point, Hudi's optimistic
concurrency check under it, and what follows a durable commit.

- **The commit point** (:func:`complete_instant`, :meth:`CommitSection.complete`): every completed instant a
  service or writer writes goes through it. Ambiguous writes are decided first in :meth:`Storage.create_if_absent`
  (the completed instant's create-if-absent reads the object back after a ``412`` or a transport error and decides
  by its content; undecidable raises :class:`~lake_orchestration.errors.CommitStateUnknownError`). Any other
  :class:`~lake_orchestration.errors.StorageError` of the write is decided here by the timeline: the completed
  instant is there -> committed; absent -> :class:`~lake_orchestration.errors.CommitStateUnknownError` (the instant
  time is the idempotency key: re-check the timeline before retrying, never clean up).
- **Conflicts** (:func:`check_write_conflicts`): Hudi's ``TransactionUtils.resolveWriteConflictIfAny`` with
  ``SimpleConcurrentFileWritesConflictResolutionStrategy``. Under the table lock, just before the commit point, the
  file groups this write changed are compared with those of every write-timeline instant that completed since this
  write started (absent or pending in the timeline it started from), and of every compaction or clustering
  scheduled after its instant. An overlap fails the later writer with
  :class:`~lake_orchestration.errors.WriteConflictError`, except what Java lets through: a compaction whose plan is
  older than this write (this write's log files sort after it).
- **After the commit point** (:func:`commit_section`, :func:`after_commit`): once the completed instant exists the
  commit is durable, and a failure of the housekeeping that follows (releasing the lock file, deleting markers and
  the heartbeat) is logged as a warning, never raised: a caller that saw a failure would retry and duplicate rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from lake_orchestration.errors import CommitStateUnknownError, CorruptFileError, InstantNotFoundError, StorageError
from lake_orchestration.hudi.metadata.sync import sync_metadata_table
from lake_orchestration.hudi.model.avro import CompactionPlan, RequestedReplaceMetadata
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.timeline import Timeline
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock

log = logging.getLogger(__name__)

FileGroupKey = tuple[str, str]
"""(partition path, file id)."""

_COMPACT_OPERATIONS = frozenset({"COMPACT"})


@dataclass
class CommitSection:
    """The state of one commit section (see :func:`commit_section`)."""

    table: HudiTable
    operation: str
    completed: Instant | None = None
    """Set once the commit point is written (or found written): from then on nothing raises."""
    warnings: list[str] = field(default_factory=list)
    """What failed after the commit point (also logged)."""

    def complete(self, inflight: Instant, content: bytes, *, what: str = "") -> Instant:
        """Write the completed instant (the commit point, :func:`complete_instant`) and remember it."""
        self.completed = complete_instant(self.table, inflight, content, what=what)
        return self.completed


def complete_instant(table: HudiTable, inflight: Instant, content: bytes, *, what: str = "") -> Instant:
    """Inflight -> completed (:meth:`HudiTable.transition_to_completed`, the commit point), the metadata table first
    and with the ambiguous-write rule.

    A table that keeps a metadata table (``files`` in ``hoodie.table.metadata.partitions``) gets the MDT deltacommit
    of this instant, derived from ``content``, before the completed file is written
    (:func:`~lake_orchestration.hudi.metadata.sync.sync_metadata_table`, as Java's ``writeTableMetadata`` before
    ``saveAsComplete``): a crash in between leaves an MDT block readers ignore (its data instant is not completed),
    which the next attempt reuses or rolls back. Then the ambiguous-write rule: a :class:`StorageError` of the write
    is decided by a fresh timeline -- the completed instant is there (an earlier answer was lost): it is returned; it
    is not: :class:`CommitStateUnknownError`. Call under the table lock (:func:`commit_section`, or the lock the
    caller holds). ``what`` names the commit in the error (default: ``<action> <instant time>``).

    Raises:
        InvalidInstantStateError: ``inflight`` is not on storage, or its completed file exists already.
        CommitStateUnknownError: the write failed and the timeline does not show the commit (or cannot be read).
        MetadataTableError: the metadata table cannot be updated (nothing of the data instant is completed).
    """
    sync_metadata_table(table, inflight, content)
    try:
        return table.transition_to_completed(inflight, content)
    except StorageError as err:
        completed = inflight.with_state(State.COMPLETED)
        done: Instant | None = None
        try:
            found = table.refresh().timeline.get(str(inflight.time), completed.action)
            done = found if found is not None and found.is_completed else None
        except StorageError:
            pass  # the timeline cannot be read either: undecidable
        if done is None:
            label = what or f"{inflight.action.value} {inflight.time}"
            raise CommitStateUnknownError(
                f"Commit of {label} on {table.base_uri} failed ({err}) and the timeline does not show it; re-check "
                "the timeline before retrying (the instant time is the idempotency key)",
                path=table.storage.uri(table.instant_path(completed)),
            ) from err
        log.warning("The commit of %s failed (%s) but the timeline shows it: committed", completed.file_name, err)
        return done


@contextmanager
def commit_section(table: HudiTable, *, operation: str, lock: LockConfig | None = None) -> Iterator[CommitSection]:
    """The table lock around a commit; errors once :attr:`CommitSection.completed` is set become warnings.

    The body checks, then calls :meth:`CommitSection.complete`; whatever fails before that raises as usual. An error
    after it (the rest of the body, or releasing the lock file) is logged and kept in ``section.warnings``: the
    commit is durable and must be reported as such.
    """
    section = CommitSection(table, operation)
    try:
        with table_lock(table, operation=operation, config=lock):
            yield section
    except Exception as err:
        if section.completed is None:
            raise
        _warn(section.warnings, section.completed, f"finishing {operation}", err)


def after_commit(
    completed: Instant | str, what: str, step: Callable[[], object], warnings: list[str] | None = None
) -> None:
    """Run one housekeeping step after a durable commit (``what``: e.g. ``deleting the markers``); a failure is
    logged as a warning (and appended to ``warnings``), never raised."""
    try:
        step()
    except Exception as err:
        _warn(warnings if warnings is not None else [], completed, what, err)


def _warn(warnings: list[str], completed: Instant | str, what: str, err: BaseException) -> None:
    instant = completed.file_name if isinstance(completed, Instant) else completed
    text = (
        f"{instant} is committed, but {what} failed afterwards ({type(err).__name__}: {err}); the commit stands "
        "(do not run it again): a leftover lock file expires, leftover markers and heartbeats are ignored"
    )
    warnings.append(text)
    log.warning("%s", text)


# -- optimistic concurrency ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Conflict:
    """Another instant that changed file groups this write changed too."""

    other: Instant
    file_groups: tuple[FileGroupKey, ...]

    @property
    def file_ids(self) -> list[str]:
        return sorted({fid for _, fid in self.file_groups})

    def describe(self) -> str:
        state = "completed" if self.other.is_completed else f"scheduled ({self.other.state.name.lower()})"
        return f"{self.other.action.value} {self.other.time} ({state})"


def written_file_groups(metadata: CommitMetadata) -> set[FileGroupKey]:
    """(partition, file id) of every write stat and, for a replacecommit, of every replaced file group (Java
    ``ConcurrentOperation.getMutatedPartitionAndFileIds``)."""
    out = {(s.partitionPath or p, s.fileId) for p, stats in metadata.partition_to_write_stats.items() for s in stats}
    out = {(p, f) for p, f in out if f}
    for p, ids in (metadata.partition_to_replace_file_ids or {}).items():
        out.update((p, f) for f in ids if f)
    return out


def check_write_conflicts(
    table: HudiTable, instant: Instant, metadata: CommitMetadata, started: Timeline
) -> Conflict | None:
    """The first conflict of the write ``instant`` (about to commit ``metadata``) with what happened since it
    started (``started``: the timeline it created its instant in), or None. Call under the table lock, on a fresh
    timeline (:func:`table_lock` refreshes it).

    Candidates (Java ``getCandidateInstants`` + ``completedInstantsDuringCurrentWriteOperation``): write-timeline
    instants completed now that were absent or pending in ``started``, and compactions/clusterings scheduled after
    ``instant`` that are still pending. A completed compaction whose plan is older than ``instant`` is no conflict
    (Java ``resolveConflict``: this write's log files sort after it).
    """
    mine = written_file_groups(metadata)
    if not mine:
        return None
    done_before = {(str(i.time), i.action.comparable) for i in started.completed()}
    tl = table.timeline
    candidates: list[Instant] = [
        i
        for i in tl.completed_commits()
        if i.time != instant.time and (str(i.time), i.action.comparable) not in done_before
    ]
    candidates += [
        i
        for i in tl.pending()
        if i.action in (Action.COMPACTION, Action.LOG_COMPACTION, Action.REPLACE_COMMIT)
        and str(i.time) > str(instant.time)
    ]
    for other in candidates:
        theirs = _mutated_file_groups(table, other)
        both = mine & theirs
        if not both:
            continue
        if other.is_completed and str(other.time) < str(instant.time) and _is_compaction_commit(table, other):
            continue
        return Conflict(other, tuple(sorted(both)))
    return None


def _is_compaction_commit(table: HudiTable, inst: Instant) -> bool:
    if inst.action is not Action.COMMIT:
        return False
    md = table.commit_metadata(inst)
    return (md.operation_type or "") in _COMPACT_OPERATIONS


def _mutated_file_groups(table: HudiTable, inst: Instant) -> set[FileGroupKey]:
    """The file groups ``inst`` changed (completed) or is about to change (pending plan)."""
    if inst.is_completed:
        return written_file_groups(table.commit_metadata(inst))
    if inst.action in (Action.COMPACTION, Action.LOG_COMPACTION):
        plan = table.read_model(Instant(inst.time, inst.action, State.REQUESTED), CompactionPlan)
        return {(op.partition_path or "", op.file_id or "") for op in plan.operations}
    out: set[FileGroupKey] = set()  # a pending replacecommit: clustering plan, or insert_overwrite's inflight stats
    try:
        req = table.read_model(Instant(inst.time, inst.action, State.REQUESTED), RequestedReplaceMetadata)
        plan = req.clustering_plan
        for group in (plan.input_groups or ()) if plan is not None else ():
            out.update((s.partition_path or "", s.file_id or "") for s in group.slices or ())
    except (StorageError, CorruptFileError, InstantNotFoundError):
        pass
    if inst.state is State.INFLIGHT:
        try:
            data = table.read_instant(inst)
            if data.strip():
                out |= written_file_groups(
                    CommitMetadata.from_bytes(data, path=table.storage.uri(table.instant_path(inst)))
                )
        except (StorageError, CorruptFileError, InstantNotFoundError):
            pass
    return out


def describe_file_ids(groups: Iterable[FileGroupKey]) -> list[str]:
    """``partition/fileId`` for messages."""
    return [f"{p}/{f}" if p else f for p, f in sorted(groups)]
