"""``lake-orch clustering schedule|run|show``: Hudi's option names, JSON output, the dry run, a no-op run; hudi-rs
reads the clustered table as before."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.write import write_table
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

SORT = "hoodie.clustering.plan.strategy.sort.columns=fare"


def _invoke(*args: str) -> object:
    run = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert run.exit_code == 0, run.output
    return json.loads(run.stdout) if "--json" in args else run.stdout


def test_cli_schedule_dry_run_show_run(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = trips_options(table_type=TableType.COPY_ON_WRITE)
    for i in range(2):
        write_table(str(path), generate_trips(60, partitions=2, seed=i), operation="bulk_insert", options=opts)
    before = hudi_rs_snapshot(path)
    timeline = sorted(os.listdir(path / ".hoodie"))

    dry = _invoke("clustering", "schedule", str(path), "--hoodie-conf", SORT, "--dry-run", "--json")
    assert dry == {"scheduled": False, "instant": None, "groups": 2, "file_groups": 4, "output_file_groups": 2,
                   "reason": "dry run: would schedule 2 clustering group(s)"}
    assert sorted(os.listdir(path / ".hoodie")) == timeline, "the dry run wrote to the timeline"

    sched = _invoke("clustering", "schedule", str(path), "--hoodie-conf", SORT, "--json")
    assert sched["scheduled"] and sched["groups"] == 2
    shown = _invoke("clustering", "show", str(path), "--json")
    assert [(p["instant"], p["state"], p["sort_columns"]) for p in shown] == [(sched["instant"], "REQUESTED", "fare")]
    assert sorted(len(g["file_ids"]) for g in shown[0]["groups"]) == [2, 2]

    runs = _invoke("clustering", "run", str(path), "--json")
    assert [(r["instant"], r["file_groups_replaced"], r["files_written"], r["rows_written"]) for r in runs] == [
        (sched["instant"], 4, 2, before.num_rows)
    ]
    assert _invoke("clustering", "run", str(path), "--json") == []
    assert "No pending clustering plan" in str(_invoke("clustering", "run", str(path)))
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)
    assert _invoke("clustering", "show", str(path), "--json")[0]["state"] == "COMPLETED"
