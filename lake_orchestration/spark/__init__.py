"""The Spark shell: a PySpark (Spark 4) Python data source over a Hudi table's changes (issue 28).

``register(spark)`` adds the ``hudi_changes`` format to a session; then ``spark.readStream.format("hudi_changes")
.load(path)`` streams the table's commits (offsets = completed instants, each micro-batch the incremental query
between two) and ``spark.read.format("hudi_changes")`` runs the incremental query once. See
:mod:`lake_orchestration.spark.source` and docs/streaming.md. Needs pyspark >= 4.0 (the Python Data Source API).
"""

from __future__ import annotations

from typing import Any

from lake_orchestration.spark.source import (
    CHECK_INTERVAL,
    SHORT_NAME,
    START_COMMIT,
    HudiChangesBatchReader,
    HudiChangesDataSource,
    HudiChangesStreamReader,
    spark_schema,
)


def register(spark: Any) -> None:
    """Register the ``hudi_changes`` data source with the SparkSession ``spark``."""
    spark.dataSource.register(HudiChangesDataSource)


__all__ = [
    "CHECK_INTERVAL",
    "SHORT_NAME",
    "START_COMMIT",
    "HudiChangesBatchReader",
    "HudiChangesDataSource",
    "HudiChangesStreamReader",
    "register",
    "spark_schema",
]
