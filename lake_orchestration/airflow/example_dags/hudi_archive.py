"""Archive: move old instants of the active timeline to the archived timeline (``hoodie.keep.min/max.commits``),
then merge small archive files (``hoodie.archive.merge.*``)."""

import pendulum
from airflow.sdk import DAG

from lake_orchestration.airflow.example_dags import TABLE_PATH
from lake_orchestration.airflow.operators import HudiArchiveOperator
from lake_orchestration.config.keys import HoodieKey

with DAG(
    dag_id="hudi_archive",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["hudi", "archive"],
    doc_md=__doc__,
):
    HudiArchiveOperator(
        task_id="archive",
        dry_run=False,  # a destructive service runs for real only when the DAG says so
        base_path=TABLE_PATH,
        merge=True,
        options={
            HoodieKey.KEEP_MIN_COMMITS.key: "2",
            HoodieKey.KEEP_MAX_COMMITS.key: "3",
            HoodieKey.CLEANER_COMMITS_RETAINED.key: "1",
        },
    )
