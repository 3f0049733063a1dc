"""Archive the oldest instants of a table, merge the small archive files, and read the archived timeline back."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
path = str(scratch / "trips_cow")
options = WriteOptions(
    table_name="trips_cow",
    table_type=TableType.COPY_ON_WRITE,
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
)
trips = generate_trips(100, partitions=2, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)
for i in range(15):
    write_table(path, generate_updates(trips, fraction=0.1, seed=i), operation="upsert", options=options)
before = read_snapshot_table(HudiTable(path)).num_rows

# --8<-- [start:archive]
table = HudiTable(path)
archive_options = {"hoodie.keep.min.commits": "11", "hoodie.keep.max.commits": "12"}
# Hudi keys -> typed config: the options over the table's hoodie.properties over Hudi's defaults
config = ArchiveConfig.from_options(archive_options, table_properties=table.config.raw)

preview = run_archive(table, config, dry_run=True)  # writes and deletes nothing
print(f"would archive {len(preview.archived_instants)} instants")

result = run_archive(table, config)
print(result.archive_file, [str(i.time) for i in result.archived_instants])
assert len(table.refresh().timeline.completed_commits()) == 11
# --8<-- [end:archive]
assert read_snapshot_table(table).num_rows == before  # archival never changes what a reader sees

# --8<-- [start:read]
archived = ArchivedTimeline.load(table.storage, table.config.archivelog_folder)
for entry in archived.entries[:3]:
    metadata = entry.entry.hoodie_commit_metadata  # the commit's HoodieCommitMetadata, as an Avro record
    print(entry.instant, entry.file, metadata["operationType"] if metadata else None)
# --8<-- [end:read]
assert len(archived) == 3 * len(result.archived_instants)  # requested, inflight and completed of each
