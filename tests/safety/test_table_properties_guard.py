"""A ``hoodie.properties`` without ``hoodie.table.type`` or ``hoodie.table.version`` is never read with a silent
default that loses data.

Java reads a missing ``hoodie.table.type`` as COPY_ON_WRITE (``HoodieTableConfig.TYPE``'s default) and a missing
``hoodie.table.version`` as 0 (which it would try to upgrade). A MERGE_ON_READ table read as COPY_ON_WRITE ignores
its log files, and its next write commits a ``.commit`` that drops their data. So: when deltacommits or log files
show a MERGE_ON_READ table, every command refuses with an error naming the key and the file and writes nothing; with
nothing contradicting it the table reads as COPY_ON_WRITE with a warning. A missing version is always refused, and
the message says how to repair it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.errors import InvalidTablePropertiesError
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import write_table
from tests.conftest import HudiFixture
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

pytestmark = pytest.mark.fixtures

GetFixture = Callable[[HudiFixture], Path]
TYPE_KEY = "hoodie.table.type"
VERSION_KEY = "hoodie.table.version"
META = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


def _props(base: Path) -> Path:
    return base / ".hoodie" / "hoodie.properties"


def _drop_key(base: Path, key: str) -> str:
    """Remove ``key`` from hoodie.properties; returns the removed line."""
    path = _props(base)
    lines = path.read_text("latin-1").splitlines(keepends=True)
    [line] = [ln for ln in lines if ln.startswith(key + "=")]
    path.write_text("".join(ln for ln in lines if ln is not line), "latin-1")
    return line


def _restore_line(base: Path, line: str) -> None:
    path = _props(base)
    path.write_text(path.read_text("latin-1") + line, "latin-1")


def _tree(base: Path) -> dict[str, bytes]:
    """Every file of the table (relative path -> bytes)."""
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def _project_mor_table(tmp_path: Path) -> Path:
    """A MERGE_ON_READ table written by this project: a bulk insert, then two upserts (log files)."""
    path = tmp_path / "mor"
    opts = trips_options(table_name="mor")
    rows = generate_trips(300, partitions=3, seed=5)
    write_table(str(path), rows, operation="bulk_insert", options=opts)
    for seed in (6, 7):
        write_table(str(path), generate_updates(rows, fraction=0.3, seed=seed, ts_offset=seed), operation="upsert")
    assert list(path.rglob(".*.log.*")), "the upserts must have written log files"
    return path


def _input_file(tmp_path: Path, rows: pa.Table) -> Path:
    """``rows`` without meta columns, as the input parquet file of ``lake-orch write``."""
    f = tmp_path / "input.parquet"
    pq.write_table(rows.drop_columns([c for c in META if c in rows.column_names]), f)
    return f


def _commands(base: Path, tmp_path: Path, input_file: Path) -> list[list[str]]:
    """Commands that read or change the table: every one must refuse."""
    p = str(base)
    return [
        ["table", "show", p],
        ["read", p, "-o", str(tmp_path / "out.parquet")],
        ["write", p, "--input", str(input_file), "--operation", "upsert"],
        ["write", p, "--input", str(input_file), "--operation", "insert"],
        ["compaction", "schedule", p, "--force"],
        ["clean", p],
        ["archive", p],
        ["rollback", p, "--stale", "--timeout", "1s"],
    ]


def _assert_every_command_refused(base: Path, tmp_path: Path, input_file: Path, key: str, expected: str) -> None:
    before = _tree(base)
    for args in _commands(base, tmp_path, input_file):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 1, f"{args}: exit {r.exit_code}\n{r.output}"
        assert "Traceback" not in r.output, r.output
        assert key in r.output and str(_props(base)) in r.output, f"{args}: {r.output}"
        assert expected in r.output, f"{args}: {r.output}"
        assert _tree(base) == before, f"{args} changed the table"
    assert not (tmp_path / "out.parquet").exists()


# -- hoodie.table.type missing ----------------------------------------------------------------------------------
def test_missing_table_type_java_mor_fixture_every_command_refused_naming_key_and_file(
    fresh_fixture: GetFixture, tmp_path: Path
) -> None:
    base = fresh_fixture(HudiFixture.MOR_SIMPLE_NONHIVE)
    oracle_before = hudi_rs_snapshot(base)
    assert oracle_before is not None and oracle_before.num_rows > 0
    input_file = _input_file(tmp_path, oracle_before)
    line = _drop_key(base, TYPE_KEY)
    with pytest.raises(InvalidTablePropertiesError) as err:
        HudiTable(str(base))
    assert err.value.path == str(_props(base))
    msg = str(err.value)
    assert TYPE_KEY in msg and "deltacommit" in msg and f"{TYPE_KEY}=MERGE_ON_READ" in msg
    _assert_every_command_refused(base, tmp_path, input_file, TYPE_KEY, "MERGE_ON_READ")
    # with the line back, the table is exactly what it was: the oracle and our reader agree on every row
    _restore_line(base, line)
    oracle_after = hudi_rs_snapshot(base)
    assert_same_rows(oracle_after, oracle_before)  # type: ignore[arg-type]
    assert_same_rows(read_snapshot_table(HudiTable(str(base))), oracle_before)


def test_missing_table_type_project_mor_table_with_log_files_write_refused_nothing_written(tmp_path: Path) -> None:
    base = _project_mor_table(tmp_path)
    oracle_before = hudi_rs_snapshot(base)
    assert oracle_before is not None
    ours_before = read_snapshot_table(HudiTable(str(base)))
    input_file = _input_file(
        tmp_path, generate_updates(ours_before.drop_columns(list(META)), fraction=0.5, seed=9, ts_offset=100)
    )
    line = _drop_key(base, TYPE_KEY)
    with pytest.raises(InvalidTablePropertiesError, match=TYPE_KEY):
        write_table(str(base), pq.read_table(input_file), operation="upsert")
    _assert_every_command_refused(base, tmp_path, input_file, TYPE_KEY, "MERGE_ON_READ")
    assert not list((base / ".hoodie").glob("*.commit*")), "a COPY_ON_WRITE commit was started"
    _restore_line(base, line)
    assert_same_rows(hudi_rs_snapshot(base), oracle_before)  # type: ignore[arg-type]
    assert_same_rows(read_snapshot_table(HudiTable(str(base))), oracle_before)


def test_missing_table_type_only_log_files_show_mor_after_compaction_and_archive_refused(tmp_path: Path) -> None:
    # compaction, then archival of every deltacommit: the active timeline holds only the compaction's `commit`,
    # and the log files (not cleaned yet) are the only sign that the table is MERGE_ON_READ
    base = _project_mor_table(tmp_path)
    r = CliRunner().invoke(
        cli,
        [
            "compaction",
            "run",
            str(base),
            "--schedule",
            "--engine",
            "local",
            "--option",
            "hoodie.compact.inline.max.delta.commits=1",
        ],
    )
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(
        cli,
        [
            "archive",
            str(base),
            "--option",
            "hoodie.keep.min.commits=1",
            "--option",
            "hoodie.keep.max.commits=2",
            "--option",
            "hoodie.cleaner.commits.retained=0",
        ],
    )
    assert r.exit_code == 0, r.output
    t = HudiTable(str(base))
    assert {i.action.value for i in t.timeline} == {"commit"}, t.timeline
    logs = sorted(base.rglob(".*.log.*"))
    assert logs
    oracle_before = hudi_rs_snapshot(base)
    assert oracle_before is not None
    input_file = _input_file(tmp_path, oracle_before)
    line = _drop_key(base, TYPE_KEY)
    with pytest.raises(InvalidTablePropertiesError) as err:
        HudiTable(str(base))
    assert "log file" in str(err.value) and any(str(lf) in str(err.value) for lf in logs), str(err.value)
    _assert_every_command_refused(base, tmp_path, input_file, TYPE_KEY, "MERGE_ON_READ")
    _restore_line(base, line)
    assert_same_rows(hudi_rs_snapshot(base), oracle_before)  # type: ignore[arg-type]


def test_missing_table_type_cow_fixture_nothing_contradicts_reads_as_cow_with_warning(
    fresh_fixture: GetFixture, caplog: pytest.LogCaptureFixture
) -> None:
    base = fresh_fixture(HudiFixture.COW_SIMPLE_NONHIVE)
    oracle = hudi_rs_snapshot(base)
    _drop_key(base, TYPE_KEY)
    caplog.set_level(logging.WARNING)
    t = HudiTable(str(base))
    assert t.config.table_type is TableType.COPY_ON_WRITE
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(TYPE_KEY in w and "COPY_ON_WRITE" in w and str(_props(base)) in w for w in warnings), warnings
    assert_same_rows(read_snapshot_table(t), oracle)


# -- hoodie.table.version missing -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fixture", [HudiFixture.COW_NONPARTITIONED, HudiFixture.MOR_SIMPLE_NONHIVE], ids=["cow", "mor"]
)
def test_missing_table_version_java_fixture_refused_with_repair_hint(
    fresh_fixture: GetFixture, tmp_path: Path, fixture: HudiFixture
) -> None:
    base = fresh_fixture(fixture)
    oracle_before = hudi_rs_snapshot(base)
    assert oracle_before is not None
    input_file = _input_file(tmp_path, oracle_before)
    line = _drop_key(base, VERSION_KEY)
    assert line.strip() == f"{VERSION_KEY}=6"
    with pytest.raises(InvalidTablePropertiesError) as err:
        HudiTable(str(base))
    assert err.value.path == str(_props(base))
    assert VERSION_KEY in str(err.value) and f"{VERSION_KEY}=6" in str(err.value)
    _assert_every_command_refused(base, tmp_path, input_file, VERSION_KEY, f"{VERSION_KEY}=6")
    _restore_line(base, line)  # the repair the message gives
    assert_same_rows(hudi_rs_snapshot(base), oracle_before)  # type: ignore[arg-type]
    assert_same_rows(read_snapshot_table(HudiTable(str(base))), oracle_before)


def test_missing_table_version_project_mor_table_write_refused_nothing_written(tmp_path: Path) -> None:
    base = _project_mor_table(tmp_path)
    oracle_before = hudi_rs_snapshot(base)
    rows = generate_trips(10, partitions=3, seed=11)
    _drop_key(base, VERSION_KEY)
    before = _tree(base)
    with pytest.raises(InvalidTablePropertiesError, match=VERSION_KEY):
        write_table(str(base), rows, operation="upsert")
    assert _tree(base) == before
    _restore_line(base, f"{VERSION_KEY}=6\n")
    assert_same_rows(hudi_rs_snapshot(base), oracle_before)  # type: ignore[arg-type]
