"""Clustering in Dagster (issue 29): a table with ``hoodie.clustering.async.enabled`` gets ``hudi/t/clustering``
(one partition per clustering plan), its jobs, schedule and sensors. The schedule job registers its plan as a
partition, materializing it commits the replacecommit; a plan made outside Dagster is registered by the sync sensor
and requested by the pending sensor. Oracles: hudi-rs reads the rows as before, the new base files (read with
pyarrow) are sorted by the sort column, the timeline holds the completed replacecommits."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest

from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions
from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clustering import ClusteringConfig, schedule_clustering
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

pytestmark = pytest.mark.dagster

PARTS = "t__clustering_instants"
ASSET = dg.AssetKey(["hudi", "t", "clustering"])
OPTIONS = {
    "hoodie.clustering.async.enabled": True,
    "hoodie.clustering.async.max.commits": 1,
    "hoodie.clustering.plan.strategy.sort.columns": "fare",
}
OPTS = trips_options(table_type=TableType.COPY_ON_WRITE)


def _bulk_insert(path: Path, seed: int) -> None:
    write_table(str(path), generate_trips(120, partitions=2, seed=seed), operation="bulk_insert", options=OPTS)


def _defs(path: Path) -> dg.Definitions:
    cfg = HudiTableConfig(name="t", base_path=str(path), engine="local", clustering_options=OPTIONS)
    return build_hudi_definitions(tables=[cfg])


def _completed_replacecommits(path: Path) -> list[str]:
    t = HudiTable(str(path))
    return [str(i.time) for i in t.timeline.completed().with_actions(Action.REPLACE_COMMIT)]


def _sorted_by_fare(path: Path, instant: str) -> bool:
    """Every base file the clustering ``instant`` wrote is sorted by ``fare`` (read with pyarrow)."""
    files = list(path.rglob(f"*_{instant}.parquet"))
    assert files, instant
    return all((fares := pq.read_table(f, columns=["fare"]).column("fare").to_pylist()) == sorted(fares) for f in files)


def test_clustering_is_opt_in_and_bad_options_are_refused(tmp_path: Path) -> None:
    plain = build_hudi_definitions(tables=[HudiTableConfig(name="t", base_path=str(tmp_path / "t"))])
    assert not [j.name for j in plain.jobs if "clustering" in j.name]
    defs = _defs(tmp_path / "t")
    assert {"t__clustering", "t__schedule_clustering"} <= {j.name for j in defs.jobs}
    assert {"t__sync_clustering_plans_sensor", "t__pending_clustering_sensor"} <= {s.name for s in defs.sensors}
    assert "t__schedule_clustering_schedule" in {s.name for s in defs.schedules}
    with pytest.raises(ValueError, match=r"hoodie\.clustering\.plan\.strategy\.max\.num\.groups.*'none'"):
        HudiTableConfig(
            name="t",
            base_path=str(tmp_path / "t"),
            clustering_options={"hoodie.clustering.plan.strategy.max.num.groups": "none"},
        )


def test_schedule_job_partition_materialize_then_sensor_requests_a_cli_plan(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for seed in (1, 2, 3):  # three bulk inserts: three small file groups per city
        _bulk_insert(path, seed)
    defs = _defs(path)
    before = hudi_rs_snapshot(path)
    job = defs.resolve_job_def("t__clustering")
    with dg.instance_for_test() as instance:
        # the schedule job writes the plan and registers it as a partition at once
        run = defs.resolve_job_def("t__schedule_clustering").execute_in_process(instance=instance)
        assert run.success
        (requested,) = (path / ".hoodie").glob("*.replacecommit.requested")
        first = requested.name.split(".")[0]
        assert instance.get_dynamic_partitions(PARTS) == [first]

        # materializing the partition: execute-plan then commit, a completed replacecommit
        assert job.execute_in_process(instance=instance, partition_key=first).success
        assert _completed_replacecommits(path) == [first]
        assert instance.get_materialized_partitions(ASSET) == {first}
        assert _sorted_by_fare(path, first)
        assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)
        # again: the committed plan is a no-op
        assert job.execute_in_process(instance=instance, partition_key=first).success
        assert _completed_replacecommits(path) == [first]

        # a plan made outside Dagster (the CLI's core call) after one more commit
        _bulk_insert(path, 4)
        before = hudi_rs_snapshot(path)
        r = schedule_clustering(HudiTable(str(path)), config=ClusteringConfig.from_options(OPTIONS))
        assert r.scheduled, r.reason
        second = str(r.instant)
        sync = defs.resolve_sensor_def("t__sync_clustering_plans_sensor")
        tick = sync(dg.build_sensor_context(instance=instance, definitions=defs))
        assert not tick.run_requests
        (add,) = tick.dynamic_partitions_requests
        assert isinstance(add, dg.AddDynamicPartitionsRequest) and list(add.partition_keys) == [second]

        sensor = defs.resolve_sensor_def("t__pending_clustering_sensor")
        tick = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        assert [(r.run_key, r.partition_key) for r in tick.run_requests] == [(second, second)]
        instance.add_dynamic_partitions(PARTS, [second])
        again = sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor=tick.cursor))
        assert not again.run_requests  # requested once

        assert job.execute_in_process(instance=instance, partition_key=second).success
    assert _completed_replacecommits(path) == [first, second]
    assert _sorted_by_fare(path, second)
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)


def test_fleet_model_clusters_only_the_tables_that_opt_in(tmp_path: Path) -> None:
    from lake_orchestration.dagster.fleet import TABLE_TAG, build_fleet_definitions

    for name in ("on", "off"):
        for seed in (1, 2, 3):
            _bulk_insert(tmp_path / name, seed)
    configs = [
        HudiTableConfig(name="on", base_path=str(tmp_path / "on"), clustering_options=OPTIONS),
        HudiTableConfig(name="off", base_path=str(tmp_path / "off")),
    ]
    plain = build_fleet_definitions(tables=configs[1:])
    assert "fleet__clustering" not in {j.name for j in plain.jobs}
    assert "fleet__clustering_sensor" not in {s.name for s in plain.sensors}
    defs = build_fleet_definitions(tables=configs)
    assert any(s.name.startswith("fleet__clustering__") for s in defs.schedules)
    before = hudi_rs_snapshot(tmp_path / "on")
    with dg.instance_for_test() as instance:
        sensor = defs.resolve_sensor_def("fleet__clustering_sensor")
        tick = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        (req,) = tick.run_requests  # the table that opts in only (3 commits >= async.max.commits 1)
        assert req.job_name == "fleet__clustering" and req.tags[TABLE_TAG] == "on"
        run = defs.resolve_job_def(req.job_name).execute_in_process(instance=instance, tags=req.tags)
        assert run.success
        again = sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor=tick.cursor))
        assert not again.run_requests  # no commit since the clustering
    assert len(_completed_replacecommits(tmp_path / "on")) == 1
    assert not _completed_replacecommits(tmp_path / "off")
    assert_same_rows(hudi_rs_snapshot(tmp_path / "on"), before, ignore=REWRITTEN_BY_SERVICES)
