"""Our compaction of the metadata table (MDT), with Java Hudi 0.15 as the oracle.

Java writes a partitioned MERGE_ON_READ table with its defaults (metadata table on). With
``hoodie.metadata.compact.max.delta.commits=3`` in the table's ``hoodie.properties`` (this project's commit path
reads it there), our next write compacts the MDT at ``<latest MDT deltacommit>001`` before its own MDT deltacommit,
as Java's ``performTableServices`` does when a write starts. That write is killed right before the MDT compaction's
commit; after our rollback of the killed write, our next write finishes the pending MDT compaction first. After
each step Java's
``validate_metadata_table_files`` equals the storage listing, Java reads the expected rows through the MDT and our
reader agrees; hudi-rs decodes our base HFile; our archive then gets past the Java instants it could not archive
before (it stops at the MDT's latest compaction). Java writes on top and compacts the MDT itself; the base HFile
Java writes is byte for byte what our writer writes for its records.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import hudi
import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.hudi.metadata.records import decode_hfile
from lake_orchestration.hudi.metadata.table_services import base_hfile
from lake_orchestration.hudi.metadata.writer import metadata_table
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import ArchiveConfig, run_archive
from lake_orchestration.hudi.services.rollback import rollback_write
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.conftest import REPO_ROOT
from tests.java.harness import JavaHudi
from tests.java.interop import PARTITIONED, JavaTable, Model, java_write, trips
from tests.java.mdt_validate import MDT_DEFAULTS
from tests.java.mdt_validate import check_metadata_table as _check

pytestmark = [pytest.mark.java]

MOR = TableType.MERGE_ON_READ

# Our upsert in a subprocess that dies (os._exit, as a SIGKILL) right before the MDT compaction's commit.
_KILLED_AT_MDT_COMPACTION = textwrap.dedent(
    """
    import os, sys
    import pyarrow.parquet as pq
    from lake_orchestration.hudi.model.instant import Action
    from lake_orchestration.hudi.table.hudi_table import HudiTable
    from lake_orchestration.hudi.write import write_table
    from tests.java.interop import PARTITIONED
    from lake_orchestration.hudi.model.properties import TableType

    orig = HudiTable.transition_to_completed
    def dying(self, inflight, content):
        if self.base_uri.rstrip("/").endswith(".hoodie/metadata") and inflight.action is Action.COMPACTION:
            print(f"KILLED {inflight.time}", flush=True)
            os._exit(137)
        return orig(self, inflight, content)
    HudiTable.transition_to_completed = dying
    write_table(sys.argv[1], pq.read_table(sys.argv[2]), operation="upsert",
                options=PARTITIONED.write_options(TableType.MERGE_ON_READ))
    """
)


def _mdt(path: Path) -> HudiTable:
    return metadata_table(HudiTable(str(path)))


def _mdt_compactions(path: Path) -> list[str]:
    return [str(i.time) for i in _mdt(path).timeline.completed() if i.action is Action.COMMIT]


@pytest.mark.interop(
    direction="Java writes with its metadata table on → our writes and services keep it → Java validates",
    table="MOR partitioned, metadata table on",
    service="metadata-table compaction (killed and finished), archive past it",
    checks="validate_metadata_table_files = storage listing + latest base files and file slices validated; Java "
    "reads through the MDT; hudi-rs decodes our base HFile; Java writes and compacts the MDT on top",
)
def test_our_metadata_table_compaction(java_hudi: JavaHudi, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    base = trips(200, seed=21)
    table = JavaTable(tmp_path / "t", PARTITIONED, MOR, Model(("city", "uuid")), base.schema, [], tmp_path)
    java_write(java_hudi, table, base, "insert", **MDT_DEFAULTS)
    java_write(
        java_hudi, table, generate_updates(base, fraction=0.3, seed=22, ts_offset=10**6), "upsert", **MDT_DEFAULTS
    )
    data_instants = [str(i.time) for i in HudiTable(str(table.path)).timeline.completed()]
    mdt_deltacommits = [str(i.time) for i in _mdt(table.path).timeline.completed() if i.action is Action.DELTA_COMMIT]
    assert len(mdt_deltacommits) == 3 and not _mdt_compactions(table.path), mdt_deltacommits  # 010 + 2 writes
    with (table.path / ".hoodie" / "hoodie.properties").open("a") as f:
        f.write("hoodie.metadata.compact.max.delta.commits=3\n")
    (table.path / ".hoodie" / ".hoodie.properties.crc").unlink()  # Hadoop's local checksum of the old content
    options = PARTITIONED.write_options(MOR)
    expected_compaction = mdt_deltacommits[-1] + "001"

    # our upsert, killed right before the MDT compaction's commit: the compaction is left pending
    rows = generate_updates(table.expected(), fraction=0.3, seed=23, ts_offset=3 * 10**6)
    src = tmp_path / "killed.parquet"
    pq.write_table(rows, src)
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_AT_MDT_COMPACTION, str(table.path), str(src)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 137, proc.stdout + proc.stderr
    assert proc.stdout.split("KILLED ", 1)[1].split()[0] == expected_compaction
    pending = _mdt(table.path).timeline.get(expected_compaction, Action.COMPACTION)
    assert pending is not None and pending.state is State.INFLIGHT
    killed = [i for i in HudiTable(str(table.path)).timeline.pending() if str(i.time) not in data_instants]
    assert len(killed) == 1, killed

    # our rollback of the killed write (no MDT table services before a rollback's MDT deltacommit), then our next
    # upsert finishes the pending MDT compaction first (Java's runPendingTableServicesOperations)
    rollback_write(HudiTable(str(table.path)), str(killed[0].time))
    assert _mdt(table.path).timeline.get(expected_compaction, Action.COMPACTION).state is State.INFLIGHT
    more = generate_updates(table.expected(), fraction=0.3, seed=24, ts_offset=24 * 10**6)
    write_table(str(table.path), more, operation="upsert", options=options)
    table.model.upsert(more)
    assert _mdt_compactions(table.path) == [expected_compaction]
    _check(java_hudi, table, "after the MDT compaction finished by our next upsert")

    # our base HFile: hudi-rs decodes it to the records our reader merges; Java read it in _check
    ours = [p for p in (table.path / ".hoodie/metadata/files").glob(f"*_{expected_compaction}.hfile")]
    assert len(ours) == 1, ours
    records = decode_hfile(ours[0].read_bytes())
    rs = hudi.HudiFileGroupReader(str(table.path / ".hoodie/metadata"))
    decoded = rs.read_file_slice_from_paths(f"files/{ours[0].name}", []).to_pydict()
    assert decoded["key"] == [r.key for r in records]
    assert decoded["type"] == [int(r.type) for r in records]
    assert set(decoded["_hoodie_file_name"]) == {ours[0].name}
    assert [dict(m) for m in decoded["filesystemMetadata"]] == [
        {n: {"size": i.size, "isDeleted": i.is_deleted} for n, i in r.filesystem_metadata.items()} for r in records
    ]

    # more of our writes on top of our compaction, then our archive: the Java instants before the MDT compaction go
    for seed in (25, 26):
        more = generate_updates(table.expected(), fraction=0.3, seed=seed, ts_offset=seed * 10**6)
        write_table(str(table.path), more, operation="upsert", options=options)
        table.model.upsert(more)
    assert _mdt_compactions(table.path) == [expected_compaction], "compacted again before 3 deltacommits"
    _check(java_hudi, table, "after our writes on top of our MDT compaction")
    run_archive(
        HudiTable(str(table.path)),
        ArchiveConfig.from_options(
            {
                "hoodie.keep.min.commits": "2",
                "hoodie.keep.max.commits": "3",
                "hoodie.cleaner.commits.retained": "1",
                "hoodie.compact.inline.max.delta.commits": "1",
            },
            table_properties=HudiTable(str(table.path)).config.raw,
        ),
    )
    active = [str(i.time) for i in HudiTable(str(table.path)).timeline.instants]
    assert not set(data_instants) & set(active), f"Java's instants {data_instants} not archived: {active}"
    assert min(active) > expected_compaction, active  # and it stops at the MDT's latest compaction
    _check(java_hudi, table, "after our archive")

    # Java writes on top and compacts the MDT itself; its base HFile is byte for byte ours for the same records
    java_write(
        java_hudi,
        table,
        generate_updates(table.expected(), fraction=0.2, seed=27, ts_offset=27 * 10**6),
        "upsert",
        **{**MDT_DEFAULTS, "hoodie.metadata.compact.max.delta.commits": "2"},
    )
    javas = [c for c in _mdt_compactions(table.path) if c != expected_compaction]
    assert javas, "Java did not compact the MDT"
    _check(java_hudi, table, "after Java's write and MDT compaction on top of ours")
    (java_file,) = (table.path / ".hoodie/metadata/files").glob(f"*_{javas[-1]}.hfile")
    data = java_file.read_bytes()
    assert base_hfile(decode_hfile(data), java_file.name) == data, "our base HFile writer != Java's for its records"
