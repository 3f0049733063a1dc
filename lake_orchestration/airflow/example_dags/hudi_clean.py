"""Clean: finish pending cleans, then plan, execute and commit a new one by the table's ``hoodie.cleaner.*`` options
(the connection's ``hoodie_options``, here overridden to keep the last 2 commits)."""

import pendulum
from airflow.sdk import DAG

from lake_orchestration.airflow.example_dags import TABLE_PATH
from lake_orchestration.airflow.operators import HudiCleanOperator
from lake_orchestration.config.keys import HoodieKey

with DAG(
    dag_id="hudi_clean",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["hudi", "clean"],
    doc_md=__doc__,
):
    HudiCleanOperator(
        task_id="clean",
        dry_run=False,  # a destructive service runs for real only when the DAG says so
        base_path=TABLE_PATH,
        options={HoodieKey.CLEANER_POLICY.key: "KEEP_LATEST_COMMITS", HoodieKey.CLEANER_COMMITS_RETAINED.key: "2"},
    )
