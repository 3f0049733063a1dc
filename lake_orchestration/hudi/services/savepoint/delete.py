"""Undoing a savepoint: delete it (completed file first, then the inflight one), as Hudi 0.14/0.15's
``SavepointHelpers.deleteSavepoint`` does.

A failed savepoint attempt (killed between ``<T>.savepoint.inflight`` and ``<T>.savepoint``) pins no file yet: the
next :func:`~lake_orchestration.hudi.services.savepoint.committer.create_savepoint` of ``T`` completes the
leftover inflight file, and :func:`delete_savepoint` removes it.
"""

from __future__ import annotations

from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock


def delete_savepoint(
    table: HudiTable, instant_time: InstantTime | str, *, dry_run: bool = False, lock: LockConfig | None = None
) -> bool:
    """Delete the savepoint at ``instant_time`` (completed file first, then the inflight one), under the table lock.

    Returns False when there is no such savepoint (as Hudi, which only warns). A leftover inflight savepoint of an
    interrupted create or delete is removed too.

    Raises:
        TableLockedError: another process holds the table lock (``lock``) past its wait time.
    """
    instant_time = InstantTime(instant_time, where=table.base_uri)
    table = table.refresh()
    sp = table.timeline.with_actions(Action.SAVEPOINT).get(instant_time)
    if sp is None:
        return False
    if dry_run:
        return True
    with table_lock(table, operation=f"savepoint delete {instant_time}", config=lock):
        st = table.storage
        st.delete_file(table.instant_path(Instant(sp.time, Action.SAVEPOINT, State.COMPLETED)), missing_ok=True)
        st.delete_file(table.instant_path(Instant(sp.time, Action.SAVEPOINT, State.INFLIGHT)), missing_ok=True)
    return True
