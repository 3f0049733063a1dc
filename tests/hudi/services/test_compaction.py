"""Compaction: schedule-plan -> execute-plan -> commit keeps the snapshot hudi-rs reads, on real and generated
tables."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.errors import InstantNotFoundError, InvalidInstantStateError, PlanError
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import (
    CompactionConfig,
    TriggerStrategy,
    compaction_tasks,
    execute_compaction,
    run_compaction,
    schedule_compaction,
)
from lake_orchestration.hudi.services.compaction.executor import execute_operation
from lake_orchestration.hudi.services.compaction.planner import generate_plan
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.conftest import REPO_ROOT, SHARED, HudiFixture, require_shared
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.tables import fake_metadata_table, generated_table

MOR_FIXTURES = [
    HudiFixture.TRIPS_MOR_AVRO,
    HudiFixture.MOR_COMPLEX_HIVE,
    HudiFixture.MOR_ROLLBACK,
    HudiFixture.MOR_SIMPLE_NONHIVE,
]


def _reference_schema(name: str) -> dict:
    require_shared()
    text = (SHARED / "reference" / "hudi" / "avro" / name).read_text()
    return json.loads(re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def _check_plan_and_commit(path: Path, instant: str) -> None:
    """The plan resolves with Hudi's reference HoodieCompactionPlan schema; the commit parses as commit metadata."""
    reader = _reference_schema("HoodieCompactionOperation.avsc")
    with open(path / ".hoodie" / f"{instant}.compaction.requested", "rb") as f:
        (plan,) = list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
    assert plan["operations"], "plan without operations"
    for op in plan["operations"]:
        assert op["fileId"] and op["baseInstantTime"] and op["deltaFilePaths"]
        assert set(op["metrics"]) == {
            "TOTAL_LOG_FILES",
            "TOTAL_LOG_FILES_SIZE",
            "TOTAL_IO_READ_MB",
            "TOTAL_IO_WRITE_MB",
            "TOTAL_IO_MB",
        }
    md = CommitMetadata.from_bytes((path / ".hoodie" / f"{instant}.commit").read_bytes(), path=str(path))
    assert md.compacted and md.operation_type == "COMPACT" and md.schema
    assert (path / ".hoodie" / f"{instant}.compaction.inflight").read_bytes() == b""


def _assert_compacted(path: Path, instant: str, before: pa.Table) -> None:
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), before, ignore=REWRITTEN_BY_SERVICES)
    t = HudiTable(str(path))
    compacted = [s for s in t.fs_view().latest_file_slices() if s.base_instant == instant]
    assert compacted, "no slice at the compaction instant"
    for s in compacted:
        assert s.base_file is not None and s.base_file.instant == instant
        assert not s.log_files


@pytest.mark.parametrize("fixture", MOR_FIXTURES, ids=lambda f: f.name)
def test_compaction_java_fixture_snapshot_unchanged(fresh_fixture, fixture: HudiFixture) -> None:
    path = fresh_fixture(fixture)
    before = hudi_rs_snapshot(path)
    t = HudiTable(str(path))
    sched = schedule_compaction(t, force=True)
    assert sched.scheduled, sched.reason
    (result,) = run_compaction(t)
    assert result.instant == sched.instant
    _check_plan_and_commit(path, result.instant)
    _assert_compacted(path, result.instant, before)


def test_compaction_empty_mor_fixture_schedules_nothing(fresh_fixture) -> None:
    path = fresh_fixture(HudiFixture.MOR_EMPTY)
    r = schedule_compaction(HudiTable(str(path)), force=True)
    assert not r.scheduled
    assert not list((path / ".hoodie").glob("*.compaction.*"))


