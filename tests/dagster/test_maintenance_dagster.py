"""Dagster objects of clean and archive: the jobs (dry run by default), schedules, the small-archive-files check."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline
from lake_orchestration.hudi.write import write_table
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.tables import fake_metadata_table
from tests.trips import trips_options

pytestmark = pytest.mark.dagster

CLEAN = {"hoodie.cleaner.commits.retained": "2"}
ARCHIVE = {
    "hoodie.keep.min.commits": "3",
    "hoodie.keep.max.commits": "5",
    "hoodie.cleaner.commits.retained": "2",
    "hoodie.compact.inline.max.delta.commits": "2",
    "hoodie.archive.merge.enable": "true",
    "hoodie.archive.merge.files.batch.size": "3",
}


def _history(tmp_path: Path, rounds: int = 12) -> Path:
    path = tmp_path / "t"
    opts = trips_options(hive_style_partitioning=True, small_file_limit=0)
    base = generate_trips(120, partitions=2, seed=3)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    for n in range(rounds):
        write_table(
            str(path),
            generate_updates(base, fraction=0.1, seed=n, ts_offset=(n + 1) * 10**6),
            operation="upsert",
            options=opts,
        )
        if n % 2:
            run_compaction(HudiTable(str(path)), schedule=True, config=CompactionConfig(max_delta_commits=1))
    return path


def _defs(path: Path, **kw: object) -> tuple[dg.Definitions, HudiTableConfig]:
    cfg = HudiTableConfig(
        **{
            "name": "t",
            "base_path": str(path),
            "engine": "local",
            "clean_options": CLEAN,
            "archive_options": ARCHIVE,
            **kw,
        }
    )
    return build_hudi_definitions(tables=[cfg]), cfg


def _listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_clean_and_archive_jobs_and_schedules_exist(tmp_path: Path) -> None:
    defs, _ = _defs(_history(tmp_path, rounds=2), clean_cron="0 * * * *", archive_cron=None)
    assert defs.resolve_job_def("t__clean") is not None
    assert [n.name for n in defs.resolve_job_def("t__archive").graph.node_defs] == [
        "t__archive_op",
        "t__merge_archive_files_op",
    ]
    assert defs.resolve_schedule_def("t__clean_schedule").cron_schedule == "0 * * * *"
    with pytest.raises(dg.DagsterInvariantViolationError):
        defs.resolve_schedule_def("t__archive_schedule")
    checks = {k.name for k in defs.resolve_asset_graph().asset_check_keys}
    assert "small_archive_files" in checks


def test_clean_and_archive_jobs_are_dry_runs_by_default(tmp_path: Path) -> None:
    path = _history(tmp_path)
    defs, _ = _defs(path)
    listing = _listing(path)
    clean = defs.resolve_job_def("t__clean").execute_in_process()
    assert clean.success
    meta = _output_metadata(clean, "t__clean_commit_op")
    assert meta["dry_run"] is True and meta["files_planned"] > 0 and meta["files_deleted"] == 0
    archive = defs.resolve_job_def("t__archive").execute_in_process()
    assert archive.success
    assert _output_metadata(archive, "t__archive_op")["archived_instants"] > 0
    assert _listing(path) == listing, "a dry run changed the table"


def _output_metadata(result: dg.ExecuteInProcessResult, op: str) -> dict:
    (event,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT" and e.step_key == op]
    return {k: v.value for k, v in event.event_specific_data.metadata.items()}


def test_clean_then_archive_jobs_keep_the_snapshot(tmp_path: Path) -> None:
    path = _history(tmp_path)
    defs, _ = _defs(path, clean_dry_run=False, archive_dry_run=False)
    before = hudi_rs_snapshot(path)
    n_before = len(HudiTable(str(path)).timeline.completed_commits())
    clean = defs.resolve_job_def("t__clean").execute_in_process()
    assert clean.success
    assert _output_metadata(clean, "t__clean_commit_op")["files_deleted"] > 0
    assert HudiTable(str(path)).timeline.completed().with_actions(Action.CLEAN)
    archive = defs.resolve_job_def("t__archive").execute_in_process()
    assert archive.success
    t = HudiTable(str(path))
    assert len(t.timeline.completed_commits()) < n_before
    assert len(t.timeline.completed_commits()) <= 5
    assert len(ArchivedTimeline.load(t.storage)) > 0
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_small_archive_files_check_fails_until_merged(tmp_path: Path) -> None:
    path = _history(tmp_path, rounds=4)
    opts = {**ARCHIVE, "hoodie.archive.merge.enable": "false"}
    defs, _ = _defs(path, archive_options=opts, max_small_archive_files=2, archive_dry_run=False)
    base = generate_trips(40, partitions=2, seed=11)
    from lake_orchestration.hudi.services.archive import run_archive

    for n in range(12):  # archive after every few commits: one small archive file per run
        write_table(str(path), generate_updates(base, fraction=0.5, seed=40 + n), operation="upsert")
        run_archive(HudiTable(str(path)), ArchiveConfig.from_options(opts))
    files = ArchivedTimeline.load(HudiTable(str(path)).storage).files
    assert len(files) > 2
    table_key = dg.AssetKey(["hudi", "t"])
    check = dg.AssetCheckKey(table_key, "small_archive_files")
    job = defs.resolve_implicit_global_asset_job_def()
    failing = job.execute_in_process(asset_selection=[table_key], raise_on_error=False)
    assert _check_results(failing, check) == [False]
    # merging through the archive job makes the check pass
    defs2, _ = _defs(
        path,
        archive_options={**opts, "hoodie.archive.merge.enable": "true", "hoodie.archive.merge.files.batch.size": "2"},
        max_small_archive_files=2,
        archive_dry_run=False,
    )
    assert defs2.resolve_job_def("t__archive").execute_in_process().success
    assert len(ArchivedTimeline.load(HudiTable(str(path)).storage).files) == 1
    passing = defs2.resolve_implicit_global_asset_job_def().execute_in_process(asset_selection=[table_key])
    assert _check_results(passing, check) == [True]


def _check_results(result: dg.ExecuteInProcessResult, check: dg.AssetCheckKey) -> list[bool]:
    evals = [e.asset_check_evaluation_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    return [e.passed for e in evals if e.asset_check_key == check]


def test_metadata_enable_false_under_any_service_applies_to_compaction(tmp_path: Path) -> None:
    """One write config, as Hudi has: a table with a metadata table is refused by the schedule-compaction job until
    ``hoodie.metadata.enable: false`` is set, and it counts wherever it is set (here under ``clean_options``)."""
    path = _history(tmp_path, rounds=5)  # the last upsert is not compacted
    fake_metadata_table(path)
    before = hudi_rs_snapshot(path)
    defs, _ = _defs(path, compaction_options={"hoodie.compact.inline.max.delta.commits": 1})
    res = defs.resolve_job_def("t__schedule_compaction").execute_in_process(raise_on_error=False)
    assert not res.success
    (failure,) = [e for e in res.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "compaction does not update" in str(failure.event_specific_data.error.message)
    assert HudiTable(str(path)).has_metadata_table()
    defs, _ = _defs(
        path,
        compaction_options={"hoodie.compact.inline.max.delta.commits": 1},
        clean_options={**CLEAN, "hoodie.metadata.enable": False},
    )
    assert defs.resolve_job_def("t__schedule_compaction").execute_in_process().success
    t = HudiTable(str(path))
    assert not t.has_metadata_table() and t.timeline.pending_compactions()
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_invalid_clean_option_fails_the_step_without_retries(tmp_path: Path) -> None:
    path = _history(tmp_path, rounds=2)
    listing = _listing(path)
    defs, _ = _defs(path, clean_options={"hoodie.cleaner.policy": "SOMETIMES"}, clean_dry_run=False)
    res = defs.resolve_job_def("t__clean").execute_in_process(raise_on_error=False)
    assert not res.success
    assert not [e for e in res.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    (failure,) = [e for e in res.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "InvalidOptionError" in failure.event_specific_data.error.message
    assert "hoodie.cleaner.policy='SOMETIMES'" in failure.event_specific_data.error.message
    assert _listing(path) == listing
