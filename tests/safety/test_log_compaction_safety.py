"""Log compaction: a rerun after a crash rolls the crashed attempt back (its records are not read twice and the
commit lists exactly the files on disk), a live attempt is never rolled back, plans carry Java's log compaction
strategy, and deletes keep their ordering value."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.log.block_content import DeleteRecord, decode_delete_content
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, iter_blocks
from lake_orchestration.hudi.log.writer import delete_block, write_log_file
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.services.compaction import CompactionConfig
from lake_orchestration.hudi.services.log_compaction import run_log_compaction, schedule_log_compaction
from lake_orchestration.hudi.services.rollback import rollback_write
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from tests.conftest import REPO_ROOT
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.tables import generated_table

_TIMEOUT_S = 180  # generous: a loaded 2-core machine

# Runs a log compaction in a child process and stops it after the new log files are written, before the
# deltacommit: "kill" SIGKILLs itself there (a crash), "block" waits there for the file <table>.go (a live attempt).
_CHILD = """
import os, signal, sys, time
from pathlib import Path
import lake_orchestration.hudi.services.log_compaction.executor as lc
from lake_orchestration.hudi.services.log_compaction import run_log_compaction
from lake_orchestration.hudi.services.compaction import CompactionConfig
from lake_orchestration.hudi.table import HudiTable

path, instant, mode, interval = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
real = lc.CommitMetadata

def stop_here(*args, **kwargs):  # built once every merged log file is on disk, before the deltacommit
    Path(path + ".ready").write_text("")
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    deadline = time.monotonic() + 300
    while not Path(path + ".go").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return real(*args, **kwargs)

