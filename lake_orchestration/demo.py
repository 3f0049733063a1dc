"""The embedded demo: build a MERGE_ON_READ table with this project's own writer, then show it.

``lake-orch demo`` runs it: bulk_insert trips into three city partitions, three upserts (updates, new trips,
deletes), then prints the timeline, the file slices and a snapshot summary read on Spark (``local[*]``) and
checked against the in-process reader.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

DEMO_OPTIONS = WriteOptions(
    table_name="demo_trips",
    table_type=TableType.MERGE_ON_READ,
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
    hive_style_partitioning=True,
)


@dataclass
class DemoResult:
    """What the demo built."""

    path: str
    instants: list[str]
    expected_rows: int


def build_demo_table(
    path: str | Path, *, rows: int = 3000, seed: int = 42, echo: Callable[[str], None] = print
) -> DemoResult:
    """Create the demo MOR table at ``path`` (replacing a previous demo table there)."""
    path = str(path)
    if Path(path, ".hoodie").exists():
        shutil.rmtree(path)
    base = generate_trips(rows, partitions=3, seed=seed)
    instants = []
    r = write_table(path, base, operation="bulk_insert", options=DEMO_OPTIONS)
    instants.append(r.instant)
    echo(f"bulk_insert  {r.instant}: {r.inserted} rows")
    live = {k: i for i, k in enumerate(base.column("uuid").to_pylist())}
    for n in range(3):
        upd = generate_updates(base, fraction=0.1, seed=seed + n, ts_offset=10_000_000 * (n + 1))
        new = generate_trips(rows // 20, partitions=3, seed=seed + 100 + n)
        r = write_table(path, pa.concat_tables([upd, new]), operation="upsert", options=DEMO_OPTIONS)
        instants.append(r.instant)
        for k in new.column("uuid").to_pylist():
            live[k] = 1
        for k in upd.column("uuid").to_pylist():
            live[k] = 1
        echo(f"upsert       {r.instant}: {r.updated} updated, {r.inserted} inserted")
        dele = pick_deletes(base, fraction=0.02, seed=seed + 200 + n)
        r = write_table(path, dele, operation="delete", options=DEMO_OPTIONS)
        instants.append(r.instant)
        for k in dele.column("uuid").to_pylist():
            live.pop(k, None)
        echo(f"delete       {r.instant}: {r.deleted} deleted")
    return DemoResult(path=path, instants=instants, expected_rows=len(live))


def snapshot_summary(snapshot: pa.Table) -> dict[str, object]:
    """Rows per partition and the fare total of a snapshot."""
    parts = pc.value_counts(snapshot.column("_hoodie_partition_path")).to_pylist() if snapshot.num_rows else []
    return {
        "rows": snapshot.num_rows,
        "distinct_keys": pc.count_distinct(snapshot.column("_hoodie_record_key")).as_py() if snapshot.num_rows else 0,
        "rows_per_partition": {p["values"]: p["counts"] for p in sorted(parts, key=lambda x: x["values"])},
        "fare_total": round(pc.sum(snapshot.column("fare")).as_py() or 0.0, 2) if snapshot.num_rows else 0.0,
        "commits_in_rows": sorted(set(snapshot.column("_hoodie_commit_time").to_pylist())) if snapshot.num_rows else [],
    }


def local_snapshot(path: str) -> pa.Table:
    return read_snapshot_table(HudiTable(path))
