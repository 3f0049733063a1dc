"""A takeover of the table lock that races with its holder's heartbeat (lock.py ``_attempt`` -> ``_try_take_over``).

The taker judged the lock stale (the holder looked paused), then the holder refreshed it before the takeover acted:
the holder must keep its lock, and the taker must not believe it holds it too. Two threads of one process, the
holder acquiring through ``table_lock`` as any service does and the taker making one real attempt
(``lock._attempt``, what ``table_lock`` loops over in another process), with hooks at the exact points of the race:
between the staleness check and the takeover, and inside the takeover while the stale-looking file is moved aside to
be judged.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lake_orchestration.hudi.table import HudiTable, lock
from lake_orchestration.hudi.table.lock import LockConfig, LockInfo, read_lock, table_lock
from tests.trips import trips_options, write_trips_history

# heartbeats only when the test says so: one minute apart, stale one minute after the last one
CFG = LockConfig(heartbeat_interval_ms=60_000, tolerable_misses=1, wait_time_ms=0, retry_wait_ms=10)


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    write_trips_history(path, trips_options(), rows=10, upserts=0, fraction=0.2)
    return path


def _paused(lock_file: Path) -> None:
    """The holder looks paused past its expiry: the lock file's mtime two minutes old."""
    old = time.time() - 120
    os.utime(lock_file, (old, old))


def _leftovers(hoodie: Path) -> list[str]:
    return sorted(p.name for p in hoodie.iterdir() if p.name.startswith(("lock.", ".lock.")) and p.name != "lock")


def _held(table: HudiTable) -> Any:
    storage, path = lock.lock_storage(table, CFG)
    return lock._HELD[storage.uri(path)]


