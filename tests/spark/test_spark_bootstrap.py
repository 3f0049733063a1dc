"""Bootstrap on Spark: skeleton tasks and the FULL_RECORD bulk insert on the Spark engine, and Spark's snapshot read of
the bootstrapped table (each skeleton stitched with its source file on the executor)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from lake_orchestration.engines.spark import SparkEngine
from lake_orchestration.hudi.services.bootstrap import BootstrapMode, bootstrap
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.engine_read import read_snapshot_on
from tests.hudi.services.test_bootstrap import (
    DATA_COLUMNS,
    DATES,
    _check_read,
    _config,
    _full_record_for,
    _hashes,
    _make_source,
)

pytestmark = pytest.mark.spark


def test_bootstrap_on_spark_regex_mixed_reads_source_rows(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "source"
    rows = _make_source(root)
    before = _hashes(root)
    table_path = tmp_path / "table"
    config = _config(root, **_full_record_for("dt=2024-01-02"))
    result = bootstrap(str(table_path), config, engine=SparkEngine(spark))

    assert result.skeleton_files == 6 and result.full_record_rows == int((rows["dt"] == "2024-01-02").sum())
    # skeleton file names carry the Spark task attempt's write token
    assert all(p.name.count("_") == 2 for p in table_path.rglob("*_00000000000001.parquet"))
    modes = dict.fromkeys(DATES, BootstrapMode.METADATA_ONLY) | {"2024-01-02": BootstrapMode.FULL_RECORD}
    ours = _check_read(table_path, rows, modes)
    on_spark = read_snapshot_on(SparkEngine(spark), HudiTable(str(table_path))).to_pandas()
    on_spark = on_spark.sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(on_spark, ours[on_spark.columns], check_dtype=False)
    assert list(on_spark.columns[5:]) == DATA_COLUMNS
    assert _hashes(root) == before
