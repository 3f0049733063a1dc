"""CLI commands print what the table holds, in text and JSON; errors are one line and exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import click
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


def test_generate_then_write_cli_upsert_with_deletes_matches_hudi_rs(tmp_path: Path) -> None:
    from tests.oracle import hudi_rs_snapshot

    runner = CliRunner()
    g1, g2, table = tmp_path / "g1.parquet", tmp_path / "g2.parquet", tmp_path / "t"
    assert runner.invoke(cli, ["generate", str(g1), "--rows", "300", "--seed", "1"]).exit_code == 0
    r = runner.invoke(
        cli,
        [
            "write",
            str(table),
            "--input",
            str(g1),
            "--operation",
            "bulk_insert",
            "--table-name",
            "t",
            "--table-type",
            "COPY_ON_WRITE",
            "--record-key",
            "uuid",
            "--precombine-field",
            "ts",
            "--partition-field",
            "city",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["inserted"] == 300
    r = runner.invoke(
        cli,
        [
            "generate",
            str(g2),
            "--from",
            str(g1),
            "--update-fraction",
            "0.2",
            "--delete-fraction",
            "0.1",
            "--rows",
            "10",
            "--seed",
            "1",
        ],
    )
    assert r.exit_code == 0, r.output
    import pyarrow.parquet as pq

    changes = pq.read_table(g2).to_pylist()
    r = runner.invoke(cli, ["write", str(table), "--input", str(g2), "--json"])
    assert r.exit_code == 0, r.output
    expected = {row["uuid"]: row["fare"] for row in pq.read_table(g1).to_pylist()}
    for row in sorted(changes, key=lambda x: x["ts"]):  # precombine: greatest ts wins per key
        if row["_hoodie_is_deleted"]:
            expected.pop(row["uuid"], None)
        else:
            expected[row["uuid"]] = row["fare"]
    got = hudi_rs_snapshot(table)
    assert dict(zip(got.column("uuid").to_pylist(), got.column("fare").to_pylist(), strict=True)) == expected


def test_write_cli_bad_option_one_line_error(tmp_path: Path) -> None:
    g = tmp_path / "g.parquet"
    CliRunner().invoke(cli, ["generate", str(g), "--rows", "5"])
    r = CliRunner().invoke(cli, ["write", str(tmp_path / "t"), "--input", str(g), "--option", "nonsense"])
    assert r.exit_code == 1
    assert "expected key=value" in r.output


def _leaf_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], click.Command]:
    """Every runnable command under ``group``, by its words (``("compaction", "run")``)."""
    out: dict[tuple[str, ...], click.Command] = {}
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            out.update(_leaf_commands(cmd, (*prefix, name)))
        else:
            out[(*prefix, name)] = cmd
    return out


# what each command that opens a table needs besides PATH
_TABLE_COMMANDS: dict[tuple[str, ...], list[str]] = {
    ("table", "show"): [],
    ("timeline", "show"): [],
    ("fsview", "show"): [],
    ("read",): ["-o", "out.parquet"],
    ("write",): ["--input", "in.parquet"],
    ("compaction", "schedule"): [],
    ("compaction", "run"): ["--engine", "local"],
    ("compaction", "show"): [],
    ("compaction", "rollback"): ["--instant-time", "20250101000000000"],
    ("log-compaction", "schedule"): [],
    ("log-compaction", "run"): [],
    ("rollback",): ["--stale"],
    ("clean",): [],
    ("savepoint", "create"): ["--instant-time", "20250101000000000"],
    ("savepoint", "delete"): ["--instant-time", "20250101000000000"],
    ("savepoint", "show"): [],
    ("archive",): [],
    ("bootstrap",): ["--source-path", "source-dir", "--table-name", "t", "--record-key", "uuid"],
    ("paimon", "compaction", "schedule"): [],
    ("paimon", "compaction", "run"): ["--engine", "local"],
    ("paimon", "compaction", "show"): [],
    ("metadata", "init"): [],
    ("clustering", "schedule"): [],
    ("clustering", "run"): ["--engine", "local"],
    ("clustering", "show"): [],
}
# commands on Paimon tables: their --json on a Paimon table is tested in tests/paimon/test_paimon_cli.py
_PAIMON_COMMANDS = {w for w in _TABLE_COMMANDS if w[0] == "paimon"}
_FLEET_COMMANDS = {("fleet", "tables"), ("fleet", "status"), ("fleet", "run")}


def test_cli_table_commands_listed_are_every_command_with_a_path_argument() -> None:
    with_path = {
        words
        for words, cmd in _leaf_commands(cli).items()
        if any(isinstance(p, click.Argument) and p.name == "path" for p in cmd.params)
    }
    assert with_path == set(_TABLE_COMMANDS)


def test_cli_every_table_command_missing_table_one_error_line_on_stderr_exit_1(tmp_path: Path) -> None:
    """The output layer renders a command's error once, on stderr, with and without --json."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"uuid": ["a"], "ts": [1]}), tmp_path / "in.parquet")
    missing = str(tmp_path / "nope")
    json_commands = {w for w, c in _leaf_commands(cli).items() if any(p.name == "as_json" for p in c.params)}
    for words, extra in _TABLE_COMMANDS.items():
        for as_json in ([], ["--json"]) if words in json_commands else ([],):
            args = [
                *words,
                missing,
                *[str(tmp_path / a) if a.endswith((".parquet", "-dir")) else a for a in extra],
                *as_json,
            ]
            r = CliRunner().invoke(cli, args)
            assert r.exit_code == 1, (args, r.output)
            assert r.stdout == "", (args, r.stdout)
            expected = (
                f"Error: No table at {missing}: a table name (hoodie.table.name) is required to create one"
                if words == ("write",)  # write creates a missing table
                else f"Error: No .parquet file under the bootstrap source {tmp_path / 'source-dir'}"
                if words == ("bootstrap",)  # bootstrap creates the table: its source is what is missing
                else f"Error: No Paimon table at {missing}: expected {missing}/schema/schema-<id> files"
                if words in _PAIMON_COMMANDS
                else f"Error: No Hudi table at {missing}: expected {missing}/.hoodie/hoodie.properties"
            )
            assert r.stderr.splitlines() == [expected], (args, r.stderr)


