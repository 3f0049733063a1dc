"""CLI commands print what the table holds, in text and JSON; errors are one line and exit 1."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from tests.conftest import HudiFixture


def test_table_show_json_fixture_reports_hoodie_properties(hudi_fixture) -> None:
    base = hudi_fixture(HudiFixture.TRIPS_MOR_AVRO)
    r = CliRunner().invoke(cli, ["table", "show", str(base), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["type"] == "MERGE_ON_READ"
    assert d["record_key_fields"] == ["uuid"]
    assert d["partition_fields"] == ["city"]
    assert d["precombine_field"] == "ts"
    assert d["merge_semantics"] == "COMMIT_TIME_ORDERING"


def test_timeline_show_json_rollback_fixture_lists_latest_states(hudi_fixture) -> None:
    base = hudi_fixture(HudiFixture.MOR_ROLLBACK)
    r = CliRunner().invoke(cli, ["timeline", "show", str(base), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [(x["instant"], x["action"], x["state"]) for x in rows] == [
        ("20250126040823628", "deltacommit", "COMPLETED"),
        ("20250126040936578", "rollback", "COMPLETED"),
        ("20250126060846931", "deltacommit", "COMPLETED"),
    ]


def test_fsview_show_json_overwrite_fixture_marks_replaced_groups(hudi_fixture) -> None:
    base = hudi_fixture(HudiFixture.COW_OVERWRITE_TABLE)
    r = CliRunner().invoke(cli, ["fsview", "show", str(base), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    replaced = [x for x in rows if x["replaced_by"]]
    live = [x for x in rows if not x["replaced_by"]]
    assert len(replaced) == 3 and len(live) == 1


def test_fsview_show_text_rollback_fixture_lists_three_log_files(hudi_fixture) -> None:
    base = hudi_fixture(HudiFixture.MOR_ROLLBACK)
    r = CliRunner().invoke(cli, ["fsview", "show", str(base)])
    assert r.exit_code == 0, r.output
    assert "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0" in r.output
    rows = json.loads(CliRunner().invoke(cli, ["fsview", "show", str(base), "--json"]).output)
    assert len(rows[0]["log_files"]) == 3


def test_cli_missing_table_prints_one_line_and_exits_1(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["timeline", "show", str(tmp_path / "nope")])
    assert r.exit_code == 1
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1
    assert "No Hudi table at" in lines[0] and "hoodie.properties" in lines[0]
