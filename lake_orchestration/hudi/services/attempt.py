"""One process's attempt at a pending instant (compaction, log compaction, clean), kept exclusive by a heartbeat.

The one claim-and-commit protocol of the table services. The attempt holds a heartbeat ``.hoodie/.heartbeat/<instant>``
(the writer's :class:`Heartbeat`, ``hoodie.client.heartbeat.*``) with a token of its own as content, from before the
requested -> inflight transition until the commit:

* :meth:`InstantAttempt.claim` (under the table lock) decides: a live attempt of another process -> refuse
  (:class:`InstantInProgressError`); a crashed one -> roll it back first (services with a rollback: compaction, log
  compaction; clean executes its plan again, deletes are idempotent); then start the heartbeat and move the instant
  to inflight. An inflight attempt without a heartbeat (an older version of this project, or Java) counts as live
  until its inflight file is as old as the heartbeat expiry (services with a rollback).
* :meth:`InstantAttempt.ensure_ours` (still ours): a paused attempt that another process judged dead and took over
  stops before writing more.
* :meth:`InstantAttempt.verify` / :func:`attempt_check`: the check under the commit's lock -- the instant is still
  inflight, the heartbeat still holds the attempt's token, every written file exists.
* :meth:`InstantAttempt.give_up` / :meth:`InstantAttempt.abandon`: after a failure, leave the heartbeat to expire,
  release it at once, or roll the attempt back.
* :meth:`InstantAttempt.commit`: verify, then the completed instant through the one commit path
  (:func:`~lake_orchestration.hudi.table.commit.commit_section`, whose commit point raises
  :class:`~lake_orchestration.errors.CommitStateUnknownError` on an ambiguous write).

The attempt of a commit in another process (a Dagster op) is rebuilt from its token (``InstantAttempt(...,
token=execution's)``): not beating, only checked and deleted.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InstantInProgressError, InvalidInstantStateError
from lake_orchestration.hudi.model.commit_metadata import WriteStat
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.table.commit import CommitSection, after_commit, commit_section
from lake_orchestration.hudi.table.heartbeat import AttemptLiveness, Heartbeat, attempt_liveness
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock

log = logging.getLogger(__name__)

RollBack = Callable[[HudiTable, InstantTime], "Instant | None"]
"""Rolls a crashed attempt of the instant back (under the table lock the caller holds); the rollback instant."""


def new_attempt_token() -> bytes:
    """The content of an attempt's heartbeat: unique per attempt."""
    return f"{uuid.uuid4().hex}\n".encode()


def in_progress_error(table: HudiTable, liveness: AttemptLiveness, what: str = "compaction") -> InstantInProgressError:
    return InstantInProgressError(
        table.base_uri,
        liveness.instant,
        f"{what} {liveness.instant} is being executed by another process: {liveness.describe()} "
        f"({HoodieKey.HEARTBEAT_INTERVAL_MS.key} x {HoodieKey.HEARTBEAT_TOLERABLE_MISSES.key} = "
        f"{liveness.expiry_ms} ms); it is rolled back and re-executed only once the heartbeat expired",
    )


def taken_over_error(table: HudiTable, instant: InstantTime, what: str = "compaction") -> InvalidInstantStateError:
    return InvalidInstantStateError(
        table.base_uri,
        instant,
        f"{what} {instant} was taken over by another process (this attempt's heartbeat expired); this process stops "
        "and commits nothing",
    )


def attempt_check(
    table: HudiTable,
    instant: InstantTime,
    heartbeat: Heartbeat,
    stats: list[WriteStat],
    *,
    action: Action = Action.COMPACTION,
    what: str = "compaction",
) -> Callable[[], None]:
    """The check a commit runs under its lock: the plan ``instant`` is still inflight, ``heartbeat`` (holding the
    attempt's token; a beating one, in process) is still the attempt's (no other process judged it dead and took
    it over) and every file of the write stats exists. ``action``: the pending action (``Action.LOG_COMPACTION``
    for a log compaction's plan); ``what`` names the service in the message (:attr:`InstantAttempt.what`).

    Raises (when called):
        InvalidInstantStateError: the plan is no longer inflight, the heartbeat is no longer the attempt's, or a
            written file is gone.
    """

    def check() -> None:
        t = table.refresh()
        cur = t.timeline.get(instant, action)
        why = ""
        if cur is None or cur.action is not action or cur.state is not State.INFLIGHT:
            why = "the plan is no longer inflight"
        elif heartbeat.lost or not heartbeat.is_ours():
            why = "its heartbeat is no longer this process's (the attempt was judged dead and taken over)"
        else:
            gone = [s.path for s in stats if s.path and not t.storage.exists(t.storage.join(s.path))]
            if gone:
                why = f"files it wrote were deleted meanwhile ({', '.join(gone[:3])})"
        if why:
            raise InvalidInstantStateError(
                t.base_uri,
                instant,
                f"{what} {instant} is not committed by this process: {why}; nothing was committed",
            )

    return check


