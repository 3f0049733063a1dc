"""Compaction with its operations on Spark equals the in-process compaction, and hudi-rs reads the same rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lake_orchestration.engines.spark import SparkEngine
from lake_orchestration.hudi.services.compaction import run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from tests.hudi.services.test_compaction import _assert_compacted
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.tables import generated_table

pytestmark = pytest.mark.spark


def test_spark_compaction_equals_local_compaction(spark, tmp_path: Path) -> None:
    path = generated_table(tmp_path)
    before = hudi_rs_snapshot(path)
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    twin = tmp_path / "twin"
    shutil.copytree(path, twin)
    (on_spark,) = run_compaction(HudiTable(str(path)), engine=SparkEngine(spark))
    (local,) = run_compaction(HudiTable(str(twin)))
    assert on_spark.instant == local.instant == sched.instant
    _assert_compacted(path, str(sched.instant), before)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), read_snapshot_table(HudiTable(str(twin))),
                     ignore=REWRITTEN_BY_SERVICES)
    assert sorted(s.fileId for s in on_spark.stats) == sorted(s.fileId for s in local.stats)
    assert sum(s.numWrites for s in on_spark.stats) == sum(s.numWrites for s in local.stats)
