"""Writer heartbeats: ``.hoodie/.heartbeat/<instant>`` touched every interval while a write runs.

Mirrors ``HoodieHeartbeatClient``: liveness is the file's modification time; a heartbeat older than
``interval * tolerable_misses`` (or missing) marks the instant's writer as gone, so a rollback service may
roll the instant back.
"""

from __future__ import annotations

import threading
import time

from lake_orchestration.io.storage import Storage

HEARTBEAT_DIR = ".hoodie/.heartbeat"


def heartbeat_path(storage: Storage, instant: str) -> str:
    return storage.join(HEARTBEAT_DIR, instant)


def is_heartbeat_expired(
    storage: Storage, instant: str, *, interval_ms: int = 60_000, tolerable_misses: int = 2, now_ms: int | None = None
) -> bool:
    """True if the instant's heartbeat file is missing or older than ``interval_ms * tolerable_misses``."""
    mtime = storage.mtime_ms(heartbeat_path(storage, instant))
    if mtime is None:
        return True
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    return now - mtime > interval_ms * tolerable_misses


class Heartbeat:
    """Keeps an instant's heartbeat fresh from a daemon thread until :meth:`stop`."""

    def __init__(self, storage: Storage, instant: str, *, interval_ms: int = 60_000) -> None:
        self.storage = storage
        self.instant = instant
        self.interval_s = interval_ms / 1000
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Heartbeat:
        self._beat()
        self._thread = threading.Thread(target=self._run, name=f"hudi-heartbeat-{self.instant}", daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        self.storage.write_bytes(heartbeat_path(self.storage, self.instant), b"")

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._beat()

    def stop(self, *, delete: bool = True) -> None:
        """Stop beating; delete the file when the instant completed (as Hudi does on commit)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if delete:
            self.storage.delete_file(heartbeat_path(self.storage, self.instant), missing_ok=True)
