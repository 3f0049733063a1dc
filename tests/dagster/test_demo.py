"""The README's first command runs the main job through Dagster: ingest, schedule, sensor, compaction, clean and
archive runs."""

from pathlib import Path

import dagster as dg
import pytest

from lake_orchestration.demo.definitions import DEMO_TABLE
from lake_orchestration.demo.run import main, run_demo
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from tests.oracle import assert_same_rows, hudi_rs_snapshot

pytestmark = pytest.mark.dagster


def _check_demo(tmp_path: Path, engine: str) -> None:
    with dg.instance_for_test() as instance:
        s = run_demo(tmp_path, rows=300, batches=2, rounds=2, engine=engine, instance=instance, echo=lambda _m: None)
        runs = instance.get_runs()
        jobs = sorted({r.job_name for r in runs})
        parts = instance.get_dynamic_partitions(f"{DEMO_TABLE}__compaction_instants")
    assert all(s.checks.values()), s.checks
    ran = {k.removeprefix("asset check ") for k in s.checks if k.startswith("asset check ")}
    assert {"oldest_pending_compaction_age", "log_files_per_slice", "active_timeline_length"} <= ran
    assert len(s.plans) == 2 and sorted(parts) == sorted(s.plans)
    # every step went through Dagster runs: 5 ingests, 2 schedules, one compaction run per plan, clean, archive,
    # the health run
    assert jobs == [
        "__ASSET_JOB",
        f"{DEMO_TABLE}__archive",
        f"{DEMO_TABLE}__clean",
        f"{DEMO_TABLE}__compaction",
        f"{DEMO_TABLE}__ingest",
        f"{DEMO_TABLE}__schedule_compaction",
    ]
    assert len(runs) == 5 + 2 + 2 + 2 + 1
    table = HudiTable(s.base_path)
    # every plan committed: on the active timeline, or already moved to the archived one
    archived = ArchivedTimeline.load(table.storage)
    commits = {str(c.time) for c in table.timeline.completed().with_actions(Action.COMMIT)}
    commits |= {str(i.time) for i in archived.completed() if i.action is Action.COMMIT}
    assert commits == set(s.plans) and not table.timeline.pending()
    assert s.files_cleaned > 0 and s.instants_archived > 0
    assert len(table.timeline.completed_commits()) <= 5  # the demo's hoodie.keep.max.commits
    assert s.slices_before.log_files > s.slices_after.log_files
    # the independent reader agrees with ours and with the write history
    oracle = hudi_rs_snapshot(s.base_path)
    assert oracle.num_rows == s.expected_rows
    assert_same_rows(read_snapshot_table(table), oracle)


def test_demo_run_local_engine_compacts_every_plan_through_dagster(tmp_path: Path) -> None:
    _check_demo(tmp_path, "local")


@pytest.mark.spark
@pytest.mark.slow
def test_demo_run_spark_engine_compacts_every_plan_through_dagster(tmp_path: Path, spark: object) -> None:
    # the pyspark resource's getOrCreate picks up the test run's one session
    _check_demo(tmp_path, "spark")


def test_demo_main_prints_summary_and_ui_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo as the README runs it (no --engine: the in-process default), into an instance that limits each
    table's pool to one step at a time."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    rc = main(["--dir", str(tmp_path / "demo"), "--rows", "200", "--batches", "1", "--rounds", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "File slices (latest, merged):" in out and "rows/s" in out and "[FAILED]" not in out
    assert " on local" in out and " on spark" not in out  # the compaction line names the engine
    assert f"DAGSTER_HOME={tmp_path / 'home'}" in out and "dagster dev -w workspace.yaml" in out
    # the runs stay in the instance the UI opens, whose pools (hudi_demo_trips) take one step at a time
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        assert len(instance.get_runs()) >= 3
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
        assert instance.event_log_storage.get_concurrency_info(f"hudi_{DEMO_TABLE}").slot_count == 1