@dataclass(frozen=True)
class AttemptCommit:
    """What :meth:`InstantAttempt.commit` did: the completed instant, and whether an earlier try had written it."""

    completed: Instant
    already_committed: bool
    warnings: tuple[str, ...] = ()


class InstantAttempt:
    """This process's attempt at the pending instant ``instant`` of ``action`` (``what`` names it in messages).

    ``roll_back``: how a crashed attempt is undone before the instant is claimed again (None: it is executed again
    as it is, and liveness is judged by the heartbeat alone).
    """

    def __init__(
        self,
        table: HudiTable,
        instant: InstantTime | str,
        *,
        action: Action,
        what: str,
        interval_ms: int,
        tolerable_misses: int,
        lock: LockConfig | None = None,
        roll_back: RollBack | None = None,
        token: bytes | None = None,
    ) -> None:
        self.table = table
        self.instant = InstantTime(instant, where=table.base_uri)
        self.action = action
        self.what = what
        self.interval_ms = interval_ms
        self.tolerable_misses = tolerable_misses
        self.lock = lock
        self.roll_back = roll_back
        self.token = token if token is not None else new_attempt_token()
        self.heartbeat = Heartbeat(table.storage, instant, interval_ms=interval_ms, content=self.token)
        self.rolled_back: Instant | None = None

    # -- claim ----------------------------------------------------------------------------------------------------
    def liveness(self) -> AttemptLiveness:
        """Liveness of whoever executes the instant: its heartbeat; for a service with a rollback, without a
        heartbeat, the inflight file's age."""
        inflight = (
            self.table.instant_path(Instant(self.instant, self.action, State.INFLIGHT))
            if self.roll_back is not None
            else None
        )
        return attempt_liveness(
            self.table.storage,
            self.instant,
            inflight_path=inflight,
            interval_ms=self.interval_ms,
            tolerable_misses=self.tolerable_misses,
        )

    def claim(self, pending: Instant, content: bytes = b"") -> None:
        """Take the instant ``pending`` (as of the table lock, which the caller holds): refuse a live attempt, roll
        a crashed one back (if the service has a rollback), start the heartbeat, move requested -> inflight
        (``content``: the inflight file's).

        Raises:
            InstantInProgressError: another process's attempt is live.
        """
        table = self.table
        if self.roll_back is None:
            liveness = self.liveness()
            if liveness.alive:
                raise InstantInProgressError(
                    table.base_uri,
                    self.instant,
                    f"{self.what} {self.instant} is being executed by another process: {liveness.describe()}",
                )
        elif pending.state is State.INFLIGHT:
            liveness = self.liveness()
            if liveness.alive:
                raise in_progress_error(table, liveness, self.what)
            log.warning(
                "%s %s of %s: rolling back a crashed attempt (%s)",
                self.what[:1].upper() + self.what[1:],
                self.instant,
                table.base_uri,
                liveness.describe(),
            )
            self.rolled_back = self.roll_back(table, self.instant)
        self.heartbeat.start()
        try:
            if pending.is_requested or self.roll_back is not None:
                table.transition_to_inflight(Instant(pending.time, pending.action, State.REQUESTED), content)
        except BaseException:
            self.heartbeat.stop(delete=True)
            raise

    # -- still ours -------------------------------------------------------------------------------------------------
    def ensure_ours(self) -> None:
        """Raise if another process took the instant over (it judged this attempt dead: a pause longer than the
        heartbeat expiry), so a paused attempt stops before writing more files.

        Raises:
            InvalidInstantStateError: the heartbeat is gone or holds another attempt's token.
        """
        if self.heartbeat.lost or not self.heartbeat.is_ours():
            raise taken_over_error(self.table, self.instant, self.what)

    def verify(self, stats: Iterable[WriteStat]) -> Callable[[], None]:
        """The check the commit runs under its lock, just before writing the completed instant
        (:func:`attempt_check`)."""
        return attempt_check(self.table, self.instant, self.heartbeat, list(stats), action=self.action, what=self.what)

    # -- give up ----------------------------------------------------------------------------------------------------
    def give_up(self, *, release: bool = False) -> None:
        """Stop beating after a failure: the heartbeat is left to expire (the next run then knows this attempt is
        gone), or, ``release``, deleted if still ours so a retry may start at once."""
        self.heartbeat.stop(delete=release)

    def abandon(self) -> None:
        """After a failure before the commit: roll this attempt back, under the table lock, if it is still ours (the
        instant is requested again at once instead of after the heartbeat expiry). Never raises."""
        try:
            with table_lock(self.table, operation=f"{self.what} {self.instant} rollback", config=self.lock):
                if self.heartbeat.lost or not self.heartbeat.is_ours():
                    self.heartbeat.stop(delete=False)
                    return
                self.heartbeat.stop(delete=True)
                if self.roll_back is not None:
                    self.roll_back(self.table, self.instant)
        except Exception as err:  # the original error is what the caller must see
            log.error(
                "%s %s of %s failed and its attempt could not be rolled back (%s); the next run rolls it "
                "back once its inflight file is %d ms old",
                self.what[:1].upper() + self.what[1:],
                self.instant,
                self.table.base_uri,
                err,
                self.interval_ms * self.tolerable_misses,
            )

    # -- commit -----------------------------------------------------------------------------------------------------
    def _check_heartbeat(self, _: CommitSection) -> None:
        if self.heartbeat.lost or not self.heartbeat.is_ours():
            raise InvalidInstantStateError(
                self.table.base_uri,
                self.instant,
                f"its heartbeat is no longer this process's (another run judged it dead and took the {self.what} "
                "over); not committed by this process",
            )

    def commit(
        self,
        content: bytes,
        *,
        check: Callable[[CommitSection], None] | None = None,
        housekeeping: Mapping[str, Callable[[], object]] | None = None,
        operation: str | None = None,
    ) -> AttemptCommit:
        """Complete the instant with ``content`` under the table lock, through the one commit path: a completed
        instant already on storage (an earlier try whose answer was lost) makes this a no-op; else ``check`` must
        pass (default: the heartbeat is still this attempt's; e.g. :meth:`verify`'s), then the completed instant is
        written (:meth:`CommitSection.complete`: ambiguous writes raise ``CommitStateUnknownError``), then each
        ``housekeeping`` step (``what`` -> step, e.g. ``"deleting the markers"``) runs, a failure only a warning.
        The heartbeat is deleted after the commit; a failed commit keeps it (not beating), so the commit retried
        alone with the same token is still this attempt's.

        Raises:
            InvalidInstantStateError: the heartbeat is another attempt's, or ``check`` refused.
            CommitStateUnknownError: the write failed and the timeline does not show the commit.
            TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
        """
        table, instant = self.table, self.instant
        inflight = Instant(instant, self.action, State.INFLIGHT)
        completed = inflight.with_state(State.COMPLETED)
        done: Instant | None = None
        try:
            with commit_section(table, operation=operation or f"{self.what} commit {instant}", lock=self.lock) as sec:
                # one existence check of the completed file instead of a listing of .hoodie/ (object stores: a HEAD)
                if table.storage.exists(table.instant_path(completed)):
                    done = completed
                else:
                    (check or self._check_heartbeat)(sec)
                    sec.complete(inflight, content, what=f"{self.what} {instant}")
                    for what, step in (housekeeping or {}).items():
                        after_commit(instant, what, step, sec.warnings)
        except BaseException:
            self.heartbeat.stop(delete=False)  # kept: a retried commit of this execution is still this attempt's
            raise
        # only if still this attempt's
        after_commit(instant, "deleting the heartbeat", lambda: self.heartbeat.stop(delete=True), sec.warnings)
        return AttemptCommit(done or completed, done is not None, tuple(sec.warnings))
