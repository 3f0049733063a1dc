"""Incremental queries: the changes since a checkpoint, chained from one read to the next, across a compaction."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable, read_incremental, read_incremental_table
from lake_orchestration.hudi.write import WriteOptions, write_table

path = str(Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()) / "trips")
options = WriteOptions(
    table_name="trips", table_type=TableType.MERGE_ON_READ, record_key_fields=("uuid",), precombine_field="ts"
)
trips = generate_trips(100, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)

# The first pull: everything (begin 0 is exclusive, so every commit is after it).
first = read_incremental(HudiTable(path), begin_instant_time="0")
print(first.num_rows, "rows from", [str(i.time) for i in first.instants], "checkpoint", first.checkpoint)
assert first.num_rows == 100

# Two batches of updates, then a compaction: it rewrites records without changing their commit time.
for seed in (2, 3):
    write_table(path, generate_updates(trips, fraction=0.1, seed=seed), operation="upsert", options=options)
schedule_compaction(HudiTable(path), force=True)
run_compaction(HudiTable(path))

# The next pull starts at the previous checkpoint: the two upserts' records, each at its latest version.
second = read_incremental(HudiTable(path), begin_instant_time=first.checkpoint)
changed = second.table
print(changed.num_rows, "changed rows in", len(second.instants), "instants; checkpoint", second.checkpoint)
assert 10 <= changed.num_rows <= 20 and len(second.instants) == 3  # two deltacommits + the compaction's commit
assert first.checkpoint < min(changed.column("_hoodie_commit_time").to_pylist())

# Nothing new since: an empty table, and the checkpoint stays where it was.
third = read_incremental(HudiTable(path), begin_instant_time=second.checkpoint)
assert third.num_rows == 0 and third.checkpoint == second.checkpoint

# A range covering only the compaction returns nothing: it changed no record.
compaction = str(second.instants[-1].time)
before = str(second.instants[-2].time)
only = read_incremental_table(HudiTable(path), begin_instant_time=before, end_instant_time=compaction)
assert only.num_rows == 0
