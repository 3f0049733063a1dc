"""Blocks of a log file, and what garbage after a block does to a merged read."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.log.log_format import HeaderKey
from lake_orchestration.hudi.log.reader import read_log_blocks
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import ReadStats, read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

path = str(Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()) / "trips")
options = WriteOptions(table_name="trips", record_key_fields=("uuid",), precombine_field="ts")
trips = generate_trips(50, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)
updates = generate_updates(trips, fraction=0.2, seed=2)
write_table(path, updates, operation="upsert", options=options)

table = HudiTable(path)
(fs,) = table.fs_view().latest_file_slices()
log_path = table.storage.join(fs.partition_path, fs.log_files[0].name)
for block in read_log_blocks(table.storage, log_path):
    print(block.block_type.name, "@", block.offset, block.size, "bytes, instant", block.instant_time,
          "schema in header:", block.get(HeaderKey.SCHEMA) is not None)

# Bytes after the last block that are not a #HUDI# magic make that block fail Java's corruption check:
# the whole block is skipped and counted as corrupt, so the upsert's 10 updates disappear from the read.
with open(log_path, "ab") as f:
    f.write(b"garbage!")
stats = ReadStats()
rows = read_snapshot_table(HudiTable(path), stats=stats)
print("corrupt blocks:", stats.corrupt_blocks, stats.corrupt_reasons)
assert stats.corrupt_blocks == 1 and stats.log_records == 0 and rows.num_rows == 50
