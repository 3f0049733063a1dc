"""`lake-orch read` returns exactly the rows the `hudi` wheel reads, for every v6 fixture table."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from tests.conftest import HudiFixture
from tests.oracle import assert_same_rows, hudi_rs_snapshot

# Row counts the oracle returns (reference/hudi/fixtures.md).
EXPECTED_ROWS = {
    HudiFixture.TRIPS_MOR_AVRO: 5,
    HudiFixture.COW_COMPLEX_HIVE: 4,
    HudiFixture.COW_EMPTY: 0,
    HudiFixture.COW_NONPARTITIONED: 4,
    HudiFixture.COW_NO_METAFIELDS: 4,
    HudiFixture.COW_SIMPLE_NONHIVE: 4,
    HudiFixture.COW_OVERWRITE_TABLE: 1,
    HudiFixture.COW_TIMEBASED: 4,
    HudiFixture.MOR_COMPLEX_HIVE: 4,
    HudiFixture.MOR_EMPTY: 0,
    HudiFixture.MOR_ROLLBACK: 3,
    HudiFixture.MOR_SIMPLE_NONHIVE: 4,
}


@pytest.mark.parametrize("fixture", list(HudiFixture), ids=lambda f: f.name)
def test_read_cli_fixture_table_equals_hudi_rs_snapshot(fixture: HudiFixture, hudi_fixture, tmp_path: Path) -> None:
    base = hudi_fixture(fixture)
    out = tmp_path / "snapshot.parquet"
    result = CliRunner().invoke(cli, ["read", str(base), "--output", str(out)])
    assert result.exit_code == 0, result.output
    ours = pq.read_table(out)
    assert ours.num_rows == EXPECTED_ROWS[fixture]
    key = "_hoodie_record_key" if "_hoodie_record_key" in ours.column_names else "id"
    assert_same_rows(ours, hudi_rs_snapshot(base), key=key)


def test_read_mor_rollback_fixture_drops_rolled_back_update(hudi_fixture, tmp_path: Path) -> None:
    """The rolled-back deltacommit 20250126040826878 (update of id 1, insert of id 4) must not show."""
    base = hudi_fixture(HudiFixture.MOR_ROLLBACK)
    out = tmp_path / "s.parquet"
    result = CliRunner().invoke(cli, ["read", str(base), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    rows = pq.read_table(out).sort_by("id").to_pylist()
    assert [r["id"] for r in rows] == [1, 2, 3]
    assert "20250126040826878" not in {r["_hoodie_commit_time"] for r in rows}
    assert '"rollback_blocks": 1' in result.output


def test_read_trips_fixture_applies_delete_block(hudi_fixture, tmp_path: Path) -> None:
    base = hudi_fixture(HudiFixture.TRIPS_MOR_AVRO)
    out = tmp_path / "s.parquet"
    assert CliRunner().invoke(cli, ["read", str(base), "-o", str(out)]).exit_code == 0
    keys = set(pq.read_table(out).column("_hoodie_record_key").to_pylist())
    deleted = {
        "e96c4396-3fad-413a-a942-4cb36106d721",
        "9909a8b1-2d15-4d3d-8ec9-efc48c536a00",
        "334e26e9-8355-45cc-97c6-c31daf0df330",
    }
    assert not keys & deleted
    assert len(keys) == 5
