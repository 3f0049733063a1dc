"""A compaction that crashed after going inflight: the next run rolls the attempt back and executes the plan again."""

import os
import sys
import tempfile
import time
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.avro import RollbackMetadata, RollbackPlan
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import (
    CompactionConfig,
    compaction_tasks,
    run_compaction,
    schedule_compaction,
)
from lake_orchestration.hudi.services.compaction.executor import execute_operation
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
)
trips = generate_trips(200, partitions=2, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)
write_table(path, generate_updates(trips, fraction=0.3, seed=2), operation="upsert", options=options)
before = read_snapshot_table(HudiTable(path))

# --8<-- [start:crash]
table = HudiTable(path)
plan = schedule_compaction(table, force=True)  # force: ignore the trigger strategy
assert plan.scheduled, plan.reason
instant = str(plan.instant)

# Simulate a crash: the plan went inflight and one task wrote its base file, then the process died.
table.transition_to_inflight(Instant(plan.instant, Action.COMPACTION, State.REQUESTED))
tasks, _ = compaction_tasks(table, instant, CompactionConfig())
execute_operation(tasks[0])
# ... long ago: an attempt counts as live until its heartbeat (here: its inflight file) is older than
# hoodie.client.heartbeat.interval_in_ms x hoodie.client.heartbeat.tolerable.misses (2 minutes by default).
long_ago = time.time() - 3600
os.utime(Path(path) / ".hoodie" / f"{instant}.compaction.inflight", (long_ago, long_ago))
partial = sorted(p.name for p in Path(path).rglob(f"*_{instant}.parquet"))
assert len(partial) == 1
# Readers do not see the partial output: the snapshot is unchanged.
assert read_snapshot_table(HudiTable(path)).num_rows == before.num_rows

(result,) = run_compaction(HudiTable(path))  # finds the inflight attempt, rolls it back, runs the plan again
assert result.instant == instant
assert result.rolled_back_attempt is not None
print("rolled back attempt via rollback instant", result.rolled_back_attempt)
# --8<-- [end:crash]

table = HudiTable(path)
rb = Instant(table.timeline.get(result.rolled_back_attempt, Action.ROLLBACK).time, Action.ROLLBACK, State.REQUESTED)
rollback_plan = RollbackPlan.from_bytes(table.read_instant(rb), path=rb.file_name)
assert rollback_plan.instant_to_rollback.commit_time == instant
assert rollback_plan.instant_to_rollback.action == "compaction"
done = Instant(rb.time, Action.ROLLBACK, State.COMPLETED)
meta = RollbackMetadata.from_bytes(table.read_instant(done), path=done.file_name)
assert meta.commits_rollback == (instant,) and meta.total_files_deleted == 1
print("rollback deleted", [f for pm in meta.partition_metadata.values() for f in pm.success_delete_files])

# One base file per compacted file group at the instant (the partial one was replaced), and the same rows.
written = sorted(p.name for p in Path(path).rglob(f"*_{instant}.parquet"))
assert len(written) == result.operations == len({n.split("_")[0] for n in written})
after = read_snapshot_table(table)
assert after.num_rows == before.num_rows
assert all(not fs.log_files for fs in table.fs_view().latest_file_slices())
print([(i.action.value, i.state.name, str(i.time)) for i in table.timeline])
