"""Build a small MERGE_ON_READ table, schedule a compaction plan, run it, and check the snapshot is unchanged."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import (
    CompactionConfig,
    pending_compaction_instants,
    run_compaction,
    schedule_compaction,
)
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
path = str(scratch / "trips_mor")
options = WriteOptions(
    table_name="trips_mor",
    table_type=TableType.MERGE_ON_READ,
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
    hive_style_partitioning=True,
)

# One bulk insert and three more deltacommits: two upserts (new log files) and a delete (delete blocks).
trips = generate_trips(300, partitions=3, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)
write_table(path, generate_updates(trips, fraction=0.2, seed=2), operation="upsert", options=options)
write_table(
    path, generate_updates(trips, fraction=0.2, seed=3, ts_offset=20_000_000), operation="upsert", options=options
)
write_table(path, pick_deletes(trips, fraction=0.05, seed=4), operation="delete", options=options)

table = HudiTable(path)
before = read_snapshot_table(table)
assert any(fs.log_files for fs in table.fs_view().latest_file_slices())

# --8<-- [start:schedule]
# The default trigger (NUM_COMMITS, 5 deltacommits) is not met yet: 4 deltacommits since the table began.
not_yet = schedule_compaction(table)
assert not not_yet.scheduled
print("not scheduled:", not_yet.reason)

# Hudi's option keys work too; here the trigger fires at 4 deltacommits.
config = CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "4"})
scheduled = schedule_compaction(table, config=config)
assert scheduled.scheduled, scheduled.reason
print("scheduled", scheduled.instant, "with", len(scheduled.plan.operations), "operation(s)")
for op in scheduled.plan.operations:
    print(" ", op.partition_path, op.file_id, len(op.delta_file_paths), "log file(s)", op.metrics)
# --8<-- [end:schedule]

# --8<-- [start:run]
(result,) = run_compaction(table, config=config)  # the oldest pending plan (FIFO), in-process
assert result.instant == scheduled.instant and result.rolled_back_attempt is None
print(
    f"committed {result.instant}: {result.operations} file group(s), {result.rows_written} rows written,",
    f"{result.log_records} log records merged",
)
# --8<-- [end:run]

# The snapshot is unchanged; every latest slice is now a base file written at the compaction instant.
table = HudiTable(path)
after = read_snapshot_table(table)
assert after.num_rows == before.num_rows
key = ["uuid", "ts", "fare", "_hoodie_commit_time"]
assert sorted(after.select(key).to_pylist(), key=str) == sorted(before.select(key).to_pylist(), key=str)
for fs in table.fs_view().latest_file_slices():
    assert not fs.log_files, fs
    assert fs.base_file is not None and str(fs.base_file.instant) == str(result.instant)
assert not pending_compaction_instants(table)
commit = table.commit_metadata(table.timeline.get(str(result.instant), Action.COMMIT))
assert commit.compacted and commit.operation_type == "COMPACT"
assert run_compaction(table) == []  # nothing pending: a no-op
print(after.num_rows, "rows;", [(i.action.value, i.state.name, str(i.time)) for i in table.timeline])
