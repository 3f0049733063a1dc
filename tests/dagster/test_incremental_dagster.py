"""Changes downstream (issue 28, Dagster): a downstream asset receives each batch written to a Hudi table exactly
once, through the new-commits sensor's run requests and the incremental IO manager, across a compaction and a
failed run.

The oracle is what each batch wrote (the writer's input rows), not what the reader returns elsewhere: the rows the
downstream asset receives must be exactly the batch's keys with the batch's values, committed at the batch's
instant.
"""

from __future__ import annotations

import dagster as dg
import pyarrow as pa
import pytest

from lake_orchestration.dagster import HudiTableConfig
from lake_orchestration.dagster.errors import PermanentHudiError, SensorCursorError
from lake_orchestration.dagster.incremental import (
    HudiChanges,
    HudiIncrementalIOManager,
    NewCommitsCursor,
    checkpoint_key,
    hudi_new_commits_sensor,
)
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

UPSTREAM = dg.AssetKey(["hudi", "trips"])
DOWNSTREAM = dg.AssetKey(["trip_changes"])
COLUMNS = ["uuid", "ts", "fare", "rider"]


def _rows(t: pa.Table) -> list[tuple]:
    """The user columns the batch wrote, one tuple per record, sorted by key."""
    return sorted(zip(*(t.column(c).to_pylist() for c in COLUMNS), strict=True))


def _definitions(path: str, received: list[HudiChanges], fail: dict[str, bool]) -> dg.Definitions:
    upstream = dg.AssetSpec(UPSTREAM, description="the Hudi table (written outside Dagster)")

    @dg.asset(key=DOWNSTREAM, ins={"trips": dg.AssetIn(key=UPSTREAM, input_manager_key="hudi_changes")})
    def trip_changes(trips: HudiChanges) -> dg.MaterializeResult:
        if fail["next"]:
            fail["next"] = False
            raise RuntimeError("downstream failed after loading its input")
        received.append(trips)
        return dg.MaterializeResult(metadata={"rows": trips.num_rows})

    sensor = hudi_new_commits_sensor(path, [DOWNSTREAM])
    return dg.Definitions(
        assets=[upstream, trip_changes],
        sensors=[sensor],
        resources={"hudi_changes": HudiIncrementalIOManager(base_path=path)},
    )


def test_downstream_receives_each_batch_once_across_compaction_and_failure(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "trips")
    options = WriteOptions(
        table_name="trips", table_type=TableType.MERGE_ON_READ, record_key_fields=("uuid",), precombine_field="ts"
    )
    received: list[HudiChanges] = []
    fail = {"next": False}
    defs = _definitions(path, received, fail)
    sensor = defs.resolve_sensor_def("trips__new_commits_sensor")
    instance = dg.DagsterInstance.ephemeral()
    cursor: str | None = None

    def tick() -> list[dg.RunRequest]:
        nonlocal cursor
        result = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs))
        cursor = result.cursor if result.cursor is not None else cursor
        return list(result.run_requests or [])

    def run(request: dg.RunRequest, *, expect_success: bool = True) -> dg.ExecuteInProcessResult:
        assert request.asset_selection == [DOWNSTREAM]
        job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection=set(request.asset_selection))
        result = job.execute_in_process(instance=instance, tags=request.tags, raise_on_error=False)
        assert result.success is expect_success
        return result

    def recorded_checkpoint() -> str:
        event = instance.get_latest_materialization_event(DOWNSTREAM)
        assert event is not None and event.asset_materialization is not None
        return str(event.asset_materialization.metadata[checkpoint_key(UPSTREAM)].value)

    def assert_received(batch: pa.Table, instant: str) -> None:
        got = received[-1]
        assert _rows(got.table) == _rows(batch), "the downstream asset received other rows than the batch wrote"
        assert set(got.table.column("_hoodie_commit_time").to_pylist()) == {instant}
        assert got.checkpoint == instant == recorded_checkpoint()

    # batch 1: the first materialization is a snapshot, checkpoint = the latest completed instant
    trips = generate_trips(40, seed=1)
    b1 = write_table(path, trips, operation="bulk_insert", options=options)
    (req,) = tick()
    assert req.run_key == str(b1.instant)
    run(req)
    assert received[-1].snapshot
    assert_received(trips, str(b1.instant))
    assert tick() == []  # nothing new: no run

    # batch 2: updates of a quarter of the trips (log files); the first run fails after loading its input
    batch2 = generate_updates(trips, fraction=0.25, seed=2)
    b2 = write_table(path, batch2, operation="upsert", options=options)
    (req,) = tick()
    assert req.run_key == str(b2.instant)
    fail["next"] = True
    run(req, expect_success=False)
    assert len(received) == 1 and recorded_checkpoint() == str(b1.instant)  # the failure did not advance it
    run(req)  # the re-execution gets the same changes
    assert not received[-1].snapshot and received[-1].begin_instant_time == str(b1.instant)
    assert_received(batch2, str(b2.instant))

    # a compaction changes no row: the sensor requests nothing, and a run anyway receives nothing
    plan = schedule_compaction(HudiTable(path), force=True)
    assert plan.instant is not None
    run_compaction(HudiTable(path))
    assert tick() == []
    assert NewCommitsCursor.from_json(cursor, table="trips", sensor="s").last_completed == str(plan.instant)
    run(dg.RunRequest(asset_selection=[DOWNSTREAM]))
    assert received[-1].num_rows == 0 and received[-1].checkpoint == str(plan.instant)

    # batch 3 after the compaction: only its rows (updates of compacted records and new trips), never old rows again
    batch3 = pa.concat_tables(
        [generate_updates(trips, fraction=0.3, seed=4, ts_offset=20_000_000), generate_trips(8, seed=3)]
    )
    b3 = write_table(path, batch3, operation="upsert", options=options)
    (req,) = tick()
    assert req.run_key == str(b3.instant)
    run(req)
    assert_received(batch3, str(b3.instant))

    # every record version arrived once, in its batch's load: (key, ts) identifies a version
    def versions(t: pa.Table) -> list[tuple]:
        return list(zip(t.column("uuid").to_pylist(), t.column("ts").to_pylist(), strict=True))

    got = [v for c in received for v in versions(c.table)]
    assert sorted(got) == sorted(v for b in (trips, batch2, batch3) for v in versions(b))
    assert len(set(got)) == len(got)


