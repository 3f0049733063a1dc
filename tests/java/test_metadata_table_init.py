"""Initialising the metadata table (MDT) of a table that has none, with Java Hudi 0.15 as the oracle.

- A table our writer creates with ``hoodie.metadata.enable=true`` gets its MDT at ``00000000000000010`` (as Java's
  first write with the MDT on); Java's ``validate_metadata_table_files`` equals the storage listing, Java reads the
  expected rows through it, hudi-rs decodes our base HFile; Java writes on top and validates again.
- A Java table written with ``hoodie.metadata.enable=false``: our initialisation killed between the MDT's commit and
  the data table's ``hoodie.properties`` update leaves an MDT no reader uses (ours lists storage, Java reads the
  expected rows); our next upsert with the option on rebuilds it at ``<latest>010`` and Java validates. Java
  initialising a copy of the same table at the same instant writes the same records.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import hudi
import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.hudi.metadata.reader import metadata_file_listing
from lake_orchestration.hudi.metadata.records import decode_hfile
from lake_orchestration.hudi.metadata.table_services import base_hfile
from lake_orchestration.hudi.metadata.writer import metadata_table
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.conftest import REPO_ROOT
from tests.java.harness import JavaHudi
from tests.java.interop import PARTITIONED, JavaTable, Model, assert_rows_equal, java_read, java_write, trips
from tests.java.mdt_validate import MDT_DEFAULTS, READ_MDT
from tests.java.mdt_validate import check_metadata_table as _check

pytestmark = [pytest.mark.java]

MOR = TableType.MERGE_ON_READ
DIRECTION = "our metadata-table initialisation → Java validates, reads, writes on top"

# Our initialisation in a subprocess that dies (os._exit, as a SIGKILL) when it would name the MDT in the data
# table's hoodie.properties: after the MDT's initialising deltacommit completed.
_KILLED_INIT = textwrap.dedent(
    """
    import os, sys
    from lake_orchestration.hudi.metadata.initialize import initialize_metadata_table
    from lake_orchestration.hudi.table.hudi_table import HudiTable
    from lake_orchestration.hudi.table.lock import LockConfig

    orig = HudiTable.update_properties
    def dying(self, updates, *, remove=()):
        if "hoodie.table.metadata.partitions" in updates:
            print("KILLED", flush=True)
            os._exit(137)
        return orig(self, updates, remove=remove)
    HudiTable.update_properties = dying
    # the in-process lock: no lock file left behind for the next run to wait 20 s on (the crash under test is the
    # MDT/property order; stale lock files have their own tests)
    lock = LockConfig.from_options({"hoodie.write.lock.provider": "InProcessLockProvider"})
    initialize_metadata_table(HudiTable(sys.argv[1]), lock=lock)
    """
)


def _with_mdt(options: WriteOptions) -> WriteOptions:
    return replace(options, options={**options.options, "hoodie.metadata.enable": "true"})


def _mdt_deltacommits(path: Path) -> list[str]:
    mdt = metadata_table(HudiTable(str(path)))
    return [str(i.time) for i in mdt.timeline.completed() if i.action is Action.DELTA_COMMIT]


def _init_records(path: Path, instant: str) -> tuple[Path, list]:
    (base,) = (path / ".hoodie/metadata/files").glob(f"files-0000-0_*_{instant}.hfile")
    return base, decode_hfile(base.read_bytes())


@pytest.mark.interop(
    direction=DIRECTION,
    table="MOR partitioned, metadata table initialised by us",
    service="metadata table initialisation (new table)",
    checks="validate_metadata_table_files = storage listing + latest base files and file slices validated; Java "
    "reads through the MDT; "
    "hudi-rs decodes our base HFile; Java writes on top and validates",
)
def test_new_table_gets_a_metadata_table(java_hudi: JavaHudi, tmp_path: Path) -> None:
    base = trips(150, seed=31)
    table = JavaTable(tmp_path / "t", PARTITIONED, MOR, Model(("city", "uuid")), base.schema, [], tmp_path)
    options = _with_mdt(PARTITIONED.write_options(MOR))
    first = write_table(str(table.path), base, operation="insert", options=options)
    table.model.upsert(base)
    assert HudiTable(str(table.path)).metadata_partitions() == ["files"]
    assert _mdt_deltacommits(table.path) == ["00000000000000010", first.instant]
    update = generate_updates(base, fraction=0.3, seed=32, ts_offset=10**6)
    write_table(str(table.path), update, operation="upsert", options=options)
    table.model.upsert(update)
    _check(java_hudi, table, "our new table with its metadata table")

    # hudi-rs decodes our initial base HFile (the empty partition list of a table without files)
    base_file, records = _init_records(table.path, "00000000000000010")
    assert [(r.key, r.filesystem_metadata) for r in records] == [("__all_partitions__", {})]
    rs = hudi.HudiFileGroupReader(str(table.path / ".hoodie/metadata"))
    decoded = rs.read_file_slice_from_paths(f"files/{base_file.name}", []).to_pydict()
    assert decoded["key"] == ["__all_partitions__"] and decoded["_hoodie_file_name"] == [base_file.name]

    java_write(
        java_hudi,
        table,
        generate_updates(table.expected(), fraction=0.3, seed=33, ts_offset=2 * 10**6),
        "upsert",
        **MDT_DEFAULTS,
    )
    _check(java_hudi, table, "after Java's write on top of our metadata table")


@pytest.mark.interop(
    direction=DIRECTION,
    table="MOR partitioned, no metadata table",
    service="metadata table initialisation (existing table, crash before the property)",
    checks="half-made MDT ignored by our reader and Java's; validate_metadata_table_files + latest base files and "
    "file slices validated after "
    "the repair; Java's initialisation of the same table writes the same records",
)
def test_java_table_initialised_by_us(java_hudi: JavaHudi, tmp_path: Path) -> None:
    base = trips(150, seed=41)
    table = JavaTable(tmp_path / "t", PARTITIONED, MOR, Model(("city", "uuid")), base.schema, [], tmp_path)
    java_write(java_hudi, table, base, "insert")  # the shape's Java options: hoodie.metadata.enable=false
    java_write(java_hudi, table, generate_updates(base, fraction=0.3, seed=42, ts_offset=10**6), "upsert")
    latest = str(HudiTable(str(table.path)).timeline.completed().last.time)
    javas = table.copy(tmp_path / "java-copy")

    # killed between the MDT's commit and the data table's property: no reader uses the half-made MDT
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_INIT, str(table.path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 137 and "KILLED" in proc.stdout, proc.stdout + proc.stderr
    assert _mdt_deltacommits(table.path) == [latest + "010"]
    assert HudiTable(str(table.path)).metadata_partitions() == []
    assert metadata_file_listing(HudiTable(str(table.path))) is None
    assert_rows_equal(java_read(java_hudi, table, **READ_MDT), table.expected(), "Java reads beside the half-made MDT")

    # our next upsert with the metadata table on rebuilds it at <latest>010, then adds its own deltacommit
    update = generate_updates(table.expected(), fraction=0.3, seed=43, ts_offset=2 * 10**6)
    ours = write_table(str(table.path), update, operation="upsert", options=_with_mdt(PARTITIONED.write_options(MOR)))
    table.model.upsert(update)
    assert _mdt_deltacommits(table.path) == [latest + "010", ours.instant]
    _check(java_hudi, table, "after our initialisation")

    # Java initialising the same table (its write with the MDT on) picks the same instant and writes the same records
    java_write(java_hudi, javas, update, "upsert", **MDT_DEFAULTS)
    assert _mdt_deltacommits(javas.path)[0] == latest + "010"
    _, our_records = _init_records(table.path, latest + "010")
    java_file, java_records = _init_records(javas.path, latest + "010")
    assert our_records == java_records
    assert base_hfile(our_records, java_file.name) == java_file.read_bytes(), "our records' HFile != Java's"
