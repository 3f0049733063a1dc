"""The table lock (issue 11 item 5) and the removal of create-if-absent's abandoned temp files (item 7).

The lock is ``.hoodie/lock`` as Java's ``FileSystemBasedLockProvider`` writes it; holders in other processes are real
processes here (``python -c`` from the repository root), never a mocked file system.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.datagen import generate_trips
from lake_orchestration.errors import InvalidOptionError, TableLockedError
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, read_lock, table_lock
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.oracle import hudi_rs_snapshot
from tests.trips import trips_options, write_trips_history

REPO = Path(__file__).resolve().parents[2]
FAST = {"hoodie.write.lock.wait_time_ms": "600", "hoodie.write.lock.wait_time_ms_between_retry": "50"}
JAVA_LOCK_INFO = {
    "lockCreateTime": "2024-05-01 10:11:12.345",
    "lockThreadName": "pool-21-thread-1",
    "lockStacksInfo": ["org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider.tryLock (x.java:1)"],
}


def _table(tmp_path: Path, commits: int = 3, table_type: TableType = TableType.MERGE_ON_READ) -> Path:
    path = tmp_path / "t"
    write_trips_history(path, trips_options(table_type=table_type), rows=30, upserts=commits - 1, fraction=0.2)
    return path


def _wait_for(cond: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


_HOLDER = """
import sys, time
from pathlib import Path
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig, table_lock
path, interval, misses, release = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
cfg = LockConfig(heartbeat_interval_ms=interval, tolerable_misses=misses)
with table_lock(HudiTable(path), operation="holder-op", config=cfg):
    Path(path, "held").write_text("1")
    while not release.exists():
        time.sleep(0.02)
