"""Our services beside a Java writer (Java Hudi 0.15, OCC + ``FileSystemBasedLockProvider`` + LAZY failed writes).

1. One lock shared with Java: Java's own ``FileSystemBasedLockProvider`` holding ``.hoodie/lock`` stops our services
   (``TableLockedError`` naming the Java writer), and our lock stops Java's provider and a Java write.
2. A Java writer upserting in a loop (a second JVM) while our compaction schedule/run, clean and archive run here;
   in the same round our compaction is killed mid-way (a rerun recovers it) and then the Java writer is killed in the
   middle of a write (our rollback of stale writes removes it). Afterwards Java (another JVM), our reader and hudi-rs
   read exactly the model of the successful Java writes: no lost update, no duplicate key, no failed write visible.

One round runs in CI; ``LAKE_ORCH_JAVA_WRITER_ROUNDS=N`` runs N rounds (a fresh table and writer JVM each).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.errors import TableLockedError, TableLockLostError
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import CompactionConfig, schedule_compaction
from lake_orchestration.hudi.services.rollback import rollback_stale_writes
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import JAVA_EMPTY_LOCK_OWNER, LockConfig, read_lock, table_lock
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from tests.java.beside import BesideServices, wait_for
from tests.java.conftest import skip_or_fail
from tests.java.harness import JavaHudi, JavaHudiError, start_java_hudi
from tests.java.interop import (
    PARTITIONED,
    JavaTable,
    Model,
    assert_rows_equal,
    java_read,
    java_write,
    keyed_meta,
    trips,
)
from tests.oracle import hudi_rs_snapshot

pytestmark = [pytest.mark.java]

MOR = TableType.MERGE_ON_READ
ROUNDS = int(os.environ.get("LAKE_ORCH_JAVA_WRITER_ROUNDS", "1"))
JAVA_HEARTBEAT_MS = 2000
"""The Java writer's heartbeat interval: a killed or failed Java write is stale 2 x this after its last beat."""
MULTI_WRITER = {
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    "hoodie.cleaner.policy.failed.writes": "LAZY",
    # a lock left by a killed Java writer expires (Java's default 0: never); ours judge Java's file the same way
    "hoodie.write.lock.filesystem.expire": "1",
    "hoodie.write.lock.client.num_retries": "40",
    "hoodie.write.lock.client.wait_time_ms_between_retry": "500",
    "hoodie.client.heartbeat.interval_in_ms": str(JAVA_HEARTBEAT_MS),
    "hoodie.client.heartbeat.tolerable.misses": "2",
}
"""The Java writer settings docs/how-to/concurrency.md requires beside our services."""
OUR_LOCK = {
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",  # the Java writer's mode, as the docs require
    "hoodie.write.lock.filesystem.expire": "1",
    "hoodie.write.lock.wait_time_ms": "60000",
    "hoodie.write.lock.wait_time_ms_between_retry": "100",
}
FAST_LOCK = {**OUR_LOCK, "hoodie.write.lock.wait_time_ms": "500"}


def _java_table(path: Path) -> JavaTable:
    base = trips(1, seed=0)
    return JavaTable(path, PARTITIONED, MOR, Model(("city", "uuid")), base.schema, [], path.parent)


def _batch(t: JavaTable, n: int, fraction: float = 0.3) -> pa.Table:
    """Updates of existing keys (newer ts) plus a few new keys: each batch changes most file groups."""
    current = t.expected()
    upd = generate_updates(current, fraction=fraction, seed=100 + n, ts_offset=(n + 1) * 10**7)
    return pa.concat_tables([upd, trips(5, seed=1000 + n).select(current.column_names)])


def _timeline_names(path: Path) -> set[str]:
    return {p.name for p in (path / ".hoodie").iterdir() if p.is_file() and p.name[:1].isdigit()}


# -- 1. one lock shared with Java -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def java_mor_built(java_hudi: JavaHudi, tmp_path_factory: pytest.TempPathFactory) -> JavaTable:
    """A small MOR table written by Java with the multi-writer settings (one insert, one upsert), once per module
    (read-only: the tests change their own copy, :func:`java_mor`)."""
    t = _java_table(tmp_path_factory.mktemp("java-mor") / "t")
    java_write(java_hudi, t, trips(120, seed=1).select(t.schema.names), "insert", **MULTI_WRITER)
    java_write(java_hudi, t, _batch(t, 0), "upsert", **MULTI_WRITER)
    return t


