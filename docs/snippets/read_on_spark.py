"""A merged snapshot read on Spark: one task per file slice (mapInArrow), same result as in-process."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.engines.spark import SparkEngine
from lake_orchestration.engines.spark_session import local_spark_session
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.engine_read import read_snapshot_on, snapshot_dataframe
from lake_orchestration.hudi.write import WriteOptions, write_table

path = str(Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()) / "trips")
options = WriteOptions(table_name="trips", record_key_fields=("uuid",), partition_fields=("city",),
                       precombine_field="ts")
trips = generate_trips(300, partitions=3, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)
write_table(path, generate_updates(trips, fraction=0.2, seed=2), operation="upsert", options=options)

spark = local_spark_session(master="local[2]")  # checks for Java 17+ first (JavaNotFoundError)
try:
    table = HudiTable(path)
    df = snapshot_dataframe(SparkEngine(spark), table)  # a DataFrame: keep the work on the cluster
    print(sorted((r["city"], r["count"]) for r in df.groupBy("city").count().collect()))
    on_spark = read_snapshot_on(SparkEngine(spark), table)  # or collect it as a pyarrow.Table
    local = read_snapshot_table(table)
    assert on_spark.sort_by("_hoodie_record_key").equals(local.sort_by("_hoodie_record_key"))
    print(on_spark.num_rows, "rows on Spark == in-process")
finally:
    spark.stop()
