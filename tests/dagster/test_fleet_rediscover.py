"""The fleet model re-discovers its ``discover:`` prefixes (``rediscover_interval_minutes``): a table written under
the prefix is served after the interval (not before), and the run requested for it executes; a table gone from
storage is dropped without failing the tick, a ``tables:`` entry never is; a discovery that fails keeps the previous
tables. The clock of re-discovery is the module's ``_monotonic`` (replaced here: no sleeping)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest
import yaml

from lake_orchestration.dagster import fleet as fleet_mod
from lake_orchestration.dagster.fleet import HEALTH_KEY, TABLE_TAG
from lake_orchestration.dagster.location import load_code_location
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from tests.trips import trips_options, write_trips_history

pytestmark = pytest.mark.dagster

INTERVAL_MIN = 5


@pytest.fixture(scope="module")
def table_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small real COW table with clean work (4 commits; 2 retained by the fleet's defaults), copied."""
    src = tmp_path_factory.mktemp("rediscover") / "t"
    cow = trips_options(table_type=TableType.COPY_ON_WRITE, small_file_limit=0)
    write_trips_history(src, cow, rows=30, upserts=3, fraction=0.3, partitions=1)
    return src


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    sensor = defs.resolve_sensor_def("fleet__clean_sensor")
    return sensor(dg.build_sensor_context(instance=instance, definitions=defs, cursor=cursor))


def _tables(result: dg.SensorResult) -> set[str]:
    return {r.tags[TABLE_TAG] for r in result.run_requests}


def _cleans(path: Path) -> int:
    return len(HudiTable(str(path)).timeline.completed().with_actions(Action.CLEAN))


def test_fleet_rediscovers_the_prefix_on_its_interval(
    tmp_path: Path, table_src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _Clock()
    monkeypatch.setattr(fleet_mod, "_monotonic", clock)
    wh = tmp_path / "warehouse"
    for rel in ("rides/trips", "sales/orders"):
        shutil.copytree(table_src, wh / rel)
    config = tmp_path / "lake_orchestration.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "fleet": True,
                "defaults": {"clean_options": {"hoodie.cleaner.commits.retained": 2}, "clean_dry_run": False},
                "tables": [{"name": "trips", "base_path": str(wh / "rides" / "trips")}],
                "discover": [{"prefix": str(wh), "rediscover_interval_minutes": INTERVAL_MIN}],
            }
        )
    )
    defs = load_code_location({"LAKE_ORCHESTRATION_CONFIG": str(config)})
    job = defs.resolve_job_def("fleet__clean")
    with dg.instance_for_test() as instance:
        first = _tick(defs, instance, None)
        assert _tables(first) == {"trips", "sales_orders"}

        # a 3rd table under the prefix: not seen before the interval ...
        new = wh / "events" / "clicks"
        shutil.copytree(table_src, new)
        clock.now += 60
        before = _tick(defs, instance, first.cursor)
        assert not before.run_requests
        assert "events_clicks" not in json.loads(before.cursor)["fingerprints"]

        # ... seen after it, and the run requested for it cleans it
        clock.now += INTERVAL_MIN * 60
        after = _tick(defs, instance, before.cursor)
        (req,) = after.run_requests
        assert req.tags[TABLE_TAG] == "events_clicks" and req.job_name == "fleet__clean"
        assert _cleans(new) == 0
        assert job.execute_in_process(instance=instance, tags=req.tags).success
        assert _cleans(new) == 1
        assert "events_clicks" in json.loads(after.cursor)["fingerprints"]

        # the health asset sees the same tables
        health = defs.resolve_job_def("fleet__measure_health").execute_in_process(instance=instance)
        (mat,) = health.asset_materializations_for_node(HEALTH_KEY.to_python_identifier())
        rows = mat.metadata["tables_health"].value.records
        assert {r.data["name"] for r in rows} == {"trips", "sales_orders", "events_clicks"}

        # a discovery that fails (storage error) keeps the previous tables, and the tick succeeds
        def broken(*_a: object, **_k: object) -> list:
            raise OSError("listing refused")

        monkeypatch.setattr("lake_orchestration.fleet.discovery.discover_tables", broken)
        clock.now += INTERVAL_MIN * 60 + 1
        failed = _tick(defs, instance, after.cursor)
        assert set(json.loads(failed.cursor)["fingerprints"]) == {"trips", "sales_orders", "events_clicks"}
        monkeypatch.undo()
        monkeypatch.setattr(fleet_mod, "_monotonic", clock)

        # tables deleted from storage: the discovered one is dropped, the listed one (tables:) is kept; no tick fails
        shutil.rmtree(wh / "sales")
        shutil.rmtree(wh / "rides")
        gone = _tick(defs, instance, failed.cursor)  # before the interval: their probes fail, the tick does not
        assert not gone.run_requests
        clock.now += INTERVAL_MIN * 60 + 1
        dropped = _tick(defs, instance, gone.cursor)
        assert set(json.loads(dropped.cursor)["fingerprints"]) == {"trips", "events_clicks"}
        run = job.execute_in_process(instance=instance, tags={TABLE_TAG: "sales_orders"}, raise_on_error=False)
        assert not run.success
        failure = run.failure_data_for_node("fleet__clean_plan_op")
        assert failure is not None and "No table 'sales_orders'" in str(failure.error)


def test_zero_interval_discovers_at_load_only(tmp_path: Path, table_src: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(fleet_mod, "_monotonic", clock)
    wh = tmp_path / "warehouse"
    shutil.copytree(table_src, wh / "a")
    config = tmp_path / "lake_orchestration.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "fleet": True,
                "defaults": {"clean_options": {"hoodie.cleaner.commits.retained": 2}},
                "discover": [{"prefix": str(wh), "rediscover_interval_minutes": 0}],
            }
        )
    )
    defs = load_code_location({"LAKE_ORCHESTRATION_CONFIG": str(config)})
    shutil.copytree(table_src, wh / "b")
    clock.now += 10**6
    with dg.instance_for_test() as instance:
        assert _tables(_tick(defs, instance, None)) == {"a"}
