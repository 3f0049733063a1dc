"""Initialising a table's metadata table (hudi/metadata/initialize.py): the pure rules (Java 0.15's instant
``<L>010``, ``DirectoryInfo``'s file filter) and, on real tables our writer wrote, the listing read back through
the new metadata table against an independent walk of the table's folders; the pending-instant rule, dry runs and
the repair of a half-made metadata table. Java's view of the same tables is tests/java/test_metadata_table_init.py.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.metadata.initialize import (
    file_instant,
    files_to_index,
    initial_records,
    initialization_instant,
    initialize_metadata_table,
)
from lake_orchestration.hudi.metadata.reader import metadata_file_listing
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

OPTIONS = WriteOptions(
    table_name="t",
    table_type=TableType.MERGE_ON_READ,
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
)


def test_initialization_instant() -> None:
    assert initialization_instant(None) == "00000000000000010"
    assert initialization_instant("20240102030405678") == "20240102030405678010"


def test_files_to_index_keeps_data_files_up_to_the_instant() -> None:
    entries = {
        "f1-0_0-1-0_20240101000000000.parquet": 10,
        "f2-0_0-1-0_20240102000000000.parquet": 20,  # after the instant
        ".f1-0_20240101000000000.log.1_0-1-0": 30,  # log files count by their base instant
        ".hoodie_partition_metadata": 5,
        ".f1-0_0-1-0_20240101000000000.parquet.crc": 1,
        "notes.txt": 3,
    }
    assert files_to_index(entries, "20240101000000000") == {
        ".f1-0_20240101000000000.log.1_0-1-0": 30,
        "f1-0_0-1-0_20240101000000000.parquet": 10,
    }
    assert file_instant(".f1-0_20240101000000000.log.1_0-1-0") == "20240101000000000"
    assert file_instant("notes.txt") is None


def test_initial_records_in_key_order() -> None:
    records = initial_records({"b": {"x_0-1-0_20240101000000000.parquet": 5}, "": {}, "a": {}})
    assert [r.key for r in records] == [".", "__all_partitions__", "a", "b"]
    assert set(records[1].filesystem_metadata or {}) == {".", "a", "b"}


def _storage_files(root: Path) -> dict[tuple[str, str], int]:
    """An independent walk: (partition, name) -> size of every base and log file outside ``.hoodie``."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = os.path.relpath(folder, root)
        for name in files:
            if name.endswith(".parquet") or ".log." in name:
                out[("" if rel == "." else rel, name)] = (Path(folder) / name).stat().st_size
    return out


def _listing(root: Path) -> dict[tuple[str, str], int]:
    listing = metadata_file_listing(HudiTable(str(root)))
    assert listing is not None, "not listed through the metadata table"
    return {(p, f.name): f.size for p, files in listing.items() for f in files}


@pytest.fixture
def table_root(tmp_path: Path) -> Path:
    """A MOR table of two partitions with base and log files, no metadata table."""
    base = generate_trips(60, partitions=2, seed=1)
    write_table(str(tmp_path), base, operation="insert", options=OPTIONS)
    write_table(str(tmp_path), generate_updates(base, fraction=0.5, seed=2), operation="upsert", options=OPTIONS)
    return tmp_path


def test_initialise_lists_every_committed_file(table_root: Path) -> None:
    table = HudiTable(str(table_root))
    latest = str(table.timeline.completed().last.time)
    dry = initialize_metadata_table(table, dry_run=True)
    assert dry.instant == latest + "010" and dry.partitions == 2 and dry.files == len(_storage_files(table_root))
    assert not (table_root / ".hoodie/metadata").exists() and table.metadata_partitions() == []

    done = initialize_metadata_table(HudiTable(str(table_root)))
    assert done.initialized and done.instant == latest + "010"
    assert HudiTable(str(table_root)).metadata_partitions() == ["files"]
    assert _listing(table_root) == _storage_files(table_root)
    again = initialize_metadata_table(HudiTable(str(table_root)))
    assert again.skipped == "already initialised"

    # a later write keeps it (the commit path's MDT deltacommit)
    write_table(str(table_root), generate_trips(10, partitions=2, seed=3), operation="insert", options=OPTIONS)
    assert _listing(table_root) == _storage_files(table_root)