@pytest.fixture
def java_mor(java_mor_built: JavaTable, tmp_path: Path) -> JavaTable:
    """A private copy of :func:`java_mor_built` (files, model and Java's instants) that the test may change."""
    return java_mor_built.copy(tmp_path / "t")


def test_java_lock_provider_holding_the_lock_stops_our_services(java_hudi: JavaHudi, java_mor: JavaTable) -> None:
    t = java_mor
    held = java_hudi.call("lock", path=str(t.path), action="try", options=MULTI_WRITER)
    try:
        assert held["acquired"] and held["lock"].endswith("/.hoodie/lock"), held
        lock = t.path / ".hoodie" / "lock"
        # Java 0.15 leaves the lock file empty, with Hadoop's checksum file beside it
        assert lock.read_bytes() == b"" and (t.path / ".hoodie" / ".lock.crc").exists()
        info = read_lock(HudiTable(str(t.path)), LockConfig.from_options(OUR_LOCK))
        assert info is not None and info.owner == JAVA_EMPTY_LOCK_OWNER and info.foreign
        before = _timeline_names(t.path)
        fast = LockConfig.from_options(FAST_LOCK)
        services: dict[str, Callable[[HudiTable], object]] = {
            "compaction schedule": lambda tb: schedule_compaction(
                tb, config=CompactionConfig.from_options(FAST_LOCK), force=True
            ),
            "clean": lambda tb: run_clean(tb, CleanConfig.from_options(FAST_LOCK)),
            "archive": lambda tb: run_archive(tb, ArchiveConfig.from_options(FAST_LOCK)),
            "lock": lambda tb: table_lock(tb, operation="test", config=fast).__enter__(),
        }
        for name, service in services.items():
            with pytest.raises(TableLockedError) as exc:
                service(HudiTable(str(t.path)))
            assert JAVA_EMPTY_LOCK_OWNER in str(exc.value) and str(lock) in str(exc.value), (name, exc.value)
        assert _timeline_names(t.path) == before, "a service changed the timeline while Java held the lock"
        assert lock.read_bytes() == b"", "our services touched Java's lock file"
    finally:
        java_hudi.call("lock", path=str(t.path), action="unlock")
    assert not (t.path / ".hoodie" / "lock").exists() and not (t.path / ".hoodie" / ".lock.crc").exists()
    # once Java released it, the same service runs
    result = schedule_compaction(HudiTable(str(t.path)), config=CompactionConfig.from_options(FAST_LOCK), force=True)
    assert result.instant is not None


def test_our_lock_stops_java_provider_and_java_writes(java_hudi: JavaHudi, java_mor: JavaTable) -> None:
    t = java_mor
    before = java_read(java_hudi, t)
    table = HudiTable(str(t.path))
    java_fast = {**MULTI_WRITER, "hoodie.write.lock.client.num_retries": "1"}
    java_fast["hoodie.write.lock.client.wait_time_ms_between_retry"] = "200"
    failing = _batch(t, 1)
    with table_lock(table, operation="test hold", config=LockConfig.from_options(OUR_LOCK)) as ours:
        tried = java_hudi.call("lock", path=str(t.path), action="try", options=MULTI_WRITER)
        assert tried["acquired"] is False and ours.token in (tried["owner"] or ""), tried
        src = t.tmp("blocked").with_suffix(".parquet")
        pq.write_table(failing, src)
        options = {**t.options, **java_fast, "hoodie.datasource.write.operation": "upsert"}
        with pytest.raises(JavaHudiError, match="Unable to acquire lock"):
            java_hudi.call("write", path=str(t.path), input=str(src), options=options)
        # Java 0.15 gives up in its commit's beginTransaction, then its finally (endTransaction -> unlock) deletes
        # the lock file whoever holds it: our holder finds its lock lost at its next timeline change
        assert read_lock(table) is None, "Java 0.15's failed acquisition no longer deletes the lock file"
        with pytest.raises(TableLockLostError):
            table.check_lock()
    pending = [i for i in HudiTable(str(t.path)).timeline.pending() if i.action is Action.DELTA_COMMIT]
    assert len(pending) == 1, f"the blocked Java write should be left inflight (LAZY), got {pending}"
    # the blocked write left nothing visible: Java, our reader and hudi-rs read the rows of before
    assert_rows_equal(java_read(java_hudi, t), t.expected(), "Java's read after its write was blocked by our lock")
    assert_rows_equal(read_snapshot_table(HudiTable(str(t.path))), before, "our read after the blocked Java write")
    rs = hudi_rs_snapshot(t.path)
    assert rs is not None
    assert_rows_equal(rs, before, "hudi-rs after the blocked Java write")
    # its heartbeat expired, our rollback of stale writes removes the blocked attempt (Java's LAZY clean would too)
    time.sleep(2 * JAVA_HEARTBEAT_MS / 1000 + 1)
    rolled = rollback_stale_writes(
        HudiTable(str(t.path)), interval_ms=JAVA_HEARTBEAT_MS, tolerable_misses=2, config=RollbackConfig()
    )
    assert [str(s.instant.time) for s, _ in rolled] == [str(pending[0].time)], rolled
    # released: Java writes again
    java_write(java_hudi, t, failing, "upsert", **MULTI_WRITER)
    assert_rows_equal(java_read(java_hudi, t), t.expected(), "Java's read after the lock was released")


