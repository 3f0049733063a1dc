"""The demo table: a MERGE_ON_READ table of generated trips built with this project's own writer.

``lake-orch demo`` runs :func:`build_demo_table`: bulk_insert trips into three city partitions, three upserts
(updates, new trips, deletes), then prints the timeline, the file slices and a snapshot summary read on Spark
(``local[*]``) and checked against the in-process reader.

The Dagster demo (``./scripts/demo.sh``, :mod:`lake_orchestration.demo.run`) uses :func:`create_demo_table` and
:func:`ingest_demo_batch`: a bulk_insert, then generated batches (updates, new trips, deletes) upserted through the
writer, one batch per run of the demo ingest asset.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.datagen import TRIPS_SCHEMA, generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, WriteResult, write_table

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


@dataclass
class DemoBatch:
    """One ingest batch of the Dagster demo: the commits it made and their counts."""

    instants: list[str] = field(default_factory=list)
    """Completed deltacommits, in order."""
    inserted: int = 0
    """New records."""
    updated: int = 0
    """Updated records."""
    deleted: int = 0
    """Deleted records."""
    records: int = 0
    """Records handed to the writer (inserts, updates and deletes)."""
    seconds: float = 0.0
    """Wall time of the writes."""


def create_demo_table(path: str | Path, *, rows: int = 1000, seed: int = 42) -> WriteResult:
    """Create the demo MOR table at ``path`` with one bulk_insert of ``rows`` trips (a previous one is replaced)."""
    path = str(path)
    if Path(path, ".hoodie").exists():
        shutil.rmtree(path)
    return write_table(
        path, generate_trips(rows, partitions=3, seed=seed), operation="bulk_insert", options=DEMO_OPTIONS
    )


def ingest_demo_batch(
    path: str | Path,
    *,
    seed: int,
    update_fraction: float = 0.1,
    new_rows: int = 50,
    delete_fraction: float = 0.02,
    storage_options: dict[str, object] | None = None,
) -> DemoBatch:
    """Upsert one generated batch into the demo table, then delete a few trips (two deltacommits).

    The batch updates ``update_fraction`` of the live trips (a larger ``ts``, a new fare), inserts ``new_rows``
    trips and deletes ``delete_fraction`` of the live trips not updated. Everything is drawn from ``seed``.
    """
    path = str(path)
    t0 = time.monotonic()
    table = HudiTable(path, storage_options=storage_options)  # type: ignore[arg-type]
    live = read_snapshot_table(table).select(TRIPS_SCHEMA.names).cast(TRIPS_SCHEMA)
    if live.num_rows == 0:
        raise ValueError(
            f"The demo table at {path} has no live rows to update: expected a table from create_demo_table"
        )
    # a ts above every live row's, so the updates win under event-time and commit-time ordering alike
    offset = int(pc.max(live.column("ts")).as_py()) - int(pc.min(live.column("ts")).as_py()) + 1
    upd = generate_updates(live, fraction=update_fraction, seed=seed, ts_offset=offset)
    new = generate_trips(new_rows, partitions=3, seed=seed + 1_000_003, ts_offset=offset + 10_000_000)
    batch = DemoBatch()
    r = write_table(
        path, pa.concat_tables([upd, new]), operation="upsert", options=DEMO_OPTIONS, storage_options=storage_options
    )  # type: ignore[arg-type]
    batch.instants.append(r.instant)
    batch.inserted, batch.updated = r.inserted, r.updated
    batch.records += upd.num_rows + new.num_rows
    updated = set(upd.column("uuid").to_pylist())
    candidates = live.filter(pc.invert(pc.is_in(live.column("uuid"), pa.array(sorted(updated), pa.string()))))
    dele = pick_deletes(candidates, fraction=delete_fraction, seed=seed + 2_000_003)
    if dele.num_rows:
        r = write_table(path, dele, operation="delete", options=DEMO_OPTIONS, storage_options=storage_options)  # type: ignore[arg-type]
        batch.instants.append(r.instant)
        batch.deleted = r.deleted
        batch.records += dele.num_rows
    batch.seconds = time.monotonic() - t0
    return batch
