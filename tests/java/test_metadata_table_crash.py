"""A kill between the metadata-table (MDT) deltacommit and the data instant's commit point, with Java Hudi 0.15 as the
oracle: readers (ours and Java's) ignore the MDT block, the next run repairs it, Java validates.

Java writes a partitioned MERGE_ON_READ table with its defaults (MDT on). Our compaction runs in a subprocess that
dies (``os._exit``, as a SIGKILL) right when the data compaction would complete: its MDT deltacommit is completed, the
compaction inflight. Java reads the expected rows through the MDT and our MDT reader lists none of the compaction's
files. The next run of our compaction (the heartbeat of the killed attempt expired) rolls the attempt back -- which
rolls back its MDT deltacommit -- and compacts again, writing the MDT deltacommit again; Java's
``validate_metadata_table_files`` then equals the storage listing and Java writes on top.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.hudi.metadata.writer import metadata_table
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable
from tests.conftest import REPO_ROOT
from tests.java.harness import JavaHudi
from tests.java.interop import PARTITIONED, JavaTable, Model, assert_rows_equal, java_read, java_write, trips
from tests.java.mdt_validate import MDT_DEFAULTS, READ_MDT, storage_listing
from tests.java.mdt_validate import check_metadata_table as _check
from tests.java.mdt_validate import our_listing as _our_listing

pytestmark = [pytest.mark.java]

COMPACTION = {
    "hoodie.compact.inline.max.delta.commits": "1",
    "hoodie.client.heartbeat.interval_in_ms": "300",
    "hoodie.client.heartbeat.tolerable.misses": "1",
}

_KILLED_COMPACTION = textwrap.dedent(
    """
    import os, sys
    from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
    from lake_orchestration.hudi.table.hudi_table import HudiTable

    orig = HudiTable.transition_to_completed
    def dying(self, inflight, content):
        if not self.base_uri.rstrip("/").endswith(".hoodie/metadata"):
            print(f"KILLED {inflight.time}", flush=True)
            os._exit(137)
        return orig(self, inflight, content)
    HudiTable.transition_to_completed = dying
    run_compaction(HudiTable(sys.argv[1]), schedule=True, config=CompactionConfig.from_options(eval(sys.argv[2])))
    """
)


@pytest.mark.interop(
    direction="Java writes with its metadata table on → our writes and services keep it → Java validates",
    table="MOR partitioned, metadata table on",
    service="compaction killed after its MDT step",
    checks="the orphan MDT block ignored by Java and our reader; the re-run rolls it back; "
    "validate_metadata_table_files + latest base files and file slices validated; Java writes on top",
)
def test_kill_after_the_mdt_deltacommit_is_ignored_then_repaired(java_hudi: JavaHudi, tmp_path: Path) -> None:
    base = trips(150, seed=21)
    mor = TableType.MERGE_ON_READ
    table = JavaTable(tmp_path / "t", PARTITIONED, mor, Model(("city", "uuid")), base.schema, [], tmp_path)
    java_write(java_hudi, table, base, "insert", **MDT_DEFAULTS)
    java_write(
        java_hudi, table, generate_updates(base, fraction=0.5, seed=22, ts_offset=10**6), "upsert", **MDT_DEFAULTS
    )

    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_COMPACTION, str(table.path), repr(COMPACTION)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 137, proc.stdout + proc.stderr
    killed = proc.stdout.split("KILLED ", 1)[1].split()[0]
    data = HudiTable(str(table.path))
    assert data.timeline.get(killed, Action.COMPACTION).state is State.INFLIGHT  # type: ignore[union-attr]
    mdt_instant = metadata_table(data).timeline.get(killed, Action.DELTA_COMMIT)
    assert mdt_instant is not None and mdt_instant.is_completed, "the MDT step ran before the kill"

    # readers ignore the block of the uncommitted compaction
    assert_rows_equal(java_read(java_hudi, table, **READ_MDT), table.expected(), "Java's read after the kill")
    ours = _our_listing(table.path)
    assert not [f for _, f in ours if killed in f], "our MDT reader lists the killed compaction's files"
    assert {k for k in storage_listing(table.path) if killed in k[1]}, "the killed compaction wrote base files"

    # the next run: the killed attempt's heartbeat has expired, it is rolled back (with its MDT deltacommit), and the
    # plan compacted again
    time.sleep(1.0)
    done = run_compaction(HudiTable(str(table.path)), config=CompactionConfig.from_options(COMPACTION))
    assert [str(r.instant) for r in done] == [killed]
    mdt = metadata_table(HudiTable(str(table.path)))
    assert [i for i in mdt.timeline.completed() if i.action is Action.ROLLBACK], "the MDT deltacommit was rolled back"
    again = mdt.timeline.get(killed, Action.DELTA_COMMIT)
    assert again is not None and again.is_completed
    _check(java_hudi, table, "after the re-run of the killed compaction")

    java_write(
        java_hudi,
        table,
        generate_updates(table.expected(), fraction=0.2, seed=23, ts_offset=2 * 10**6),
        "upsert",
        **MDT_DEFAULTS,
    )
    _check(java_hudi, table, "after Java's write on top")


_KILLED_COW_WRITE = textwrap.dedent(
    """
    import os, sys
    import pyarrow.parquet as pq
    from lake_orchestration.hudi.model.properties import TableType
    from lake_orchestration.hudi.table.hudi_table import HudiTable
    from lake_orchestration.hudi.write import write_table
    from tests.java.interop import PARTITIONED

    orig = HudiTable.transition_to_completed
    def dying(self, inflight, content):
        if not self.base_uri.rstrip("/").endswith(".hoodie/metadata"):
            print(f"KILLED {inflight.time}", flush=True)
            os._exit(137)
        return orig(self, inflight, content)
    HudiTable.transition_to_completed = dying
    write_table(sys.argv[1], pq.read_table(sys.argv[2]), operation="upsert",
                options=PARTITIONED.write_options(TableType.COPY_ON_WRITE))
    """
)


@pytest.mark.interop(
    direction="Java writes with its metadata table on → our writes and services keep it → Java validates",
    table="COW partitioned, metadata table on",
    service="write killed after its MDT step",
    checks="the orphan MDT deltacommit ignored; rolled back with the write; validate_metadata_table_files + latest "
    "base files and file slices validated; Java reads",
)
def test_cow_write_killed_after_the_mdt_deltacommit_then_rolled_back(java_hudi: JavaHudi, tmp_path: Path) -> None:
    """A COW rollback adds no log file: its MDT deltacommit holds no records (no log file, as Java's upsert of no
    records); the killed write's MDT deltacommit is rolled back; Java validates and writes on top."""
    import pyarrow.parquet as pq

    from lake_orchestration.hudi.services.rollback import rollback_write

    base = trips(120, seed=31)
    cow = TableType.COPY_ON_WRITE
    table = JavaTable(tmp_path / "t", PARTITIONED, cow, Model(("city", "uuid")), base.schema, [], tmp_path)
    java_write(java_hudi, table, base, "insert", **MDT_DEFAULTS)
    src = tmp_path / "failed.parquet"
    pq.write_table(generate_updates(base, fraction=0.5, seed=32, ts_offset=10**6), src)
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_COW_WRITE, str(table.path), str(src)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 137, proc.stdout + proc.stderr
    killed = proc.stdout.split("KILLED ", 1)[1].split()[0]
    assert_rows_equal(java_read(java_hudi, table, **READ_MDT), table.expected(), "Java's read after the kill")
    assert not [f for _, f in _our_listing(table.path) if killed in f], "our MDT reader lists the killed write"

    rb = rollback_write(HudiTable(str(table.path)), killed)
    mdt = metadata_table(HudiTable(str(table.path)))
    assert mdt.timeline.get(killed, Action.DELTA_COMMIT) is None
    assert mdt.timeline.get(str(rb.time), Action.DELTA_COMMIT) is not None  # type: ignore[union-attr]
    _check(java_hudi, table, "after our rollback of the killed COW write")
    java_write(
        java_hudi,
        table,
        generate_updates(table.expected(), fraction=0.2, seed=33, ts_offset=2 * 10**6),
        "upsert",
        **MDT_DEFAULTS,
    )
    _check(java_hudi, table, "after Java's write on top")
