"""Our writes (and our compaction) → Java reads, then Java writes and runs its own services on top of ours.

Each test is one cell of the interop matrix (docs/interop.md): our writer writes a COPY_ON_WRITE or MERGE_ON_READ
table of one shape over several commits (bulk_insert, upsert, delete, insert, our compaction on MERGE_ON_READ);
Java's snapshot, read-optimized and incremental queries equal an independent model of the rows and of the commit each
row was last written by, and ``show_commits`` lists our instants with their actions. Then Java continues the table
(:func:`tests.java.test_java_to_ours.java_continues`: upserts, a delete, its own inline compaction, clean, archive)
and our reader and hudi-rs read what Java reads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_updates, pick_deletes
from lake_orchestration.hudi.model.instant import State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.write import WriteOperation, WriteOptions, write_table
from tests.java.harness import JavaHudi
from tests.java.interop import (
    COMPLEX,
    NON_PARTITIONED,
    PARTITIONED,
    JavaTable,
    Model,
    Shape,
    assert_rows_equal,
    java_read,
    procedure,
    trips,
)
from tests.java.test_java_to_ours import java_continues

pytestmark = [pytest.mark.java]

MOR, COW = TableType.MERGE_ON_READ, TableType.COPY_ON_WRITE
COMMIT_TIME = "_hoodie_commit_time"


@dataclass
class OurTable:
    """A table our writer writes, with the expected rows (:class:`Model`) and, per key, the instant of the write that
    last changed the row (what ``_hoodie_commit_time`` and an incremental query must say), both kept from the input
    data and our write results, never from a read."""

    path: Path
    shape: Shape
    table_type: TableType
    model: Model
    schema: pa.Schema
    options: WriteOptions
    written_at: dict[tuple[Any, ...], str] = field(default_factory=dict)
    instants: dict[str, str] = field(default_factory=dict)
    """Our completed write and compaction instants: time -> action."""

    def write(self, data: pa.Table, operation: WriteOperation) -> str:
        result = write_table(str(self.path), data, operation=operation, options=self.options)
        self.instants[result.instant] = result.action
        if operation is WriteOperation.DELETE:
            self.model.delete(data)
            for row in data.to_pylist():
                self.written_at.pop(self.model._k(row), None)
        else:
            before = {k: dict(v) for k, v in self.model.rows.items()}
            self.model.upsert(data)
            for k, row in self.model.rows.items():
                if before.get(k) != row:
                    self.written_at[k] = result.instant
        return result.instant

    def expected(self) -> pa.Table:
        return self.model.table(self.schema)

    def expected_commit_times(self, since: str = "") -> list[tuple[Any, ...]]:
        """(key..., commit time) of the rows last written after ``since``, sorted."""
        return sorted((*k, t) for k, t in self.written_at.items() if t > since)

    def java_table(self) -> JavaTable:
        """The same table as :mod:`tests.java.interop` sees a Java-written one (for Java to continue it)."""
        completed = HudiTable(str(self.path)).timeline.completed()
        return JavaTable(
            self.path,
            self.shape,
            self.table_type,
            self.model,
            self.schema,
            [i.file_name for i in completed if i.state is State.COMPLETED],
            self.path.parent,
        )


def commit_times(t: pa.Table, key: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """(key..., ``_hoodie_commit_time``) per row of a read, sorted."""
    return sorted(zip(*(t.column(c).to_pylist() for c in (*key, COMMIT_TIME)), strict=True))


def our_history(path: Path, shape: Shape, table_type: TableType) -> tuple[OurTable, str]:
    """Our writer writes the table: bulk_insert, upsert, delete, insert of new keys, (MERGE_ON_READ: our compaction,)
    then an upsert of old and new keys. At most 150 rows per new base file: several file groups per partition.
    Returns the table and, for MERGE_ON_READ, the compaction instant (else "")."""
    base = trips(400, seed=11)
    options = dataclasses.replace(shape.write_options(table_type), max_rows_per_file=150)
    key = ("city", "uuid") if shape.partition else ("uuid",)
    t = OurTable(path, shape, table_type, Model(key), base.schema, options)
    t.write(base, WriteOperation.BULK_INSERT)
    t.write(generate_updates(base, fraction=0.3, seed=12, ts_offset=10**6), WriteOperation.UPSERT)
    t.write(pick_deletes(base, fraction=0.1, seed=13), WriteOperation.DELETE)
    t.write(trips(60, seed=14), WriteOperation.INSERT)
    compaction = ""
    if table_type is MOR:
        config = CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"})
        results = run_compaction(HudiTable(str(path)), schedule=True, config=config)
        assert results, f"{path}: our compaction compacted nothing (the upsert and delete wrote log files)"
        compaction = results[0].instant
        t.instants[compaction] = "commit"
    return t, compaction


def our_upsert(t: OurTable) -> str:
    """One more upsert on top: updates of surviving rows (logs over compacted slices on MERGE_ON_READ) and new keys."""
    survivors = t.expected()
    updates = generate_updates(survivors, fraction=0.25, seed=15, ts_offset=2 * 10**6)
    more = pa.concat_tables([updates, trips(30, seed=16)])
    return t.write(more, WriteOperation.UPSERT)


def _cell(shape: Shape, table_type: TableType) -> Any:
    """One interop cell per shape and table type (the marks differ per case: table, services run)."""
    mor = table_type is MOR
    return pytest.param(
        shape,
        table_type,
        id=f"{shape.name}-{'MOR' if mor else 'COW'}",
        marks=pytest.mark.interop(
            direction="our writes → Java reads",
            table=f"{'MOR' if mor else 'COW'} {shape.name}",
            service="bulk_insert, upsert, delete, insert" + (", compaction" if mor else ""),
            checks="snapshot (rows, _hoodie_commit_time), " + ("read-optimized, " if mor else "") + "incremental; "
            "show_commits; Java upserts + deletes with its own "
            + ("compaction, " if mor else "")
            + "clean and archive after, our reader and hudi-rs equal Java",
        ),
    )


@pytest.mark.parametrize(
    ("shape", "table_type"), [_cell(s, tt) for tt in (MOR, COW) for s in (PARTITIONED, NON_PARTITIONED, COMPLEX)]
)
def test_java_reads_our_writes(java_hudi: JavaHudi, tmp_path: Path, shape: Shape, table_type: TableType) -> None:
    t, compaction = our_history(tmp_path / "t", shape, table_type)
    first = min(t.instants)
    if table_type is MOR:
        # every file group with logs was compacted: the read-optimized query sees all rows
        ro = java_read(java_hudi, t.path, "read_optimized")
        assert_rows_equal(ro, t.expected(), "Java's read-optimized query after our compaction")
        assert commit_times(ro, t.model.key) == t.expected_commit_times(), "read-optimized: _hoodie_commit_time"
    our_upsert(t)

    snap = java_read(java_hudi, t.path)
    assert_rows_equal(snap, t.expected(), "Java's snapshot of our table")
    assert commit_times(snap, t.model.key) == t.expected_commit_times(), "snapshot: _hoodie_commit_time per key"
    incr = java_read(java_hudi, t.path, "incremental", **{"hoodie.datasource.read.begin.instanttime": first})
    assert commit_times(incr, t.model.key) == t.expected_commit_times(since=first), (
        f"Java's incremental query from {first}: keys and commit times"
    )
    assert_rows_equal(incr, t.model.table(t.schema).filter(_written_after(t, first)), "incremental rows")

    # our compaction is listed as a completed "commit" (show_compaction of ours: tests/java/test_java_to_ours.py)
    commits = {r["commit_time"]: r["action"] for r in procedure(java_hudi, "show_commits", t.path, limit=50)}
    assert commits == t.instants, f"show_commits {commits} vs our instants {t.instants}"
    assert not compaction or commits.get(compaction) == "commit", commits

    java_continues(java_hudi, t.java_table())


def _written_after(t: OurTable, since: str) -> pa.Array:
    """Mask over :meth:`Model.table`'s rows (in the model's order): last written after ``since``."""
    return pa.array([t.written_at[k] > since for k in t.model.rows], pa.bool_())
