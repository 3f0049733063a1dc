"""The embedded SparkSession (``local[*]``) for the CLI, the demo and tests; Dagster uses dagster-pyspark."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any

from lake_orchestration.engines.java import check_java
from lake_orchestration.errors import EngineError

# The master URLs SparkContext.createTaskScheduler accepts (SparkMasterRegex), plus the k8s cluster manager.
_MASTER_FORMS = (
    re.compile(r"local"),
    re.compile(r"local\[\s*([0-9]+|\*)\s*\]"),
    re.compile(r"local\[\s*([0-9]+|\*)\s*,\s*[0-9]+\s*\]"),
    re.compile(r"local-cluster\[\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*\]"),
    re.compile(r"spark://[^\s,:/]+:[0-9]+(,[^\s,:/]+:[0-9]+)*"),
    re.compile(r"yarn"),
    re.compile(r"k8s://\S+"),
)
MASTER_FORMS_DOC = (
    "local, local[N], local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT[,HOST:PORT...], yarn or "
    "k8s://https://HOST:PORT"
)


def validate_spark_master(master: str) -> str:
    """``master`` if Spark can start with it (checked before a JVM is launched), else an error naming it.

    Raises:
        EngineError: not one of :data:`MASTER_FORMS_DOC` (``bogus://x``, ``local[abc]``, ``local[0]``).
    """
    text = str(master).strip()
    m = next((m for form in _MASTER_FORMS if (m := form.fullmatch(text))), None)
    if m is None or (text.startswith("local[") and m.group(1) == "0"):
        raise EngineError(f"Invalid Spark master {master!r} (spark.master): expected {MASTER_FORMS_DOC}")
    return text


def local_spark_session(
    *, master: str = "local[*]", app_name: str = "lake-orchestration", conf: Mapping[str, str] | None = None
) -> Any:
    """Get or create a SparkSession after checking the master URL and Java (raises EngineError /
    JavaNotFoundError with a clear message)."""
    master = validate_spark_master(master)
    check_java()
    # Executors must run this interpreter, which has lake_orchestration installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from lake_orchestration.engines.spark import build_spark_session

    defaults = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.memory": "2g",
        "spark.ui.showConsoleProgress": "false",
    }
    return build_spark_session(master=master, app_name=app_name, conf={**defaults, **dict(conf or {})})
