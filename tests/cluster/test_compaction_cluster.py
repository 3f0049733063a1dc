"""Nothing assumes local mode: the same compaction runs on a Spark standalone cluster and through Spark Connect.

For each deployment (conftest.py starts it from the installed pyspark, on 127.0.0.1 only) a generated MOR table
with many deltacommits gets a compaction plan, is copied, and then

* the plan is executed with ``run_compaction(table, engine=SparkEngine(<cluster session>))`` in a driver / Connect
  client
  subprocess, which also reads the snapshot back with ``read_snapshot_on(SparkEngine)`` on the same deployment;
* the copy is compacted in-process (``engine=None``), the reference.

The tests check that the compaction committed and hudi-rs reads the same rows as before, that the result equals the
in-process one (rows, file groups, write stats, base file contents), and that the tasks really ran remotely (on the
workers' executors / behind the Connect server): executors write to the table's storage and import the checkout.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.file_group import BaseFile
from lake_orchestration.hudi.services.compaction import CompactionResult, run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from tests.cluster.conftest import (
    LOOPBACK,
    PYTHON,
    REPO_ROOT,
    ConnectServer,
    StandaloneCluster,
    copy_table,
    run_client,
)
from tests.hudi.services.test_compaction import _assert_compacted
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.tables import generated_table

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# write-stat fields that must not depend on where the operation ran
STAT_FIELDS = ("fileId", "partitionPath", "prevCommit", "numWrites", "numDeletes", "numUpdateWrites", "numInserts",
               "totalLogRecords", "totalLogFilesCompacted", "totalLogSizeCompacted", "totalUpdatedRecordsCompacted",
               "totalLogBlocks", "totalCorruptLogBlock", "totalRollbackBlocks")


@dataclass
class ClusterRun:
    mode: str
    url: str
    path: Path  # compacted on the deployment
    twin: Path  # the identical copy, compacted in-process
    instant: str
    operations: int
    before: pa.Table
    report: dict
    local: CompactionResult
    spark_snapshot: pa.Table
    executor_dirs: dict[int, list[str]] | None = None
    alive_workers: int | None = None

    @property
    def stats(self) -> list[WriteStat]:
        (r,) = self.report["results"]
        return [WriteStat.from_json_obj(s) for s in r["stats"]]


@pytest.fixture(scope="module", params=["standalone", "connect"])
def cluster_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ClusterRun:
    """Schedule, copy, compact on the deployment (then stop it), compact the copy in-process."""
    mode = request.param
    root = tmp_path_factory.mktemp(mode)
    path = generated_table(root / "data")
    before = hudi_rs_snapshot(path)
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    assert sched.scheduled, sched.reason
    twin = copy_table(path, root / "data" / "twin")
    extra: dict = {}
    if mode == "standalone":
        with StandaloneCluster(root / "cluster") as cluster:
            url = cluster.url
            report = run_client(mode, url, path, root / "client", root / "client-env")
            extra["executor_dirs"] = cluster.executor_dirs(report["app_id"])
            extra["alive_workers"] = int(cluster.master_state()["aliveworkers"])
    else:
        with ConnectServer(root / "server") as server:
            url = server.url
            report = run_client(mode, url, path, root / "client", root / "client-env")
    (local,) = run_compaction(HudiTable(str(twin)))
    with pa.memory_map(str(root / "client" / "snapshot.arrow")) as src:
        snap = pa.ipc.open_file(src).read_all()
    return ClusterRun(mode=mode, url=url, path=path, twin=twin, instant=str(sched.instant),
                      operations=len(sched.plan.operations), before=before, report=report, local=local,
                      spark_snapshot=snap, **extra)


def test_cluster_compaction_commits_and_keeps_the_snapshot(cluster_run: ClusterRun) -> None:
    run = cluster_run
    (result,) = run.report["results"]
    assert result["instant"] == run.instant
    assert result["operations"] == run.operations
    commit = run.path / ".hoodie" / f"{run.instant}.commit"
    assert commit.is_file(), f"no {commit.name} after the compaction on {run.mode}"
    md = CommitMetadata.from_bytes(commit.read_bytes(), path=str(run.path))
    assert md.compacted and md.operation_type == "COMPACT"
    # executors reached the table's storage: every new base file of the commit is there
    for s in run.stats:
        assert (run.path / s.path).is_file(), f"{s.path} (written by an executor) is missing"
    _assert_compacted(run.path, run.instant, run.before)


def test_cluster_compaction_equals_in_process_compaction(cluster_run: ClusterRun) -> None:
    run = cluster_run
    assert run.local.instant == run.instant
    assert_same_rows(hudi_rs_snapshot(run.path), hudi_rs_snapshot(run.twin), ignore=REWRITTEN_BY_SERVICES)

    def by_group(stats: list[WriteStat]) -> dict[tuple[str | None, str], dict]:
        return {(s.partitionPath, s.fileId): {f: getattr(s, f) for f in STAT_FIELDS} for s in stats}

    remote, local = by_group(run.stats), by_group(run.local.stats)
    assert remote.keys() == local.keys()
    for key in local:
        assert remote[key] == local[key], f"write stat of file group {key} differs"
    # the same rows landed in the same file group
    local_files = {(s.partitionPath, s.fileId): s.path for s in run.local.stats}
    for s in run.stats:
        ours = pq.read_table(run.path / s.path)
        theirs = pq.read_table(run.twin / local_files[(s.partitionPath, s.fileId)])
        assert_same_rows(ours, theirs, ignore=REWRITTEN_BY_SERVICES)


def test_cluster_spark_engine_snapshot_equals_in_process(cluster_run: ClusterRun) -> None:
    run = cluster_run
    # read_snapshot_on(SparkEngine) on the deployment vs our in-process reader on the same table: every column
    assert_same_rows(run.spark_snapshot, read_snapshot_table(HudiTable(str(run.path))))
    # ... and vs hudi-rs on the in-process compacted copy
    assert_same_rows(run.spark_snapshot, hudi_rs_snapshot(run.twin), ignore=REWRITTEN_BY_SERVICES)


def test_cluster_tasks_ran_on_the_deployment(cluster_run: ClusterRun) -> None:
    run = cluster_run
    report = run.report
    probe = report["probe"]
    assert probe, "the probe tasks returned nothing"
    for p in probe:
        assert p["pid"] != report["client_pid"], "a task ran in the client process"
        assert p["python"] == PYTHON, "the executors do not run the venv's python"
        # the checkout is importable on the executors (through PYTHONPATH; it need not be installed)
        assert Path(p["package"]).resolve().parent.parent == REPO_ROOT, p["package"]
    if run.mode == "standalone":
        assert report["session_class"] == "pyspark.sql.session.SparkSession"  # classic, driver in the client
        assert report["master"] == run.url
        assert run.alive_workers == 2
        executors = [e for e in report["executors"] if e["id"] != "driver"]
        assert len(executors) == 2, f"expected one executor per worker, got {executors}"
        for e in executors:
            assert e["hostPort"].startswith(f"{LOOPBACK}:"), e
            assert e["totalTasks"] > 0, f"executor {e['id']} ran no task: {executors}"
        driver = [e for e in report["executors"] if e["id"] == "driver"]
        assert all(e["totalTasks"] == 0 for e in driver), "tasks ran in the driver"
        # each worker launched one of those executors for this application
        launched = run.executor_dirs or {}
        assert sorted(x for ids in launched.values() for x in ids) == sorted(e["id"] for e in executors), launched
        assert all(len(ids) == 1 for ids in launched.values()), launched
        # the python workers ran in the executors' dirs <worker work dir>/<app id>/<executor id>, on both workers
        workers = {Path(p["cwd"]).parent.parent.name for p in probe}
        assert workers == {"worker-0", "worker-1"}, sorted(p["cwd"] for p in probe)
    else:
        assert report["session_class"] == "pyspark.sql.connect.session.SparkSession"
        assert report["client_has_jvm"] is False, "the Connect client started a local JVM"
        assert report["master"] == "local[2]"  # the server's master, not the client's


def test_cluster_map_tasks_one_spark_task_per_task(cluster_run: ClusterRun) -> None:
    """``SparkEngine.map_tasks`` promises one Spark task per task (Hudi compacts one operation per task)."""
    probe = cluster_run.report["probe"]
    partitions = sorted(p["partition"] for p in probe)
    assert len({p["attempt"] for p in probe}) == len(probe), (
        f"{len(probe)} payloads ran in {len(set(partitions))} Spark task(s), partitions {partitions}: "
        "repartition(n, 'idx') hash-partitions the indexes, several payloads share a task and others are empty"
    )


def test_cluster_write_tokens_come_from_the_spark_task(cluster_run: ClusterRun) -> None:
    """Hudi's write token on Spark is ``{partitionId}-{stageId}-{taskAttemptId}`` from the TaskContext
    (``FSUtils.makeWriteToken``); the file-group writer (engines/spark.py, map_record_groups) does this, compaction must
    too:
    on a cluster a retried or speculative attempt must not write the same file name as the first attempt."""
    run = cluster_run
    tokens = {s.fileId: BaseFile.parse(s.path.rsplit("/", 1)[-1]).write_token for s in run.stats}
    stages = {f: int(t.split("-")[1]) for f, t in tokens.items()}
    assert all(stage > 0 for stage in stages.values()), (
        f"compaction on {run.mode} wrote Spark-less write tokens {sorted(tokens.values())}: "
        "SparkEngine does not hand the TaskContext's stageId/taskAttemptId to the task as its attempt"
    )
    attempts = [int(t.split("-")[2]) for t in tokens.values()]
    assert len(set(attempts)) == len(attempts), json.dumps(tokens)
