"""A fleet of tables (issue 27): one config for many tables, cheap probes, policy-driven order, fleet health.

Shell-independent: the CLI (``lake-orch fleet``), the Dagster fleet model and the Airflow fleet DAG all build on it.

- :mod:`.config`: the YAML (``defaults:`` + ``tables:`` + ``discover:``) -> :class:`FleetTable` (with a
  :class:`TablePolicy`); :func:`expand_entries` gives the Dagster code location its table entries.
- :mod:`.discovery`: every Hudi and Paimon table under a prefix, level by level.
- :mod:`.probe`: one listing per table per tick (:func:`probe`), the services due, :func:`order` by overdue x weight.
- :mod:`.health`: :func:`fleet_health`: a health row per table and the breaches of its policy.
- :mod:`.runner`: :func:`run_fleet`: each table's due services, tables in parallel, one failure stops no other.
"""

from lake_orchestration.fleet.config import (
    FleetConfigError,
    FleetTable,
    TablePolicy,
    expand_entries,
    load_fleet,
    tables_from_entries,
)

__all__ = [
    "FleetConfigError",
    "FleetTable",
    "TablePolicy",
    "expand_entries",
    "load_fleet",
    "tables_from_entries",
]
