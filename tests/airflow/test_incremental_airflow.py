"""The incremental pull DAG (``hudi_incremental_pull``) end to end: three batches written to a MERGE_ON_READ table by
our writer, the DAG run by ``airflow dags test`` after each; every run's file holds exactly its batch's changes, once,
across a failed run (the checkpoint does not advance) and a compaction between the second and third batch (the run
after it gets only the new batch). The oracles: the batch written (its record keys) and hudi-rs's snapshot rows of
the batch's commit. Between the compaction and the third batch, one interpreter of the Airflow venv checks the
deferrable sensor's trigger (rebuilt from its serialized kwargs: no event for a compaction alone) and the operators'
arguments. Four ``airflow dags test`` runs: the cost of the module (200-370 s on a shared machine at load 6-16)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import run_compaction_plan, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.airflow.conftest import AirflowRunner, DagRunResult
from tests.objectstore.conftest import S3Bucket, s3, s3_server  # noqa: F401 (fixtures)
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

pytestmark = [pytest.mark.slow, pytest.mark.airflow]

DAG_ID = "hudi_incremental_pull"


def _write(path: Path, batch: pa.Table, operation: str) -> str:
    """Write ``batch`` (our writer) and return its commit's instant."""
    opts = trips_options(table_type=TableType.MERGE_ON_READ, hive_style_partitioning=True, small_file_limit=0)
    write_table(str(path), batch, operation=operation, options=opts)
    last = HudiTable(str(path)).timeline.completed_commits().last
    assert last is not None
    return str(last.time)


def _run(airflow: AirflowRunner, path: Path, out_dir: Path, **env: str) -> DagRunResult:
    proc = airflow.cli(
        "dags", "test", DAG_ID, env={**airflow.env(path), "AIRFLOW_VAR_HUDI_CHANGES_DIR": str(out_dir), **env}
    )
    return airflow._collect(DAG_ID, proc.returncode, proc.stdout + proc.stderr)


_TRIGGER = """
import asyncio, importlib, json, sys
from lake_orchestration.airflow.triggers import HudiNewCommitsTrigger

async def event(skip):
    made = HudiNewCommitsTrigger(hudi_conn_id="hudi_default", base_path=sys.argv[1], poll_interval=0.1,
                                 after_instant=sys.argv[2], skip_table_services=skip)
    classpath, kwargs = made.serialize()
    module, _, name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module), name)(**json.loads(json.dumps(kwargs)))
    try:
        return (await asyncio.wait_for(rebuilt.run().__anext__(), 2.0)).payload
    except asyncio.TimeoutError:
        return None

# the operators' arguments (in the same interpreter: each one costs seconds)
import pendulum
from airflow.sdk import DAG
from lake_orchestration.airflow.incremental import HudiIncrementalPullOperator
from lake_orchestration.airflow.sensors import HudiNewCommitsSensor

errors = {}
with DAG(dag_id="d", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
    pull = HudiIncrementalPullOperator(task_id="pull", output_path="/tmp/x.parquet")
    sensor = HudiNewCommitsSensor(task_id="wait", checkpoint_asset="hudi_changes.d.pull")
    for name, opts in {"end": {"hoodie.datasource.read.end.instanttime": "1"},
                       "begin": {"hoodie.datasource.read.begin.instanttime": "yesterday"}}.items():
        try:
            HudiIncrementalPullOperator(task_id=name, output_path="/tmp/y.parquet", options=opts)
        except Exception as err:
            errors[name] = [type(err).__name__, str(err)]
# the output on the table's object store: written with the connection's storage options
import pyarrow as pa
from lake_orchestration.airflow.hooks import HudiTableLocation
from lake_orchestration.airflow.incremental import _write_parquet

s3 = json.loads(sys.argv[3])
on_s3 = _write_parquet(pa.table({"uuid": ["a", "b"]}), s3["uri"],
                       HudiTableLocation(base_path=s3["table"], storage_options=s3["options"]))
print("RESULT", json.dumps({"skipping": asyncio.run(event(True)), "counting": asyncio.run(event(False)), "s3": on_s3,
                            "outlets": [a.name for a in pull.outlets], "inlets": [a.name for a in sensor.inlets],
                            "errors": errors}))
"""