def _rolled_back_write(path: Path) -> str:
    """A failed deltacommit F that wrote a log block, rolled back the way Java Hudi 0.14 does it: a rollback
    command block in a new log file of the slice, F's timeline files deleted, a completed rollback instant."""
    from lake_orchestration.hudi.log.writer import avro_data_block, rollback_command_block, write_log_file
    from lake_orchestration.hudi.model.avro import InstantInfo, RollbackMetadata, RollbackPlan
    from lake_orchestration.hudi.model.schema import with_meta_fields

    t = HudiTable(str(path))
    fs = next(s for s in t.fs_view().latest_file_slices() if s.log_files)
    failed = t.new_instant_time()
    t.create_requested(Instant(failed, Action.DELTA_COMMIT, State.REQUESTED))
    t.transition_to_inflight(Instant(failed, Action.DELTA_COMMIT, State.REQUESTED), b"{}")
    rows = read_snapshot_table(t).filter(
        pa.compute.equal(
            read_snapshot_table(t).column("_hoodie_file_name"), read_snapshot_table(t).column("_hoodie_file_name")
        )
    )
    rows = rows.filter(pa.compute.equal(rows.column("_hoodie_partition_path"), fs.partition_path)).slice(0, 5)
    bogus = rows.set_column(rows.schema.get_field_index("fare"), "fare", pa.array([-1.0] * rows.num_rows))
    bogus = bogus.set_column(
        rows.schema.get_field_index("_hoodie_commit_time"),
        "_hoodie_commit_time",
        pa.array([str(failed)] * rows.num_rows),
    )
    schema = with_meta_fields(t.latest_schema())
    write_log_file(
        t.storage,
        partition_path=fs.partition_path,
        file_id=fs.file_id,
        base_instant=str(fs.base_instant),
        write_token="0-9-9",
        blocks=[avro_data_block(bogus, instant=str(failed), schema=schema, schema_json=json.dumps(schema))],
    )
    rb = t.new_instant_time()
    plan = RollbackPlan(
        instant_to_rollback=InstantInfo(commit_time=str(failed), action="deltacommit"), rollback_requests=(), version=1
    )
    req = t.create_requested(Instant(rb, Action.ROLLBACK, State.REQUESTED), plan.to_bytes())
    inflight = t.transition_to_inflight(req)
    write_log_file(
        t.storage,
        partition_path=fs.partition_path,
        file_id=fs.file_id,
        base_instant=str(fs.base_instant),
        write_token="1-0-1",
        blocks=[rollback_command_block(instant=str(rb), target_instant=str(failed))],
    )
    for name in (f"{failed}.deltacommit.requested", f"{failed}.deltacommit.inflight"):
        (path / ".hoodie" / name).unlink()
    meta = RollbackMetadata(
        start_rollback_time=str(rb),
        time_taken_in_millis=1,
        total_files_deleted=0,
        commits_rollback=(str(failed),),
        partition_metadata={},
        version=1,
        instants_rollback=(InstantInfo(commit_time=str(failed), action="deltacommit"),),
    )
    t.transition_to_completed(inflight, meta.to_bytes())
    return str(failed)


def test_compaction_generated_table_with_rolled_back_write_snapshot_unchanged(tmp_path: Path) -> None:
    path = generated_table(tmp_path)
    failed = _rolled_back_write(path)
    before = hudi_rs_snapshot(path)
    assert failed not in set(before.column("_hoodie_commit_time").to_pylist())
    assert -1.0 not in set(before.column("fare").to_pylist())
    t = HudiTable(str(path))
    sched = schedule_compaction(t, force=True)
    (result,) = run_compaction(t)
    _check_plan_and_commit(path, result.instant)
    _assert_compacted(path, str(sched.instant), before)
    assert sum(s.totalRollbackBlocks for s in result.stats) == 1
    assert len({s.partitionPath for s in result.stats}) == 4


def test_compaction_trigger_num_commits_waits_for_max_delta_commits(tmp_path: Path) -> None:
    path = generated_table(tmp_path, deltas=2)  # 2 upserts + 1 delete = 3 deltacommits after the bulk insert
    t = HudiTable(str(path))
    r = schedule_compaction(t, config=CompactionConfig(max_delta_commits=5))
    assert not r.scheduled and "NUM_COMMITS not met: 4 delta commit(s)" in r.reason
    r = schedule_compaction(t, config=CompactionConfig(max_delta_commits=4))
    assert r.scheduled
    r2 = schedule_compaction(
        t, config=CompactionConfig(trigger_strategy=TriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST, max_delta_commits=1)
    )
    assert not r2.scheduled


