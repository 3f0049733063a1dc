"""The fleet DAG (``hudi_fleet_compaction``): compaction mapped over the fleet's tables where it is due, in Airflow.

Three MERGE_ON_READ tables: two past ``hoodie.compact.inline.max.delta.commits`` (the one with the larger weight
first), one not. One run: ``due`` returns the two, ``run`` is mapped over them (tasks labelled by table), each
commits one compaction; the third table's timeline is untouched; rows equal before and after by hudi-rs.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.write import write_table
from tests.airflow.conftest import AirflowRunner
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

UPSERTS = {"db/light": 3, "db/heavy": 3, "db/idle": 0}


def test_fleet_dag_maps_compaction_over_the_due_tables(airflow: AirflowRunner, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    base = generate_trips(20, partitions=2, seed=1)
    opts = trips_options(table_type=TableType.MERGE_ON_READ)
    for rel, n in UPSERTS.items():
        write_table(str(wh / rel), base, operation="bulk_insert", options=opts)
        for i in range(n):
            write_table(str(wh / rel), generate_updates(base, fraction=0.3, seed=i), operation="upsert", options=opts)
    before = {rel: hudi_rs_snapshot(wh / rel) for rel in UPSERTS}
    idle_files = sorted(p.name for p in (wh / "db/idle/.hoodie").iterdir())
    config = tmp_path / "fleet.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "defaults": {"compaction_options": {"hoodie.compact.inline.max.delta.commits": 3}},
                "tables": [{"name": "db_heavy", "base_path": str(wh / "db/heavy"), "policy": {"weight": 10}}],
                "discover": [{"prefix": str(wh)}],
            }
        )
    )
    env = {**airflow.env(Path("/nonexistent")), "AIRFLOW_VAR_LAKE_ORCH_FLEET_CONFIG": str(config)}
    proc = airflow.cli("dags", "test", "hudi_fleet_compaction", env=env)
    run = airflow._collect("hudi_fleet_compaction", proc.returncode, proc.stdout + proc.stderr)

    assert run.state == "success", run.output[-6000:]
    assert run.result("due") == ["db_heavy", "db_light"]  # weight 10 first
    results = run.mapped_results("run")
    assert [(r["table"], r["status"]) for r in results] == [("db_heavy", "done"), ("db_light", "done")]
    assert [run.map_labels[("run", i)] for i in range(2)] == ["db_heavy", "db_light"]
    for rel in ("db/heavy", "db/light"):
        commits = [p.name for p in (wh / rel / ".hoodie").iterdir() if p.name.endswith(".commit")]
        assert len(commits) == 1, commits
        assert_same_rows(hudi_rs_snapshot(wh / rel), before[rel], ignore=REWRITTEN_BY_SERVICES)
    assert sorted(p.name for p in (wh / "db/idle/.hoodie").iterdir()) == idle_files
