"""Dagster integration: table configs -> assets (more services wire in as they land)."""

from lake_orchestration.dagster.definitions import HudiTableConfig, build_hudi_definitions, table_health

__all__ = ["HudiTableConfig", "build_hudi_definitions", "table_health"]