# -- 2. a Java writer in a loop beside our services, with kills -----------------------------------------------------


@pytest.fixture
def java_writer(tmp_path: Path) -> Iterator[JavaHudi]:
    """A second JVM: the concurrent Java writer (killed by the test in the middle of a write)."""
    writer = start_java_hudi(tmp_path / "writer-jvm", on_missing=skip_or_fail)
    yield writer
    writer.close()


def _write_loop(writer: JavaHudi, t: JavaTable, batches: list[pa.Table], out: dict[str, Any]) -> None:
    inputs = []
    for n, b in enumerate(batches):
        src = t.scratch / f"loop-{n}.parquet"
        pq.write_table(b, src)
        inputs.append(str(src))
    options = {**t.options, **MULTI_WRITER, "hoodie.datasource.write.operation": "upsert"}
    try:
        out["writes"] = writer.call("write_loop", path=str(t.path), inputs=inputs, options=options, pause_s=0.3)[
            "writes"
        ]
    except BaseException as err:  # reported by the test thread
        out["error"] = err


def _kill_java_mid_write(writer: JavaHudi, t: JavaTable, batch: pa.Table) -> str:
    """Start a Java upsert and SIGKILL its JVM once the write is inflight (its data being written); the instant."""
    jvm = writer.call("pid")["jvm"]
    known = _timeline_names(t.path)
    src = t.scratch / "killed.parquet"
    pq.write_table(batch, src)
    options = {**t.options, **MULTI_WRITER, "hoodie.datasource.write.operation": "upsert"}
    thread = threading.Thread(
        target=lambda: _ignore(lambda: writer.call("write", path=str(t.path), input=str(src), options=options)),
        daemon=True,
    )
    thread.start()

    def inflight() -> str | None:
        new = [n for n in _timeline_names(t.path) - known if n.endswith(".deltacommit.inflight")]
        return new[0].split(".")[0] if new else None

    wait_for(lambda: inflight() is not None, "the Java write to be inflight")
    os.kill(jvm, signal.SIGKILL)
    thread.join(timeout=60)
    # its driver process would wait on the dead JVM when closed: a crash of the whole writer
    writer._proc.kill()  # the harness has no kill(); this test started the process
    instant = inflight()
    assert instant is not None
    assert f"{instant}.deltacommit" not in _timeline_names(t.path), "the Java write committed before the kill"
    return instant


def _ignore(call: Callable[[], object]) -> None:
    try:
        call()
    except Exception:
        pass  # the JVM was killed: its driver's answer is an error or nothing


def _assert_everyone_reads_the_model(java: JavaHudi, t: JavaTable, what: str) -> None:
    theirs = java_read(java, t)
    assert_rows_equal(theirs, t.expected(), f"{what}: Java's read vs the model of the successful Java writes")
    keys = list(zip(theirs.column("city").to_pylist(), theirs.column("uuid").to_pylist(), strict=True))
    assert len(keys) == len(set(keys)), f"{what}: duplicate keys in Java's read"
    ours = read_snapshot_table(HudiTable(str(t.path)))
    assert_rows_equal(ours, theirs, f"{what}: our read vs Java's")
    assert keyed_meta(ours) == keyed_meta(theirs), f"{what}: meta columns, ours vs Java's"
    rs = hudi_rs_snapshot(t.path)
    assert rs is not None
    assert_rows_equal(rs, theirs, f"{what}: hudi-rs vs Java's")
    # no corrupt or unknown timeline file: our timeline reads every file, Java's timeline has the same completed ones
    table = HudiTable(str(t.path))
    assert table.timeline.ignored_files == (), table.timeline.ignored_files
    ours_completed = {f"{i.time}.{i.action.value}" for i in table.timeline if i.state is State.COMPLETED}
    assert set(java.call("instants", path=str(t.path))["instants"]) == ours_completed


