"""A fleet: compaction mapped over every table of the fleet's YAML where it is due (one mapped task per table).

The fleet's config file (``defaults:`` + ``tables:`` + ``discover:``, as ``lake-orch fleet`` and the Dagster code
location read it) comes from the Airflow Variable ``lake_orch_fleet_config``. ``due`` probes every table (one listing
of its timeline) and returns the tables where compaction is due, most overdue x weight first, at most 16; ``run`` is
mapped over them with ``.expand()``, each task labelled by its table and retried alone.
"""

import pendulum

from lake_orchestration.airflow.fleet import fleet_service_dag

FLEET_CONFIG = "{{ var.value.get('lake_orch_fleet_config', '') }}"
"""The templated path of the fleet's YAML: the Variable ``lake_orch_fleet_config``."""

dag = fleet_service_dag(
    "hudi_fleet_compaction",
    config=FLEET_CONFIG,
    service="compaction",
    budget=16,
    schedule="*/30 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["hudi", "fleet", "compaction"],
    doc_md=__doc__,
)
