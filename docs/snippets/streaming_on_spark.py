"""A Spark Structured Streaming query over a Hudi table's changes (the hudi_changes data source), restarted from its
checkpoint: each commit's changes arrive once."""

import sys
import tempfile
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.engines.spark_session import local_spark_session
from lake_orchestration.hudi.write import WriteOptions, write_table
from lake_orchestration.spark import register

work = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
path, checkpoint, sink = str(work / "trips"), str(work / "checkpoint"), str(work / "changes")
options = WriteOptions(table_name="trips", record_key_fields=("uuid",), partition_fields=("city",),
                       precombine_field="ts")
trips = generate_trips(100, partitions=2, seed=1)
write_table(path, trips, operation="bulk_insert", options=options)

spark = local_spark_session(master="local[2]")
register(spark)  # adds the format "hudi_changes" to this session


def pull() -> None:
    """One run of the streaming query: everything committed since its checkpoint, then it stops."""
    query = (
        spark.readStream.format("hudi_changes")
        .option("read.start-commit", "earliest")  # only a new query (no checkpoint yet) uses it
        .load(path)
        .writeStream.format("parquet")
        .option("path", sink)
        .option("checkpointLocation", checkpoint)  # offsets = completed instants, kept here
        .trigger(availableNow=True)  # or processingTime="1 minute" for a query that keeps running
        .start()
    )
    query.awaitTermination()
    print("offset", query.lastProgress["sources"][0]["endOffset"])


try:
    pull()  # the bulk insert: 100 rows
    assert spark.read.parquet(sink).count() == 100
    write_table(path, generate_updates(trips, fraction=0.2, seed=2), operation="upsert", options=options)
    pull()  # the restarted query resumes after the first commit: the 20 updated rows only
    changes = spark.read.parquet(sink)
    per_commit = changes.groupBy("_hoodie_commit_time").count().collect()
    print(sorted((r["_hoodie_commit_time"], r["count"]) for r in per_commit))
    assert changes.count() == 120

    # The batch form is the incremental query: (begin, end], end defaulting to the latest commit.
    first = min(r["_hoodie_commit_time"] for r in changes.select("_hoodie_commit_time").collect())
    since = spark.read.format("hudi_changes").option("hoodie.datasource.read.begin.instanttime", first).load(path)
    assert since.count() == 20
finally:
    spark.stop()
