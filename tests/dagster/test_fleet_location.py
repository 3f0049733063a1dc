"""The Dagster code location on the fleet's YAML: ``defaults:`` under every table, ``discover:`` of the tables under a
prefix, ``policy:``, and ``fleet:`` choosing the model; errors name the file and the entry. And the fleet's
stale-inflight sensor: a write with no heartbeat older than the table's timeout gets a ``fleet__rollback`` run."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import pendulum
import pytest
import yaml

from lake_orchestration.dagster.config import HudiConfigError, load_config_file
from lake_orchestration.dagster.location import load_code_location
from lake_orchestration.hudi.model.instant import Action
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options, write_trips_history

pytestmark = pytest.mark.dagster


@pytest.fixture(scope="module")
def table_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small real MOR table (a bulk insert), copied by each test."""
    src = tmp_path_factory.mktemp("fleet_loc") / "t"
    write_trips_history(src, trips_options(small_file_limit=0), rows=30, upserts=0, fraction=0.3, partitions=1)
    return src


def _warehouse(tmp_path: Path, src: Path) -> Path:
    wh = tmp_path / "warehouse"
    for rel in ("rides/trips", "sales/orders"):
        shutil.copytree(src, wh / rel)
    return wh


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "lake_orchestration.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_code_location_reads_defaults_discover_and_policy(tmp_path: Path, table_src: Path) -> None:
    wh = _warehouse(tmp_path, table_src)
    data = {
        "fleet": True,
        "defaults": {
            "compaction_options": {"hoodie.compact.inline.max.delta.commits": 7},
            "policy": {"max_log_files_per_slice": 9},
        },
        "tables": [{"name": "trips", "base_path": str(wh / "rides" / "trips"), "policy": {"weight": 3}}],
        "discover": [{"prefix": str(wh)}],
    }
    path = _write(tmp_path, data)
    cfg = load_config_file(path)
    by_name = {t.name: t for t in cfg.tables}
    # the listed table is not discovered again; the other is named from its path
    assert sorted(by_name) == ["sales_orders", "trips"]
    assert by_name["sales_orders"].base_path.rstrip("/") == str(wh / "sales" / "orders")
    for t in cfg.tables:
        assert t.compaction_options == {"hoodie.compact.inline.max.delta.commits": "7"}
    assert by_name["trips"].policy == {"max_log_files_per_slice": 9, "weight": 3}
    defs = load_code_location({"LAKE_ORCHESTRATION_CONFIG": str(path)})
    assert {s.name for s in defs.sensors} == {
        "fleet__compaction_sensor",
        "fleet__clean_sensor",
        "fleet__archive_sensor",
        "fleet__stale_inflight_sensor",
    }
    # auto (the default) with 2 tables: the per-table model, same tables
    del data["fleet"]
    defs = load_code_location({"LAKE_ORCHESTRATION_CONFIG": str(_write(tmp_path, data))})
    assert defs.resolve_job_def("trips__clean") and defs.resolve_job_def("sales_orders__clean")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"fleet": "sometimes"}, r"fleet: expected true, false or auto, got 'sometimes'"),
        ({"defaults": {"policy": {"weight": 0}}}, r"tables\[0\] \('trips'\).*policy.weight: expected a number > 0"),
        ({"defaults": {"polcy": {}}}, r"defaults: unknown key 'polcy' \(did you mean 'policy'\?\)"),
    ],
)
def test_fleet_yaml_errors_name_the_file_and_entry(tmp_path: Path, table_src: Path, change: dict, message: str) -> None:
    wh = _warehouse(tmp_path, table_src)
    path = _write(tmp_path, {"tables": [{"name": "trips", "base_path": str(wh / "rides" / "trips")}], **change})
    with pytest.raises(HudiConfigError, match=message) as err:
        load_config_file(path)
    assert str(path) in str(err.value)


