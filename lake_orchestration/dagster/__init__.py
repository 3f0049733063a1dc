"""Dagster integration: table configs -> assets, checks, jobs, schedules, sensors (services wire in as they land)."""

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
from lake_orchestration.dagster.definitions import build_hudi_definitions, table_health
from lake_orchestration.dagster.resources import HudiPySparkResource, build_spark_resource

__all__ = [
    "GcsStorage",
    "HdfsStorage",
    "HudiConfigError",
    "HudiPySparkResource",
    "HudiTableConfig",
    "HudiTablesComponent",
    "HudiTablesFile",
    "LocalStorage",
    "S3Storage",
    "build_hudi_definitions",
    "build_spark_resource",
    "load_config_file",
    "table_health",
]
