"""Triggers: the deferred halves of the sensors, and an event trigger for asset watchers.

* :class:`HudiPendingCompactionTrigger` fires when the table has pending compaction plans (FIFO/LIFO, at most
  ``max_plans``, those in ``exclude`` left out); the event carries their instants.
* :class:`HudiStaleInflightTrigger` fires when pending writes are stale (expired heartbeat, or no heartbeat and older
  than ``timeout_seconds``).
* :class:`HudiCommitTrigger` (a ``BaseEventTrigger``, for ``AssetWatcher``) fires on each new completed commit, like
  the Iceberg provider's snapshot trigger.
* :class:`HudiNewCommitsTrigger` fires once completed commits newer than a checkpoint exist (the deferred half of
  :class:`~lake_orchestration.airflow.sensors.HudiNewCommitsSensor`); the event carries the new last instant.

The timeline checks are the service core's (:func:`~lake_orchestration.hudi.services.compaction.select_pending_plans`,
:func:`~lake_orchestration.hudi.services.rollback.stale_writes`) run in a thread; the table's connection is read with
the async connection API, so no secret is in the trigger's serialized kwargs (only the connection id and base path).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

from lake_orchestration.airflow.hooks import HudiTableHook, HudiTableLocation


def pending_plans(
    location: HudiTableLocation, *, seq: str = "FIFO", max_plans: int | None = None, exclude: list[str] | None = None
) -> list[str]:
    """Pending compaction instants of the table (the sensor's poke and the trigger's check)."""
    from lake_orchestration.hudi.services.compaction import select_pending_plans

    return select_pending_plans(location.open_table(), seq=seq, max_plans=max_plans, exclude=set(exclude or ()))


def stale_inflight(
    location: HudiTableLocation,
    *,
    interval_ms: int | None = None,
    tolerable_misses: int | None = None,
    timeout_seconds: float | None = None,
) -> list[dict[str, str]]:
    """Stale pending writes of the table, as ``{"instant", "action", "reason"}`` objects (oldest first)."""
    from lake_orchestration.hudi.services.rollback import stale_writes
    from lake_orchestration.hudi.services.rollback.config import RollbackConfig

    table = location.open_table()
    heartbeat = RollbackConfig.from_options(location.service_options()).heartbeat
    found = stale_writes(
        table,
        interval_ms=interval_ms if interval_ms is not None else heartbeat.interval_ms,
        tolerable_misses=tolerable_misses if tolerable_misses is not None else heartbeat.tolerable_misses,
        timeout_s=timeout_seconds,
    )
    return [{"instant": str(s.instant.time), "action": s.instant.action.value, "reason": s.reason} for s in found]


def completed_commits(location: HudiTableLocation) -> list[tuple[str, str]]:
    """``(instant, action)`` of every completed commit on the active timeline, in instant order."""
    return [(str(i.time), i.action.value) for i in location.open_table().timeline.completed_commits()]


TABLE_SERVICE_OPERATIONS = frozenset({"COMPACT", "LOG_COMPACT", "CLUSTER"})
"""``operationType`` of the commits table services write: they rewrite records without changing their commit time,
so an incremental query over them alone returns nothing (Flink's ``read.streaming.skip_compaction`` /
``skip_clustering`` skip them the same way)."""


def commits_after(
    location: HudiTableLocation, after_instant: str | None, *, skip_table_services: bool = True
) -> list[tuple[str, str]]:
    """``(instant, action)`` of the completed commits whose instant time is after ``after_instant`` (None: all), in
    instant order; with ``skip_table_services``, commits of compaction, log compaction and clustering left out (their
    commit metadata's ``operationType``: they bring no new rows)."""
    table = location.open_table()
    found = []
    for i in table.timeline.completed_commits():
        if after_instant is not None and i.time <= after_instant:
            continue
        if skip_table_services and table.commit_metadata(i).operation_type in TABLE_SERVICE_OPERATIONS:
            continue
        found.append((str(i.time), i.action.value))
    return found


class _TableTrigger(BaseTrigger):
    """A trigger polling one table's timeline every ``poll_interval`` seconds."""

    def __init__(self, *, hudi_conn_id: str, base_path: str | None = None, poll_interval: float = 60.0) -> None:
        super().__init__()
        self.hudi_conn_id = hudi_conn_id
        self.base_path = base_path
        self.poll_interval = poll_interval

    def _kwargs(self) -> dict[str, Any]:
        return {"hudi_conn_id": self.hudi_conn_id, "base_path": self.base_path, "poll_interval": self.poll_interval}

    async def _location(self) -> HudiTableLocation:
        return await HudiTableHook(self.hudi_conn_id, base_path=self.base_path).aget_conn()


class HudiPendingCompactionTrigger(_TableTrigger):
    """Fires ``{"status": "success", "instants": [...]}`` once the table has pending compaction plans (or
    ``{"status": "error", "message": ...}`` when the table cannot be read)."""

    def __init__(
        self,
        *,
        hudi_conn_id: str,
        base_path: str | None = None,
        poll_interval: float = 60.0,
        seq: str = "FIFO",
        max_plans: int | None = None,
        exclude: list[str] | None = None,
    ) -> None:
        super().__init__(hudi_conn_id=hudi_conn_id, base_path=base_path, poll_interval=poll_interval)
        self.seq = seq
        self.max_plans = max_plans
        self.exclude = list(exclude or ())

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {**self._kwargs(), "seq": self.seq, "max_plans": self.max_plans, "exclude": self.exclude},
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            location = await self._location()
            while True:
                plans = await asyncio.to_thread(
                    pending_plans, location, seq=self.seq, max_plans=self.max_plans, exclude=self.exclude
                )
                if plans:
                    yield TriggerEvent({"status": "success", "instants": plans})
                    return
                self.log.info(
                    "No pending compaction plan on %s; next check in %s s", location.base_path, self.poll_interval
                )
                await asyncio.sleep(self.poll_interval)
        except Exception as err:
            yield TriggerEvent({"status": "error", "message": f"{type(err).__name__}: {err}"})


class HudiStaleInflightTrigger(_TableTrigger):
    """Fires ``{"status": "success", "stale": [{"instant", "action", "reason"}, ...]}`` once pending writes are
    stale."""

    def __init__(
        self,
        *,
        hudi_conn_id: str,
        base_path: str | None = None,
        poll_interval: float = 60.0,
        interval_ms: int | None = None,
        tolerable_misses: int | None = None,
        timeout_seconds: float | None = None,
    ) -> None:
        super().__init__(hudi_conn_id=hudi_conn_id, base_path=base_path, poll_interval=poll_interval)
        self.interval_ms = interval_ms
        self.tolerable_misses = tolerable_misses
        self.timeout_seconds = timeout_seconds

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                **self._kwargs(),
                "interval_ms": self.interval_ms,
                "tolerable_misses": self.tolerable_misses,
                "timeout_seconds": self.timeout_seconds,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            location = await self._location()
            while True:
                stale = await asyncio.to_thread(
                    stale_inflight,
                    location,
                    interval_ms=self.interval_ms,
                    tolerable_misses=self.tolerable_misses,
                    timeout_seconds=self.timeout_seconds,
                )
                if stale:
                    yield TriggerEvent({"status": "success", "stale": stale})
                    return
                await asyncio.sleep(self.poll_interval)
        except Exception as err:
            yield TriggerEvent({"status": "error", "message": f"{type(err).__name__}: {err}"})


class HudiCommitTrigger(_TableTrigger, BaseEventTrigger):
    """An event per new completed commit (``commit``, ``deltacommit``, ``replacecommit``) of the table:
    ``{"base_path", "instant", "action"}``. For ``AssetWatcher(name=..., trigger=HudiCommitTrigger(...))``.

    The commits completed when the trigger starts (or, with ``after_instant``, those up to it) are the baseline; each
    commit completing later fires once, also one whose instant time is older than the baseline's last (a write that
    started earlier and finished later). A restarted trigger starts a new baseline: commits completed while no
    triggerer ran are not announced.
    """

    def __init__(
        self,
        *,
        hudi_conn_id: str,
        base_path: str | None = None,
        poll_interval: float = 60.0,
        after_instant: str | None = None,
    ) -> None:
        # MRO: _TableTrigger -> BaseEventTrigger (the triggerer's asset_state_store) -> BaseTrigger
        super().__init__(hudi_conn_id=hudi_conn_id, base_path=base_path, poll_interval=poll_interval)
        self.after_instant = after_instant

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {**self._kwargs(), "after_instant": self.after_instant},
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        location = await self._location()
        commits = await asyncio.to_thread(completed_commits, location)
        seen = {t for t, _ in commits if self.after_instant is None or t <= self.after_instant}
        while True:
            for instant, action in await asyncio.to_thread(completed_commits, location):
                if instant not in seen:
                    seen.add(instant)
                    yield TriggerEvent({"base_path": location.base_path, "instant": instant, "action": action})
            await asyncio.sleep(self.poll_interval)


class HudiNewCommitsTrigger(_TableTrigger):
    """Fires ``{"status": "success", "instant": <the last new instant>, "instants": [...]}`` once the table has
    completed commits whose instant time is after ``after_instant`` (None: any completed commit), compaction, log
    compaction and clustering commits left out unless ``skip_table_services=False``; ``{"status": "error",
    "message": ...}`` when the table cannot be read. The checkpoint is a kwarg, so a restarted triggerer waits for
    the same commits."""

    def __init__(
        self,
        *,
        hudi_conn_id: str,
        base_path: str | None = None,
        poll_interval: float = 60.0,
        after_instant: str | None = None,
        skip_table_services: bool = True,
    ) -> None:
        super().__init__(hudi_conn_id=hudi_conn_id, base_path=base_path, poll_interval=poll_interval)
        self.after_instant = after_instant
        self.skip_table_services = skip_table_services

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {**self._kwargs(), "after_instant": self.after_instant, "skip_table_services": self.skip_table_services},
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            location = await self._location()
            while True:
                new = await asyncio.to_thread(
                    commits_after, location, self.after_instant, skip_table_services=self.skip_table_services
                )
                if new:
                    yield TriggerEvent({"status": "success", "instant": new[-1][0], "instants": [t for t, _ in new]})
                    return
                self.log.info(
                    "No commit after %s on %s; next check in %s s",
                    self.after_instant or "the start",
                    location.base_path,
                    self.poll_interval,
                )
                await asyncio.sleep(self.poll_interval)
        except Exception as err:
            yield TriggerEvent({"status": "error", "message": f"{type(err).__name__}: {err}"})