def test_compaction_second_run_is_noop_and_later_logs_kept(tmp_path: Path) -> None:
    path = generated_table(tmp_path)
    t = HudiTable(str(path))
    sched = schedule_compaction(t, force=True)
    # a writer adds log files to the new slice after scheduling (named with the compaction instant)
    opts = WriteOptions(precombine_field="ts")
    base = read_snapshot_table(t).select(generate_trips(0).column_names).slice(0, 40)
    late = base.set_column(1, "ts", pa.compute.add(base.column("ts"), 10**9))
    late_result = write_table(str(path), late, operation="upsert", options=opts)
    # Java merges the pending slice with the previous one (getLatestMergedFileSlicesBeforeOrOn), so the late
    # updates are visible before the compaction commits. hudi-rs 0.5.0 does not read logs named with a pending
    # compaction instant until that compaction completes, so the "before" here is our reader's, checked against
    # the late write itself; after the commit hudi-rs must read exactly it.
    before = read_snapshot_table(HudiTable(str(path)))
    late_keys = set(late.column("uuid").to_pylist())
    seen = {r["uuid"]: r["_hoodie_commit_time"] for r in before.to_pylist() if r["uuid"] in late_keys}
    assert seen == dict.fromkeys(late_keys, late_result.instant)
    (result,) = run_compaction(HudiTable(str(path)))
    assert run_compaction(HudiTable(str(path))) == []  # nothing pending: a no-op
    with pytest.raises(InstantNotFoundError, match="already committed"):
        execute_compaction(HudiTable(str(path)), result.instant)
    after = hudi_rs_snapshot(path)
    assert_same_rows(after, before, ignore=REWRITTEN_BY_SERVICES)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), before, ignore=REWRITTEN_BY_SERVICES)
    planned = {(op.partition_path, op.file_id) for op in sched.plan.operations}
    late_logs = [
        s
        for s in HudiTable(str(path)).fs_view().latest_file_slices()
        if s.log_files and (s.partition_path, s.file_id) in planned
    ]
    assert late_logs, "the late write touched no compacted file group"
    assert all(s.base_instant == sched.instant and s.base_file is not None for s in late_logs)
    assert {lf.base_instant for s in late_logs for lf in s.log_files} == {sched.instant}
    assert late_result.updated == 40


def test_compaction_schedule_validations(tmp_path: Path) -> None:
    path = generated_table(tmp_path, deltas=1)
    t = HudiTable(str(path))
    last = str(t.timeline.last.time)
    with pytest.raises(PlanError, match="timestamps >= compaction instant"):
        schedule_compaction(t, instant_time=last, force=True)
    t.create_requested(Instant(t.new_instant_time(), Action.DELTA_COMMIT, State.REQUESTED))
    with pytest.raises(PlanError, match="Earliest write inflight instant time must be later"):
        schedule_compaction(HudiTable(str(path)), force=True)


def test_compaction_cow_table_refused(tmp_path: Path) -> None:
    path = tmp_path / "c"
    write_table(
        str(path),
        generate_trips(10),
        operation="insert",
        options=WriteOptions(table_name="c", table_type=TableType.COPY_ON_WRITE, record_key_fields=("uuid",)),
    )
    with pytest.raises(PlanError, match="MERGE_ON_READ"):
        schedule_compaction(HudiTable(str(path)), force=True)


def _crash_state(path: Path, stage: str) -> str:
    """Leave exactly what a crash at ``stage`` leaves: inflight, half of the tasks done, or all done (no commit)."""
    t = HudiTable(str(path))
    sched = schedule_compaction(t, force=True)
    instant = str(sched.instant)
    t.transition_to_inflight(Instant(sched.instant, Action.COMPACTION, State.REQUESTED))
    # the crash was long ago: an inflight attempt without a heartbeat counts as live until it is as old as the
    # heartbeat expiry (hoodie.client.heartbeat.*)
    hour_ago = time.time() - 3600
    os.utime(path / ".hoodie" / f"{instant}.compaction.inflight", (hour_ago, hour_ago))
    if stage == "after_inflight":
        return instant
    tasks, _ = compaction_tasks(t, instant, CompactionConfig())
    n = len(tasks) // 2 if stage == "mid_tasks" else len(tasks)
    for task in tasks[:n]:
        execute_operation(task)
    return instant


