"""Dagster integration: table configs -> assets, checks, jobs, schedules, sensors (named by a translator); a table's
changes handed to downstream assets (:mod:`.incremental`)."""

try:
    import dagster as _dagster  # noqa: F401
except ModuleNotFoundError as _missing:  # the core and the Airflow provider install without Dagster
    raise ModuleNotFoundError(
        "lake_orchestration.dagster (the Dagster shell and the demo) needs Dagster, which is not installed here: "
        "pip install 'lake-orchestration[dagster]'",
        name="dagster",
    ) from _missing

from lake_orchestration.dagster.component import HudiTablesComponent
from lake_orchestration.dagster.config import (
    GcsStorage,
    HdfsStorage,
    HudiConfigError,
    HudiTableConfig,
    HudiTablesFile,
    LocalStorage,
    S3Storage,
    load_config_file,
)
from lake_orchestration.dagster.definitions import build_hudi_definitions
from lake_orchestration.dagster.errors import DagsterHudiError, PermanentHudiError, SensorCursorError
from lake_orchestration.dagster.incremental import (
    HudiChanges,
    HudiIncrementalIOManager,
    NewCommitsCursor,
    hudi_new_commits_sensor,
)
from lake_orchestration.dagster.resources import HudiPySparkResource, build_spark_resource
from lake_orchestration.dagster.sensors import PendingCompactionCursor
from lake_orchestration.dagster.translator import DagsterHudiTranslator

__all__ = [
    "DagsterHudiError",
    "DagsterHudiTranslator",
    "GcsStorage",
    "HdfsStorage",
    "HudiChanges",
    "HudiConfigError",
    "HudiIncrementalIOManager",
    "HudiPySparkResource",
    "HudiTableConfig",
    "HudiTablesComponent",
    "HudiTablesFile",
    "LocalStorage",
    "NewCommitsCursor",
    "PendingCompactionCursor",
    "PermanentHudiError",
    "S3Storage",
    "SensorCursorError",
    "build_hudi_definitions",
    "build_spark_resource",
    "hudi_new_commits_sensor",
    "load_config_file",
]
