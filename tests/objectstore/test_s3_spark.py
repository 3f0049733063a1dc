"""Spark on the S3 server: writes and compaction whose Python tasks read and write S3 in the executors through
pyarrow/obstore (no hadoop-aws jars), with the storage options shipped to them and never shown.

- The same write + compaction flow on S3 with the Spark engine equals the local-engine flow on local disk, and
  hudi-rs reads the S3 table equal to the local one.
- Executors reach the store the driver was pointed at even when their own environment points elsewhere: the options
  a user left to the driver's standard AWS environment are resolved on the driver and shipped.
- The secret never shows: not in the Spark configuration, job/stage names, SQL executions (descriptions, details,
  physical plans: what the Spark UI shows), log records, the error text of a failing task, nor the data of a
  DataFrame (payload sets too large for the task closure are uploaded as one).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.engines import spark as spark_engine
from lake_orchestration.engines.spark import SparkEngine
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import load_plan, run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.engine_read import read_snapshot_on
from lake_orchestration.hudi.write import write_table
from tests.objectstore.conftest import SECRET_KEY, S3Bucket
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

pytestmark = pytest.mark.spark

RUN_SPECIFIC = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name")
OPTIONS = trips_options(table_name="trips", hive_style_partitioning=True, small_file_limit=0, max_rows_per_file=150)


def _flow(uri: str, storage_options: Mapping[str, str], spark: Any) -> tuple[pa.Table, list, list[str]]:
    """bulk_insert, upsert, delete, compaction, upsert, clean (its deletes on Spark too); returns the snapshot
    (read with the engine), the file-group structure and the timeline's actions/states."""
    so = dict(storage_options)
    engine = SparkEngine(spark) if spark is not None else None
    base = generate_trips(600, partitions=3, seed=11)
    steps = [
        (base, "bulk_insert"),
        (generate_updates(base, fraction=0.2, seed=1, ts_offset=10**6), "upsert"),
        (pick_deletes(base, fraction=0.05, seed=2), "delete"),
    ]
    for data, op in steps:
        write_table(uri, data, operation=op, options=OPTIONS, storage_options=so, engine=engine)
    sched = schedule_compaction(HudiTable(uri, storage_options=so), force=True)
    assert sched.instant is not None, sched.reason
    (done,) = run_compaction(HudiTable(uri, storage_options=so), engine=engine)
    assert done.operations == len(load_plan(HudiTable(uri, storage_options=so), done.instant).operations)
    write_table(
        uri,
        generate_updates(base, fraction=0.3, seed=3, ts_offset=2 * 10**6),
        operation="upsert",
        options=OPTIONS,
        storage_options=so,
        engine=engine,
    )
    cleaned = run_clean(
        HudiTable(uri, storage_options=so),
        CleanConfig.from_options({"hoodie.cleaner.commits.retained": "1"}),
        engine=engine,
    )
    assert cleaned.deleted > 0 and not cleaned.failed, cleaned
    t = HudiTable(uri, storage_options=so)
    snapshot = read_snapshot_on(SparkEngine(spark), t) if spark is not None else read_snapshot_table(t)
    structure = sorted(
        (g.id.partition_path, tuple((s.base_file is not None, len(s.log_files)) for s in g.slices))
        for g in t.fs_view().all_file_groups()
    )
    return snapshot, structure, [f"{i.action.value}.{i.state.name}" for i in t.timeline.instants]


def _hudi_rs(uri: str, options: Mapping[str, str]) -> pa.Table:
    from hudi import HudiTableBuilder

    return pa.Table.from_batches(HudiTableBuilder.from_base_uri(uri).with_storage_options(dict(options)).build().read())


def _seq(java_seq: Any) -> list[Any]:
    return [java_seq.apply(i) for i in range(java_seq.size())]


