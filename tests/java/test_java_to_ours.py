"""Java writes → our services → Java reads, then Java writes and runs its own services on top of ours.

Each test is one cell of the interop matrix (docs/interop.md). The Java-written histories are built once per run
(:func:`tests.java.interop.java_history`); each cell works on a private copy.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from tests.java.harness import JavaHudi
from tests.java.interop import (
    COMPLEX,
    NON_PARTITIONED,
    PARTITIONED,
    JavaTable,
    Shape,
    assert_rows_equal,
    java_read,
    java_write,
    keyed_meta,
    procedure,
    trips,
)
from tests.oracle import hudi_rs_snapshot

pytestmark = [pytest.mark.java]

MOR, COW = TableType.MERGE_ON_READ, TableType.COPY_ON_WRITE


def java_continues(java: JavaHudi, t: JavaTable) -> None:
    """Java writes again on top of ours, running its own compaction (MOR), clean and archive inline; then Java, our
    reader and hudi-rs read the same rows, equal to the model."""
    extra = {
        "hoodie.clean.automatic": "true",
        "hoodie.cleaner.commits.retained": "2",
        "hoodie.archive.automatic": "true",
        "hoodie.keep.min.commits": "3",
        "hoodie.keep.max.commits": "4",
    }
    if t.table_type is MOR:
        extra |= {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
    ours_before = set(t.instants)
    more = trips(30, seed=99)
    java_write(java, t, more, "upsert", **extra)
    java_write(java, t, more.slice(0, 10), "delete", **extra)
    java_write(java, t, trips(20, seed=98), "upsert", **extra)
    new = [i for i in t.instants if i not in ours_before]
    actions = {i.split(".", 1)[1] for i in new}
    if t.table_type is MOR:
        assert "commit" in actions, f"Java ran no compaction of its own on top of ours: {new}"
    assert "clean" in actions, f"Java ran no clean on top of ours: {new}"
    assert list((t.path / ".hoodie" / "archived").glob(".commits_.archive.*")), "Java archived nothing"
    theirs = java_read(java, t)
    assert_rows_equal(theirs, t.expected(), "Java's read after Java wrote on top of ours")
    ours = read_snapshot_table(HudiTable(str(t.path)))
    assert_rows_equal(ours, theirs, "our read vs Java's")
    assert keyed_meta(ours) == keyed_meta(theirs), "meta columns: ours vs Java's"
    rs = hudi_rs_snapshot(t.path)
    assert rs is not None
    assert_rows_equal(rs, theirs, "hudi-rs vs Java's")


def assert_java_reads_model(java: JavaHudi, t: JavaTable, before: pa.Table) -> pa.Table:
    """Java's snapshot equals the model and, in its meta columns, Java's read before our service."""
    after = java_read(java, t)
    assert_rows_equal(after, t.expected(), "Java's snapshot after our service vs the expected rows")
    assert keyed_meta(after) == keyed_meta(before), "a service changed keys, partitions or commit times"
    return after


@pytest.mark.parametrize("shape", [PARTITIONED, NON_PARTITIONED, COMPLEX], ids=lambda s: s.name)
@pytest.mark.interop(
    direction="Java writes → our service → Java reads",
    service="compaction",
    checks="snapshot, read-optimized, incremental; show_compaction, show_commits; "
    "Java upserts + compacts + cleans + archives after",
)
def test_our_compaction(java_hudi: JavaHudi, java_table, shape: Shape) -> None:  # type: ignore[no-untyped-def]
    t = java_table(shape, MOR)
    before = java_read(java_hudi, t)
    first = t.instants[0].split(".")[0]
    incr_before = java_read(java_hudi, t, "incremental", **{"hoodie.datasource.read.begin.instanttime": first})

    config = CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"})
    results = run_compaction(HudiTable(str(t.path)), schedule=True, config=config)
    assert results, "nothing compacted: the Java history has log files in every partition"
    instant = results[0].instant

    assert_java_reads_model(java_hudi, t, before)
    ro = java_read(java_hudi, t, "read_optimized")
    assert_rows_equal(ro, t.expected(), "Java's read-optimized query after our compaction (all slices compacted)")
    incr = java_read(java_hudi, t, "incremental", **{"hoodie.datasource.read.begin.instanttime": first})
    assert_rows_equal(incr, incr_before, "Java's incremental query: before vs after our compaction")

    compactions = procedure(java_hudi, "show_compaction", t)
    assert {r["timestamp"]: r["state"] for r in compactions}.get(instant) == "COMPLETED", compactions
    commits = procedure(java_hudi, "show_commits", t)
    assert instant in {r["commit_time"] for r in commits}, commits

    java_continues(java_hudi, t)