@pytest.mark.parametrize("round_no", range(ROUNDS))
def test_java_writer_loop_beside_our_services_with_kills(
    java_hudi: JavaHudi, java_writer: JavaHudi, tmp_path: Path, round_no: int
) -> None:
    t = _java_table(tmp_path / "t")
    java_write(java_writer, t, trips(150, seed=1 + round_no).select(t.schema.names), "insert", **MULTI_WRITER)
    services = BesideServices(str(t.path), lambda: (str(p) for p in t.path.rglob("*.parquet")), OUR_LOCK)

    # the Java writer upserts in a loop while our services run: every batch is based on the model so far (a batch
    # that fails leaves its keys as they were)
    batches = []
    shadow = Model(t.model.key, dict(t.model.rows))
    for n in range(1, 4):
        b = _batch(JavaTable(t.path, t.shape, MOR, shadow, t.schema, [], t.scratch), n)
        shadow.upsert(b)
        batches.append(b)
    out: dict[str, Any] = {}
    loop = threading.Thread(target=_write_loop, args=(java_writer, t, batches, out), daemon=True)
    loop.start()
    rounds = 0
    while loop.is_alive() or rounds < 2:
        services.round(kill_compaction=True)  # the first plan scheduled is killed before its commit, then rerun
        rounds += 1
        # services run periodically, not back to back: a Java writer polling the lock every 500 ms would find it
        # held at every poll and give up (deleting the lock file on its way out, see docs/how-to/concurrency.md)
        time.sleep(1.0)
    loop.join()
    if "error" in out:
        raise out["error"]
    writes = out["writes"]
    for b, w in zip(batches, writes, strict=True):
        if w["ok"]:
            t.model.upsert(b)
    failed = [w["error"][:300] for w in writes if not w["ok"]]
    assert any(w["ok"] for w in writes), f"no Java write succeeded beside our services: {failed}"
    # a Java write may only fail for a conflict with our compaction plan or a lock it did not get in time
    assert all("conflict" in e.lower() or "lock" in e.lower() for e in failed), failed
    if services.killed_compaction is None:  # the writer kept a write inflight whenever we tried to schedule
        java_write(java_writer, t, _batch(t, 8), "upsert", **MULTI_WRITER)
    services.round(kill_compaction=True)  # the killed compaction is rerun, more is compacted and cleaned
    assert services.compacted, f"no compaction committed beside the Java writer: {services.log}"
    killed_ours = services.killed_compaction
    assert killed_ours is not None and killed_ours in services.recovered, (
        f"no killed compaction recovered: {services.log}"
    )

    # kill the Java writer in the middle of a write: nothing of it may become visible; our rollback removes it
    killed = _kill_java_mid_write(java_writer, t, _batch(t, 9))
    time.sleep(2 * JAVA_HEARTBEAT_MS / 1000 + 1)
    rollback = RollbackConfig.from_options(OUR_LOCK)
    rolled = rollback_stale_writes(
        HudiTable(str(t.path)), interval_ms=JAVA_HEARTBEAT_MS, tolerable_misses=2, config=rollback
    )
    assert killed in {str(s.instant.time) for s, _ in rolled}, (killed, rolled)
    assert not list(HudiTable(str(t.path)).timeline.pending().with_actions(Action.DELTA_COMMIT))
    services.round(kill_compaction=False)
    ok = sum(w["ok"] for w in writes)
    print(f"round {round_no}: {ok}/{len(writes)} Java loop writes committed, failed: {failed}; ours: {services.log}")
    _assert_everyone_reads_the_model(java_hudi, t, f"round {round_no} ({'; '.join(services.log)[:3000]})")
    if ROUNDS > 1:  # locally: Java writes on, the table is as usable for it as before
        java_write(java_hudi, t, _batch(t, 10), "upsert", **MULTI_WRITER)
        assert_rows_equal(java_read(java_hudi, t), t.expected(), "Java's read after it wrote on")