def _driver(airflow: AirflowRunner, path: Path, after: str, bucket: S3Bucket) -> dict[str, Any]:
    target = {"uri": bucket.uri("changes", "run.parquet"), "table": bucket.uri("t"), "options": bucket.storage_options}
    proc = subprocess.run(
        [str(airflow.python), "-c", _TRIGGER, str(path), after, json.dumps(target)],
        env=airflow.env(path),
        capture_output=True,
        text=True,
        timeout=180,
        cwd=airflow.home,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(line.removeprefix("RESULT "))


def _check_batch(
    airflow: AirflowRunner, run: DagRunResult, path: Path, batch: pa.Table, instant: str, begin: str | None
) -> None:
    """The run succeeded and its file holds exactly the batch written at ``instant``: its keys, once, each at the
    version hudi-rs reads for that commit."""
    assert run.state == "success", f"run {run.state}, tasks {run.tasks}\n{run.output[-8000:]}"
    assert run.result("wait_for_commits") == instant
    pulled = run.result("pull")
    assert (pulled["begin"], pulled["end"], pulled["snapshot"]) == (begin, instant, begin is None), pulled
    with sqlite3.connect(airflow.home / "airflow.db") as db:  # the pull's asset event carries the same dict
        (extra,) = db.execute(
            "SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id WHERE a.name = ? AND"
            " e.source_run_id = (SELECT run_id FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1)",
            ("hudi_trips_changes", DAG_ID),
        ).fetchone()
    assert json.loads(extra) == pulled
    rows = pq.read_table(pulled["path"])
    assert rows.num_rows == pulled["rows"] == batch.num_rows
    keys = rows.column("uuid").to_pylist()
    assert sorted(keys) == sorted(batch.column("uuid").to_pylist()) and len(set(keys)) == len(keys)
    assert set(rows.column("_hoodie_commit_time").to_pylist()) == {instant}
    theirs = hudi_rs_snapshot(path)
    assert theirs is not None
    theirs = theirs.filter(pc.equal(theirs.column("_hoodie_commit_time"), instant))
    # the batch's records at their latest version (hudi-rs reads the table as of now: no later write touched them)
    assert_same_rows(rows, theirs, ignore=("_hoodie_file_name",))


def test_incremental_pull_dag_writes_each_batch_once_across_a_failed_run_and_a_compaction(
    airflow: AirflowRunner,
    tmp_path: Path,
    s3: S3Bucket,  # noqa: F811 (the fixture)
) -> None:
    path, out = tmp_path / "t", tmp_path / "changes"
    base = generate_trips(60, partitions=2, seed=3)

    first = _write(path, base, "bulk_insert")
    run1 = _run(airflow, path, out)
    _check_batch(airflow, run1, path, base, first, None)  # the first run: a snapshot

    second_batch = generate_updates(base, fraction=0.4, seed=4, ts_offset=10**8)
    second = _write(path, second_batch, "upsert")
    # a run whose output cannot be written fails (its retry reads the range the first try pinned): the checkpoint
    # stays at the first batch
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    failed = _run(
        airflow,
        path,
        blocked,
        AIRFLOW__CORE__DEFAULT_TASK_RETRIES="1",
        AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY="0",
    )
    assert failed.state == "failed" and failed.tasks[("pull", -1)] == "failed", failed.tasks
    assert "Cannot write the changes" in failed.output
    assert "reading the range of this run's first try again" in failed.output, failed.output[-6000:]
    run2 = _run(airflow, path, out)
    _check_batch(airflow, run2, path, second_batch, second, first)

    plan = schedule_compaction(HudiTable(str(path)), force=True)
    assert plan.scheduled and plan.instant is not None
    compacted = run_compaction_plan(HudiTable(str(path)), plan.instant)
    assert compacted.result is not None and not compacted.skipped
    # only a compaction since the checkpoint: the trigger (rebuilt from its serialized kwargs, as the triggerer
    # does) does not fire; counting table services it fires on the compaction
    got = _driver(airflow, path, second, s3)
    assert got["skipping"] is None and got["counting"] == {
        "status": "success",
        "instant": str(plan.instant),
        "instants": [str(plan.instant)],
    }
    # an output on the table's object store is written with the connection's storage options
    assert got["s3"] == s3.uri("changes", "run.parquet")
    s3fs = pafs.S3FileSystem(
        endpoint_override=s3.endpoint,
        region=s3.storage_options["region"],
        access_key=s3.storage_options["access_key"],
        secret_key=s3.storage_options["secret_key"],
    )
    assert pq.read_table(f"{s3.bucket}/changes/run.parquet", filesystem=s3fs).column("uuid").to_pylist() == ["a", "b"]
    # a pull's checkpoint asset defaults to hudi_changes.<dag>.<task>, an outlet; the sensor's is an inlet; range
    # options a pull cannot honour are refused when the DAG is parsed
    assert got["outlets"] == ["hudi_changes.d.pull"] and got["inlets"] == ["hudi_changes.d.pull"]
    kind, message = got["errors"]["end"]
    assert kind == "InvalidOptionError" and "hoodie.datasource.read.end.instanttime is not an option" in message
    kind, message = got["errors"]["begin"]
    assert kind == "InvalidOptionError" and "hoodie.datasource.read.begin.instanttime='yesterday'" in message
    third_batch = generate_updates(base, fraction=0.3, seed=5, ts_offset=2 * 10**8)
    third = _write(path, third_batch, "upsert")
    assert second < str(plan.instant) < third
    run3 = _run(airflow, path, out)
    _check_batch(airflow, run3, path, third_batch, third, second)
    assert run3.result("pull")["commits"] == 2  # the compaction is in the range, and brought no row
    assert len({r.result("pull")["path"] for r in (run1, run2, run3)}) == 3