def test_holder_refreshing_between_staleness_check_and_takeover_keeps_the_lock(
    table_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holder_table, taker_table = HudiTable(str(table_path)), HudiTable(str(table_path))
    lock_file = table_path / ".hoodie" / "lock"
    original: Callable[..., bool] = lock._try_take_over
    seen: list[LockInfo] = []

    with table_lock(holder_table, operation="holder", config=CFG) as info:
        held = _held(holder_table)

        def refresh_then_take_over(storage: Any, path: str, stale: LockInfo, cfg: LockConfig) -> bool:
            seen.append(stale)
            assert stale.is_stale(lock._now_ms()) and stale.token == info.token  # the taker judged it stale ...
            held.beat()  # ... and the holder's heartbeat lands right now
            return original(storage, path, stale, cfg)

        monkeypatch.setattr(lock, "_try_take_over", refresh_then_take_over)
        _paused(lock_file)
        storage, path = lock.lock_storage(taker_table, CFG)
        result = lock._attempt(taker_table, storage, path, "taker", CFG)

        assert len(seen) == 1, "the takeover path was not reached"
        assert not isinstance(result, lock._Held), "the taker believes it holds a live lock"
        assert isinstance(result, LockInfo) and result.token == info.token
        current = read_lock(holder_table, CFG)
        assert current is not None and current.token == info.token and not current.is_stale(lock._now_ms())
        held.ensure_held()  # the holder still holds it: no TableLockLostError
        assert not held.lost
        assert _leftovers(table_path / ".hoodie") == []
    assert not lock_file.exists()  # released by its holder


def test_holder_checking_while_the_takeover_judges_the_moved_file_keeps_the_lock(
    table_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local takeover moves the lock file aside (rename) to judge it, and puts it back when it was refreshed:
    a heartbeat or check of the holder in that window found no lock file and took the lock for lost."""
    holder_table, taker_table = HudiTable(str(table_path)), HudiTable(str(table_path))
    lock_file = table_path / ".hoodie" / "lock"
    real_rename = os.rename
    real_read = lock._read
    holder_saw_no_file = threading.Event()
    holder_errors: list[BaseException] = []
    moved: list[str] = []

    with table_lock(holder_table, operation="holder", config=CFG) as info:
        held = _held(holder_table)
        holder_thread: threading.Thread | None = None

        def holder_beat() -> None:
            try:
                held.beat()
            except BaseException as err:  # reported to the test thread
                holder_errors.append(err)

        def read_watching_holder(storage: Any, path: str, cfg: LockConfig) -> LockInfo | None:
            found = real_read(storage, path, cfg)
            if threading.current_thread() is holder_thread and found is None:
                holder_saw_no_file.set()
            return found

        def rename_with_holder_check(src: Any, dst: Any) -> None:
            if str(src) != str(lock_file):
                real_rename(src, dst)
                return
            held.beat()  # the holder refreshed between the staleness check and this takeover
            real_rename(src, dst)
            moved.append(str(dst))
            nonlocal holder_thread
            holder_thread = threading.Thread(target=holder_beat, name="holder-heartbeat")
            holder_thread.start()  # the holder's next heartbeat runs while the file is moved aside
            assert holder_saw_no_file.wait(10), "the holder's heartbeat never looked at the lock path"

        monkeypatch.setattr(lock, "_read", read_watching_holder)
        monkeypatch.setattr(lock.os, "rename", rename_with_holder_check)
        _paused(lock_file)
        storage, path = lock.lock_storage(taker_table, CFG)
        result = lock._attempt(taker_table, storage, path, "taker", CFG)
        monkeypatch.setattr(lock.os, "rename", real_rename)
        assert holder_thread is not None and moved, "the takeover never moved the lock file"
        holder_thread.join(10)
        assert not holder_thread.is_alive()

        assert not isinstance(result, lock._Held), "the taker believes it holds a live lock"
        assert isinstance(result, LockInfo) and result.token == info.token
        assert holder_errors == []
        assert not held.lost, f"the holder took its lock for lost: {held.lost_detail}"
        held.ensure_held()
        current = read_lock(holder_table, CFG)
        assert current is not None and current.token == info.token
        assert _leftovers(table_path / ".hoodie") == []
    assert not lock_file.exists()


def test_holder_refresh_landing_inside_a_justified_takeover_reports_the_lock_lost(
    table_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holder really was stale: its heartbeat read the lock as its own, then the taker moved the file aside
    before the holder's refresh (utime) landed. The takeover goes through; the holder must report the lock lost
    (TableLockLostError, not a bare FileNotFoundError) and exactly one process holds it."""
    holder_table, taker_table = HudiTable(str(table_path)), HudiTable(str(table_path))
    lock_file = table_path / ".hoodie" / "lock"
    real_rename, real_utime = os.rename, os.utime
    renamed = threading.Event()
    taken: list[Any] = []

    def taker() -> None:
        storage, path = lock.lock_storage(taker_table, CFG)
        taken.append(lock._attempt(taker_table, storage, path, "taker", CFG))

    def rename_signalling(src: Any, dst: Any) -> None:
        real_rename(src, dst)
        if str(src) == str(lock_file):
            renamed.set()

    with table_lock(holder_table, operation="holder", config=CFG):
        held = _held(holder_table)
        taker_thread = threading.Thread(target=taker, name="taker")

        def utime_after_the_takers_rename(path: Any, *args: Any, **kwargs: Any) -> None:
            if str(path) == str(lock_file) and not taker_thread.is_alive() and not taken:
                taker_thread.start()
                assert renamed.wait(10), "the taker never moved the lock file"
            real_utime(path, *args, **kwargs)

        _paused(lock_file)
        monkeypatch.setattr(lock.os, "rename", rename_signalling)
        monkeypatch.setattr(lock.os, "utime", utime_after_the_takers_rename)
        with pytest.raises(lock.TableLockLostError):
            held.ensure_held()
        taker_thread.join(10)
        monkeypatch.setattr(lock.os, "utime", real_utime)
        monkeypatch.setattr(lock.os, "rename", real_rename)
        (result,) = taken
        assert isinstance(result, lock._Held), "a justified takeover did not take the lock"
        current = read_lock(taker_table, CFG)
        assert current is not None and current.token == result.info.token
        result.release()
    assert not lock_file.exists()
