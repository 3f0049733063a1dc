"""The table lock as Java 0.15's ``FileSystemBasedLockProvider`` really leaves and treats it (the Java-side tests are
``tests/java/test_beside_java_writer.py``): an empty lock file with ``.lock.crc`` beside it, a create that truncates a
file created in its check-then-create window, an unlock that deletes whoever's lock.

The "Java" actors here do on the real file system exactly what Java's code does (open without O_EXCL, delete).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from lake_orchestration.errors import TableLockedError, TableLockLostError
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import JAVA_EMPTY_LOCK_OWNER, LockConfig, read_lock, table_lock
from tests.trips import trips_options, write_trips_history

FAST = {"hoodie.write.lock.wait_time_ms": "600", "hoodie.write.lock.wait_time_ms_between_retry": "50"}


def _table(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    write_trips_history(path, trips_options(), rows=20, upserts=0, fraction=0.2)
    return path


def _java_lock(path: Path, *, age_s: float) -> Path:
    """Java 0.15's lock: an empty ``lock`` and Hadoop's ``.lock.crc`` (the CRC file of an empty file)."""
    lock = path / ".hoodie" / "lock"
    lock.write_bytes(b"")
    (path / ".hoodie" / ".lock.crc").write_bytes(b"crc\x00\x00\x00\x02\x00")
    t = time.time() - age_s
    os.utime(lock, (t, t))
    return lock


def test_empty_java_lock_file_blocks_names_java_and_never_expires_by_default(tmp_path: Path) -> None:
    path = _table(tmp_path)
    _java_lock(path, age_s=3600)
    table = HudiTable(str(path))
    info = read_lock(table)
    assert info is not None and info.owner == JAVA_EMPTY_LOCK_OWNER and info.foreign and info.expire_ms is None
    with pytest.raises(TableLockedError) as exc:
        with table_lock(table, operation="archive", config=LockConfig.from_options(FAST)):
            pytest.fail("took a Java lock that never expires")
    assert JAVA_EMPTY_LOCK_OWNER in str(exc.value) and "never expires" in str(exc.value)
    assert (path / ".hoodie" / "lock").read_bytes() == b"" and (path / ".hoodie" / ".lock.crc").exists()


def test_expired_java_lock_is_taken_over_with_its_checksum_file(tmp_path: Path) -> None:
    path = _table(tmp_path)
    _java_lock(path, age_s=120)
    cfg = LockConfig.from_options({**FAST, "hoodie.write.lock.filesystem.expire": "1"})
    with table_lock(HudiTable(str(path)), operation="archive", config=cfg) as info:
        assert info.token and b"lockToken" in (path / ".hoodie" / "lock").read_bytes()
        # a leftover .lock.crc would make Java's read of our content fail its checksum
        assert not (path / ".hoodie" / ".lock.crc").exists()
    assert not (path / ".hoodie" / "lock").exists()


def test_a_java_create_racing_ours_keeps_the_lock_java_believes_it_holds(tmp_path: Path) -> None:
    """Java's check passed just before our create; its open (no O_EXCL) then truncates our new file. We must not
    hold the lock then: we wait until the Java writer deletes it (its unlock), and only then hold it."""
    path = _table(tmp_path)
    lock = path / ".hoodie" / "lock"
    java_released = threading.Event()
    stop = threading.Event()

    def java_writer() -> None:
        while not stop.is_set() and not lock.exists():
            time.sleep(0.0005)
        if stop.is_set():
            return
        with open(lock, "wb"):  # Hadoop RawLocalFileSystem.create after its exists() check: truncating open
            pass
        time.sleep(0.8)  # Java's commit under the lock
        java_released.set()
        lock.unlink(missing_ok=True)  # Java's unlock

    java = threading.Thread(target=java_writer, daemon=True)
    java.start()
    cfg = LockConfig.from_options(
        {
            "hoodie.write.lock.wait_time_ms": "10000",
            "hoodie.write.lock.wait_time_ms_between_retry": "50",
            # a Java writer takes the lock file only in multi-writer mode, and our side then declares it too
            "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        }
    )
    try:
        with table_lock(HudiTable(str(path)), operation="archive", config=cfg) as info:
            assert java_released.is_set(), "held the lock while the racing Java writer believed it held it"
            assert read_lock(HudiTable(str(path))) == info
    finally:
        stop.set()
        java.join(timeout=10)


def test_lock_deleted_by_a_java_writer_stops_the_section_at_its_next_change(tmp_path: Path) -> None:
    """Java 0.15 deletes the lock file when its own acquisition gave up (``endTransaction`` -> ``unlock``): locally
    the next timeline change notices at once, without waiting for the heartbeat."""
    path = _table(tmp_path)
    table = HudiTable(str(path))
    cfg = LockConfig.from_options({**FAST, "hoodie.write.lock.heartbeat_interval_ms": "600000"})
    with pytest.raises(TableLockLostError) as exc:
        with table_lock(table, operation="archive", config=cfg):
            table.check_lock()  # still ours
            (path / ".hoodie" / "lock").unlink()
            table.check_lock()
    assert "deleted" in str(exc.value)
