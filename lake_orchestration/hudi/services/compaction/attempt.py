"""One process's attempt at executing a compaction plan, kept exclusive by an instant heartbeat.

Hudi 0.14/0.15 rolls an inflight compaction back whenever a run finds it inflight (``preCompact``), which is safe
only with a single compaction runner. Here the attempt holds a heartbeat ``.hoodie/.heartbeat/<instant>`` (the
writer's :class:`Heartbeat`, ``hoodie.client.heartbeat.*``) from before the requested -> inflight transition until
the commit, with a token of its own as content. Under the table lock:

* :meth:`CompactionAttempt.claim` decides: requested -> take it; inflight with a live heartbeat -> refuse
  (:class:`InstantInProgressError`: "compaction <instant> is being executed by another process: heartbeat <time>,
  expires <time>"); inflight and expired -> roll the crashed attempt back first. An inflight attempt without a
  heartbeat (an older version of this project, or Java) counts as live until its inflight file is as old as the
  heartbeat expiry.
* :meth:`CompactionAttempt.verify` runs inside the commit's lock: the plan is still inflight, the heartbeat still
  holds our token and every file of the write stats exists — otherwise nothing is committed.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InstantInProgressError, InstantNotFoundError, InvalidInstantStateError
from lake_orchestration.hudi.model.commit_metadata import WriteStat
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.compaction.committer import attempt_check
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.compaction.rollback import rollback_inflight_compaction
from lake_orchestration.hudi.table.heartbeat import AttemptLiveness, Heartbeat, attempt_liveness
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock

log = logging.getLogger(__name__)


def compaction_liveness(table: HudiTable, instant: str, cfg: CompactionConfig) -> AttemptLiveness:
    """Liveness of the process executing compaction ``instant`` (heartbeat, else the inflight file's age)."""
    inflight = table.instant_path(Instant(InstantTime(instant), Action.COMPACTION, State.INFLIGHT))
    return attempt_liveness(
        table.storage,
        instant,
        inflight_path=inflight,
        interval_ms=cfg.heartbeat_interval_ms,
        tolerable_misses=cfg.heartbeat_tolerable_misses,
    )


def in_progress_error(table: HudiTable, liveness: AttemptLiveness, what: str = "compaction") -> InstantInProgressError:
    return InstantInProgressError(
        table.base_uri,
        liveness.instant,
        f"{what} {liveness.instant} is being executed by another process: {liveness.describe()} "
        f"({HoodieKey.HEARTBEAT_INTERVAL_MS.key} x {HoodieKey.HEARTBEAT_TOLERABLE_MISSES.key} = "
        f"{liveness.expiry_ms} ms); it is rolled back and re-executed only once the heartbeat expired",
    )


def taken_over_error(table: HudiTable, instant: str, what: str = "compaction") -> InvalidInstantStateError:
    return InvalidInstantStateError(
        table.base_uri,
        instant,
        f"{what} {instant} was taken over by another process (this attempt's heartbeat expired); this process stops "
        "and commits nothing",
    )


class CompactionAttempt:
    """This process's attempt at compaction ``instant``."""

    def __init__(self, table: HudiTable, instant: str, cfg: CompactionConfig) -> None:
        self.table = table
        self.instant = instant
        self.cfg = cfg
        self.token = f"{uuid.uuid4().hex}\n".encode()
        self.heartbeat = Heartbeat(table.storage, instant, interval_ms=cfg.heartbeat_interval_ms, content=self.token)
        self.rolled_back: Instant | None = None

    def claim(self) -> None:
        """Take the plan: refuse a live attempt, roll back a crashed one, start the heartbeat, move to inflight.
        Call under the table lock.

        Raises:
            InstantInProgressError: another process's attempt is live.
            InstantNotFoundError: the plan was committed (or removed) meanwhile.
        """
        table = self.table.refresh()
        pending = table.timeline.get(self.instant, Action.COMPACTION)
        if pending is None or pending.action is not Action.COMPACTION:
            done = table.timeline.get(self.instant, Action.COMMIT)
            detail = "already committed" if done is not None and done.is_completed else "no pending compaction plan"
            raise InstantNotFoundError(table.base_uri, self.instant, detail)
        if pending.state is State.INFLIGHT:
            liveness = compaction_liveness(table, self.instant, self.cfg)
            if liveness.alive:
                raise in_progress_error(table, liveness)
            log.warning(
                "Compaction %s of %s: rolling back a crashed attempt (%s)",
                self.instant,
                table.base_uri,
                liveness.describe(),
            )
            self.rolled_back = rollback_inflight_compaction(table, self.instant, config=self.cfg.rollback_config())
        self.heartbeat.start()
        try:
            table.transition_to_inflight(Instant(pending.time, Action.COMPACTION, State.REQUESTED))
        except BaseException:
            self.heartbeat.stop(delete=True)
            raise

    def ensure_ours(self) -> None:
        """Raise if another process took the plan over (it judged this attempt dead: a pause longer than the
        heartbeat expiry), so a paused attempt stops before writing more files.

        Raises:
            InvalidInstantStateError: the heartbeat is gone or holds another attempt's token.
        """
        if self.heartbeat.lost or not self.heartbeat.is_ours():
            raise taken_over_error(self.table, self.instant)

    def verify(self, stats: list[WriteStat]) -> Callable[[], None]:
        """The check :func:`commit_compaction` runs under the lock, just before writing the completed instant (see
        :func:`~lake_orchestration.hudi.services.compaction.committer.attempt_check`)."""
        return attempt_check(self.table, self.instant, self.heartbeat, stats)

    def abandon(self) -> None:
        """After a failure before the commit: roll this attempt back, under the table lock, if it is still ours (the
        plan is requested again at once instead of after the heartbeat expiry). Never raises."""
        try:
            with table_lock(self.table, operation=f"compaction {self.instant} rollback", config=self.cfg.lock):
                if self.heartbeat.lost or not self.heartbeat.is_ours():
                    self.heartbeat.stop(delete=False)
                    return
                self.heartbeat.stop(delete=True)
                rollback_inflight_compaction(self.table, self.instant, config=self.cfg.rollback_config())
        except Exception as err:  # the original error is what the caller must see
            log.error(
                "Compaction %s of %s failed and its attempt could not be rolled back (%s); the next run rolls it "
                "back once its inflight file is %d ms old",
                self.instant,
                self.table.base_uri,
                err,
                self.cfg.heartbeat_interval_ms * self.cfg.heartbeat_tolerable_misses,
            )
