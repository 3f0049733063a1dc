"""Clustering: many small file groups become one sorted file group per partition, rows and commit times unchanged."""

import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clustering import ClusteringConfig, execute_clustering, schedule_clustering
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
path = str(scratch / "trips")
options = WriteOptions(
    table_name="trips",
    table_type=TableType.COPY_ON_WRITE,
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
)
for seed in range(3):  # three bulk inserts: three small file groups per partition
    write_table(path, generate_trips(100, partitions=2, seed=seed), operation="bulk_insert", options=options)
before = read_snapshot_table(HudiTable(path))

# --8<-- [start:cluster]
table = HudiTable(path)
config = ClusteringConfig.from_options({"hoodie.clustering.plan.strategy.sort.columns": "fare"})
scheduled = schedule_clustering(table, config=config)  # <instant>.replacecommit.requested
print(scheduled.reason)  # scheduled 2 clustering group(s)
result = execute_clustering(table, scheduled.instant, config=config)  # <instant>.replacecommit
print(f"{result.file_groups_replaced} file groups replaced by {result.files_written} files")
# --8<-- [end:cluster]

after = read_snapshot_table(HudiTable(path))
assert after.num_rows == before.num_rows == 300
key = ["_hoodie_record_key", "_hoodie_commit_time", "_hoodie_commit_seqno", "fare"]
assert after.select(key).sort_by("_hoodie_record_key").equals(before.select(key).sort_by("_hoodie_record_key"))
for stat in result.stats:
    fares = pq.read_table(Path(path) / stat.path, columns=["fare"]).column("fare").to_pylist()
    assert fares == sorted(fares)
assert (result.file_groups_replaced, result.files_written) == (6, 2)