def test_cli_every_json_command_prints_one_json_document_on_a_written_table(tmp_path: Path) -> None:
    """Every command with --json prints exactly one JSON document on stdout (the result's to_json_obj) and
    its text differs from it."""
    runner = CliRunner()
    data, table = tmp_path / "in.parquet", str(tmp_path / "t")
    assert runner.invoke(cli, ["generate", str(data), "--rows", "20", "--partitions", "2"]).exit_code == 0
    create = ["--table-name", "t", "--record-key", "uuid", "--precombine-field", "ts", "--partition-field", "city"]
    r = runner.invoke(cli, ["write", table, "--input", str(data), *create, "--json"])
    assert r.exit_code == 0, r.output
    first = json.loads(r.stdout)["instant"]
    dry = ["--dry-run"]
    argv: dict[tuple[str, ...], list[str]] = {
        ("table", "show"): [],
        ("timeline", "show"): [],
        ("fsview", "show"): [],
        ("read",): ["-o", str(tmp_path / "snap.parquet")],
        ("write",): ["--input", str(data)],
        ("compaction", "schedule"): [],
        ("compaction", "run"): ["--engine", "local"],
        ("compaction", "show"): [],
        ("rollback",): ["--stale", "--dry-run"],
        ("clean",): ["--dry-run"],
        ("savepoint", "create"): ["--instant-time", first, "--dry-run"],
        ("savepoint", "show"): [],
        ("archive",): ["--dry-run"],
        ("bootstrap",): ["--source-path", str(tmp_path / "src"), "--table-name", "b", "--record-key", "uuid", *dry],
        ("metadata", "init"): dry,
        ("clustering", "schedule"): dry,
        ("clustering", "run"): ["--engine", "local"],
        ("clustering", "show"): [],
    }
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "part-0.parquet").write_bytes(data.read_bytes())
    paths = {("bootstrap",): str(tmp_path / "bootstrapped")}  # a bootstrap needs a table without commits
    json_commands = {w for w, c in _leaf_commands(cli).items() if any(p.name == "as_json" for p in c.params)}
    # the fleet's commands take a config file, not a table: their --json is tested in tests/fleet/test_fleet.py
    assert json_commands == set(argv) | _PAIMON_COMMANDS | _FLEET_COMMANDS
    for words, extra in argv.items():
        r = runner.invoke(cli, [*words, paths.get(words, table), *extra, "--json"])
        assert r.exit_code == 0, (words, r.output)
        doc = json.loads(r.stdout)
        assert isinstance(doc, dict | list), words
        text = runner.invoke(cli, [*words, paths.get(words, table), *extra])
        assert text.exit_code == 0, (words, text.output)
        assert text.stdout != r.stdout, words
