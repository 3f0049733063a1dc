"""The attempt at a compaction plan: the services' one :class:`~lake_orchestration.hudi.services.attempt.InstantAttempt`
with compaction's rollback.

Hudi 0.14/0.15 rolls an inflight compaction back whenever a run finds it inflight (``preCompact``), which is safe
only with a single compaction runner. Here the attempt holds a heartbeat ``.hoodie/.heartbeat/<instant>`` (the
writer's :class:`~lake_orchestration.hudi.table.heartbeat.Heartbeat`, ``hoodie.client.heartbeat.*``) from before the
requested -> inflight transition until the commit, with a token of its own as content. Under the table lock,
:meth:`InstantAttempt.claim` decides: requested -> take it; inflight with a live heartbeat -> refuse
(:class:`InstantInProgressError`: "compaction <instant> is being executed by another process: heartbeat <time>,
expires <time>"); inflight and expired -> roll the crashed attempt back first. An inflight attempt without a
heartbeat (an older version of this project, or Java) counts as live until its inflight file is as old as the
heartbeat expiry. :meth:`InstantAttempt.verify` runs inside the commit's lock: the plan is still inflight, the
heartbeat still holds our token and every file of the write stats exists -- otherwise nothing is committed.
"""

from __future__ import annotations

from lake_orchestration.errors import InstantNotFoundError
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime
from lake_orchestration.hudi.services.attempt import InstantAttempt
from lake_orchestration.hudi.services.compaction.config import CompactionConfig
from lake_orchestration.hudi.services.rollback.compaction import rollback_inflight_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable


def compaction_attempt(
    table: HudiTable, instant: InstantTime, cfg: CompactionConfig, token: bytes | None = None
) -> InstantAttempt:
    """This process's attempt at compaction ``instant`` (``token``: an executed attempt's, to check it)."""

    def roll_back(t: HudiTable, i: InstantTime) -> Instant | None:
        return rollback_inflight_compaction(t, i, config=cfg.rollback_config())

    return InstantAttempt(
        table,
        instant,
        action=Action.COMPACTION,
        what="compaction",
        interval_ms=cfg.heartbeat_interval_ms,
        tolerable_misses=cfg.heartbeat_tolerable_misses,
        lock=cfg.lock,
        roll_back=roll_back,
        token=token,
    )


def pending_plan(table: HudiTable, instant: InstantTime) -> Instant:
    """The pending compaction ``instant`` on the timeline the table holds.

    Raises:
        InstantNotFoundError: the plan was committed (or removed) meanwhile.
    """
    pending = table.timeline.get(instant, Action.COMPACTION)
    if pending is None or pending.action is not Action.COMPACTION:
        done = table.timeline.get(instant, Action.COMMIT)
        detail = "already committed" if done is not None and done.is_completed else "no pending compaction plan"
        raise InstantNotFoundError(table.base_uri, instant, detail)
    return pending
