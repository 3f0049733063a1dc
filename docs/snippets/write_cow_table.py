"""Create a COPY_ON_WRITE table from Hudi option keys, upsert and delete, then read it back and check it."""

import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
path = str(scratch / "trips_cow")
# --8<-- [start:options]
options = WriteOptions.from_hudi_options(
    {
        "hoodie.table.name": "trips_cow",
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.hive_style_partitioning": "true",
    }
)
# --8<-- [end:options]

trips = generate_trips(300, partitions=3, seed=1)
first = write_table(path, trips, operation="bulk_insert", options=options)  # creates the table
assert (first.action, first.inserted) == ("commit", 300)

# An upsert: 30 updates (same keys, larger ts, new fare) and 10 new trips.
updates = generate_updates(trips, fraction=0.1, seed=2)
new = generate_trips(10, partitions=3, seed=7)
second = write_table(path, pa.concat_tables([updates, new]), operation="upsert", options=options)
assert (second.updated, second.inserted) == (30, 10)

gone = pick_deletes(trips, fraction=0.05, seed=3)  # only the key and partition columns matter
third = write_table(path, gone, operation="delete", options=options)
print(third.action, third.instant, "deleted", third.deleted)

# Read back: every update applied, every delete gone.
table = HudiTable(path)
snapshot = read_snapshot_table(table)
fares = dict(zip(snapshot.column("uuid").to_pylist(), snapshot.column("fare").to_pylist(), strict=True))
assert len(fares) == snapshot.num_rows == 300 + 10 - gone.num_rows
gone_keys = set(gone.column("uuid").to_pylist())
assert not gone_keys & fares.keys()
for key, fare in zip(updates.column("uuid").to_pylist(), updates.column("fare").to_pylist(), strict=True):
    assert key in gone_keys or fares[key] == fare

# Copy-on-write: the latest slices are base files only, rewritten by the last commit that touched them;
# rows that did not change keep the commit time of the write that inserted them.
changed = set(updates.column("uuid").to_pylist()) | set(new.column("uuid").to_pylist())
for fs in table.fs_view().latest_file_slices():
    assert not fs.log_files
    rows = pq.read_table(Path(path) / fs.base_file.relative_path, columns=["uuid", "_hoodie_commit_time"])
    for row in rows.to_pylist():
        assert row["_hoodie_commit_time"] == (second.instant if row["uuid"] in changed else first.instant), row
print(snapshot.num_rows, "rows;", [(i.action.value, str(i.time)) for i in table.timeline])
