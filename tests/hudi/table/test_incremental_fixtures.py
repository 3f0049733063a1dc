"""Incremental queries equal hudi-rs's (the `hudi` 0.5.0 wheel, query type Incremental; v6 ranges are
requested-instant times) on every v6 fixture table, over every range of its instants."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.incremental import IncrementalQueryError, read_incremental
from tests.conftest import HudiFixture
from tests.oracle import assert_same_rows


def hudi_rs_incremental(path: Path, begin: str, end: str | None) -> pa.Table | None:
    from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder

    opts = HudiReadOptions().with_query_type(HudiQueryType.Incremental).with_start_timestamp(begin)
    if end is not None:
        opts = opts.with_end_timestamp(end)
    batches = HudiTableBuilder.from_base_uri(str(path)).build().read(opts)
    return pa.Table.from_batches(batches) if batches else None


def _ranges(base: Path) -> list[tuple[str, str | None]]:
    """(begin, end) pairs: from 0, from each instant (a rollback's included), to each later instant or open."""
    times = sorted({p.name.split(".")[0] for p in (base / ".hoodie").iterdir() if p.name[:1].isdigit()})
    return [(b, e) for b in ["0", *times] for e in [None, *times] if e is None or e > b]


WITH_META = [f for f in HudiFixture if f is not HudiFixture.COW_NO_METAFIELDS]


@pytest.mark.parametrize("fixture", WITH_META, ids=lambda f: f.name)
def test_incremental_equals_hudi_rs_on_fixture(fixture: HudiFixture, hudi_fixture) -> None:
    base = hudi_fixture(fixture)
    table = HudiTable(str(base))
    for begin, end in _ranges(base):
        result = read_incremental(table, begin_instant_time=begin, end_instant_time=end)
        try:
            assert_same_rows(result.table, hudi_rs_incremental(base, begin, end))
        except AssertionError as err:
            raise AssertionError(f"range ({begin}, {end}]: {err}") from err
        times = [str(i.time) for i in result.instants]
        assert all(begin < t and (end is None or t <= end) for t in times), times
        assert result.checkpoint == (times[-1] if times else begin)
        if result.table.num_rows:
            assert set(result.table.column("_hoodie_commit_time").to_pylist()) <= set(times)


def test_incremental_refuses_a_table_without_meta_fields(hudi_fixture) -> None:
    """No _hoodie_commit_time to select by: Java refuses ("Incremental queries are not supported when meta fields
    are disabled"); hudi-rs returns every row whatever the range, which we do not copy."""
    base = hudi_fixture(HudiFixture.COW_NO_METAFIELDS)
    with pytest.raises(IncrementalQueryError, match=r"hoodie\.populate\.meta\.fields=false") as err:
        read_incremental(HudiTable(str(base)), begin_instant_time="0")
    assert str(base) in str(err.value)


def test_read_cli_incremental_equals_hudi_rs(hudi_fixture, tmp_path: Path) -> None:
    import json

    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from lake_orchestration.cli.app import cli

    base = hudi_fixture(HudiFixture.MOR_SIMPLE_NONHIVE)
    first, second = "20250121000547796", "20250121000557095"
    out = tmp_path / "changes.parquet"
    args = ["read", str(base), "--query-type", "incremental", "--begin-instant-time", first, "-o", str(out), "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["instants"] == [second] and summary["checkpoint"] == second, summary
    assert_same_rows(pq.read_table(out), hudi_rs_incremental(base, first, None))
    assert summary["rows"] == 2

    # an end bound before any instant of the range: nothing, checkpoint stays at the begin
    r = CliRunner().invoke(cli, [*args[:5], "0", "--end-instant-time", "20250101000000000", "-o", str(out), "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["checkpoint"] == "0", r.output
    assert pq.read_table(out).num_rows == 0

    r = CliRunner().invoke(cli, ["read", str(base), "--query-type", "incremental", "-o", str(out)])
    assert r.exit_code != 0 and "--begin-instant-time" in r.output
    r = CliRunner().invoke(cli, ["read", str(base), "--begin-instant-time", first, "-o", str(out)])
    assert r.exit_code != 0 and "--query-type incremental" in r.output
