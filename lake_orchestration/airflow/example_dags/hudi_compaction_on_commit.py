"""Event-driven scheduling: an asset watched by :class:`~lake_orchestration.airflow.triggers.HudiCommitTrigger`
gets an event per new completed commit of the table, and this DAG (scheduled on the asset) schedules a compaction
plan after each; ``hudi_compaction_on_new_plans`` then executes it. Needs a running triggerer."""

import pendulum
from airflow.sdk import DAG, Asset, AssetWatcher

from lake_orchestration.airflow.example_dags import TABLE_PATH
from lake_orchestration.airflow.operators import HudiScheduleCompactionOperator
from lake_orchestration.airflow.triggers import HudiCommitTrigger

commits = Asset(
    "hudi_table_commits",
    watchers=[AssetWatcher(name="hudi_commit_watcher", trigger=HudiCommitTrigger(hudi_conn_id="hudi_default"))],
)

with DAG(
    dag_id="hudi_compaction_on_commit",
    schedule=[commits],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["hudi", "compaction"],
    doc_md=__doc__,
):
    HudiScheduleCompactionOperator(task_id="schedule", base_path=TABLE_PATH)
