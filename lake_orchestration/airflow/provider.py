"""``get_provider_info``: what the ``apache_airflow_provider`` entry point tells Airflow's providers manager (the
``hudi`` connection type and its connection form, the operators, sensors, triggers and hook), in Airflow's
``provider_info.schema.json`` form. Imports nothing of Airflow: the providers manager calls it while it starts.

The connection form is declared here, not by the hook: Airflow 3.3's providers manager builds the form's field
behaviour (hidden fields, labels, placeholders) from the ``ui-field-behaviour`` of the provider info's
``connection-types`` entry (``ProvidersManager._load_ui_metadata``), without importing the hook; a hook's
``get_ui_field_behaviour()`` is read only when the provider info declares none, and is deprecated since 3.2."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

PACKAGE = "lake-orchestration"
HOOK = "lake_orchestration.airflow.hooks.HudiTableHook"

CONNECTION_FORM: dict[str, Any] = {
    "hidden-fields": ["schema", "port"],
    "relabeling": {"host": "Base path", "login": "Access key", "password": "Secret key"},
    "placeholders": {
        "host": "s3://bucket/tables/trips",
        "login": "empty: the worker's AWS credential chain",
        "extra": '{"storage_options": {"region": "eu-west-1"}, "hoodie_options": {}, "passthrough_keys": []}',
    },
}
"""The ``hudi`` connection form (``ui-field-behaviour``): host is the table's base path, login/password the object
store's access and secret keys (see :mod:`lake_orchestration.airflow.hooks`)."""


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
        "description": "Apache Hudi table services (compaction, clean, archive, rollback) and incremental pulls as "
        "Airflow operators, deferrable sensors and triggers, over the lake_orchestration service core.",
        "versions": [_version()],
        "integrations": [
            {
                "integration-name": integration,
                "external-doc-url": "https://hudi.apache.org/",
                "tags": ["software"],
            }
        ],
        "operators": [
            {
                "integration-name": integration,
                "python-modules": ["lake_orchestration.airflow.operators", "lake_orchestration.airflow.incremental"],
            }
        ],
        "sensors": [{"integration-name": integration, "python-modules": ["lake_orchestration.airflow.sensors"]}],
        "hooks": [{"integration-name": integration, "python-modules": ["lake_orchestration.airflow.hooks"]}],
        "triggers": [{"integration-name": integration, "python-modules": ["lake_orchestration.airflow.triggers"]}],
        "connection-types": [
            {
                "connection-type": "hudi",
                "hook-class-name": HOOK,
                "hook-name": "Apache Hudi table",
                "ui-field-behaviour": CONNECTION_FORM,
            }
        ],
    }
