"""Write a small MERGE_ON_READ table (bulk_insert, upsert, delete, upsert with _hoodie_is_deleted), read it back."""

import sys
import tempfile
from pathlib import Path

import pyarrow as pa

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
path = str(scratch / "trips")
options = WriteOptions(
    table_name="trips",
    table_type=TableType.MERGE_ON_READ,
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
    hive_style_partitioning=True,
)

trips = generate_trips(200, partitions=2, seed=1)
first = write_table(path, trips, operation="bulk_insert", options=options)  # creates the table
print(first.action, first.instant, "inserted", first.inserted, "files", first.files_written)

updates = generate_updates(trips, fraction=0.1, seed=2)  # same keys, larger ts
second = write_table(path, updates, operation="upsert", options=options)
print(second.action, second.instant, "updated", second.updated, "files", second.files_written)
# On MERGE_ON_READ, every touched file group gets one new log file (.<file id>_<base instant>.log.<version>_<token>).
assert second.action == "deltacommit" and all(".log." in f for f in second.files_written)

gone = pick_deletes(trips, fraction=0.05, seed=3)  # only the key and partition columns matter
third = write_table(path, gone, operation="delete", options=options)
print(third.action, third.instant, "deleted", third.deleted)

# An upsert can delete too: rows with _hoodie_is_deleted = true become delete records.
survivors = trips.filter(pa.compute.invert(pa.compute.is_in(trips.column("uuid"), gone.column("uuid"))))
flagged = survivors.slice(0, 4).append_column("_hoodie_is_deleted", pa.array([True] * 4))
fourth = write_table(path, flagged, operation="upsert", options=options)
assert fourth.deleted == 4

snapshot = read_snapshot_table(HudiTable(path))
assert snapshot.num_rows == 200 - gone.num_rows - 4
print(snapshot.num_rows, "rows")
