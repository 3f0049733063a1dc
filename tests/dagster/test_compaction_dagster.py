"""Dagster objects of the compaction service: the pending-plan sensor, partition runs, a backfill, asset checks."""

from __future__ import annotations

import re
from pathlib import Path

import dagster as dg
import pendulum
import pyarrow.compute as pc
import pytest

from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.services.compaction import schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot

pytestmark = pytest.mark.dagster


def _three_plans(tmp_path: Path) -> tuple[Path, list[str]]:
    """A MOR table with three pending compaction plans, one per city partition."""
    path = tmp_path / "t"
    opts = WriteOptions(
        table_name="t",
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        hive_style_partitioning=True,
        small_file_limit=0,
    )
    base = generate_trips(300, partitions=3, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    plans = []
    for n, city in enumerate(sorted(set(base.column("city").to_pylist()))):
        part = base.filter(pc.equal(base.column("city"), city))
        write_table(
            str(path),
            generate_updates(part, fraction=0.3, seed=n, ts_offset=(n + 1) * 10**7),
            operation="upsert",
            options=opts,
        )
        r = schedule_compaction(HudiTable(str(path)), force=True)
        assert r.scheduled and {op.partition_path for op in r.plan.operations} == {f"city={city}"}
        plans.append(str(r.instant))
    return path, plans


def _defs(path: Path, **kw: object) -> tuple[dg.Definitions, HudiTableConfig]:
    cfg = HudiTableConfig(name="t", base_path=str(path), engine="local", **kw)
    return build_hudi_definitions(tables=[cfg]), cfg


def test_definitions_per_table_objects_named_after_hudi(tmp_path: Path) -> None:
    path, _ = _three_plans(tmp_path)
    defs, _ = _defs(path)
    keys = {a.key for a in defs.resolve_all_asset_specs()}
    assert keys == {dg.AssetKey(["hudi", "t"]), dg.AssetKey(["hudi", "t", "compaction"])}
    assert defs.resolve_job_def("t__schedule_compaction") is not None
    assert defs.resolve_sensor_def("t__pending_compaction_sensor") is not None
    assert defs.resolve_schedule_def("t__schedule_compaction_schedule").cron_schedule == "*/15 * * * *"
    checks = {k.name for k in defs.resolve_asset_graph().asset_check_keys}
    assert {"oldest_pending_compaction_age", "log_files_per_slice", "active_timeline_length"} <= checks


@pytest.mark.parametrize(("seq", "expected"), [("FIFO", [0, 1]), ("LIFO", [2, 1])])
def test_pending_sensor_orders_respects_max_and_keeps_cursor(tmp_path: Path, seq: str, expected: list[int]) -> None:
    path, plans = _three_plans(tmp_path)
    defs, _ = _defs(path, compaction_seq=seq, max_plans_per_tick=2)
    sensor = defs.resolve_sensor_def("t__pending_compaction_sensor")
    with dg.instance_for_test() as instance:
        ctx = dg.build_sensor_context(instance=instance, definitions=defs)
        result = sensor(ctx)
        assert [r.run_key for r in result.run_requests] == [plans[i] for i in expected]
        assert [r.partition_key for r in result.run_requests] == [plans[i] for i in expected]
        (add,) = result.dynamic_partitions_requests
        assert sorted(add.partition_keys) == sorted(plans[i] for i in expected)
        # the next tick (cursor kept) requests only the remaining plan
        ctx2 = dg.build_sensor_context(instance=instance, definitions=defs, cursor=result.cursor)
        second = sensor(ctx2)
        assert [r.run_key for r in second.run_requests] == [p for i, p in enumerate(plans) if i not in expected]
        third = sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor=second.cursor))
        assert not third.run_requests


def test_pending_sensor_unreadable_cursor_fails_loudly(tmp_path: Path) -> None:
    path, _ = _three_plans(tmp_path)
    defs, _ = _defs(path)
    sensor = defs.resolve_sensor_def("t__pending_compaction_sensor")
    with dg.instance_for_test() as instance:
        with pytest.raises(Exception, match="Cannot decode the cursor"):
            sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor="not json"))