@pytest.mark.parametrize("stage", ["after_inflight", "mid_tasks", "before_commit"])
def test_compaction_crash_then_rerun_rolls_back_and_completes(tmp_path: Path, stage: str) -> None:
    path = generated_table(tmp_path)
    before = hudi_rs_snapshot(path)
    instant = _crash_state(path, stage)
    # while crashed: readers see the table as before, no partial base file is visible
    assert_same_rows(hudi_rs_snapshot(path), before)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), before)
    (result,) = run_compaction(HudiTable(str(path)))
    assert result.instant == instant
    assert result.rolled_back_attempt is not None
    _assert_compacted(path, instant, before)
    t = HudiTable(str(path))
    # exactly one base file per compacted group at the instant: no duplicate, no orphan
    names = [p.name for p in path.rglob(f"*_{instant}.parquet")]
    assert len(names) == len({n.split("_")[0] for n in names}) == result.operations
    assert t.timeline.completed().with_actions(Action.ROLLBACK)


_KILL = """
import sys
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.services.compaction import run_compaction
run_compaction(HudiTable(sys.argv[1]))
"""


def test_compaction_process_killed_midway_next_run_recovers(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = WriteOptions(
        table_name="t",
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        max_rows_per_file=500,
        small_file_limit=0,
        compression="gzip",
    )
    # 80 file groups of 500 rows: a compaction long enough to be killed midway (120,000 rows of 2,000 made 60 groups,
    # four times the rows to generate, write and compact again)
    base = generate_trips(40_000, partitions=8, seed=3)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    write_table(str(path), generate_updates(base, fraction=0.3, seed=4), operation="upsert", options=opts)
    before = hudi_rs_snapshot(path)
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _KILL, str(path)], env=env, cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            written = list(path.rglob(f"*_{sched.instant}.parquet"))
            if (path / ".hoodie" / f"{sched.instant}.compaction.inflight").exists() and len(written) >= 2:
                break
            assert proc.poll() is None, "compaction finished before it could be killed"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert not (path / ".hoodie" / f"{sched.instant}.commit").exists()
    assert_same_rows(hudi_rs_snapshot(path), before)
    # until its heartbeat expired the killed attempt counts as live; let it expire (2 x 60 s by default)
    heartbeat = path / ".hoodie" / ".heartbeat" / str(sched.instant)
    assert heartbeat.exists()
    hour_ago = time.time() - 3600
    os.utime(heartbeat, (hour_ago, hour_ago))
    (result,) = run_compaction(HudiTable(str(path)))
    assert result.rolled_back_attempt is not None
    _assert_compacted(path, str(sched.instant), before)


def test_compaction_rollback_of_non_inflight_refused(tmp_path: Path) -> None:
    from lake_orchestration.hudi.services.rollback.compaction import rollback_inflight_compaction

    path = generated_table(tmp_path, deltas=1)
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    with pytest.raises(InvalidInstantStateError, match="not an inflight compaction"):
        rollback_inflight_compaction(HudiTable(str(path)), str(sched.instant))


def test_compaction_plan_strategies_order_and_bound(tmp_path: Path) -> None:
    path = generated_table(tmp_path)
    t = HudiTable(str(path))
    sizes = [op.metrics["TOTAL_LOG_FILES_SIZE"] for op in generate_plan(t, CompactionConfig()).operations]
    assert sizes == sorted(sizes, reverse=True)
    bounded = generate_plan(t, CompactionConfig(target_io_mb=0))  # small files: 0 MB each; budget spent after one
    assert len(bounded.operations) == 1
    thresh = generate_plan(t, CompactionConfig(logfile_size_threshold=int(sizes[0])))
    assert all(op.metrics["TOTAL_LOG_FILES_SIZE"] >= sizes[0] for op in thresh.operations)