Path(path, "released").write_text("1")
"""


def _spawn_holder(path: Path, *, interval_ms: int, misses: int) -> tuple[subprocess.Popen[str], Path]:
    release = path.parent / "release"
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_HOLDER), str(path), str(interval_ms), str(misses), str(release)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: (path / "held").exists() or proc.poll() is not None, "the holder process to take the lock")
    assert proc.poll() is None, proc.communicate()
    return proc, release


def _finish(proc: subprocess.Popen[str], release: Path) -> None:
    release.write_text("1")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


def _write_lock(path: Path, content: dict, *, age_s: float) -> Path:
    lock = path / ".hoodie" / "lock"
    lock.write_text(json.dumps(content, indent=2))
    t = time.time() - age_s
    os.utime(lock, (t, t))
    return lock


def test_table_lock_acquire_writes_java_lock_info_and_release_deletes_it(tmp_path: Path) -> None:
    path = _table(tmp_path, commits=1)
    table = HudiTable(str(path))
    lock = path / ".hoodie" / "lock"
    with table_lock(table, operation="archive") as info:
        content = json.loads(lock.read_text())
        # what Java's LockInfo holds, plus who holds it and for how long it stays valid without a heartbeat
        assert {"lockCreateTime", "lockThreadName", "lockStacksInfo"} <= set(content)
        assert isinstance(content["lockStacksInfo"], list) and content["lockStacksInfo"]
        assert content["lockOperation"] == "archive"
        assert content["lockOwner"].endswith(f":{os.getpid()}")
        assert content["lockExpireMs"] == LockConfig().expiry_ms == 20_000
        assert info.token == content["lockToken"] and info.since == content["lockCreateTime"]
        # the lock file is neither an instant nor an unknown timeline file, and hudi-rs reads the table beside it
        assert HudiTable(str(path)).timeline.ignored_files == ()
        rows = hudi_rs_snapshot(path)
        assert rows is not None and rows.num_rows == 30
        assert read_lock(table) == info
    assert not lock.exists()
    assert not list((path / ".hoodie").glob("lock*"))


def test_table_lock_is_reentrant_in_one_thread_and_excludes_other_threads(tmp_path: Path) -> None:
    path = _table(tmp_path, commits=1)
    table = HudiTable(str(path))
    cfg = LockConfig.from_options(FAST)
    errors: list[BaseException] = []

    def other_thread() -> None:
        try:
            with table_lock(HudiTable(str(path)), operation="other", config=cfg):
                pass
        except TableLockedError as err:
            errors.append(err)

    with table_lock(table, operation="compaction run", config=cfg) as outer:
        with table_lock(table, operation="compaction schedule", config=cfg) as inner:
            assert inner == outer
        assert (path / ".hoodie" / "lock").exists()  # the inner exit did not release it
        t = threading.Thread(target=other_thread)
        t.start()
        t.join(30)
    assert len(errors) == 1 and "compaction run" in str(errors[0])
    assert not (path / ".hoodie" / "lock").exists()


def test_table_lock_held_by_another_process_waits_then_names_owner_and_since(tmp_path: Path) -> None:
    path = _table(tmp_path, commits=1)
    proc, release = _spawn_holder(path, interval_ms=200, misses=50)
    try:
        held = read_lock(HudiTable(str(path)))
        assert held is not None and held.owner.endswith(f":{proc.pid}")
        t0 = time.monotonic()
        with pytest.raises(TableLockedError) as exc:
            with table_lock(HudiTable(str(path)), operation="archive", config=LockConfig.from_options(FAST)):
                pytest.fail("acquired a lock held by another live process")
        assert time.monotonic() - t0 >= 0.5  # it waited (hoodie.write.lock.wait_time_ms=600)
        err = exc.value
        assert err.owner == held.owner and err.operation == "holder-op" and err.since == held.since
        assert err.path == str(path / ".hoodie" / "lock")
        msg = str(err)
        for part in (str(path), held.owner, "(holder-op)", held.since, "lock file", "only if that process is gone"):
            assert part in msg
        assert read_lock(HudiTable(str(path))).token == held.token  # untouched

        # a waiter with a long enough wait gets the lock once the holder releases it
        releaser = threading.Timer(0.5, release.write_text, args=("1",))
        releaser.start()
        long_wait = LockConfig.from_options({**FAST, "hoodie.write.lock.wait_time_ms": "30000"})
        with table_lock(HudiTable(str(path)), operation="archive", config=long_wait) as mine:
            assert mine.token != held.token
            assert read_lock(HudiTable(str(path))).token == mine.token
        releaser.join()
    finally:
        _finish(proc, release)


def test_table_lock_live_holder_kept_fresh_by_heartbeat_is_never_taken_over(tmp_path: Path) -> None:
    path = _table(tmp_path, commits=1)
    # expiry 8 x 250 ms = 2 s; the waiter tries for 4 s, twice the expiry
    proc, release = _spawn_holder(path, interval_ms=250, misses=8)
    try:
        held = read_lock(HudiTable(str(path)))
        assert held is not None and held.expire_ms == 2000
        cfg = LockConfig.from_options({**FAST, "hoodie.write.lock.wait_time_ms": "4000"})
        with pytest.raises(TableLockedError):
            with table_lock(HudiTable(str(path)), operation="clean", config=cfg):
                pytest.fail("took over a live lock")
        now = read_lock(HudiTable(str(path)))
        assert now is not None and now.token == held.token
        assert now.mtime_ms > held.mtime_ms  # the heartbeat refreshed it meanwhile
    finally:
        _finish(proc, release)


def test_table_lock_stale_lock_taken_over_only_after_its_expiry(tmp_path: Path) -> None:
    path = _table(tmp_path, commits=1)
    dead = {
        **JAVA_LOCK_INFO,
        "lockOwner": "gone-host:4242",
        "lockOperation": "archive",
        "lockToken": "f" * 32,
        "lockHeartbeatIntervalMs": 10000,
        "lockExpireMs": 30000,
    }
    cfg = LockConfig.from_options(FAST)
    # heartbeat 0.5 s old, expiry 30 s: live
    _write_lock(path, dead, age_s=0.5)
    with pytest.raises(TableLockedError) as exc:
        with table_lock(HudiTable(str(path)), operation="clean", config=cfg):
            pytest.fail("took over a lock before its expiry")
    assert exc.value.owner == "gone-host:4242" and exc.value.operation == "archive"
    assert json.loads((path / ".hoodie" / "lock").read_text())["lockToken"] == "f" * 32
    # 60 s old: stale, taken over
    _write_lock(path, dead, age_s=60)
    with table_lock(HudiTable(str(path)), operation="clean", config=cfg) as mine:
        content = json.loads((path / ".hoodie" / "lock").read_text())
        assert content["lockToken"] == mine.token != "f" * 32
        assert content["lockOperation"] == "clean"
    assert not list((path / ".hoodie").glob("lock*"))  # neither the lock nor the moved-away stale one remain


def test_table_lock_java_lock_file_blocks_and_expires_only_by_filesystem_expire(tmp_path: Path) -> None:
    path = _table(tmp_path, commits=1)
    # A lock written by a Java writer (no heartbeat fields), an hour old: Java's default expire 0 = never
    _write_lock(path, JAVA_LOCK_INFO, age_s=3600)
    with pytest.raises(TableLockedError) as exc:
        with table_lock(HudiTable(str(path)), operation="archive", config=LockConfig.from_options(FAST)):
            pytest.fail("took over a Java lock that never expires")
    assert "pool-21-thread-1" in exc.value.owner and "never expires" in str(exc.value)
    assert exc.value.since == JAVA_LOCK_INFO["lockCreateTime"]
    # with hoodie.write.lock.filesystem.expire=1 (minute), an hour-old Java lock is stale, as Java decides
    cfg = LockConfig.from_options({**FAST, "hoodie.write.lock.filesystem.expire": "1"})
    with table_lock(HudiTable(str(path)), operation="archive", config=cfg):
        assert "lockToken" in json.loads((path / ".hoodie" / "lock").read_text())
    assert not (path / ".hoodie" / "lock").exists()


def test_table_lock_filesystem_path_option_moves_the_lock_file(tmp_path: Path) -> None:
    path = _table(tmp_path, commits=1)
    lock_dir = tmp_path / "locks"
    cfg = LockConfig.from_options({"hoodie.write.lock.filesystem.path": str(lock_dir)})
    with table_lock(HudiTable(str(path)), operation="archive", config=cfg) as info:
        assert info.path == str(lock_dir / "lock") and (lock_dir / "lock").exists()
        assert not (path / ".hoodie" / "lock").exists()
    assert not (lock_dir / "lock").exists()


def test_lock_config_round_trips_through_its_options(tmp_path: Path) -> None:
    opts = {
        "hoodie.write.lock.filesystem.path": str(tmp_path / "locks"),
        "hoodie.write.lock.wait_time_ms": "1234",
        "hoodie.write.lock.heartbeat_interval_ms": "500",
        "hoodie.client.heartbeat.tolerable.misses": "3",
        "hoodie.write.lock.filesystem.expire": "7",
        "hoodie.write.lock.provider": "FileSystemBasedLockProvider",
    }
    cfg = LockConfig.from_options(opts)
    assert (cfg.wait_time_ms, cfg.expiry_ms, cfg.expire_minutes, cfg.path) == (1234, 1500, 7, str(tmp_path / "locks"))
    assert LockConfig.from_options(cfg.to_options()) == cfg
    assert LockConfig.from_options({}) == LockConfig()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hoodie.write.lock.wait_time_ms", "abc"),
        ("hoodie.write.lock.wait_time_ms", "-1"),
        ("hoodie.write.lock.heartbeat_interval_ms", "0"),
        ("hoodie.write.lock.filesystem.expire", "x"),
        ("hoodie.write.lock.provider", "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"),
    ],
)
def test_lock_config_invalid_value_names_key_and_value(key: str, value: str) -> None:
    with pytest.raises(InvalidOptionError) as exc:
        LockConfig.from_options({key: value})
    assert key in str(exc.value) and value in str(exc.value)


def test_services_refuse_while_locked_and_write_nothing(tmp_path: Path) -> None:
    path = _table(tmp_path, commits=4)
    busy = {
        **JAVA_LOCK_INFO,
        "lockOwner": "other-host:1",
        "lockOperation": "archive",
        "lockToken": "a" * 32,
        "lockHeartbeatIntervalMs": 60000,
        "lockExpireMs": 120000,
    }
    _write_lock(path, busy, age_s=0)
    before = sorted(p.name for p in (path / ".hoodie").iterdir())
    archive_opts = {
        **FAST,
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
        "hoodie.cleaner.commits.retained": "1",
    }
    with pytest.raises(TableLockedError):
        run_archive(HudiTable(str(path)), ArchiveConfig.from_options(archive_opts))
    with pytest.raises(TableLockedError):
        run_clean(HudiTable(str(path)), CleanConfig.from_options({**FAST, "hoodie.cleaner.commits.retained": "1"}))
    from lake_orchestration.hudi.services.compaction import CompactionConfig

    with pytest.raises(TableLockedError):
        schedule_compaction(HudiTable(str(path)), config=CompactionConfig.from_options(FAST), force=True)
    with pytest.raises(TableLockedError):
        write_table(
            str(path),
            generate_trips(5, partitions=2, seed=7),
            operation="insert",
            options=WriteOptions.from_hudi_options(FAST),
        )
    assert sorted(p.name for p in (path / ".hoodie").iterdir()) == before
    # the CLI passes --option hoodie.write.lock.* through and reports the holder
    res = CliRunner().invoke(cli, ["archive", str(path), *[f"--option={k}={v}" for k, v in archive_opts.items()]])
    assert res.exit_code == 1
    assert "is locked by other-host:1 (archive)" in res.output
    assert sorted(p.name for p in (path / ".hoodie").iterdir()) == before


def test_clean_removes_abandoned_create_if_absent_temp_files_after_heartbeat_expiry(tmp_path: Path) -> None:
    path = _table(tmp_path, commits=2, table_type=TableType.COPY_ON_WRITE)
    hoodie = path / ".hoodie"
    commit = next(p.name for p in hoodie.iterdir() if p.name.endswith(".commit"))
    # what a process killed between the temp write and the link leaves (io/storage.py create_if_absent)
    old_tmp = hoodie / f"{commit}.{'1' * 32}.tmp"
    old_tmp.write_bytes(b"{}")
    part = next(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    old_log_tmp = part / f".x_20240101000000000.log.1_0-1-0.{'2' * 32}.tmp"
    old_log_tmp.write_bytes(b"#HUDI#")
    fresh_tmp = hoodie / f"{commit}.{'3' * 32}.tmp"  # a create-if-absent in progress right now
    fresh_tmp.write_bytes(b"{}")
    t = time.time() - 3600
    for p in (old_tmp, old_log_tmp):
        os.utime(p, (t, t))
    assert old_tmp.name in HudiTable(str(path)).timeline.ignored_files  # warned about on every load until removed

    dry = run_clean(HudiTable(str(path)), dry_run=True)
    assert sorted(dry.temp_files) == sorted([f".hoodie/{old_tmp.name}", f"{part.name}/{old_log_tmp.name}"])
    assert old_tmp.exists() and old_log_tmp.exists()

    res = CliRunner().invoke(cli, ["clean", str(path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert sorted(out["temp_files_removed"]) == sorted(dry.temp_files)
    assert not old_tmp.exists() and not old_log_tmp.exists()
    assert fresh_tmp.exists()  # younger than the heartbeat expiry: may belong to a live process
    assert old_tmp.name not in HudiTable(str(path)).timeline.ignored_files


def test_dagster_table_options_reach_every_service_lock_config(tmp_path: Path) -> None:
    from lake_orchestration.dagster.config import HudiTableConfig
    from lake_orchestration.hudi.services.archive import ArchiveConfig
    from lake_orchestration.hudi.services.clean import CleanConfig
    from lake_orchestration.hudi.services.compaction import CompactionConfig

    cfg = HudiTableConfig(
        name="t",
        base_path=str(tmp_path / "t"),
        archive_options={"hoodie.write.lock.wait_time_ms": 1234, "hoodie.write.lock.filesystem.path": "/locks"},
    )
    locks = [
        CompactionConfig.from_options(cfg.service_options("compaction")).lock,
        CleanConfig.from_options(cfg.service_options("clean")).lock,
        ArchiveConfig.from_options(cfg.service_options("archive")).lock,
        LockConfig.from_options(cfg.service_options()),  # rollback
    ]
    assert {(lk.wait_time_ms, lk.path) for lk in locks} == {(1234, "/locks")}


def test_compaction_rerun_with_custom_lock_path_rolls_back_under_the_same_lock(tmp_path: Path) -> None:
    from lake_orchestration.hudi.model.instant import Action, Instant, State
    from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction

    path = _table(tmp_path, commits=3)
    lock_dir = tmp_path / "locks"
    # another lock file at the default place: whoever wrote it, a run configured with another path must not use it
    busy = {**JAVA_LOCK_INFO, "lockOwner": "other-host:1", "lockToken": "b" * 32, "lockExpireMs": 600_000}
    _write_lock(path, busy, age_s=0)
    cfg = CompactionConfig.from_options({**FAST, "hoodie.write.lock.filesystem.path": str(lock_dir)})
    sched = schedule_compaction(HudiTable(str(path)), config=cfg, force=True)
    assert sched.instant is not None
    # an attempt that crashed an hour ago: the plan inflight, no heartbeat
    HudiTable(str(path)).transition_to_inflight(Instant(sched.instant, Action.COMPACTION, State.REQUESTED))
    inflight = path / ".hoodie" / f"{sched.instant}.compaction.inflight"
    os.utime(inflight, (time.time() - 3600, time.time() - 3600))

    (result,) = run_compaction(HudiTable(str(path)), config=cfg)

    assert result.instant == str(sched.instant) and result.rolled_back_attempt is not None
    assert (path / ".hoodie" / f"{sched.instant}.commit").exists()
    assert json.loads((path / ".hoodie" / "lock").read_text())["lockToken"] == "b" * 32
    assert not (lock_dir / "lock").exists()
