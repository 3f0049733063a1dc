"""Rollback of failed writes: a deferrable sensor waits for stale pending writes (expired heartbeat, or no heartbeat
and older than an hour), then the rollback task rolls back every stale one."""

import pendulum
from airflow.sdk import DAG

from lake_orchestration.airflow.example_dags import TABLE_PATH
from lake_orchestration.airflow.operators import HudiRollbackOperator
from lake_orchestration.airflow.sensors import HudiStaleInflightSensor

with DAG(
    dag_id="hudi_rollback_stale",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["hudi", "rollback"],
    doc_md=__doc__,
):
    stale = HudiStaleInflightSensor(
        task_id="wait_for_stale_writes",
        base_path=TABLE_PATH,
        timeout_seconds=3600,
        deferrable=True,
        poke_interval=60,
        timeout=3000,
        soft_fail=True,
    )
    stale >> HudiRollbackOperator(task_id="rollback", base_path=TABLE_PATH, timeout_seconds=3600)
