"""Writes whose file-group tasks run on Spark give the tables hudi-rs reads as the model expects."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.engines.spark import SparkEngine
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.oracle import assert_same_rows, hudi_rs_snapshot

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("table_type", [TableType.MERGE_ON_READ, TableType.COPY_ON_WRITE], ids=["mor", "cow"])
def test_spark_write_sequence_equals_model(spark, tmp_path: Path, table_type: TableType) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(table_name="t", table_type=table_type, record_key_fields=("uuid",),
                        partition_fields=("city",), precombine_field="ts", hive_style_partitioning=True,
                        max_rows_per_file=200, small_file_limit=0)
    base = generate_trips(600, partitions=3, seed=3)
    write_table(path, spark.createDataFrame(base), operation="bulk_insert", options=opts, engine=SparkEngine(spark))
    upd = generate_updates(base, fraction=0.2, seed=4)
    write_table(path, upd, operation="upsert", options=opts, engine=SparkEngine(spark))
    dele = pick_deletes(base, fraction=0.05, seed=5)
    r = write_table(path, dele, operation="delete", options=opts, engine=SparkEngine(spark))
    assert r.deleted == dele.num_rows
    expected = {u: f for u, f in zip(base.column("uuid").to_pylist(), base.column("fare").to_pylist(), strict=True)}
    expected.update(zip(upd.column("uuid").to_pylist(), upd.column("fare").to_pylist(), strict=True))
    for u in dele.column("uuid").to_pylist():
        expected.pop(u)
    theirs = hudi_rs_snapshot(path)
    assert dict(zip(theirs.column("uuid").to_pylist(), theirs.column("fare").to_pylist(), strict=True)) == expected
    assert_same_rows(read_snapshot_table(HudiTable(path)), theirs)
    tokens = {s.path.rsplit("_", 2)[-2] for s in r.metadata.write_stats() if s.path and s.path.endswith(".parquet")}
    assert all(t.count("-") == 2 for t in tokens)
