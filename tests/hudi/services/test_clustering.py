"""Clustering: schedule-plan -> execute-plan -> commit a replacecommit on generated COPY_ON_WRITE and MERGE_ON_READ
tables with many small file groups. Oracles: the `hudi` wheel (hudi-rs) reads the rows as before, Hudi's reference
Avro schemas decode the plan, the new files are read with pyarrow directly (sort order, record metadata)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import fastavro
import pyarrow.parquet as pq
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import Action, Instant
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clustering import (
    ClusteringConfig,
    PartitionFilterMode,
    execute_clustering,
    load_plan,
    run_clustering_plan,
    schedule_clustering,
)
from lake_orchestration.hudi.services.clustering.planner import filter_partitions
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import write_table
from tests.conftest import REPO_ROOT, SHARED, require_shared
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

SORT = {"hoodie.clustering.plan.strategy.sort.columns": "fare"}


def _reference_schema(name: str) -> dict:
    require_shared()
    text = (SHARED / "reference" / "hudi" / "avro" / name).read_text()
    return json.loads(re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def _small_files_table(path: Path, table_type: TableType, *, batches: int = 3, rows: int = 300) -> None:
    """``batches`` bulk inserts (new file groups each) in 2 cities; MOR: then an upsert and a delete (log files)."""
    opts = trips_options(table_type=table_type)
    first = None
    for i in range(batches):
        t = generate_trips(rows, partitions=2, seed=100 + i)
        first = first if first is not None else t
        write_table(str(path), t, operation="bulk_insert", options=opts)
    if table_type is TableType.MERGE_ON_READ:
        write_table(str(path), generate_updates(first, fraction=0.2, seed=5), operation="upsert", options=opts)
        write_table(str(path), pick_deletes(first, fraction=0.05, seed=6), operation="delete", options=opts)


def _latest_groups(path: Path) -> dict[str, int]:
    view = HudiTable(str(path)).fs_view()
    out: dict[str, int] = {}
    for fs in view.latest_file_slices():
        out[fs.partition_path] = out.get(fs.partition_path, 0) + 1
    return out


@pytest.fixture(scope="module", params=[TableType.COPY_ON_WRITE, TableType.MERGE_ON_READ], ids=["cow", "mor"])
def clustered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A table with small file groups, clustered by ``fare``: what it was before, the plan and the result."""
    path = tmp_path_factory.mktemp(f"clustering-{request.param.value}") / "t"
    _small_files_table(path, request.param)
    table = HudiTable(str(path))
    before = read_snapshot_table(table)
    groups_before = _latest_groups(path)
    cfg = ClusteringConfig.from_options(SORT)
    scheduled = schedule_clustering(table, config=cfg)
    assert scheduled.scheduled, scheduled.reason
    result = execute_clustering(HudiTable(str(path)), scheduled.instant, config=cfg)
    return {
        "path": path,
        "before": before,
        "groups_before": groups_before,
        "scheduled": scheduled,
        "result": result,
        "type": request.param,
    }


