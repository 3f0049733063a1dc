"""The ``<t>__bootstrap`` job: defined only for a table with a bootstrap source, bootstraps once, refuses a table
with commits without retrying, and a retry after a failed attempt rolls the attempt back first."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions
from lake_orchestration.dagster.jobs import build_bootstrap_job
from lake_orchestration.dagster.translator import DagsterHudiTranslator
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.services.bootstrap import BootstrapMode
from lake_orchestration.hudi.services.bootstrap import executor as bootstrap_executor
from lake_orchestration.hudi.table import HudiTable
from tests.hudi.services.test_bootstrap import DATES, _check_read, _hashes, _make_source

pytestmark = pytest.mark.dagster


def _table(tmp_path: Path, **kw: object) -> tuple[HudiTableConfig, pd.DataFrame]:
    source = tmp_path / "source"
    rows = _make_source(source)
    cfg = HudiTableConfig(
        name="events",
        base_path=str(tmp_path / "events"),
        engine="local",
        bootstrap_options={
            HoodieKey.BOOTSTRAP_BASE_PATH.key: str(source),
            HoodieKey.RECORDKEY_FIELD.key: "id",
            HoodieKey.WRITE_PRECOMBINE_FIELD.key: "ts",
            HoodieKey.PARTITIONPATH_FIELD.key: "dt",
            HoodieKey.HIVE_STYLE_PARTITIONING.key: True,
        },
        **kw,  # type: ignore[arg-type]
    )
    return cfg, rows


def test_bootstrap_job_defined_only_for_table_with_source(tmp_path: Path) -> None:
    cfg, _ = _table(tmp_path)
    plain = HudiTableConfig(name="plain", base_path=str(tmp_path / "plain"))
    names = {j.name for j in build_hudi_definitions(tables=[cfg, plain]).jobs}
    assert "events__bootstrap" in names and "plain__bootstrap" not in names
    assert {"plain__compaction", "plain__clean", "plain__archive", "plain__rollback"} <= names


def test_bootstrap_job_bootstraps_once_then_refuses_without_retry(tmp_path: Path) -> None:
    cfg, rows = _table(tmp_path)
    before = _hashes(tmp_path / "source")
    job = build_bootstrap_job(cfg, DagsterHudiTranslator())
    assert job is not None and job.name == "events__bootstrap"

    dry = job.execute_in_process(run_config={"ops": {"events__bootstrap_op": {"config": {"dry_run": True}}}})
    assert dry.success and not Path(cfg.base_path).exists()
    result = job.execute_in_process()

    assert result.success
    (output,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    meta = output.event_specific_data.metadata
    assert meta["skeleton_files"].value == 9 and meta["metadata_only_instant"].value == "00000000000001"
    assert HudiTable(cfg.base_path).config.name == "events"
    _check_read(Path(cfg.base_path), rows, dict.fromkeys(DATES, BootstrapMode.METADATA_ONLY))

    again = job.execute_in_process(raise_on_error=False)
    assert not again.success
    (failure,) = [e for e in again.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "already has commits" in failure.event_specific_data.error.message
    assert not [e for e in again.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    assert _hashes(tmp_path / "source") == before


def test_bootstrap_job_retry_rolls_back_the_failed_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg, rows = _table(tmp_path, retry_max_retries=1, retry_delay_seconds=0)
    real = bootstrap_executor.write_skeleton
    calls: list[object] = []

    def killed_once(task: bootstrap_executor.SkeletonTask) -> list[bootstrap_executor.SkeletonWrite]:
        calls.append(task)
        if len(calls) == 3:
            raise OSError("executor lost")
        return real(task)

    monkeypatch.setattr(bootstrap_executor, "write_skeleton", killed_once)
    job = build_bootstrap_job(cfg, DagsterHudiTranslator())
    assert job is not None
    result = job.execute_in_process()

    assert result.success
    assert [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    timeline = HudiTable(cfg.base_path).timeline
    assert [i.action for i in timeline.completed()] == [Action.DELTA_COMMIT, Action.ROLLBACK]
    _check_read(Path(cfg.base_path), rows, dict.fromkeys(DATES, BootstrapMode.METADATA_ONLY))
    # no skeleton of the failed attempt is left: one base file per source file
    assert len(list(Path(cfg.base_path).rglob("*.parquet"))) == len(list((tmp_path / "source").rglob("*.parquet")))
