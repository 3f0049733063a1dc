"""``get_provider_info``: what the ``apache_airflow_provider`` entry point tells Airflow's providers manager (the
``hudi`` connection type, the operators, sensors, triggers and hook), in Airflow's ``provider_info.schema.json``
form. Imports nothing of Airflow: the providers manager calls it while it starts."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

PACKAGE = "lake-orchestration"
HOOK = "lake_orchestration.airflow.hooks.HudiTableHook"


def _version() -> str:
    try:
        return version(PACKAGE)
    except PackageNotFoundError:  # run from a checkout that is not installed
        return "0.0.0"


def get_provider_info() -> dict[str, Any]:
    """The provider's description for Airflow (validated against ``airflow/provider_info.schema.json`` in the
    tests)."""
    integration = "Apache Hudi"
    return {
        "package-name": PACKAGE,
        "name": "Lake orchestration (Apache Hudi table services)",
        "description": "Apache Hudi table services (compaction, clean, archive, rollback) as Airflow operators, "
        "deferrable sensors and triggers, over the lake_orchestration service core.",
        "versions": [_version()],
        "integrations": [
            {
                "integration-name": integration,
                "external-doc-url": "https://hudi.apache.org/",
                "tags": ["software"],
            }
        ],
        "operators": [{"integration-name": integration, "python-modules": ["lake_orchestration.airflow.operators"]}],
        "sensors": [{"integration-name": integration, "python-modules": ["lake_orchestration.airflow.sensors"]}],
        "hooks": [{"integration-name": integration, "python-modules": ["lake_orchestration.airflow.hooks"]}],
        "triggers": [{"integration-name": integration, "python-modules": ["lake_orchestration.airflow.triggers"]}],
        "connection-types": [{"connection-type": "hudi", "hook-class-name": HOOK, "hook-name": "Apache Hudi table"}],
    }
