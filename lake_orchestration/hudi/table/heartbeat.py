"""Writer heartbeats: ``.hoodie/.heartbeat/<instant>`` touched every interval while a write runs.

Mirrors ``HoodieHeartbeatClient``: liveness is the file's modification time; a heartbeat older than
``interval * tolerable_misses`` (or missing) marks the instant's writer as gone, so a rollback service may
roll the instant back.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from lake_orchestration.errors import StorageError
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.io.storage import Storage

HEARTBEAT_DIR = ".hoodie/.heartbeat"


def heartbeat_path(storage: Storage, instant: InstantTime) -> str:
    return storage.join(HEARTBEAT_DIR, instant)


def is_heartbeat_expired(
    storage: Storage,
    instant: InstantTime,
    *,
    interval_ms: int = 60_000,
    tolerable_misses: int = 2,
    now_ms: int | None = None,
) -> bool:
    """True if the instant's heartbeat file is missing or older than ``interval_ms * tolerable_misses``."""
    mtime = storage.mtime_ms(heartbeat_path(storage, instant))
    if mtime is None:
        return True
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    return now - mtime > interval_ms * tolerable_misses


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True, kw_only=True)
class AttemptLiveness:
    """Whether the process executing a pending instant (a table service's attempt) is alive, judged by its
    heartbeat ``.hoodie/.heartbeat/<instant>`` or, without one, by the inflight file's age."""

    instant: InstantTime
    alive: bool
    """True while the last sign of life is younger than ``interval * tolerable_misses``."""
    evidence: str
    """What was judged: the heartbeat file, or the inflight file of an attempt that wrote no heartbeat."""
    last_ms: int | None
    """Epoch ms of the last sign of life (None: neither file exists)."""
    expiry_ms: int
    """``interval * tolerable_misses``."""
    owner: bytes = b""
    """Content of the heartbeat file (an attempt's token; empty for Java's and the writer's heartbeats)."""

    @property
    def expires_ms(self) -> int | None:
        return None if self.last_ms is None else self.last_ms + self.expiry_ms

    def describe(self) -> str:
        """``heartbeat <time>, expires <time>`` (UTC) of the evidence."""
        if self.last_ms is None:
            return "no heartbeat"
        return f"{self.evidence} {_utc(self.last_ms)}, expires {_utc(self.expires_ms)}"


def attempt_liveness(
    storage: Storage,
    instant: InstantTime,
    *,
    inflight_path: str | None = None,
    interval_ms: int = 60_000,
    tolerable_misses: int = 2,
    now_ms: int | None = None,
) -> AttemptLiveness:
    """Judge the attempt of ``instant``: its heartbeat file if there is one; else (an attempt by a process that
    writes no heartbeat: an older version of this project, or Java) the inflight file's modification time, so a
    recent attempt counts as live until it is as old as a heartbeat expiry."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    expiry = interval_ms * tolerable_misses
    hb = heartbeat_path(storage, instant)
    mtime = storage.mtime_ms(hb)
    if mtime is not None:
        try:
            owner = storage.read_bytes(hb)
        except StorageError:
            owner = b""
        return AttemptLiveness(
            instant=instant,
            alive=now - mtime <= expiry,
            evidence=f"heartbeat {storage.uri(hb)}",
            last_ms=mtime,
            expiry_ms=expiry,
            owner=owner,
        )
    inflight_mtime = storage.mtime_ms(inflight_path) if inflight_path else None
    if inflight_mtime is None:
        return AttemptLiveness(instant=instant, alive=False, evidence="no heartbeat", last_ms=None, expiry_ms=expiry)
    return AttemptLiveness(
        instant=instant,
        alive=now - inflight_mtime <= expiry,
        evidence=f"no heartbeat; inflight file {storage.uri(inflight_path or '')} written",
        last_ms=inflight_mtime,
        expiry_ms=expiry,
    )


class Heartbeat:
    """Keeps an instant's heartbeat fresh from a daemon thread until :meth:`stop`.

    ``content`` is written on every beat: a table service writes a token identifying its attempt there, so it can
    verify before committing that the heartbeat is still its own (Java reads only the modification time).
    """

    def __init__(
        self, storage: Storage, instant: InstantTime, *, interval_ms: int = 60_000, content: bytes = b""
    ) -> None:
        self.storage = storage
        self.instant = instant
        self.interval_s = interval_ms / 1000
        self.content = content
        self.lost = False
        """True once the heartbeat file was found deleted or holding another attempt's content (only checked when
        ``content`` is set): beating stops then, and the attempt must not commit."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Heartbeat:
        self._beat()
        self._thread = threading.Thread(target=self._run, name=f"hudi-heartbeat-{self.instant}", daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        self.storage.write_bytes(heartbeat_path(self.storage, self.instant), self.content)

    def _refresh(self) -> None:
        """A beat after the first. A local heartbeat with content only gets its modification time refreshed:
        rewriting it truncates the file first, and an :meth:`is_ours` in between (this attempt's own check before a
        task or its commit) would read it empty and judge the attempt taken over. An object store's PUT replaces the
        object atomically."""
        if self.content and self.storage.is_local:
            try:
                os.utime(heartbeat_path(self.storage, self.instant), None)
            except FileNotFoundError:
                self.lost = True  # deleted since the check: rolled back by another process
            except OSError as err:
                raise StorageError(
                    f"Cannot refresh heartbeat ({err})",
                    path=self.storage.uri(heartbeat_path(self.storage, self.instant)),
                ) from err
            return
        self._beat()

    def is_ours(self) -> bool:
        """True if the heartbeat file exists and holds this attempt's content (always True without content)."""
        if not self.content:
            return True
        path = heartbeat_path(self.storage, self.instant)
        try:
            return self.storage.read_bytes(path) == self.content
        except StorageError:
            if self.storage.exists(path):
                raise  # a transient read error: judged again at the next beat
            return False

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                if not self.is_ours():  # rolled back or taken over by another process: never write over it
                    self.lost = True
                    return
                self._refresh()
                if self.lost:
                    return
            except StorageError:  # a transient storage error must not end the beating: the next beat retries
                continue

    def stop(self, *, delete: bool = True) -> None:
        """Stop beating; delete the file when the instant completed (as Hudi does on commit) if it is still ours."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if delete and self.is_ours():
            self.storage.delete_file(heartbeat_path(self.storage, self.instant), missing_ok=True)
