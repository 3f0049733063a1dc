"""Java-written v6 tables that keep Hudi's metadata table (Java 0.15's default ``hoodie.metadata.enable=true``):
several commits, an update, a delete, a compaction (MOR) and a clean, so the ``files`` partition of the metadata
table holds added and deleted files, HFile data blocks in its logs and, with ``hoodie.metadata.compact.max.delta
.commits`` small, a compacted base HFile."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lake_orchestration.datagen import generate_updates, pick_deletes
from lake_orchestration.hudi.model.properties import TableType
from tests.java.harness import JavaHudi
from tests.java.interop import PARTITIONED, JavaTable, Model, Shape, java_write, trips

MDT_ON = {
    "hoodie.metadata.enable": "true",
    # compact the metadata table every 3 deltacommits (default 10) so its `files` partition gets a base HFile
    "hoodie.metadata.compact.max.delta.commits": "3",
}
CLEAN = {"hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "1"}
COMPACT = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}


def java_mdt_history(
    java: JavaHudi, path: Path, table_type: TableType, *, shape: Shape = PARTITIONED, rows: int = 300
) -> JavaTable:
    """Java writes a table with the metadata table on: insert, upsert, delete, upsert (+ inline compaction on MOR),
    upsert with an automatic clean keeping one commit, upsert of new keys."""
    base = trips(rows, seed=1)
    key = ("city", "uuid") if shape.partition else ("uuid",)
    table = JavaTable(path, shape, table_type, Model(key), base.schema, [], path.parent)
    java_write(java, table, base, "insert", **MDT_ON)
    java_write(java, table, generate_updates(base, fraction=0.3, seed=2, ts_offset=10**6), "upsert", **MDT_ON)
    java_write(java, table, pick_deletes(base, fraction=0.1, seed=3), "delete", **MDT_ON)
    extra = {**MDT_ON, **(COMPACT if table_type is TableType.MERGE_ON_READ else {})}
    java_write(java, table, generate_updates(base, fraction=0.2, seed=4, ts_offset=2 * 10**6), "upsert", **extra)
    java_write(
        java, table, generate_updates(base, fraction=0.2, seed=6, ts_offset=3 * 10**6), "upsert", **MDT_ON, **CLEAN
    )
    more = pa.concat_tables([generate_updates(base, fraction=0.1, seed=7, ts_offset=4 * 10**6), trips(40, seed=5)])
    java_write(java, table, more, "upsert", **MDT_ON)
    return table
