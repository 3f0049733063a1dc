"""Snapshot reads: the whole table as one Arrow table, streamed, with stats, and as of an older instant."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.table import HudiTable, read_snapshot
from lake_orchestration.hudi.table.snapshot import ReadStats, read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

path = str(Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()) / "trips")
options = WriteOptions(table_name="trips", record_key_fields=("uuid",), precombine_field="ts")
trips = generate_trips(100, seed=1)
first = write_table(path, trips, operation="bulk_insert", options=options)
write_table(path, generate_updates(trips, fraction=0.2, seed=2), operation="upsert", options=options)

table = HudiTable(path)  # s3://, gs://, hdfs:// with storage_options={...}
stats = ReadStats()
rows = read_snapshot_table(table, stats=stats)  # pyarrow.Table, meta columns included
print(rows.num_rows, "rows;", stats.base_files, "base files,", stats.log_blocks, "log blocks,",
      stats.log_records, "log records,", stats.corrupt_blocks, "corrupt blocks")
assert rows.num_rows == 100 and stats.log_records == 20

# Streamed: one pyarrow.Table per base-file batch of each file slice, then its log-only inserts.
total = sum(part.num_rows for part in read_snapshot(table, batch_size=10_000))
assert total == rows.num_rows

# As of an older instant: the log blocks of later deltacommits are left out.
old = read_snapshot_table(table, as_of=first.instant)
assert set(old.column("_hoodie_commit_time").to_pylist()) == {first.instant}
print("as of", first.instant, ":", old.num_rows, "rows")