def test_plan_decodes_with_hudi_schema(clustered: dict) -> None:
    """The requested file is a HoodieRequestedReplaceMetadata (Hudi's reference schema) holding the size-based plan:
    every latest file group of both partitions, one group per partition, sort columns in the strategy params."""
    path, instant = clustered["path"], clustered["scheduled"].instant
    require_shared()
    named: dict = {}
    for n in (
        "HoodieSliceInfo",
        "HoodieClusteringGroup",
        "HoodieClusteringStrategy",
        "HoodieClusteringPlan",
        "HoodieRequestedReplaceMetadata",
    ):
        parsed = fastavro.parse_schema(_reference_schema(f"{n}.avsc"), named_schemas=named)
    with open(path / ".hoodie" / f"{instant}.replacecommit.requested", "rb") as f:
        (md,) = list(fastavro.reader(f, reader_schema=parsed))
    assert md["operationType"] == "CLUSTER" and md["version"] == 1
    plan = md["clusteringPlan"]
    assert plan["preserveHoodieMetadata"] is True and plan["version"] == 1
    assert plan["strategy"]["strategyClassName"].endswith("SparkSortAndSizeExecutionStrategy")
    assert plan["strategy"]["strategyParams"] == {"hoodie.clustering.plan.strategy.sort.columns": "fare"}
    groups = plan["inputGroups"]
    assert sorted(g["slices"][0]["partitionPath"] for g in groups) == sorted(clustered["groups_before"])
    for g in groups:
        assert len(g["slices"]) == clustered["groups_before"][g["slices"][0]["partitionPath"]]
        assert g["numOutputFileGroups"] == 1
        assert set(g["metrics"]) == {
            "TOTAL_IO_READ_MB",
            "TOTAL_IO_WRITE_MB",
            "TOTAL_IO_MB",
            "TOTAL_LOG_FILES_SIZE",
            "TOTAL_LOG_FILES",
        }
        for s in g["slices"]:
            # the fully qualified path, as Java's BaseFile.getPath (tests/java compares the whole plan with Java's)
            assert s["dataFilePath"] == f"file:{path / s['partitionPath'] / Path(s['dataFilePath']).name}"
            assert all(d.startswith(f"file:{path}/") for d in s["deltaFilePaths"])
    assert (path / ".hoodie" / f"{instant}.replacecommit.inflight").read_bytes() == b""


def test_rows_equal_before_for_us_and_hudi_rs(clustered: dict) -> None:
    """Our snapshot and hudi-rs's equal the rows before clustering (every column but ``_hoodie_file_name``; commit
    times and sequence numbers preserved)."""
    path, before = clustered["path"], clustered["before"]
    ours = read_snapshot_table(HudiTable(str(path)))
    assert_same_rows(ours, before, ignore=REWRITTEN_BY_SERVICES)
    assert_same_rows(before, hudi_rs_snapshot(path), ignore=REWRITTEN_BY_SERVICES)


def test_replacecommit_and_new_files(clustered: dict) -> None:
    """The completed replacecommit replaces every input file group; each partition now has one file group whose
    base file is sorted by ``fare``, carries the old commit times, and holds no log file."""
    path, instant, result = clustered["path"], clustered["scheduled"].instant, clustered["result"]
    md = CommitMetadata.from_bytes((path / ".hoodie" / f"{instant}.replacecommit").read_bytes(), path=str(path))
    assert md.operation_type == "CLUSTER" and md.schema and not md.compacted
    plan = load_plan(HudiTable(str(path)), instant)
    planned = {s.file_id for g in plan.input_groups for s in g.slices}
    assert {f for ids in md.partition_to_replace_file_ids.values() for f in ids} == planned
    assert _latest_groups(path) == {p: 1 for p in clustered["groups_before"]}
    before_times = set(clustered["before"].column("_hoodie_commit_time").to_pylist())
    assert instant not in before_times
    for s in md.write_stats():
        assert s.prevCommit == "null" and s.fileId.endswith("-0") and s.numInserts == s.numWrites > 0
        data = pq.read_table(path / s.path)
        fares = data.column("fare").to_pylist()
        assert fares == sorted(fares), f"{s.path} is not sorted by fare"
        assert set(data.column("_hoodie_commit_time").to_pylist()) <= before_times
        assert set(data.column("_hoodie_file_name").to_pylist()) == {Path(s.path).name}
    assert sum(s.numWrites for s in md.write_stats()) == clustered["before"].num_rows
    assert not (path / ".hoodie" / ".temp" / instant).exists(), "markers left after the commit"
    assert result.rows_written == clustered["before"].num_rows and not result.already_committed


def test_again_is_noop_and_nothing_to_cluster(clustered: dict) -> None:
    """Running the committed plan again is a no-op; with every base file above the small-file limit nothing is
    scheduled (no file written)."""
    path, instant = clustered["path"], clustered["scheduled"].instant
    table = HudiTable(str(path))
    assert run_clustering_plan(table, instant).already_committed
    names = sorted(os.listdir(path / ".hoodie"))
    res = schedule_clustering(
        table, config=ClusteringConfig.from_options({"hoodie.clustering.plan.strategy.small.file.limit": "1"})
    )
    assert not res.scheduled and "no file slice" in res.reason
    assert sorted(os.listdir(path / ".hoodie")) == names