def test_compaction_log_side_beyond_memory_budget_spills_and_gives_same_result(tmp_path: Path) -> None:
    import shutil

    path = generated_table(tmp_path)
    before = hudi_rs_snapshot(path)
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    twin = tmp_path / "twin"
    shutil.copytree(path, twin)
    # hoodie.memory.compaction.max.size of 2 KB: every operation's log side spills to local disk
    tiny = CompactionConfig.from_options({"hoodie.memory.compaction.max.size": "2048"})
    assert tiny.memory_max_bytes == 2048
    (spilled,) = run_compaction(HudiTable(str(path)), config=tiny)
    (in_memory,) = run_compaction(HudiTable(str(twin)))
    _assert_compacted(path, str(sched.instant), before)
    assert_same_rows(
        read_snapshot_table(HudiTable(str(path))),
        read_snapshot_table(HudiTable(str(twin))),
        ignore=REWRITTEN_BY_SERVICES,
    )
    key = lambda s: s.fileId  # noqa: E731
    for a, b in zip(sorted(spilled.stats, key=key), sorted(in_memory.stats, key=key), strict=True):
        assert (a.numWrites, a.numUpdateWrites, a.numDeletes, a.numInserts, a.totalLogRecords) == (
            b.numWrites,
            b.numUpdateWrites,
            b.numDeletes,
            b.numInserts,
            b.totalLogRecords,
        )


def test_compaction_refuses_a_table_with_a_metadata_table_unless_disabled(tmp_path: Path) -> None:
    """Java v6 writers keep a metadata table this project does not update: schedule and run refuse the table (the
    plan file and the data files untouched) until ``hoodie.metadata.enable=false``, which deletes it first."""
    from lake_orchestration.errors import MetadataTableError

    path = generated_table(tmp_path)
    before = hudi_rs_snapshot(path)
    fake_metadata_table(path)
    listing = sorted(p.relative_to(path) for p in path.rglob("*") if p.is_file())
    with pytest.raises(MetadataTableError, match=r"compaction does not update.*hoodie\.metadata\.enable=false"):
        schedule_compaction(HudiTable(str(path)), force=True)
    assert sorted(p.relative_to(path) for p in path.rglob("*") if p.is_file()) == listing
    with pytest.raises(PlanError, match=r"hoodie\.metadata\.enable='maybe'"):
        CompactionConfig.from_options({"hoodie.metadata.enable": "maybe"})
    off = CompactionConfig.from_options({"hoodie.metadata.enable": "false"})
    instant = schedule_compaction(HudiTable(str(path)), config=off, force=True).instant
    assert instant is not None
    t = HudiTable(str(path))
    assert not t.has_metadata_table() and "hoodie.table.metadata.partitions" not in t.config.raw
    fake_metadata_table(path)  # a Java writer with the metadata table enabled ran in between
    with pytest.raises(MetadataTableError, match="compaction"):
        run_compaction(HudiTable(str(path)))
    from lake_orchestration.hudi.services.log_compaction import schedule_log_compaction

    with pytest.raises(MetadataTableError, match="log compaction"):
        schedule_log_compaction(HudiTable(str(path)))
    assert HudiTable(str(path)).timeline.get(str(instant), Action.COMPACTION).state is State.REQUESTED
    (res,) = run_compaction(HudiTable(str(path)), config=off)
    assert res.instant == str(instant) and not HudiTable(str(path)).has_metadata_table()
    _assert_compacted(path, str(instant), before)


def test_compaction_rollback_refuses_a_metadata_table_unless_disabled(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from lake_orchestration.cli.app import cli

    path = generated_table(tmp_path)
    before = hudi_rs_snapshot(path)
    instant = str(schedule_compaction(HudiTable(str(path)), force=True).instant)
    t = HudiTable(str(path))
    t.transition_to_inflight(Instant(instant, Action.COMPACTION, State.REQUESTED))  # an attempt that died at once
    fake_metadata_table(path)
    run = CliRunner().invoke
    r = run(cli, ["compaction", "rollback", str(path), "--instant-time", instant])
    assert r.exit_code == 1 and "rollback does not update" in r.output, r.output
    assert HudiTable(str(path)).timeline.get(instant, Action.COMPACTION).state is State.INFLIGHT
    r = run(
        cli,
        ["compaction", "rollback", str(path), "--instant-time", instant, "--option", "hoodie.metadata.enable=false"],
    )
    assert r.exit_code == 0 and f"Rolled back compaction {instant}" in r.output, r.output
    t = HudiTable(str(path))
    assert not t.has_metadata_table()
    assert t.timeline.get(instant, Action.COMPACTION).state is State.REQUESTED
    assert_same_rows(hudi_rs_snapshot(path), before)