def test_fleet_stale_inflight_sensor_requests_the_rollback(tmp_path: Path, table_src: Path) -> None:
    from lake_orchestration.dagster import HudiTableConfig
    from lake_orchestration.dagster.fleet import TABLE_TAG, build_fleet_definitions
    from lake_orchestration.hudi.model.instant import Action, Instant, State
    from lake_orchestration.hudi.table import HudiTable

    path = tmp_path / "t"
    shutil.copytree(table_src, path)
    shutil.copytree(table_src, tmp_path / "quiet")
    before = hudi_rs_snapshot(path)
    two_hours_ago = pendulum.now("UTC").subtract(hours=2).format("YYYYMMDDHHmmssSSS")
    old = HudiTable(str(path)).create_requested(Instant(two_hours_ago, Action.DELTA_COMMIT, State.REQUESTED))
    tables = [
        HudiTableConfig(name=n, base_path=str(tmp_path / d), inflight_timeout_seconds=3600)
        for n, d in (("t", "t"), ("quiet", "quiet"))
    ]
    defs = build_fleet_definitions(tables=tables)
    sensor = defs.resolve_sensor_def("fleet__stale_inflight_sensor")
    with dg.DagsterInstance.ephemeral() as instance:
        result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        (req,) = result.run_requests
        assert req.tags[TABLE_TAG] == "t" and req.job_name == "fleet__rollback"
        assert "no heartbeat" in req.tags["hudi/reason"]
        run = defs.resolve_job_def("fleet__rollback").execute_in_process(
            instance=instance, run_config=req.run_config, tags=req.tags
        )
        assert run.success
        again = sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor=result.cursor))
        assert not again.run_requests
    assert HudiTable(str(path)).timeline.get(str(old.time)) is None
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_backfill_of_pending_plans_per_table_and_across_the_fleet(tmp_path: Path, table_src: Path) -> None:
    """Plans scheduled outside Dagster (the CLI's way: the core's schedule-plan) on three tables become partitions
    ``<table>|<instant>`` of ``fleet/compaction_plans`` at the compaction schedule's tick (it runs nothing); the runs
    of one table's partitions (a backfill filtered on ``b|``) commit that table's plans only, then the runs of the
    missing partitions (a backfill of the fleet) commit the rest, each plan once."""
    from lake_orchestration.dagster import HudiTableConfig
    from lake_orchestration.dagster.fleet import PARTITIONS_DEF, build_fleet_definitions
    from lake_orchestration.datagen import generate_trips, generate_updates
    from lake_orchestration.hudi.services.compaction import CompactionConfig, schedule_compaction
    from lake_orchestration.hudi.table import HudiTable
    from lake_orchestration.hudi.write import write_table

    names = ("a", "b", "c")
    plans = {}
    for i, n in enumerate(names):
        shutil.copytree(table_src, tmp_path / n)
        upd = generate_updates(generate_trips(30, partitions=1, seed=1), fraction=0.3, seed=i, ts_offset=10**6)
        write_table(str(tmp_path / n), upd, operation="upsert", options=trips_options(small_file_limit=0))
        r = schedule_compaction(HudiTable(str(tmp_path / n)), config=CompactionConfig(max_delta_commits=1))
        assert r.instant is not None
        plans[n] = str(r.instant)
    before = {n: hudi_rs_snapshot(tmp_path / n) for n in names}
    tables = [HudiTableConfig(name=n, base_path=str(tmp_path / n)) for n in names]
    defs = build_fleet_definitions(tables=tables)
    (schedule,) = [s for s in defs.schedules if s.name.startswith("fleet__compaction__")]
    job = defs.resolve_job_def("fleet__compaction")
    with dg.instance_for_test() as instance:  # a schedule's context needs an instance reference
        tick = schedule(dg.build_schedule_context(instance=instance))
        assert isinstance(tick, dg.SkipReason)  # the trigger is met by no table: the pending plans are not its work
        keys = sorted(instance.get_dynamic_partitions(PARTITIONS_DEF))
        assert keys == sorted(f"{n}|{plans[n]}" for n in names)
        for key in [k for k in keys if k.startswith("b|")]:  # one table's backfill
            assert job.execute_in_process(instance=instance, partition_key=key).success
        assert [n for n in names if HudiTable(str(tmp_path / n)).timeline.pending_compactions()] == ["a", "c"]
        missing = [k for k in keys if not k.startswith("b|")]  # the fleet's backfill of the missing partitions
        for key in missing:
            assert job.execute_in_process(instance=instance, partition_key=key).success
    for n in names:
        t = HudiTable(str(tmp_path / n))
        assert not t.timeline.pending_compactions()
        assert [str(i.time) for i in t.timeline.completed().with_actions(Action.COMMIT)] == [plans[n]]
        assert_same_rows(hudi_rs_snapshot(tmp_path / n), before[n], ignore=REWRITTEN_BY_SERVICES)


@pytest.mark.slow
def test_fleet_compacts_a_paimon_table_pypaimon_reads_the_same(tmp_path: Path, table_src: Path, pypaimon: Any) -> None:
    """A Paimon table (written by pypaimon, 5 level-0 files in one bucket, trigger 2) beside a Hudi table: the fleet
    model builds no per-table definitions for it; ``fleet__compaction_sensor`` requests one
    ``fleet__paimon_compaction`` run (none for the quiet Hudi table), which commits a COMPACT snapshot; the next tick
    requests nothing; pypaimon reads the same rows."""
    from lake_orchestration.dagster import HudiTableConfig
    from lake_orchestration.dagster.fleet import TABLE_TAG, build_fleet_definitions
    from lake_orchestration.paimon.model import CommitKind
    from lake_orchestration.paimon.table import PaimonTable
    from tests.dagster.test_paimon_dagster import _write
    from tests.paimon.tables import read_rows

    warehouse, path = _write(
        pypaimon, tmp_path, 5, **{"num-sorted-run.compaction-trigger": "2", "num-sorted-run.stop-trigger": "3"}
    )
    before = read_rows(pypaimon, warehouse)
    shutil.copytree(table_src, tmp_path / "h")
    tables = [
        HudiTableConfig(name="p", base_path=path, format="paimon"),
        HudiTableConfig(name="h", base_path=str(tmp_path / "h")),
    ]
    defs = build_fleet_definitions(tables=tables)
    dg.Definitions.validate_loadable(defs)
    assert {s.name for s in defs.sensors} == {f"fleet__{k}_sensor" for k in SERVICES}
    assert not [j for j in defs.jobs if j.name.startswith("p__")]
    sensor = defs.resolve_sensor_def("fleet__compaction_sensor")
    with dg.DagsterInstance.ephemeral() as instance:
        result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        (req,) = result.run_requests
        assert req.job_name == "fleet__paimon_compaction" and req.tags[TABLE_TAG] == "p"
        run = defs.resolve_job_def(req.job_name).execute_in_process(instance=instance, tags=req.tags)
        assert run.success
        again = sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor=result.cursor))
        assert not again.run_requests
    snap = PaimonTable.open(path).latest_snapshot()
    assert snap is not None and snap.commit_kind is CommitKind.COMPACT and snap.id == 6
    assert read_rows(pypaimon, warehouse) == before


SERVICES = ("compaction", "clean", "archive", "stale_inflight")