def test_pending_instant_skips_and_the_write_goes_on(table_root: Path) -> None:
    table = HudiTable(str(table_root))
    # another writer's write, started and not completed
    pending = table.create_requested(Instant(table.new_instant_time(), Action.DELTA_COMMIT, State.REQUESTED))
    skipped = initialize_metadata_table(table)
    assert skipped.skipped == "data instants are pending" and skipped.pending == (pending.file_name,)
    assert not (table_root / ".hoodie/metadata").exists()
    # a write asking for the metadata table goes on without one, as Java's
    options = replace(OPTIONS, options={**OPTIONS.options, "hoodie.metadata.enable": "true"})
    done = write_table(str(table_root), generate_trips(10, partitions=2, seed=5), operation="insert", options=options)
    assert HudiTable(str(table_root)).timeline.get(done.instant, Action.DELTA_COMMIT).is_completed
    assert not (table_root / ".hoodie/metadata").exists()
    assert HudiTable(str(table_root)).metadata_partitions() == []


def test_half_made_metadata_table_is_rebuilt(table_root: Path) -> None:
    initialize_metadata_table(HudiTable(str(table_root)))
    # as a crash before the property: the folder without the property (readers list storage)
    HudiTable(str(table_root)).update_properties(
        {}, remove=("hoodie.table.metadata.partitions", "hoodie.table.metadata.partitions.inflight")
    )
    assert metadata_file_listing(HudiTable(str(table_root))) is None
    options = replace(OPTIONS, options={**OPTIONS.options, "hoodie.metadata.enable": "true"})
    write_table(str(table_root), generate_trips(10, partitions=2, seed=4), operation="insert", options=options)
    assert _listing(table_root) == _storage_files(table_root)
    # the property without the folder (deleted by hand): rebuilt too
    shutil.rmtree(table_root / ".hoodie" / "metadata")
    rebuilt = initialize_metadata_table(HudiTable(str(table_root)))
    assert rebuilt.removed and rebuilt.initialized
    assert _listing(table_root) == _storage_files(table_root)


def test_cli_metadata_init(table_root: Path) -> None:
    import json

    from click.testing import CliRunner

    from lake_orchestration.cli.app import cli

    runner = CliRunner()
    dry = runner.invoke(cli, ["metadata", "init", str(table_root), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.output)
    assert plan["dry_run"] and plan["instant"].endswith("010") and plan["partitions"] == 2
    assert not (table_root / ".hoodie/metadata").exists()
    done = runner.invoke(cli, ["metadata", "init", str(table_root)])
    assert done.exit_code == 0 and f"Initialised the metadata table at {plan['instant']}" in done.output, done.output
    assert _listing(table_root) == _storage_files(table_root)
    again = runner.invoke(cli, ["metadata", "init", str(table_root)])
    assert again.exit_code == 0 and "already initialised" in again.output


def test_new_non_partitioned_table(tmp_path: Path) -> None:
    options = replace(
        OPTIONS,
        partition_fields=(),
        key_generator="org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        options={"hoodie.metadata.enable": "true"},
    )
    base = generate_trips(30, partitions=1, seed=6)
    write_table(str(tmp_path), base, operation="insert", options=options)
    write_table(str(tmp_path), generate_updates(base, fraction=0.5, seed=7), operation="upsert", options=options)
    mdt = HudiTable(str(tmp_path / ".hoodie" / "metadata"))
    assert str(mdt.timeline.completed().instants[0].time) == "00000000000000010"
    assert _listing(tmp_path) == _storage_files(tmp_path)
    assert {p for p, _ in _storage_files(tmp_path)} == {""}
