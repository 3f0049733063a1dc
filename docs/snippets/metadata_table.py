"""List a table's files through its metadata table when it has one, and read a snapshot either way."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.metadata.reader import MetadataTableReader, metadata_enabled, metadata_file_listing
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
path = str(scratch / "trips")
options = WriteOptions(
    table_name="trips",
    table_type=TableType.MERGE_ON_READ,
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
)
write_table(path, generate_trips(100, partitions=2, seed=1), operation="bulk_insert", options=options)

# --8<-- [start:listing]
table = HudiTable(path)
if metadata_enabled(table):  # `files` in hoodie.table.metadata.partitions, hoodie.metadata.enable not false
    reader = MetadataTableReader(table)
    for partition in reader.partitions():
        print(partition, sorted(reader.partition_files(partition)))  # file name -> size
listing = metadata_file_listing(table)  # {partition: [FileInfo]}, or None: list storage
view = table.fs_view(listing)  # None lists storage, as before
# --8<-- [end:listing]
# --8<-- [start:read]
rows = read_snapshot_table(table)  # through the metadata table when the table has one
listed = read_snapshot_table(HudiTable(path), options={"hoodie.metadata.enable": "false"})  # list storage
assert rows.num_rows == listed.num_rows == 100
# --8<-- [end:read]
print("partitions:", sorted(view.partitions), "rows:", rows.num_rows, "metadata table:", listing is not None)
