"""Clustering: schedule a plan, then execute and commit every pending plan, one mapped task per plan.

``schedule`` writes ``<instant>.replacecommit.requested`` when a file slice is eligible (base files under
``hoodie.clustering.plan.strategy.small.file.limit``; set ``hoodie.clustering.plan.strategy.sort.columns`` and the
other ``hoodie.clustering.*`` options in the connection's ``hoodie_options`` or the tasks' ``options``);
``list_pending`` returns the plans to run (FIFO, at most 4); ``execute`` is mapped over them with ``.expand()``, each
retried alone. A committed plan is a no-op, so a rerun of the DAG is safe.
"""

import pendulum
from airflow.sdk import DAG

from lake_orchestration.airflow.example_dags import TABLE_PATH
from lake_orchestration.airflow.operators import (
    HudiExecuteClusteringOperator,
    HudiListPendingClusteringOperator,
    HudiScheduleClusteringOperator,
)

with DAG(
    dag_id="hudi_clustering",
    schedule="0 */4 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["hudi", "clustering"],
    doc_md=__doc__,
):
    schedule = HudiScheduleClusteringOperator(task_id="schedule", base_path=TABLE_PATH)
    pending = HudiListPendingClusteringOperator(task_id="list_pending", base_path=TABLE_PATH, seq="FIFO", max_plans=4)
    execute = HudiExecuteClusteringOperator.partial(
        task_id="execute", base_path=TABLE_PATH, engine="local", retries=2
    ).expand(instant=pending.output)
    schedule >> pending