def _spark_texts(spark: Any) -> list[str]:
    """What the Spark UI and status APIs show: configuration, job and stage names/descriptions, SQL executions
    (description, call-site details, physical plan)."""
    sc = spark.sparkContext
    texts = [f"{k}={v}" for k, v in sc.getConf().getAll()]
    texts += [str(sc.getLocalProperty(p)) for p in ("spark.job.description", "spark.jobGroup.id", "callSite.short")]
    tracker = sc.statusTracker()
    for job_id in tracker.getJobIdsForGroup():
        for stage_id in tracker.getJobInfo(job_id).stageIds:
            info = tracker.getStageInfo(stage_id)
            texts.append(info.name if info else "")
    for job in _seq(sc._jsc.sc().statusStore().jobsList(None)):
        texts += [str(job.name()), str(job.description())]
    for ex in _seq(spark._jsparkSession.sharedState().statusStore().executionsList()):
        texts += [str(ex.description()), str(ex.details()), str(ex.physicalPlanDescription())]
    return texts


def test_spark_write_and_compaction_on_s3_equal_local_and_never_show_the_secret(
    spark, s3: S3Bucket, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG)
    # every payload set goes through a DataFrame (as a large plan does): record what becomes DataFrame data
    monkeypatch.setattr(spark_engine, "_CLOSURE_LIMIT", 0)
    uploaded: list[str] = []
    create = spark.createDataFrame

    def recording_create(data: Any, *args: Any, **kwargs: Any) -> Any:
        uploaded.append(str(data.to_pylist() if isinstance(data, pa.Table) else data))
        return create(data, *args, **kwargs)

    monkeypatch.setattr(spark, "createDataFrame", recording_create)
    local_uri = str(tmp_path / "trips")
    remote_uri = s3.uri("lake", "trips")
    local, local_structure, local_timeline = _flow(local_uri, {}, None)
    remote, remote_structure, remote_timeline = _flow(remote_uri, s3.storage_options, spark)
    assert any('"instant"' in u for u in uploaded), "no compaction payload went through a DataFrame"
    assert remote_timeline == local_timeline
    assert remote_structure == local_structure
    keep = [c for c in local.column_names if c not in RUN_SPECIFIC]
    assert remote.num_rows > 500
    assert_same_rows(remote.select(keep), local.select(keep))
    theirs = _hudi_rs(remote_uri, s3.hudi_rs_options)
    assert_same_rows(theirs.select(keep), hudi_rs_snapshot(local_uri).select(keep))
    assert_same_rows(remote, theirs)
    # a task that fails in an executor (a log file of the plan is gone): its error names the file, not the secret
    write_table(
        remote_uri,
        generate_updates(remote, fraction=0.1, seed=9, ts_offset=3 * 10**6),
        operation="upsert",
        options=OPTIONS,
        storage_options=s3.storage_options,
        engine=SparkEngine(spark),
    )
    t = HudiTable(remote_uri, storage_options=s3.storage_options)
    sched = schedule_compaction(t, force=True)
    op = next(o for o in load_plan(t, str(sched.instant)).operations if o.delta_file_paths)
    t.storage.delete_file(t.storage.join(op.partition_path or "", op.delta_file_paths[0]))
    with pytest.raises(Exception) as failed:
        run_compaction(HudiTable(remote_uri, storage_options=s3.storage_options), engine=SparkEngine(spark))
    assert op.delta_file_paths[0] in str(failed.value)
    shown = [
        str(failed.value),
        repr(failed.value),
        *_spark_texts(spark),
        *(r.getMessage() for r in caplog.records),
        *uploaded,
    ]
    leaked = [text for text in shown if SECRET_KEY in text]
    assert not leaked, leaked[0][:500]


