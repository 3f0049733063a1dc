"""The ``pyspark`` resource: dagster-pyspark's lazy SparkSession, on the embedded default unless configured."""

import os
import sys
from collections.abc import Mapping
from typing import Any

from dagster_pyspark import LazyPySparkResource

from lake_orchestration.dagster.config import normalize_spark_config


class HudiPySparkResource(LazyPySparkResource):
    """``LazyPySparkResource`` (the session starts when a step first uses it) that checks Java first.

    With a ``local`` master the Python workers run this interpreter (the one with lake_orchestration installed)
    unless ``PYSPARK_PYTHON`` says otherwise, as the CLI's embedded session does.
    """

    def _init_session(self) -> None:
        if self._spark_session is None:
            from lake_orchestration.engines.spark_session import validate_spark_master

            validate_spark_master(str(self.spark_config.get("spark.master", "local[*]")))
        if self._spark_session is None and str(self.spark_config.get("spark.master", "")).startswith("local"):
            from lake_orchestration.engines.java import check_java

            check_java()
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        super()._init_session()


def build_spark_resource(spark_config: Mapping[str, Any] | None = None) -> HudiPySparkResource:
    """The ``pyspark`` resource.

    Args:
        spark_config: any ``spark.*`` configuration over the embedded default (``spark.master=local[*]``,
            ``spark.ui.enabled=false``, ``spark.ui.showConsoleProgress=false``), e.g.
            ``{"spark.master": "spark://host:7077", "spark.executor.memory": "4g"}``.

    Raises:
        HudiConfigError: a key is not a ``spark.*`` key, or a value is not a scalar.
    """
    return HudiPySparkResource(spark_config=normalize_spark_config(spark_config))


def table_engine(engine: str, spark: Any = None) -> Any:
    """The engine of a table's step, from the one factory
    (:func:`~lake_orchestration.engines.factory.build_engine`): ``local`` (in the step's process, with the local
    engine's in-process speed-ups), or ``spark`` on the ``pyspark`` resource's session ``spark``."""
    from lake_orchestration.engines.factory import build_engine

    return build_engine(engine, session=spark)