def test_bad_options_and_cursor_fail_clearly(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    write_table(
        path,
        generate_trips(3, seed=1),
        operation="bulk_insert",
        options=WriteOptions(table_name="t", record_key_fields=("uuid",)),
    )
    manager = HudiIncrementalIOManager(base_path=path, options={"hoodie.datasource.read.begin.instanttime": "0"})
    with pytest.raises(PermanentHudiError, match=r"hoodie\.datasource\.read\.begin\.instanttime.*expected one of"):
        manager.load_changes(None, source="hudi/t")
    manager = HudiIncrementalIOManager(base_path=path, options={"hoodie.read.timeline.holes.resolution.policy": "X"})
    with pytest.raises(PermanentHudiError, match="FAIL"):
        manager.load_changes(None, source="hudi/t")
    with pytest.raises(SensorCursorError, match="last_completed"):
        NewCommitsCursor.from_json('{"seen": []}', table="t", sensor="t__new_commits_sensor")
    assert NewCommitsCursor.from_json("20250101000000000", table="t", sensor="s").last_completed == "20250101000000000"


def test_sensor_requests_a_commit_that_completes_after_a_later_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A concurrent writer's commit, pending while a later one completed, requests a run once it completes."""
    path = str(tmp_path / "t")
    options = WriteOptions(table_name="t", record_key_fields=("uuid",), precombine_field="ts")
    write_table(path, generate_trips(3, seed=1), operation="bulk_insert", options=options)
    table = HudiTable(path)
    slow = table.create_requested(Instant(table.new_instant_time(), Action.DELTA_COMMIT, State.REQUESTED))
    later = write_table(path, generate_trips(3, seed=2), operation="insert", options=options)

    @dg.asset(key=DOWNSTREAM)
    def trip_changes() -> None: ...

    sensor = hudi_new_commits_sensor(path, [DOWNSTREAM], name="s")
    defs = dg.Definitions(assets=[trip_changes], sensors=[sensor])
    first = sensor.evaluate_tick(dg.build_sensor_context(cursor="0", definitions=defs))
    assert [r.run_key for r in first.run_requests] == [str(later.instant)]
    cursor = NewCommitsCursor.from_json(first.cursor, table="t", sensor="s")
    assert cursor.last_completed == str(later.instant) and cursor.pending == {str(slow.time)}
    assert not sensor.evaluate_tick(dg.build_sensor_context(cursor=first.cursor, definitions=defs)).run_requests

    table = HudiTable(path)  # the slow writer completes (an empty commit)
    inflight = table.transition_to_inflight(slow)
    table.transition_to_completed(inflight, b'{"partitionToWriteStats": {}, "operationType": "INSERT"}')
    second = sensor.evaluate_tick(dg.build_sensor_context(cursor=first.cursor, definitions=defs))
    assert [r.run_key for r in second.run_requests] == [str(slow.time)]
    assert NewCommitsCursor.from_json(second.cursor, table="t", sensor="s").pending == frozenset()

    # the same from a table config (named after it): every completed commit after the bare-instant cursor "0"
    by_config = hudi_new_commits_sensor(HudiTableConfig(name="t", base_path=path), [DOWNSTREAM])
    assert by_config.name == "t__new_commits_sensor"
    defs = dg.Definitions(assets=[trip_changes], sensors=[by_config])
    (req,) = by_config.evaluate_tick(dg.build_sensor_context(cursor="0", definitions=defs)).run_requests
    assert req.run_key == str(later.instant) and req.tags["hudi/new_commits"] == "3"
