"""The fleet on Paimon tables pypaimon writes (the oracle, in its own venv: tests/paimon/conftest.py).

Two primary-key tables of four commits each: one with ``num-sorted-run.compaction-trigger`` 3 (its planner has
buckets to compact: due), one with 10 (not due). ``lake-orch fleet run`` compacts the first once (a COMPACT
snapshot), leaves the second untouched, pypaimon reads the same rows from both, and a second run finds nothing due.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.paimon.model import CommitKind
from lake_orchestration.paimon.table import PaimonTable
from tests.paimon.conftest import pypaimon, pypaimon_python  # noqa: F401 - the fixtures
from tests.paimon.tables import Pypaimon, read_rows, table_path, write_table

pytestmark = pytest.mark.slow

COMMITS = [
    [[dt, i, f"v0-{i}", "+I"] for dt in ("a", "b") for i in range(40)],
    [["a", i, f"v1-{i}", "+I"] for i in range(0, 40, 3)],
    [["b", i, None, "-D"] for i in range(10, 20)],
    [["a", i, f"v3-{i}", "+I"] for i in range(30, 50)],
]


def test_fleet_run_compacts_the_paimon_table_its_planner_picks(tmp_path: Path, pypaimon: Pypaimon) -> None:  # noqa: F811
    due_wh = write_table(pypaimon, tmp_path / "due", COMMITS, buckets=1, **{"num-sorted-run.compaction-trigger": "3"})
    idle_wh = write_table(
        pypaimon, tmp_path / "idle", COMMITS, buckets=1, **{"num-sorted-run.compaction-trigger": "10"}
    )
    before = {"due": read_rows(pypaimon, due_wh), "idle": read_rows(pypaimon, idle_wh)}
    config = tmp_path / "fleet.yaml"
    entries = [
        {"name": name, "base_path": table_path(wh), "format": "paimon"}
        for name, wh in (("due", due_wh), ("idle", idle_wh))
    ]
    config.write_text(yaml.safe_dump({"tables": entries}))

    r = CliRunner().invoke(cli, ["fleet", "run", "--config", str(config), "--json"])
    assert r.exit_code == 0, r.output
    assert [(o["table"], o["service"], o["status"]) for o in json.loads(r.stdout)["outcomes"]] == [
        ("due", "compaction", "done")
    ]
    due, idle = PaimonTable.open(table_path(due_wh)), PaimonTable.open(table_path(idle_wh))
    assert (due.latest_snapshot_id(), due.latest_snapshot().commit_kind) == (5, CommitKind.COMPACT)
    assert idle.latest_snapshot_id() == 4
    assert read_rows(pypaimon, due_wh) == before["due"] and read_rows(pypaimon, idle_wh) == before["idle"]
    again = CliRunner().invoke(cli, ["fleet", "run", "--config", str(config)])
    assert again.exit_code == 0 and "Nothing due on any table" in again.stdout
