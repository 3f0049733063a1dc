"""Compaction when a plan appears: a deferrable sensor waits (in the triggerer, not a worker slot) for pending
compaction plans written by a writer's inline scheduling, then one mapped task executes and commits each."""

import pendulum
from airflow.sdk import DAG

from lake_orchestration.airflow.example_dags import TABLE_PATH
from lake_orchestration.airflow.operators import HudiExecuteCompactionOperator
from lake_orchestration.airflow.sensors import HudiPendingCompactionSensor

with DAG(
    dag_id="hudi_compaction_on_new_plans",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["hudi", "compaction"],
    doc_md=__doc__,
):
    plans = HudiPendingCompactionSensor(
        task_id="wait_for_plans",
        base_path=TABLE_PATH,
        seq="FIFO",
        max_plans=4,
        deferrable=True,
        poke_interval=5,
        timeout=3600,
    )
    HudiExecuteCompactionOperator.partial(task_id="execute", base_path=TABLE_PATH).expand(instant=plans.output)
