"""A CDC-enabled table written by Java (``hoodie.table.cdc.enabled=true``): until our writes and compaction produce
the CDC log files Java produces, every service that would change data refuses it before writing anything, so no
change goes missing from Java's CDC queries."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.errors import UnsupportedTableFeatureError
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.services.log_compaction import schedule_log_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.java.harness import JavaHudi
from tests.java.interop import PARTITIONED, JavaTable, Model, assert_rows_equal, java_read, java_write, trips

pytestmark = [pytest.mark.java]

CDC = {"hoodie.table.cdc.enabled": "true", "hoodie.table.cdc.supplemental.logging.mode": "data_before_after"}


def _files(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_size for p in path.rglob("*") if p.is_file()}


@pytest.mark.interop(
    direction="Java writes → our service → Java reads",
    table="MOR partitioned, CDC enabled",
    service="write, compaction, log compaction, clean: refused",
    checks="each refuses with UnsupportedTableFeatureError naming hoodie.table.cdc.enabled; no file changed; "
    "Java's snapshot and CDC query unchanged",
)
def test_cdc_table_refused_before_anything_is_written(java_hudi: JavaHudi, tmp_path: Path) -> None:
    base = trips(120, seed=21)
    t = JavaTable(
        tmp_path / "t", PARTITIONED, TableType.MERGE_ON_READ, Model(("city", "uuid")), base.schema, [], tmp_path
    )
    java_write(java_hudi, t, base, "insert", **CDC)
    java_write(java_hudi, t, generate_updates(base, fraction=0.3, seed=2, ts_offset=10**6), "upsert", **CDC)
    props = (t.path / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.cdc.enabled=true" in props, "premise: Java made a CDC table"
    first = t.instants[0].split(".")[0]
    cdc_before = java_read(
        java_hudi,
        t,
        "incremental",
        **{"hoodie.datasource.query.incremental.format": "cdc", "hoodie.datasource.read.begin.instanttime": "0"},
    )
    files = _files(t.path)

    table = HudiTable(str(t.path))
    attempts = {
        "write": lambda: write_table(
            str(t.path), base.slice(0, 5), operation="upsert", options=PARTITIONED.write_options(t.table_type)
        ),
        "compaction": lambda: run_compaction(
            table, schedule=True, config=CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"})
        ),
        "log compaction": lambda: schedule_log_compaction(table),
        "clean": lambda: run_clean(table),
    }
    for name, attempt in attempts.items():
        with pytest.raises(UnsupportedTableFeatureError, match=r"hoodie\.table\.cdc\.enabled=true") as err:
            attempt()
        assert str(t.path) in str(err.value) or t.path.as_uri() in str(err.value), f"{name}: {err.value}"
        assert _files(t.path) == files, f"{name} changed files before refusing"

    assert_rows_equal(java_read(java_hudi, t), t.expected(), "Java's snapshot after the refusals")
    cdc_after = java_read(
        java_hudi,
        t,
        "incremental",
        **{"hoodie.datasource.query.incremental.format": "cdc", "hoodie.datasource.read.begin.instanttime": "0"},
    )
    assert cdc_after.num_rows == cdc_before.num_rows > 0, (cdc_before.num_rows, cdc_after.num_rows, first)
