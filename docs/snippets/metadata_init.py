"""Give a table a metadata table: from the writer (hoodie.metadata.enable=true) or on its own (a dry run first)."""

import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.metadata.initialize import initialize_metadata_table
from lake_orchestration.hudi.metadata.reader import metadata_file_listing
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
options = WriteOptions(
    table_name="trips",
    table_type=TableType.MERGE_ON_READ,
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
)
# --8<-- [start:writer]
# a new table written with hoodie.metadata.enable=true gets its metadata table (at 00000000000000010), then the
# write's own metadata-table deltacommit; an existing table without one gets it at <latest instant>010
with_mdt = replace(options, options={"hoodie.metadata.enable": "true"})
write_table(str(scratch / "new"), generate_trips(50, partitions=2, seed=1), operation="insert", options=with_mdt)
assert HudiTable(str(scratch / "new")).metadata_partitions() == ["files"]
# --8<-- [end:writer]
path = str(scratch / "old")
write_table(path, generate_trips(50, partitions=2, seed=2), operation="insert", options=options)  # no MDT
# --8<-- [start:init]
plan = initialize_metadata_table(HudiTable(path), dry_run=True)  # writes nothing
print("would initialise at", plan.instant, f"({plan.partitions} partitions, {plan.files} files)")
done = initialize_metadata_table(HudiTable(path))  # skipped (done.skipped says why) while an instant is pending
assert done.initialized and done.instant == plan.instant
listing = metadata_file_listing(HudiTable(path))  # reads now list through it
assert listing is not None and sorted(listing) == ["san_francisco", "sao_paulo"]
# --8<-- [end:init]
print("initialised:", done.instant, "partitions:", sorted(listing))
