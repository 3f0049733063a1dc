"""`lake-orch compaction schedule|run|show|rollback` on a generated table, checked against hudi-rs."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.table import HudiTable
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.tables import generated_table


def test_compaction_cli_schedule_show_run_lifo_and_rollback(tmp_path: Path) -> None:
    path = generated_table(tmp_path)
    before = hudi_rs_snapshot(path)
    run = CliRunner().invoke
    r = run(
        cli, ["compaction", "schedule", str(path), "--option", "hoodie.compact.inline.max.delta.commits=50", "--json"]
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["scheduled"] is False and "NUM_COMMITS not met" in json.loads(r.output)["reason"]
    r = run(cli, ["compaction", "schedule", str(path), "--json"])
    first = json.loads(r.output)
    assert first["scheduled"] and first["operations"] > 0
    shown = json.loads(run(cli, ["compaction", "show", str(path), "--json"]).output)
    assert [(p["instant"], p["state"]) for p in shown] == [(first["instant"], "REQUESTED")]
    # simulate a crashed attempt, then roll it back from the CLI (dry run first: nothing changes)
    t = HudiTable(str(path))
    t.transition_to_inflight(Instant(first["instant"], Action.COMPACTION, State.REQUESTED))
    files = sorted(p.name for p in (path / ".hoodie").iterdir())
    r = run(cli, ["compaction", "rollback", str(path), "--instant-time", first["instant"], "--dry-run"])
    assert r.exit_code == 0 and "Dry run" in r.output
    assert sorted(p.name for p in (path / ".hoodie").iterdir()) == files
    r = run(cli, ["compaction", "rollback", str(path), "--instant-time", first["instant"]])
    assert r.exit_code == 0, r.output
    assert json.loads(run(cli, ["compaction", "show", str(path), "--json"]).output)[0]["state"] == "REQUESTED"
    r = run(cli, ["compaction", "run", str(path), "--engine", "local", "--seq", "LIFO", "--json"])
    assert r.exit_code == 0, r.output
    (res,) = json.loads(r.stdout)  # progress goes to stderr
    assert res["instant"] == first["instant"] and res["rows_written"] > 0
    assert json.loads(run(cli, ["compaction", "show", str(path), "--json"]).output)[0]["state"] == "COMPLETED"
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)
    r = run(cli, ["compaction", "run", str(path), "--engine", "local"])
    assert r.exit_code == 0 and "No pending compaction plan" in r.output
    r = run(cli, ["compaction", "run", str(path), "--engine", "local", "--instant-time", first["instant"]])
    assert r.exit_code == 1 and "already committed" in r.output