def test_backfill_over_three_partitions_executes_each_plan_once(tmp_path: Path) -> None:
    path, plans = _three_plans(tmp_path)
    before = hudi_rs_snapshot(path)
    defs, _ = _defs(path)
    job = defs.resolve_job_def("t__compaction")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("t__compaction_instants", plans)
        for p in plans:  # what a backfill launches: one run per partition
            result = job.execute_in_process(instance=instance, partition_key=p)
            assert result.success
            (mat,) = result.asset_materializations_for_node("hudi__t__compaction")
            assert mat.metadata["instant"].value == p and mat.metadata["operations"].value >= 1
            # the compaction's progress is in the run log: its start line and its last file group
            messages = [r.user_message for r in instance.all_logs(result.run_id) if r.user_message]
            assert any(m.startswith(f"Compacting {p}: ") for m in messages), messages
            assert any(re.search(rf"Compaction {p}: file group (\d+)/\1 merged", m) for m in messages), messages
        again = job.execute_in_process(instance=instance, partition_key=plans[0])  # already committed: a no-op
        (mat,) = again.asset_materializations_for_node("hudi__t__compaction")
        assert mat.metadata["already_committed"].value is True
    t = HudiTable(str(path))
    assert not list(t.timeline.pending_compactions())
    assert all(t.timeline.get(p) is not None and t.timeline.get(p).is_completed for p in plans)
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)


def _run_checks(defs: dg.Definitions) -> dict[str, bool]:
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [defs.resolve_assets_def(dg.AssetKey(["hudi", "t"])), *defs.asset_checks], instance=instance
        )
        assert result.success
        compaction_checks = {"oldest_pending_compaction_age", "log_files_per_slice", "active_timeline_length"}
        return {
            e.check_name: e.passed for e in result.get_asset_check_evaluations() if e.check_name in compaction_checks
        }


def test_asset_checks_fail_on_unhealthy_table_and_pass_after_compaction(tmp_path: Path) -> None:
    from lake_orchestration.hudi.services.compaction import execute_compaction

    path, plans = _three_plans(tmp_path)
    strict, _ = _defs(path, max_pending_plan_age_seconds=0, max_log_files_per_slice=0)
    assert _run_checks(strict) == {
        "oldest_pending_compaction_age": False,
        "log_files_per_slice": False,
        "active_timeline_length": True,
    }
    for p in plans:
        execute_compaction(HudiTable(str(path)), p)
    healthy, _ = _defs(path)
    assert _run_checks(healthy) == {
        "oldest_pending_compaction_age": True,
        "log_files_per_slice": True,
        "active_timeline_length": True,
    }


