"""Pending plans are partitions before anything runs them: the schedule job registers its plan, the sync sensor
registers plans made by the CLI and removes partitions whose plans are gone, a backfill over the partitions commits
them, and a partition with no plan fails once, without retries. The table's health is observed after each service
step and from the sensors; the table asset carries Dagster's standard table metadata."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot

pytestmark = pytest.mark.dagster

PARTS = "t__compaction_instants"
TABLE_KEY = dg.AssetKey(["hudi", "t"])
OPTS = WriteOptions(
    table_name="t",
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
    hive_style_partitioning=True,
    small_file_limit=0,
)


def _upsert(path: Path, seed: int, city: int | None = None) -> None:
    """Updates 30% of the rows (of the ``city``-th city only, if given): log files in their file groups."""
    base = generate_trips(200, partitions=2, seed=1)
    if city is not None:
        name = sorted(set(base.column("city").to_pylist()))[city]
        base = base.filter(pc.equal(base.column("city"), name))
    updates = generate_updates(base, fraction=0.3, seed=seed, ts_offset=seed * 10**7)
    write_table(str(path), updates, operation="upsert", options=OPTS)


def _mor(tmp_path: Path, city: int | None = None) -> Path:
    """A MOR table (two city partitions) whose file groups (of ``city`` only, if given) have log files, no plan."""
    path = tmp_path / "t"
    write_table(str(path), generate_trips(200, partitions=2, seed=1), operation="bulk_insert", options=OPTS)
    _upsert(path, 1, city)
    return path


def _defs(path: Path, **kw: object) -> dg.Definitions:
    # every delta commit triggers a plan (as `--option hoodie.compact.inline.max.delta.commits=1` does on the CLI)
    options = {"hoodie.compact.inline.max.delta.commits": "1"}
    cfg = HudiTableConfig(name="t", base_path=str(path), engine="local", compaction_options=options, **kw)
    return build_hudi_definitions(tables=[cfg])


def _cli_schedule(path: Path) -> str:
    result = CliRunner().invoke(
        cli,
        ["compaction", "schedule", str(path), "--option", "hoodie.compact.inline.max.delta.commits=1"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    pending = [str(i.time) for i in HudiTable(str(path)).timeline.pending_compactions()]
    assert pending, result.output
    return pending[-1]


def _sync(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None = None) -> dg.SensorResult:
    """One tick of the sync sensor, its partition requests applied as the sensor daemon applies them."""
    sensor = defs.resolve_sensor_def("t__sync_compaction_plans_sensor")
    result = sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor=cursor))
    for req in result.dynamic_partitions_requests or []:
        if isinstance(req, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
        else:
            for key in req.partition_keys:
                instance.delete_dynamic_partition(req.partitions_def_name, key)
    return result


def _pending_observed(events: list[dg.AssetObservation]) -> list[int]:
    return [int(o.metadata["pending_compactions"].value) for o in events if o.asset_key == TABLE_KEY]


def test_plans_of_schedule_job_and_cli_are_partitions_and_a_backfill_commits_them(tmp_path: Path) -> None:
    path = _mor(tmp_path, city=0)
    defs = _defs(path)
    with dg.instance_for_test() as instance:
        # the schedule job registers its plan as a partition itself (no sensor involved) and observes the health
        run = defs.resolve_job_def("t__schedule_compaction").execute_in_process(instance=instance)
        assert run.success
        (by_job,) = [str(i.time) for i in HudiTable(str(path)).timeline.pending_compactions()]
        assert instance.get_dynamic_partitions(PARTS) == [by_job]
        obs = [e.asset_observation_data.asset_observation for e in run.all_events if e.is_asset_observation]
        assert _pending_observed(obs) == [1]

        # a plan made outside Dagster (the CLI) is registered by the sync sensor, which launches nothing
        _upsert(path, 2, city=1)  # the other city: its file groups are in no plan yet
        by_cli = _cli_schedule(path)
        assert instance.get_dynamic_partitions(PARTS) == [by_job]
        tick = _sync(defs, instance)
        assert not tick.run_requests
        assert sorted(instance.get_dynamic_partitions(PARTS)) == sorted([by_job, by_cli])
        assert _pending_observed(list(tick.asset_events)) == [2]
        # nothing changed: the next tick skips and observes nothing
        again = _sync(defs, instance, cursor=tick.cursor)
        assert not again.dynamic_partitions_requests and not again.asset_events

        # Materialize -> Missing: the backfill's runs, one per missing partition, oldest first
        before = hudi_rs_snapshot(path)
        job = defs.resolve_job_def("t__compaction")
        materialized = instance.get_materialized_partitions(dg.AssetKey(["hudi", "t", "compaction"]))
        missing = [p for p in instance.get_dynamic_partitions(PARTS) if p not in materialized]
        assert sorted(missing) == sorted([by_job, by_cli])
        seen: list[int] = []
        for p in sorted(missing):
            result = job.execute_in_process(instance=instance, partition_key=p)
            assert result.success
            seen += _pending_observed(
                [e.asset_observation_data.asset_observation for e in result.all_events if e.is_asset_observation]
            )
        assert seen == [1, 0]  # the plots: one pending plan left, then none
        assert instance.get_materialized_partitions(dg.AssetKey(["hudi", "t", "compaction"])) == {by_job, by_cli}

        # committed plans keep their partitions (their materializations are the record)
        assert not _sync(defs, instance, cursor=tick.cursor).dynamic_partitions_requests
    t = HudiTable(str(path))
    assert not list(t.timeline.pending_compactions())
    assert all(t.timeline.get(p) is not None and t.timeline.get(p).is_completed for p in (by_job, by_cli))
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)


def test_partition_without_plan_fails_once_without_retries_and_sync_removes_it(tmp_path: Path) -> None:
    path = _mor(tmp_path)
    plan = _cli_schedule(path)
    defs = _defs(path, retry_max_retries=2, retry_delay_seconds=0)
    gone = "20000101000000000"
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PARTS, [gone])
        result = defs.resolve_job_def("t__compaction").execute_in_process(
            instance=instance, partition_key=gone, raise_on_error=False
        )
        assert not result.success
        kinds = [e.event_type_value for e in result.all_events if e.step_key and "execute_plan" in e.step_key]
        assert kinds.count("STEP_FAILURE") == 1 and "STEP_UP_FOR_RETRY" not in kinds
        (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
        data = failure.event_specific_data
        message = str(data.error)  # type: ignore[union-attr]
        assert f"No pending compaction plan {gone} on t" in message
        assert "t__sync_compaction_plans_sensor removes this partition" in message
        md = {k: v.value for k, v in data.user_failure_data.metadata.items()}  # type: ignore[union-attr]
        assert md["retried"] is False and md["error"] == "NoPendingCompactionPlan" and md["instant"] == gone

        # the sync: the pending plan in, the plan-less partition out
        tick = _sync(defs, instance)
        deletes = [r for r in tick.dynamic_partitions_requests if isinstance(r, dg.DeleteDynamicPartitionsRequest)]
        assert [list(r.partition_keys) for r in deletes] == [[gone]]
        assert instance.get_dynamic_partitions(PARTS) == [plan]
    assert not list(path.rglob(f"*_{gone}.parquet"))


def test_table_asset_has_dagster_table_metadata_and_services_observe_health(tmp_path: Path) -> None:
    path = _mor(tmp_path)
    defs = _defs(path)
    snapshot = hudi_rs_snapshot(path)
    with dg.instance_for_test() as instance:
        result = dg.materialize([defs.resolve_assets_def(TABLE_KEY)], instance=instance)
        (mat,) = result.asset_materializations_for_node("hudi__t")
        md = mat.metadata
        assert md["dagster/row_count"].value == snapshot.num_rows  # logs merged, as hudi-rs reads it
        columns = [c.name for c in md["dagster/column_schema"].value.columns]  # type: ignore[union-attr]
        assert columns == [c for c in snapshot.column_names if not c.startswith("_hoodie_")]
        assert md["dagster/uri"].value == str(path)
        assert md["log_files"].value > 0

        # an archive (not a dry run) observes the table's health after its merge step
        run = defs.resolve_job_def("t__archive").execute_in_process(
            instance=instance, run_config={"ops": {"t__archive_op": {"config": {"dry_run": False}}}}
        )
        assert run.success
        # the latest health of hudi/t is recorded as an observation, whatever ran
        latest = instance.fetch_observations(TABLE_KEY, limit=1).records
        (obs,) = [r.event_log_entry.asset_observation for r in latest]  # type: ignore[union-attr]
        assert obs is not None and obs.metadata["dagster/uri"].value == str(path)
        assert obs.metadata["observed_by"].value == "t__merge_archive_files_op"
        assert obs.metadata["pending_compactions"].value == 0 and obs.metadata["log_files"].value > 0