def test_partition_filters() -> None:
    """ClusteringPlanPartitionFilter's modes and the regex / selected partitions (Java's semantics)."""
    parts = ["2024/01/01", "2024/01/02", "2024/01/03", "2024/01/04"]

    def f(**opts: str) -> list[str]:
        return filter_partitions(list(parts), ClusteringConfig.from_options(opts), hour=1)

    assert f() == parts
    assert f(**{"hoodie.clustering.plan.partition.filter.mode": "RECENT_DAYS"}) == ["2024/01/04", "2024/01/03"]
    assert (
        f(
            **{
                "hoodie.clustering.plan.partition.filter.mode": "RECENT_DAYS",
                "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions": "1",
                "hoodie.clustering.plan.strategy.daybased.lookback.partitions": "3",
            }
        )
        == parts[2::-1]
    )
    assert (
        f(
            **{
                "hoodie.clustering.plan.partition.filter.mode": "SELECTED_PARTITIONS",
                "hoodie.clustering.plan.strategy.cluster.begin.partition": "2024/01/02",
                "hoodie.clustering.plan.strategy.cluster.end.partition": "2024/01/03",
            }
        )
        == parts[1:3]
    )
    assert f(**{"hoodie.clustering.plan.partition.filter.mode": "DAY_ROLLING"}) == ["2024/01/02"]
    assert f(**{"hoodie.clustering.plan.strategy.partition.regex.pattern": r"2024/01/0[13]"}) == [parts[0], parts[2]]
    assert f(**{"hoodie.clustering.plan.strategy.partition.selected": "2024/01/04"}) == ["2024/01/04"]
    # the deprecated plan strategy classes map to a filter mode, as checkAndGetClusteringPlanStrategy does
    cfg = ClusteringConfig.from_options(
        {
            "hoodie.clustering.plan.strategy.class": "org.apache.hudi.client.clustering.plan.strategy."
            "SparkRecentDaysClusteringPlanStrategy"
        }
    )
    assert cfg.partition_filter_mode is PartitionFilterMode.RECENT_DAYS


def test_inline_trigger(tmp_path: Path) -> None:
    """``hoodie.clustering.inline.max.commits``: no plan before that many commits since the last clustering."""
    path = tmp_path / "t"
    _small_files_table(path, TableType.COPY_ON_WRITE, batches=2, rows=50)
    table = HudiTable(str(path))
    trig = {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "3"}
    res = schedule_clustering(table, config=ClusteringConfig.from_options(trig))
    assert not res.scheduled and "hoodie.clustering.inline.max.commits=3" in res.reason
    trig["hoodie.clustering.inline.max.commits"] = "2"
    assert schedule_clustering(table, config=ClusteringConfig.from_options(trig)).scheduled


# A subprocess executes the plan with the storage mutations hooked: the first write of the completed replacecommit
# kills it (os._exit: no finally, as a SIGKILL) after every new base file was written.
_HOOK = r"""
import os, re, sys
from lake_orchestration.io.storage import Storage
_on = re.compile(os.environ["CRASH_ON"])
def _wrap(name):
    orig = getattr(Storage, name)
    def hooked(self, path, *args, **kwargs):
        if _on.search(path):
            os._exit(137)
        return orig(self, path, *args, **kwargs)
    setattr(Storage, name, hooked)
for _m in ("create_if_absent", "write_bytes", "open_output_stream"):
    _wrap(_m)
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.services.clustering import ClusteringConfig, execute_clustering
import json
execute_clustering(HudiTable(sys.argv[1]), sys.argv[2], config=ClusteringConfig.from_options(json.loads(sys.argv[3])))
"""


