"""Compaction: schedule a plan, then execute and commit every pending plan, one mapped task per plan.

``list_pending`` returns the plans to run (FIFO, at most 8); ``execute`` is mapped over them with ``.expand()``, so
a backfill of old plans and the new one run in parallel, each retried alone. A committed plan is a no-op, so a rerun
of the DAG is safe.
"""

import pendulum
from airflow.sdk import DAG

from lake_orchestration.airflow.example_dags import TABLE_PATH
from lake_orchestration.airflow.operators import (
    HudiExecuteCompactionOperator,
    HudiListPendingCompactionsOperator,
    HudiScheduleCompactionOperator,
)

with DAG(
    dag_id="hudi_compaction",
    schedule="*/30 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["hudi", "compaction"],
    doc_md=__doc__,
):
    schedule = HudiScheduleCompactionOperator(task_id="schedule", base_path=TABLE_PATH)
    pending = HudiListPendingCompactionsOperator(task_id="list_pending", base_path=TABLE_PATH, seq="FIFO", max_plans=8)
    execute = HudiExecuteCompactionOperator.partial(
        task_id="execute", base_path=TABLE_PATH, engine="local", retries=2
    ).expand(instant=pending.output)
    schedule >> pending
