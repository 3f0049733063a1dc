"""The Spark engine (one task per file slice) reads the same snapshot as the local engine and hudi-rs."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_orchestration.demo.table import build_demo_table
from lake_orchestration.engines.spark import SparkEngine
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.engine_read import read_snapshot_on
from tests.conftest import HudiFixture
from tests.oracle import assert_same_rows, hudi_rs_snapshot

pytestmark = pytest.mark.spark


def test_spark_engine_demo_table_equals_local_and_hudi_rs(spark, tmp_path: Path) -> None:
    demo = build_demo_table(tmp_path / "demo", rows=600, echo=lambda _m: None)
    table = HudiTable(demo.path)
    ours = read_snapshot_on(SparkEngine(spark), table)
    assert ours.num_rows == demo.expected_rows
    assert_same_rows(ours, read_snapshot_table(table))
    assert_same_rows(ours, hudi_rs_snapshot(demo.path))


def test_spark_engine_rollback_fixture_equals_hudi_rs(spark, hudi_fixture) -> None:
    base = hudi_fixture(HudiFixture.MOR_ROLLBACK)
    ours = read_snapshot_on(SparkEngine(spark), HudiTable(str(base)))
    assert_same_rows(ours, hudi_rs_snapshot(base))