def test_spark_executors_use_what_the_driver_resolved_from_its_aws_environment(
    spark, s3_env: S3Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table is given by URI only (endpoint, region and keys from the driver's AWS_* variables), while the Python
    workers of the executors get an environment of their own that points at a dead endpoint (as on a cluster,
    where executors never see the driver's environment): the Spark write, compaction and read still reach the S3
    server, so the driver's resolved settings travel with the tasks."""
    s3 = s3_env
    _dead_executor_environment(spark, monkeypatch)
    remote_uri = s3.uri("env", "trips")
    local_uri = str(tmp_path / "trips")
    local, local_structure, local_timeline = _flow(local_uri, {}, None)
    remote, remote_structure, remote_timeline = _flow(remote_uri, {}, spark)
    assert remote_timeline == local_timeline
    assert remote_structure == local_structure
    keep = [c for c in local.column_names if c not in RUN_SPECIFIC]
    assert_same_rows(remote.select(keep), local.select(keep))
    assert_same_rows(_hudi_rs(remote_uri, s3.hudi_rs_options), remote)


def test_dagster_spark_compaction_on_s3_metadata_and_failures_without_the_secret(
    spark, s3: S3Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Dagster table with ``engine: spark`` on the S3 server: the compaction partition runs its operations on
    Spark and its materialization metadata, run records and event logs hold no secret; a compaction whose Spark task
    fails (a log file of the plan is gone) fails the run with an error that names the file, not the secret."""
    import dagster as dg
    from dagster._serdes import serialize_value

    from lake_orchestration.dagster import build_hudi_definitions, load_config_file

    uri = s3.uri("dagster", "trips")
    so = s3.storage_options
    base = generate_trips(300, partitions=3, seed=21)
    write_table(uri, base, operation="bulk_insert", options=OPTIONS, storage_options=so)
    write_table(
        uri, generate_updates(base, fraction=0.3, seed=22), operation="upsert", options=OPTIONS, storage_options=so
    )
    monkeypatch.setenv("TRIPS_S3_KEY", so["access_key"])
    monkeypatch.setenv("TRIPS_S3_SECRET", SECRET_KEY)
    config = tmp_path / "lake_orchestration.yaml"
    config.write_text(f"""\
tables:
  - name: trips
    base_path: {uri}
    engine: spark
    retry_max_retries: 0
    storage: {{provider: s3, endpoint_override: '{s3.endpoint}', region: us-east-1, access_key_env: TRIPS_S3_KEY,
               secret_key_env: TRIPS_S3_SECRET}}
    compaction_options:
      hoodie.compact.inline.max.delta.commits: 1
spark_config:
  spark.master: local[2]
""")
    file_cfg = load_config_file(config)
    defs = build_hudi_definitions(tables=file_cfg.tables, spark_config=file_cfg.spark_config)
    before = _hudi_rs(uri, s3.hudi_rs_options)
    texts: list[str] = []
    with dg.instance_for_test() as instance:
        instants = []
        for n in range(2):
            sched = defs.resolve_job_def("trips__schedule_compaction").execute_in_process(instance=instance)
            assert sched.success
            t = HudiTable(uri, storage_options=so)
            (pending,) = t.timeline.pending_compactions()
            instants.append(str(pending.time))
            instance.add_dynamic_partitions("trips__compaction_instants", [instants[-1]])
            if n == 0:
                done = defs.resolve_job_def("trips__compaction").execute_in_process(
                    instance=instance, partition_key=instants[0]
                )
                assert done.success
                (mat,) = done.asset_materializations_for_node("hudi__trips__compaction")
                assert mat.metadata["rows_written"].value == before.num_rows
                assert_same_rows(_hudi_rs(uri, s3.hudi_rs_options), before, ignore=RUN_SPECIFIC)
                write_table(
                    uri,
                    generate_updates(base, fraction=0.2, seed=23, ts_offset=10**7),
                    operation="upsert",
                    options=OPTIONS,
                    storage_options=so,
                )
        op = next(o for o in load_plan(t, instants[1]).operations if o.delta_file_paths)
        t.storage.delete_file(t.storage.join(op.partition_path or "", op.delta_file_paths[0]))
        failed = defs.resolve_job_def("trips__compaction").execute_in_process(
            instance=instance, partition_key=instants[1], raise_on_error=False
        )
        assert not failed.success
        (failure,) = [e for e in failed.all_events if e.event_type_value == "STEP_FAILURE"]
        assert op.delta_file_paths[0] in str(failure.event_specific_data.error)  # type: ignore[union-attr]
        for run in instance.get_runs():
            texts.append(serialize_value(run))
            texts += [serialize_value(rec) for rec in instance.all_logs(run.run_id)]
    texts += _spark_texts(spark)
    leaked = [text for text in texts if SECRET_KEY in text]
    assert not leaked, "a secret appears in a Dagster run, its event log or Spark's status"


def _dead_executor_environment(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python workers of the executors get an AWS environment of their own pointing at a dead endpoint."""
    env = spark.sparkContext.environment  # the Python workers' environment (spark.executorEnv.*)
    for k, v in {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "executor-key",
        "AWS_SECRET_ACCESS_KEY": "executor-secret",
        "AWS_REGION": "eu-west-3",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }.items():
        monkeypatch.setitem(env, k, v)


def test_cli_engine_spark_on_s3_from_the_aws_environment(
    spark, s3_env: S3Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``lake-orch write/compaction run/clean --engine spark`` on an S3 table given by URI only (the driver's
    ``AWS_*`` environment), executors with an environment of their own: every step runs its tasks on Spark against
    the S3 server, the output never shows the secret, and hudi-rs reads the rows pandas expects."""
    import json

    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from lake_orchestration.cli.app import cli

    s3 = s3_env
    _dead_executor_environment(spark, monkeypatch)
    uri = s3.uri("cli", "trips")
    base = generate_trips(300, partitions=3, seed=31)
    upd = generate_updates(base, fraction=0.3, seed=32, ts_offset=10**7)
    pq.write_table(base, tmp_path / "base.parquet")
    pq.write_table(upd, tmp_path / "upd.parquet")
    on_spark = ["--engine", "spark", "--spark-master", "local[2]", "--json"]

    def run(*args: str) -> Any:
        res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
        out = res.stdout + res.stderr
        assert res.exit_code == 0, out
        assert SECRET_KEY not in out
        return json.loads(res.stdout)

    keys = ["--table-name", "trips", "--record-key", "uuid", "--precombine-field", "ts", "--partition-field", "city"]
    assert (
        run("write", uri, "--input", str(tmp_path / "base.parquet"), "--operation", "bulk_insert", *keys, *on_spark)[
            "inserted"
        ]
        == base.num_rows
    )
    assert run("write", uri, "--input", str(tmp_path / "upd.parquet"), *on_spark)["updated"] == upd.num_rows
    opt = ["--option", "hoodie.compact.inline.max.delta.commits=1"]
    (ran,) = run("compaction", "run", uri, "--schedule", *opt, *on_spark)
    assert ran["instant"]
    assert run("write", uri, "--input", str(tmp_path / "upd.parquet"), *on_spark)["updated"] == upd.num_rows
    cleaned = run("clean", uri, "--option", "hoodie.cleaner.commits.retained=1", *on_spark)
    assert cleaned["deleted"] >= 1, cleaned
    expected = {r["uuid"]: r for r in base.to_pylist()}
    expected.update({r["uuid"]: r for r in upd.to_pylist()})
    theirs = _hudi_rs(uri, s3.hudi_rs_options)
    assert dict(zip(theirs.column("uuid").to_pylist(), theirs.column("fare").to_pylist(), strict=True)) == {
        u: r["fare"] for u, r in expected.items()
    }


def test_options_for_executors_complete_what_the_driver_environment_gives() -> None:
    """Given options win; the endpoint, region and static keys (with a session token) come from the driver's
    environment; anonymous access ships no keys; other schemes are left as they are."""
    from lake_orchestration.io.executor_options import options_for_executors

    env = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_REGION": "eu-west-3",
        "AWS_ACCESS_KEY_ID": "env-key",
        "AWS_SECRET_ACCESS_KEY": "env-secret",
        "AWS_SESSION_TOKEN": "env-token",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }
    with pytest.MonkeyPatch.context() as m:
        for k in [k for k in os.environ if k.startswith("AWS_")]:
            m.delenv(k)
        for k, v in env.items():
            m.setenv(k, v)
        assert options_for_executors("s3://b/t", {}) == {
            "endpoint_override": "http://127.0.0.1:9000",
            "region": "eu-west-3",
            "access_key": "env-key",
            "secret_key": "env-secret",
            "session_token": "env-token",
        }
        given = {"endpoint_override": "http://h:1", "region": "us-east-1", "access_key": "k", "secret_key": "s"}
        assert options_for_executors("s3a://b/t", given) == given
        assert options_for_executors("s3://b/t", {"anonymous": "true"}) == {
            "anonymous": "true",
            "endpoint_override": "http://127.0.0.1:9000",
            "region": "eu-west-3",
        }
        assert options_for_executors("gs://b/t", {"anonymous": "true"}) == {"anonymous": "true"}
        assert options_for_executors("/tmp/t", {}) == {}