def test_killed_attempt_rolled_back_and_rerun(tmp_path: Path) -> None:
    """A clustering killed just before its commit point leaves an inflight replacecommit and its new files; the
    next run (once the heartbeat expired) rolls the attempt back (its files deleted, a rollback instant) and
    executes the plan again to the same rows."""
    path = tmp_path / "t"
    _small_files_table(path, TableType.MERGE_ON_READ, batches=2, rows=100)
    table = HudiTable(str(path))
    before = read_snapshot_table(table)
    instant = str(schedule_clustering(table, config=ClusteringConfig.from_options(SORT)).instant)
    env = {**os.environ, "CRASH_ON": rf"\.hoodie/{instant}\.replacecommit$", "PYTHONPATH": str(REPO_ROOT)}
    # short lock heartbeats: the killed commit held the table lock, taken over once stale (1 s)
    opts = {**SORT, "hoodie.write.lock.heartbeat_interval_ms": "500"}
    proc = subprocess.run(
        [sys.executable, "-c", _HOOK, str(path), instant, json.dumps(opts)],
        env=env,
        timeout=300,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 137, proc.stderr[-2000:]
    inflight = path / ".hoodie" / f"{instant}.replacecommit.inflight"
    assert inflight.exists() and not (path / ".hoodie" / f"{instant}.replacecommit").exists()
    attempt_files = {p.name for p in path.rglob(f"*_{instant}.parquet")}
    assert attempt_files, "the killed attempt wrote no file"
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), before, ignore=REWRITTEN_BY_SERVICES)
    time.sleep(1.2)
    fast = ClusteringConfig.from_options(
        {**opts, "hoodie.client.heartbeat.interval_in_ms": "100", "hoodie.client.heartbeat.tolerable.misses": "1"}
    )
    result = execute_clustering(HudiTable(str(path)), instant, config=fast)
    assert result.rolled_back_attempt, "the crashed attempt was not rolled back"
    rb = HudiTable(str(path)).timeline.get(result.rolled_back_attempt, Action.ROLLBACK)
    assert rb is not None and rb.is_completed
    now = {p.name for p in path.rglob(f"*_{instant}.parquet")}
    assert not now & attempt_files, "files of the killed attempt survived its rollback"
    assert now == {Path(s.path).name for s in result.stats}
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), before, ignore=REWRITTEN_BY_SERVICES)
    assert_same_rows(before, hudi_rs_snapshot(path), ignore=REWRITTEN_BY_SERVICES)
    assert (path / ".hoodie" / f"{instant}.replacecommit").exists()


def test_on_spark_with_z_order(tmp_path: Path, spark) -> None:  # type: ignore[no-untyped-def]
    """The group tasks on the Spark engine, laid out on a z-order curve of two columns: the rows hudi-rs reads are
    unchanged, each new file is in the order the layout gives its rows."""
    from lake_orchestration.engines.spark import SparkEngine
    from lake_orchestration.hudi.services.clustering.layout import sort_indices

    path = tmp_path / "t"
    _small_files_table(path, TableType.MERGE_ON_READ, batches=2, rows=100)
    before = hudi_rs_snapshot(path)
    cfg = ClusteringConfig.from_options({"hoodie.clustering.plan.strategy.sort.columns": "fare,begin_lat",
                                         "hoodie.layout.optimize.strategy": "z-order"})
    scheduled = schedule_clustering(HudiTable(str(path)), config=cfg)
    result = execute_clustering(HudiTable(str(path)), scheduled.instant, config=cfg, engine=SparkEngine(spark))
    assert result.files_written == 2
    for s in result.stats:
        data = pq.read_table(path / s.path)
        order = sort_indices(data, ["fare", "begin_lat"], "z-order").to_pylist()
        assert order == list(range(data.num_rows)), f"{s.path} is not in z-order"
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)


def test_pending_clustering_is_not_a_stale_write(tmp_path: Path) -> None:
    """A pending clustering plan (requested, or inflight with an expired heartbeat) is not a failed write: the
    rollback of stale writes leaves it (Java's getInflightTimelineExcludeCompactionAndClustering); its plan stays."""
    from lake_orchestration.hudi.services.rollback import stale_writes

    path = tmp_path / "t"
    _small_files_table(path, TableType.COPY_ON_WRITE, batches=2, rows=40)
    table = HudiTable(str(path))
    instant = str(schedule_clustering(table).instant)
    assert stale_writes(HudiTable(str(path)), timeout_s=0) == []
    table.refresh().transition_to_inflight(Instant.from_file_name(f"{instant}.replacecommit.requested"))
    time.sleep(0.05)
    assert stale_writes(HudiTable(str(path)), interval_ms=1, tolerable_misses=1, timeout_s=0) == []