lc.CommitMetadata = stop_here
cfg = CompactionConfig.from_options({"hoodie.client.heartbeat.interval_in_ms": interval})
run_log_compaction(HudiTable(path), instant, config=cfg)
"""


def _child(path: Path, instant: str, mode: str, interval_ms: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(path), instant, mode, str(interval_ms)], env=env,
                            cwd=REPO_ROOT)
    deadline = time.monotonic() + _TIMEOUT_S
    while not Path(f"{path}.ready").exists():
        if proc.poll() is not None and not Path(f"{path}.ready").exists():
            pytest.fail(f"the log compaction exited ({proc.returncode}) before writing its log files")
        assert time.monotonic() < deadline, "the log compaction did not reach its commit in time"
        time.sleep(0.05)
    return proc


def _files_with_blocks_of(path: Path, instant: str) -> set[str]:
    """Relative paths of the log files holding at least one block of ``instant``."""
    return {str(p.relative_to(path)) for p in path.rglob(".*.log.*")
            if any(b.instant_time == instant for b in iter_blocks(p.read_bytes()))}


def _table_with_long_deletes(tmp_path: Path) -> tuple[Path, dict[str, tuple[str, int]]]:
    """A MOR table (upserts and deletes) plus one completed deltacommit whose delete block carries each delete's
    ordering value as a ``LongWrapper(ts)`` (as a Java writer with event-time ordering writes it)."""
    path = generated_table(tmp_path, deltas=3)
    t = HudiTable(str(path))
    snap = read_snapshot_table(t)
    fs = next(s for s in t.fs_view().latest_file_slices() if s.log_files)
    rows = snap.filter(pc.starts_with(snap.column("_hoodie_file_name"), fs.file_id)).slice(0, 4)
    assert rows.num_rows == 4
    ts = t.new_instant_time()
    t.create_requested(Instant(ts, Action.DELTA_COMMIT, State.REQUESTED))
    inflight = t.transition_to_inflight(Instant(ts, Action.DELTA_COMMIT, State.REQUESTED), b"{}")
    dels = [DeleteRecord(k, fs.partition_path, int(v) + 10**12, "LongWrapper")
            for k, v in zip(rows.column("uuid").to_pylist(), rows.column("ts").to_pylist(), strict=True)]
    lf = write_log_file(t.storage, partition_path=fs.partition_path, file_id=fs.file_id,
                        base_instant=str(fs.base_instant), write_token="0-1-0",
                        blocks=[delete_block(dels, instant=str(ts))])
    stat = WriteStat(fileId=fs.file_id, path=lf.relative_path, prevCommit=str(fs.base_instant), numDeletes=len(dels),
                     partitionPath=fs.partition_path, totalWriteBytes=lf.size, fileSizeInBytes=lf.size)
    md = CommitMetadata(partition_to_write_stats={fs.partition_path: [stat]}, operation_type="DELETE",
                        extra_metadata={"schema": json.dumps(t.latest_schema())})
    t.transition_to_completed(inflight, md.to_bytes())
    return path, {d.record_key: ("LongWrapper", d.ordering_value) for d in dels}


def _schedule(path: Path) -> str:
    sched = schedule_log_compaction(HudiTable(str(path)), config=CompactionConfig(log_compaction_blocks_threshold=2))
    assert sched.scheduled, sched.reason
    return str(sched.instant)


def _assert_committed_exactly_the_files_on_disk(path: Path, instant: str, md: CommitMetadata) -> None:
    listed = {s.path for s in md.write_stats()}
    assert listed and all((path / p).exists() for p in listed)
    assert _files_with_blocks_of(path, instant) == listed, "a log file with blocks of the instant is not committed"
    for p in listed:  # one merged data block (and at most one delete block) per file, nothing appended twice
        blocks = [b for b in iter_blocks((path / p).read_bytes()) if not b.is_corrupt]
        kinds = [b.block_type for b in blocks]
        assert kinds.count(LogBlockType.AVRO_DATA_BLOCK) <= 1 and kinds.count(LogBlockType.DELETE_BLOCK) <= 2
        assert all(b.instant_time == instant and b.get(HeaderKey.COMPACTED_BLOCK_TIMES) for b in blocks)


def _assert_reads(path: Path, before: pa.Table) -> None:
    after = hudi_rs_snapshot(path)
    keys = after.column("_hoodie_record_key").to_pylist()
    assert len(keys) == len(set(keys)), "a record is read twice"
    assert_same_rows(after, before)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), before)


def test_rerun_after_crash_rolls_the_attempt_back_once_its_heartbeat_expired(tmp_path: Path) -> None:
    path = generated_table(tmp_path, deltas=3)
    before = hudi_rs_snapshot(path)
    instant = _schedule(path)
    proc = _child(path, instant, "kill", 60_000)
    assert proc.wait(timeout=_TIMEOUT_S) == -signal.SIGKILL
    hoodie = path / ".hoodie"
    assert (hoodie / f"{instant}.logcompaction.inflight").exists() and not (hoodie / f"{instant}.deltacommit").exists()
    crashed = _files_with_blocks_of(path, instant)
    assert crashed, "the crashed attempt wrote no log file"
    assert_same_rows(hudi_rs_snapshot(path), before)  # the inflight attempt is invisible

    heartbeat = hoodie / ".heartbeat" / instant
    if heartbeat.exists():  # the crashed attempt's heartbeat has expired (no need to wait 2 minutes)
        old = time.time() - 3600
        os.utime(heartbeat, (old, old))
    md = run_log_compaction(HudiTable(str(path)), instant)
    t = HudiTable(str(path))
    assert t.timeline.get(instant, Action.DELTA_COMMIT).is_completed
    _assert_committed_exactly_the_files_on_disk(path, instant, md)
    rollbacks = [i for i in t.timeline.completed().with_actions(Action.ROLLBACK)]
    assert len(rollbacks) == 1
    from lake_orchestration.hudi.model.avro import RollbackMetadata

    rb = RollbackMetadata.from_bytes(t.read_instant(rollbacks[0]), path="rollback")
    assert rb.commits_rollback == (instant,) and rb.instants_rollback[0].action == "logcompaction"
    assert {f.removeprefix(str(path) + "/") for m in rb.partition_metadata.values()
            for f in m.success_delete_files} == crashed
    assert not heartbeat.exists()
    _assert_reads(path, before)


def test_crashed_attempt_with_a_fresh_heartbeat_is_refused_until_it_expires(tmp_path: Path) -> None:
    path = generated_table(tmp_path, deltas=3)
    before = hudi_rs_snapshot(path)
    instant = _schedule(path)
    assert _child(path, instant, "kill", 60_000).wait(timeout=_TIMEOUT_S) == -signal.SIGKILL
    # the heartbeat is fresh: the rerun cannot tell the attempt is dead, so it refuses and touches nothing
    listing = sorted(str(p) for p in path.rglob("*"))
    with pytest.raises(InvalidInstantStateError, match=rf"{instant} is being executed by another process: heartbeat"):
        run_log_compaction(HudiTable(str(path)), instant)
    assert sorted(str(p) for p in path.rglob("*")) == listing
    # a shorter heartbeat setting makes the same attempt stale: it is rolled back and the plan re-executed
    heartbeat = path / ".hoodie" / ".heartbeat" / instant
    old = time.time() - 10
    os.utime(heartbeat, (old, old))
    cfg = CompactionConfig.from_options({"hoodie.client.heartbeat.interval_in_ms": "1000"})
    md = run_log_compaction(HudiTable(str(path)), instant, config=cfg)
    _assert_committed_exactly_the_files_on_disk(path, instant, md)
    _assert_reads(path, before)


def test_live_attempt_is_not_rolled_back(tmp_path: Path) -> None:
    path = generated_table(tmp_path, deltas=3)
    before = hudi_rs_snapshot(path)
    instant = _schedule(path)
    proc = _child(path, instant, "block", 5_000)  # a heartbeat every 5 s: fresh for 10 s even on a loaded machine
    try:
        written = _files_with_blocks_of(path, instant)
        assert written
        cfg = CompactionConfig.from_options({"hoodie.client.heartbeat.interval_in_ms": "5000"})
        with pytest.raises(InvalidInstantStateError, match=rf"{instant}.*being executed by another process"):
            run_log_compaction(HudiTable(str(path)), instant, config=cfg)
        # nor does an explicit rollback (CLI 'rollback --instant-time') touch it
        with pytest.raises(InvalidInstantStateError, match=rf"{instant}.*being executed by another process"):
            rollback_write(
                HudiTable(str(path)),
                instant,
                config=RollbackConfig.from_options({"hoodie.client.heartbeat.interval_in_ms": "5000"}),
            )
        # 'log-compaction run' without --instant-time skips it and says why
        from click.testing import CliRunner

        from lake_orchestration.cli.app import cli

        r = CliRunner().invoke(cli, ["log-compaction", "run", str(path), "--option",
                                     "hoodie.client.heartbeat.interval_in_ms=5000"])
        assert r.exit_code == 0 and f"Skipped log compaction {instant}" in r.output, r.output
        assert _files_with_blocks_of(path, instant) == written  # the live attempt's files are untouched
        assert not list((path / ".hoodie").glob("*.rollback*"))
        Path(f"{path}.go").write_text("")
        assert proc.wait(timeout=_TIMEOUT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    t = HudiTable(str(path))
    assert t.timeline.get(instant, Action.DELTA_COMMIT).is_completed
    md = CommitMetadata.from_bytes(t.read_instant(t.timeline.get(instant, Action.DELTA_COMMIT)), path="deltacommit")
    _assert_committed_exactly_the_files_on_disk(path, instant, md)
    _assert_reads(path, before)


def test_plan_carries_javas_log_compaction_strategy(tmp_path: Path) -> None:
    path = generated_table(tmp_path, deltas=3)
    instant = _schedule(path)
    with open(path / ".hoodie" / f"{instant}.logcompaction.requested", "rb") as f:
        reader = fastavro.reader(f)
        (plan,) = list(reader)
        writer_schema = reader.writer_schema
    # the bytes are a HoodieCompactionPlan container with Java's field types for the two fields
    fields = {fd["name"]: fd for fd in writer_schema["fields"]}
    assert writer_schema["name"].endswith("HoodieCompactionPlan")
    assert fields["preserveHoodieMetadata"]["type"] == ["boolean", "null"]
    strategy_type = next(t for t in fields["strategy"]["type"] if t != "null")
    assert [fd["name"] for fd in strategy_type["fields"]] == ["compactorClassName", "strategyParams", "version"]
    assert plan["strategy"] == {
        "compactorClassName": "org.apache.hudi.table.action.compact.LogCompactionExecutionHelper",
        "strategyParams": {},
        "version": 1,
    }
    assert plan["preserveHoodieMetadata"] is True
    assert plan["version"] == 2 and plan["operations"]


def test_log_compacted_delete_block_keeps_each_deletes_ordering_value(tmp_path: Path) -> None:
    path, long_deletes = _table_with_long_deletes(tmp_path)
    before = hudi_rs_snapshot(path)
    instant = _schedule(path)
    md = run_log_compaction(HudiTable(str(path)), instant)
    # independent expectation: per key, the last delete record in the plan's input log files (in log order)
    t = HudiTable(str(path))
    plan_ops = {(s.partitionPath, s.fileId) for s in md.write_stats()}
    expected: dict[str, tuple[str | None, object]] = {}
    for p, fid in plan_ops:
        written = {s.path for s in md.write_stats()}
        sources = sorted((f for f in (path / p).glob(f".{fid}_*.log.*") if f"{p}/{f.name}" not in written),
                         key=lambda f: int(f.name.split(".log.")[1].split("_")[0]))
        for f in sources:
            for b in iter_blocks(f.read_bytes()):
                if b.block_type is LogBlockType.DELETE_BLOCK:
                    for d in decode_delete_content(b.content):
                        expected[d.record_key] = (d.ordering_wrapper, d.ordering_value)
    got: dict[str, tuple[str | None, object]] = {}
    for s in md.write_stats():
        for b in iter_blocks((path / s.path).read_bytes()):
            if b.block_type is LogBlockType.DELETE_BLOCK:
                got.update({d.record_key: (d.ordering_wrapper, d.ordering_value)
                            for d in decode_delete_content(b.content)})
    assert long_deletes.items() <= got.items(), "a delete lost its LongWrapper ordering value"
    assert got == {k: v for k, v in expected.items() if k in got}
    assert t.timeline.get(instant, Action.DELTA_COMMIT).is_completed
    # One delete block per merged file, as Java's HoodieAppendHandle writes it, even when its deletes carry different
    # ordering-value types (LongWrapper here, IntWrapper(0) from our writer's deletes). hudi-rs 0.5.0 refuses such a
    # block ("Delete block mixes ordering types") -- a Java-written log compaction of this slice alike -- so only
    # our reader is compared here when it does.
    for s in md.write_stats():
        kinds = [b.block_type for b in iter_blocks((path / s.path).read_bytes())]
        assert kinds.count(LogBlockType.DELETE_BLOCK) <= 1, kinds
    try:
        _assert_reads(path, before)
    except Exception as err:
        if "mixes ordering types" not in str(err):
            raise
        assert_same_rows(read_snapshot_table(HudiTable(str(path))), before)