def test_stale_inflight_sensor_requests_rollback_for_expired_heartbeat_not_live(tmp_path: Path) -> None:
    import os
    import time

    from lake_orchestration.hudi.model.instant import Action, Instant, State
    from lake_orchestration.hudi.table.heartbeat import Heartbeat

    path = tmp_path / "t"
    write_table(
        str(path),
        generate_trips(50, seed=1),
        operation="bulk_insert",
        options=WriteOptions(table_name="t", record_key_fields=("uuid",), partition_fields=("city",)),
    )
    before = hudi_rs_snapshot(path)
    t = HudiTable(str(path))
    dead = t.create_requested(Instant(t.new_instant_time(), Action.DELTA_COMMIT, State.REQUESTED))
    Heartbeat(t.storage, str(dead.time), interval_ms=100).start().stop(delete=False)  # one beat, then gone
    # its writer died an hour ago (the heartbeat's age is its mtime, as in Hudi): no sleep racing a 100 ms thread
    hb_dead = path / ".hoodie" / ".heartbeat" / str(dead.time)
    os.utime(hb_dead, (time.time() - 3600, time.time() - 3600))
    live = t.create_requested(Instant(t.new_instant_time(), Action.DELTA_COMMIT, State.REQUESTED))
    hb = Heartbeat(t.storage, str(live.time), interval_ms=100).start()
    try:
        # the live writer keeps beating (its mtime moves on); judged with a window a loaded box cannot miss
        hb_live = path / ".hoodie" / ".heartbeat" / str(live.time)
        first = hb_live.stat().st_mtime
        deadline = time.monotonic() + 60
        while hb_live.stat().st_mtime <= first and time.monotonic() < deadline:
            time.sleep(0.02)
        assert hb_live.stat().st_mtime > first, "the live heartbeat thread never beat"
        defs, _ = _defs(path, heartbeat_interval_ms=10_000)
        sensor = defs.resolve_sensor_def("t__stale_inflight_sensor")
        with dg.instance_for_test() as instance:
            result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
            (req,) = result.run_requests
            assert req.run_key == f"rollback-{dead.time}"
            run = defs.resolve_job_def("t__rollback").execute_in_process(instance=instance, run_config=req.run_config)
            assert run.success
    finally:
        hb.stop(delete=True)
    tl = HudiTable(str(path)).timeline
    assert tl.get(str(dead.time)) is None and tl.get(str(live.time)) is not None
    assert tl.completed().with_actions(Action.ROLLBACK)
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_stale_inflight_sensor_without_heartbeat_uses_inflight_timeout(tmp_path: Path) -> None:
    """A pending write with no heartbeat file (a writer that never started one, or a Java writer whose heartbeat
    folder was cleaned) is judged by its instant time against ``inflight_timeout_seconds``: the one older than the
    timeout gets a rollback run, the young one is left alone, and without a timeout neither is touched."""
    from lake_orchestration.hudi.model.instant import Action, Instant, State

    path = tmp_path / "t"
    write_table(
        str(path),
        generate_trips(50, seed=1),
        operation="bulk_insert",
        options=WriteOptions(table_name="t", record_key_fields=("uuid",), partition_fields=("city",)),
    )
    before = hudi_rs_snapshot(path)
    t = HudiTable(str(path))
    two_hours_ago = pendulum.now("UTC").subtract(hours=2).format("YYYYMMDDHHmmssSSS")
    old = t.create_requested(Instant(two_hours_ago, Action.DELTA_COMMIT, State.REQUESTED))
    young = t.create_requested(Instant(t.new_instant_time(), Action.DELTA_COMMIT, State.REQUESTED))
    assert not (path / ".hoodie" / ".heartbeat").exists() or not any((path / ".hoodie" / ".heartbeat").iterdir())

    defs, _ = _defs(path, inflight_timeout_seconds=3600)
    sensor = defs.resolve_sensor_def("t__stale_inflight_sensor")
    with dg.instance_for_test() as instance:
        result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        (req,) = result.run_requests
        assert req.run_key == f"rollback-{old.time}"
        assert "no heartbeat" in req.tags["hudi/reason"]
        run = defs.resolve_job_def("t__rollback").execute_in_process(instance=instance, run_config=req.run_config)
        assert run.success
        # the young write is below the timeout: the next tick requests nothing
        again = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        assert not again.run_requests
    tl = HudiTable(str(path)).timeline
    assert tl.get(str(old.time)) is None and tl.get(str(young.time)) is not None
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_compaction_partition_failed_commit_retries_commit_alone_plan_executed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The partition is a graph: execute_plan -> commit. The store drops the first write of ``<instant>.commit``
    (an ambiguous failure: CommitStateUnknownError); the commit op is retried by the table's retry policy from the
    write stats execute_plan handed it, and the plan is executed exactly once (one STEP_START, one new base file per
    operation)."""
    from lake_orchestration.errors import StorageError
    from lake_orchestration.hudi.model.instant import Instant

    path, plans = _three_plans(tmp_path)
    instant = plans[0]
    before = hudi_rs_snapshot(path)
    defs, _ = _defs(path, retry_max_retries=2, retry_delay_seconds=0)
    real = HudiTable.transition_to_completed
    commits: list[str] = []

    def drop_first_commit(self: HudiTable, inflight: Instant, content: bytes) -> Instant:
        commits.append(str(inflight.time))
        if len(commits) == 1:
            raise StorageError("injected: the store dropped the write", path=self.instant_path(inflight))
        return real(self, inflight, content)

    monkeypatch.setattr(HudiTable, "transition_to_completed", drop_first_commit)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("t__compaction_instants", plans)
        result = defs.resolve_job_def("t__compaction").execute_in_process(instance=instance, partition_key=instant)
    assert result.success
    execute_step = "hudi__t__compaction.t__compaction_execute_plan_op"
    commit_step = "hudi__t__compaction.t__compaction_commit_op"

    def events(step: str, kind: str) -> int:
        return sum(1 for e in result.all_events if e.step_key == step and e.event_type_value == kind)

    assert events(execute_step, "STEP_START") == 1 and events(execute_step, "STEP_SUCCESS") == 1
    assert events(commit_step, "STEP_UP_FOR_RETRY") == 1 and events(commit_step, "STEP_SUCCESS") == 1
    (retry,) = [e for e in result.all_events if e.step_key == commit_step and e.event_type_value == "STEP_UP_FOR_RETRY"]
    assert "CommitStateUnknownError" in str(retry.event_specific_data.error)  # type: ignore[union-attr]
    assert commits == [instant, instant]
    (mat,) = result.asset_materializations_for_node("hudi__t__compaction")
    assert mat.metadata["instant"].value == instant and mat.metadata["operations"].value == 1
    assert isinstance(mat.metadata["rows_written"], dg.IntMetadataValue)
    assert isinstance(mat.metadata["seconds"], dg.FloatMetadataValue)
    from lake_orchestration.hudi.model.instant import InstantTime

    plan_time = mat.metadata["instant_time"]
    assert isinstance(plan_time, dg.TimestampMetadataValue)  # the instant read in the table's timezone (LOCAL)
    assert plan_time.value == InstantTime(instant).to_datetime(pendulum.local_timezone().name).timestamp()
    # one execution: one new base file of the instant, named in the completed commit
    new_files = sorted(p.name for p in path.rglob(f"*_{instant}.parquet"))
    t = HudiTable(str(path))
    done = t.timeline.get(instant)
    assert done is not None and done.is_completed
    assert new_files == sorted(s.path.rsplit("/", 1)[-1] for s in t.commit_metadata(done).write_stats())
    assert len(new_files) == 1
    assert not (path / ".hoodie" / ".temp" / instant).exists()  # markers removed by the commit
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)


def test_compaction_partition_of_unknown_instant_fails_with_table_instant_and_timeline_metadata(
    tmp_path: Path,
) -> None:
    """A partition whose instant has no plan leaves as a PermanentHudiError (no retries, whatever the table's retry
    policy): the message names the instant and how the partition goes away, and the failure carries the table, its
    URI, the instant and the latest instants of the timeline as metadata."""
    path, plans = _three_plans(tmp_path)
    defs, _ = _defs(path, retry_max_retries=2, retry_delay_seconds=0)
    unknown = "20000101000000000"
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("t__compaction_instants", [unknown])
        result = defs.resolve_job_def("t__compaction").execute_in_process(
            instance=instance, partition_key=unknown, raise_on_error=False
        )
    assert not result.success
    assert not [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    data = failure.event_specific_data
    assert f"No pending compaction plan {unknown} on t" in str(data.error)  # type: ignore[union-attr]
    md = {k: v.value for k, v in data.user_failure_data.metadata.items()}  # type: ignore[union-attr]
    assert md["table"] == "t" and md["table_uri"] == str(path) and md["instant"] == unknown
    assert md["error"] == "NoPendingCompactionPlan" and md["retried"] is False
    latest = [i.file_name for i in HudiTable(str(path)).timeline][-10:]
    assert md["timeline"] == latest and any(plans[-1] in name for name in latest)
    assert not list(path.rglob(f"*_{unknown}.parquet"))


@pytest.mark.parametrize(
    ("cursor", "detail"),
    [
        ("not json", "Expecting value"),
        ('["20240101000000000"]', "seen"),
        ('{"seen": "20240101000000000"}', "'seen' is not a list"),
        ('{"seen": ["2024-01-01"]}', "2024-01-01"),
    ],
)
def test_pending_compaction_cursor_undecodable_raises_sensor_cursor_error(cursor: str, detail: str) -> None:
    from lake_orchestration.dagster import PendingCompactionCursor, SensorCursorError

    with pytest.raises(SensorCursorError, match=r"Cannot decode the cursor of t__pending_compaction_sensor") as err:
        PendingCompactionCursor.from_json(cursor, table="t", sensor="t__pending_compaction_sensor")
    assert detail in str(err.value) and err.value.allow_retries is False
    assert err.value.cursor == cursor and '{"seen": [instants]}' in str(err.value)


def test_pending_compaction_cursor_round_trips_sorted_instants() -> None:
    from lake_orchestration.dagster import PendingCompactionCursor

    first = PendingCompactionCursor.from_json(None, table="t", sensor="s").with_requested(["20240102000000000"])
    second = first.with_requested(["20240101000000000"])
    assert second.to_json() == '{"seen": ["20240101000000000", "20240102000000000"]}'
    assert PendingCompactionCursor.from_json(second.to_json(), table="t", sensor="s") == second
