"""Repairs of a broken pending instant that no file of its own can describe, without deleting files by hand.

* A pending rollback whose plan (``<R>.rollback.requested``) does not decode: nothing can resume it, and every
  rollback refuses to guess its target. :func:`remove_unreadable_rollback` removes its timeline files (inflight
  first, then requested), as Java's ``getPendingRollbackInfos`` deletes an unreadable *requested* rollback plan. An
  inflight one may have deleted some files of its target and added rollback command blocks; both stay correct
  without it (readers honour a rollback command block whatever its own instant, and the target write is still
  pending or already gone from the timeline), and the target is rolled back again by the next rollback.
  CLI: ``lake-orch rollback PATH --instant-time <R>``.
* An inflight compaction without its plan (``<T>.compaction.inflight`` but no ``<T>.compaction.requested``):
  nothing can read or run it, and the file-system view cannot be built. Its attempt's files are the base files
  named with ``T`` (no completed commit has that time); :func:`compaction_attempt_files_without_plan` lists them so
  the usual compaction rollback deletes them and removes the inflight file, which leaves the table as it was before
  the plan was scheduled. Refused when log files were already written on top of the plan (slice base instant
  ``T``): they need the plan. CLI: ``lake-orch compaction rollback PATH --instant-time <T>``.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import CorruptFileError, InstantNotFoundError, InvalidInstantStateError
from lake_orchestration.hudi.model.avro import RollbackPlan
from lake_orchestration.hudi.model.file_group import BaseFile, LogFile, is_base_file_name, is_log_file_name
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock


@dataclass(frozen=True, kw_only=True)
class RemovedRollback:
    """A pending rollback whose plan does not decode, removed (or, on a dry run, that would be)."""

    instant: InstantTime
    """The pending rollback's instant."""
    dry_run: bool
    files: tuple[str, ...]
    """Its timeline files (URIs), inflight first."""

    def to_json_obj(self) -> dict[str, Any]:
        """What ``lake-orch rollback --instant-time <R> --json`` prints for it."""
        return {"removed_pending_rollback": self.instant, "dry_run": self.dry_run, "files": list(self.files)}


def rollback_repair_hint(table: HudiTable, rollback_instant: InstantTime) -> str:
    """What to run to remove the pending rollback ``rollback_instant`` whose plan does not decode."""
    return (
        f"the pending rollback {rollback_instant} cannot be resumed nor completed without its plan. Remove it with "
        f"'lake-orch rollback {table.base_uri} --instant-time {rollback_instant}' (no file of the table is deleted; "
        "its target write is rolled back again by the next rollback), then roll back the failed write again"
    )


def read_rollback_plan(table: HudiTable, pending: Instant) -> RollbackPlan:
    """The plan of the pending rollback ``pending`` (read from ``<R>.rollback.requested``, as Java does).

    Raises:
        CorruptFileError: the plan does not decode; the message says how to remove the pending rollback.
    """
    req = Instant(pending.time, Action.ROLLBACK, State.REQUESTED)
    path = table.storage.uri(table.instant_path(req))
    try:
        return table.read_model(req, RollbackPlan)
    except CorruptFileError as err:
        raise CorruptFileError(err.path, f"{err.detail}; {rollback_repair_hint(table, str(pending.time))}") from err
    except InstantNotFoundError as err:
        raise CorruptFileError(path, f"missing; {rollback_repair_hint(table, str(pending.time))}") from err


def remove_unreadable_rollback(
    table: HudiTable, instant: InstantTime | str, *, dry_run: bool = False, config: RollbackConfig | None = None
) -> list[str]:
    """Remove the timeline files of the pending rollback ``instant`` whose plan does not decode; returns their paths.
    Under the table lock (``config.lock``; default: Hudi's), except on a dry run.

    Raises:
        InvalidInstantStateError: ``instant`` is not a pending rollback, or its plan reads fine (then it is resumed
            by rolling back its target, never removed).
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    instant = InstantTime(instant, where=table.base_uri)
    lock = (
        nullcontext()
        if dry_run
        else table_lock(
            table, operation=f"removal of pending rollback {instant}", config=(config or RollbackConfig()).lock
        )
    )
    with lock:
        return _remove_unreadable_rollback(table, instant, dry_run=dry_run)


def _remove_unreadable_rollback(table: HudiTable, instant: InstantTime, *, dry_run: bool) -> list[str]:
    pending = table.refresh().timeline.get(instant, Action.ROLLBACK)
    if pending is None or pending.is_completed:
        raise InvalidInstantStateError(table.base_uri, instant, "is not a pending rollback")
    try:
        plan = read_rollback_plan(table, pending)
    except CorruptFileError:
        pass
    else:
        target = plan.instant_to_rollback.commit_time if plan.instant_to_rollback is not None else "?"
        raise InvalidInstantStateError(
            table.base_uri,
            instant,
            f"is a pending rollback of {target} whose plan reads fine: it is resumed, not removed; run "
            f"'lake-orch rollback {table.base_uri} --instant-time {target}'",
        )
    files = [Instant(pending.time, Action.ROLLBACK, s) for s in (State.INFLIGHT, State.REQUESTED)]
    paths = [table.instant_path(i) for i in files if table.storage.exists(table.instant_path(i))]
    if not dry_run:
        for p in paths:  # inflight first: a crash in between leaves a requested rollback, removed by a rerun
            table.storage.delete_file(p, missing_ok=True)
        table.refresh()
    return [table.storage.uri(p) for p in paths]


def compaction_attempt_files_without_plan(table: HudiTable, instant: InstantTime) -> dict[str, list[str]]:
    """Partition -> base files the inflight compaction ``instant`` wrote, when its plan is missing: every base file
    named with ``instant`` (the compaction never completed, so no completed commit has that time).

    Raises:
        InvalidInstantStateError: ``instant`` is a completed commit, or log files were written on top of the pending
            plan (slice base instant ``instant``): removing the compaction would hide their data.
    """
    tl = table.refresh().timeline
    done = tl.get(instant, Action.COMMIT)
    if done is not None and done.is_completed:
        raise InvalidInstantStateError(table.base_uri, instant, "is a completed commit, not an inflight compaction")
    st = table.storage
    out: dict[str, list[str]] = {}
    later_logs: list[str] = []
    for p, entries in sorted(table.partition_listing().items()):  # one listing per folder
        for f in entries:
            if f.is_dir:
                continue
            if is_base_file_name(f.name) and str(BaseFile.parse(f.name, partition_path=p).instant) == instant:
                out.setdefault(p, []).append(st.join(p, f.name))
            elif is_log_file_name(f.name) and str(LogFile.parse(f.name, partition_path=p).base_instant) == instant:
                later_logs.append(st.uri(f.path))
    if later_logs:
        raise InvalidInstantStateError(
            table.base_uri,
            instant,
            f"{instant}.compaction.requested (the plan) is missing and {len(later_logs)} log file(s) were written on "
            f"top of it (e.g. {later_logs[0]}); removing the compaction would hide their data. Restore the plan file "
            "from a copy",
        )
    return out
