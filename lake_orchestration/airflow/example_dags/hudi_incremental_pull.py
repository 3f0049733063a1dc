"""Incremental pull: every run writes the rows the table changed since the previous run to one Parquet file.

``wait_for_commits`` (deferrable: the wait runs in the triggerer) waits until the table has commits past the
checkpoint the pull keeps on the ``hudi_trips_changes`` asset (compaction and clustering commits do not count: they
bring no new rows); ``pull`` writes the changes since that checkpoint to ``<hudi_changes_dir>/<run id>.parquet``
(the Variable ``hudi_changes_dir``), returns ``{"path", "rows", "begin", "end", ...}`` as its XCom and advances the
checkpoint once the file is written. The first run writes a snapshot. A DAG scheduled on the asset
(``schedule=[Asset("hudi_trips_changes")]``) runs after each pull and reads the file from the pull's XCom.
"""

import pendulum
from airflow.sdk import DAG, Asset

from lake_orchestration.airflow.example_dags import TABLE_PATH
from lake_orchestration.airflow.incremental import HudiIncrementalPullOperator
from lake_orchestration.airflow.sensors import HudiNewCommitsSensor

changes = Asset(name="hudi_trips_changes")
"""The changes this DAG pulls; its state store keeps the checkpoint (the last instant pulled)."""

with DAG(
    dag_id="hudi_incremental_pull",
    schedule="*/10 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # one pull at a time: each begins where the previous one ended
    tags=["hudi", "incremental"],
    doc_md=__doc__,
):
    wait = HudiNewCommitsSensor(
        task_id="wait_for_commits",
        base_path=TABLE_PATH,
        checkpoint_asset=changes,
        deferrable=True,
        poke_interval=60,
        timeout=6 * 3600,
    )
    pull = HudiIncrementalPullOperator(
        task_id="pull",
        base_path=TABLE_PATH,
        output_path="{{ var.value.get('hudi_changes_dir', '/tmp/hudi_changes') }}/{{ run_id }}.parquet",
        checkpoint_asset=changes,
        retries=2,
    )
    wait >> pull
