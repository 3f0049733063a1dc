"""The embedded SparkSession (``local[*]``) for the CLI, the demo and tests; Dagster uses dagster-pyspark."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from lake_orchestration.engines.java import check_java


def local_spark_session(
    *, master: str = "local[*]", app_name: str = "lake-orchestration", conf: Mapping[str, str] | None = None
) -> Any:
    """Get or create a SparkSession after checking Java (raises JavaNotFoundError with a clear message)."""
    check_java()
    # Executors must run this interpreter, which has lake_orchestration installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    defaults = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.memory": "2g",
        "spark.ui.showConsoleProgress": "false",
    }
    for k, v in {**defaults, **dict(conf or {})}.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
