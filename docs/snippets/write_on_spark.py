"""Run a write's file-group tasks on Spark: a Spark DataFrame in, one task per file group, same table as in-process."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.engines.spark import SparkEngine
from lake_orchestration.engines.spark_session import local_spark_session
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table

scratch = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
options = WriteOptions(
    table_name="trips",
    record_key_fields=("uuid",),
    partition_fields=("city",),
    precombine_field="ts",
    max_rows_per_file=100,
)
trips = generate_trips(400, partitions=2, seed=1)
updates = generate_updates(trips, fraction=0.2, seed=2)

spark = local_spark_session(master="local[2]")  # checks for Java 17+ first (JavaNotFoundError)
try:
    on_spark = str(scratch / "on_spark")
    # A Spark DataFrame is collected to Arrow on the driver (df.toArrow()) before keys, precombine and tagging.
    engine = SparkEngine(spark)
    first = write_table(on_spark, spark.createDataFrame(trips), operation="bulk_insert", options=options, engine=engine)
    second = write_table(on_spark, updates, operation="upsert", options=options, engine=engine)
    print(first.action, len(first.files_written), "base files;", second.action, len(second.files_written), "log files")
finally:
    spark.stop()

# The same writes with the tasks in-process give the same rows.
local = str(scratch / "local")
write_table(local, trips, operation="bulk_insert", options=options)
write_table(local, updates, operation="upsert", options=options)
user_columns = trips.column_names
a = read_snapshot_table(HudiTable(on_spark)).select(user_columns).sort_by("uuid")
b = read_snapshot_table(HudiTable(local)).select(user_columns).sort_by("uuid")
assert a.equals(b) and a.num_rows == 400
print(a.num_rows, "rows, Spark-written == in-process-written")
