"""Clean a MERGE_ON_READ table with KEEP_LATEST_COMMITS while a savepoint keeps an old commit readable."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.services.savepoint import create_savepoint, delete_savepoint
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

# --8<-- [start:clean]
trips = generate_trips(2_000, partitions=3, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)
for n in range(6):
    write_table(path, generate_updates(trips, fraction=0.1, seed=n), operation="upsert", options=options)
    if n % 2:  # every second deltacommit is compacted: new file slices, old ones become cleanable
        run_compaction(HudiTable(path), schedule=True, config=CompactionConfig(max_delta_commits=1))

table = HudiTable(path)
first_compaction = str(table.timeline.completed().with_actions(Action.COMMIT).first.time)  # a compaction
create_savepoint(table, first_compaction, user="ops", comments="keep for the audit")

options_clean = {"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS", "hoodie.cleaner.commits.retained": "2"}
preview = run_clean(HudiTable(path), CleanConfig.from_options(options_clean), dry_run=True)
print(f"would delete {preview.file_count} files, earliest commit to retain {preview.earliest_commit_to_retain}")

rows_before = read_snapshot_table(HudiTable(path)).num_rows
result = run_clean(HudiTable(path), CleanConfig.from_options(options_clean))
print(f"clean {result.instants}: deleted {result.deleted} files")
assert read_snapshot_table(HudiTable(path)).num_rows == rows_before
# --8<-- [end:clean]

# --8<-- [start:savepoint]
# the savepointed commit is still readable as of its instant
as_of = read_snapshot_table(HudiTable(path), as_of=first_compaction)
print(f"as of savepoint {first_compaction}: {as_of.num_rows} rows")
delete_savepoint(HudiTable(path), first_compaction)  # its files become cleanable again
# --8<-- [end:savepoint]
