"""hoodie.properties, the timeline, and the file groups and file slices of the file-system view."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.instant import Instant
from lake_orchestration.hudi.model.properties import table_checksum
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

path = str(Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()) / "trips")
options = WriteOptions(table_name="trips", record_key_fields=("uuid",), partition_fields=("city",),
                       precombine_field="ts")
trips = generate_trips(100, partitions=2, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)
write_table(path, generate_updates(trips, fraction=0.2, seed=2), operation="upsert", options=options)

table = HudiTable(path)
cfg = table.config  # typed hoodie.properties
print(cfg.name, cfg.table_type.value, cfg.record_key_fields, cfg.merge_semantics.value)
assert cfg.raw["hoodie.table.checksum"] == table_checksum(cfg.raw)  # CRC32 of "<database>.<table>"

for instant in table.timeline:  # latest state of each instant, in timeline order
    print(instant.time, instant.action.value, instant.state.name, instant.file_name)
    assert Instant.from_file_name(instant.file_name) == instant
last = table.timeline.completed_commits().last
print("partitions written:", sorted(table.commit_metadata(last).partition_to_write_stats))

view = table.fs_view()
for fs in view.latest_file_slices():  # newest committed slice of every file group
    base = fs.base_file.name if fs.base_file else None
    print(fs.partition_path, fs.file_id, fs.base_instant, base, [lf.name for lf in fs.log_files])
    assert all(lf.base_instant == fs.base_instant for lf in fs.log_files)
