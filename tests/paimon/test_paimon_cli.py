"""``lake-orch paimon compaction schedule|run|show`` on a table pypaimon writes, checked against pypaimon's own scan
plan and read (the oracle: conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.paimon.model import CommitKind
from lake_orchestration.paimon.table import PaimonTable
from tests.paimon.tables import Pypaimon, read_rows, table_path, write_table

pytestmark = pytest.mark.slow

COMMANDS = ("schedule", "run", "show")


def _write(pypaimon: Pypaimon, tmp_path: Path) -> tuple[str, str]:
    commits = [
        [[dt, i, f"v0-{i}", "+I"] for dt in ("a", "b") for i in range(60)],
        [["a", i, f"v1-{i}", "+I"] for i in range(0, 60, 4)],
        [["b", i, None, "-D"] for i in range(10, 20)],
        [["a", i, f"v3-{i}", "+I"] for i in range(50, 70)],
    ]
    warehouse = write_table(pypaimon, tmp_path, commits, buckets=2, **{"num-sorted-run.compaction-trigger": "3"})
    return str(warehouse), table_path(warehouse)


def _expected_buckets(pypaimon: Pypaimon, warehouse: str) -> dict[tuple[str, int], dict[str, Any]]:
    """Per (partition value, bucket) from pypaimon's scan: level-0 files, sorted runs (each level-0 file, each level
    above) and the size amplification (newer runs' bytes in percent of the oldest run's)."""
    files: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for split in pypaimon("scan", warehouse, "default.t")["splits"]:
        files.setdefault((split["partition"][0], split["bucket"]), []).extend(split["files"])
    out = {}
    for key, fs in files.items():
        level0 = sorted((f for f in fs if f["level"] == 0), key=lambda f: -f["max_sequence_number"])
        levels = sorted({f["level"] for f in fs if f["level"] > 0})
        runs = [f["file_size"] for f in level0] + [sum(f["file_size"] for f in fs if f["level"] == lv) for lv in levels]
        amp = round(sum(runs[:-1]) * 100.0 / runs[-1], 1) if len(runs) > 1 else 0.0
        out[key] = {"level0_files": len(level0), "sorted_runs": len(runs), "size_amplification_percent": amp}
    return out


def _listing(table_dir: str) -> set[str]:
    return {str(p.relative_to(table_dir)) for p in Path(table_dir).rglob("*") if p.is_file()}


def test_paimon_compaction_cli_show_schedule_run_match_pypaimon_scan_and_read_equal(
    tmp_path: Path, pypaimon: Pypaimon
) -> None:
    warehouse, path = _write(pypaimon, tmp_path)
    runner = CliRunner()
    before_rows = read_rows(pypaimon, warehouse)

    r = runner.invoke(cli, ["paimon", "compaction", "show", path, "--json"])
    assert r.exit_code == 0, r.output
    shown = json.loads(r.stdout)
    assert shown["snapshot_id"] == 4 and shown["commit_kind"] == "APPEND" and shown["snapshots_since_compaction"] == 4
    got = {
        (b["partition"]["dt"], b["bucket"]): {
            k: b[k] for k in ("level0_files", "sorted_runs", "size_amplification_percent")
        }
        for b in shown["buckets"]
    }
    expected = _expected_buckets(pypaimon, warehouse)
    assert got == expected
    assert shown["max_sorted_runs"] == max(e["sorted_runs"] for e in expected.values()) > 1
    assert shown["stop_trigger"] == 6  # num-sorted-run.compaction-trigger 3 + 3

    # schedule writes nothing (Paimon has no plan file) and plans the buckets that reached the trigger
    listing = _listing(path)
    r = runner.invoke(cli, ["paimon", "compaction", "schedule", path, "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert _listing(path) == listing
    assert plan["snapshot_id"] == 4 and plan["full"] is False
    assert {(b["partition_values"][0], b["bucket"]) for b in plan["buckets"]} == {
        k for k, e in expected.items() if e["sorted_runs"] >= 3
    }
    text = runner.invoke(cli, ["paimon", "compaction", "schedule", path, "--full"])
    assert text.exit_code == 0 and "Full compaction of snapshot 4" in text.stdout, text.output
    assert "no plan file" in text.stdout

    r = runner.invoke(cli, ["paimon", "compaction", "run", path, "--full", "--engine", "local", "--json"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    assert result["commit"]["snapshot_id"] == 5 and result["commit"]["commit_kind"] == "COMPACT"
    snap = PaimonTable.open(path).latest_snapshot()
    assert snap is not None and snap.commit_kind is CommitKind.COMPACT
    assert read_rows(pypaimon, warehouse) == before_rows

    # after a full compaction every bucket is one run at the max level: show says so, run has nothing to do
    r = runner.invoke(cli, ["paimon", "compaction", "show", path])
    assert r.exit_code == 0 and "Snapshot 5 (COMPACT)" in r.stdout and "0 level-0 file(s)" in r.stdout, r.output
    after = _expected_buckets(pypaimon, warehouse)
    assert {e["sorted_runs"] for e in after.values()} == {1}
    r = runner.invoke(cli, ["paimon", "compaction", "run", path, "--engine", "local"])
    assert r.exit_code == 0 and r.stdout.strip() == "No compaction needed at snapshot 5", r.output
    assert PaimonTable.open(path).latest_snapshot_id() == 5


def test_paimon_compaction_cli_every_command_json_one_document_text_differs(tmp_path: Path, pypaimon: Pypaimon) -> None:
    _, path = _write(pypaimon, tmp_path)
    runner = CliRunner()
    for command in COMMANDS:
        extra = ["--engine", "local"] if command == "run" else []
        r = runner.invoke(cli, ["paimon", "compaction", command, path, *extra, "--json"])
        assert r.exit_code == 0, (command, r.output)
        assert isinstance(json.loads(r.stdout), dict), command
        text = runner.invoke(cli, ["paimon", "compaction", command, path, *extra])
        assert text.exit_code == 0, (command, text.output)
        assert text.stdout != r.stdout, command


def test_paimon_compaction_cli_directory_without_schema_one_error_line_exit_1(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["paimon", "compaction", "show", str(tmp_path)])
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"Error: No Paimon table at {tmp_path}: expected {tmp_path}/schema/schema-<id> files"
    ]
