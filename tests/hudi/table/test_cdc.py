"""Bad input of CDC queries (``hoodie.datasource.query.incremental.format=cdc``): a table without a change log, an
unknown format, a CLI flag without its query type. The rows themselves are checked against Java's in
tests/java/test_cdc_java.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.cdc import CdcQueryError, incremental_format, read_cdc
from lake_orchestration.hudi.table.incremental import read_incremental
from tests.trips import trips_options, write_trips_history

FORMAT = "hoodie.datasource.query.incremental.format"


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("no-cdc") / "t"
    write_trips_history(path, trips_options(table_type=TableType.COPY_ON_WRITE), rows=20, upserts=1, fraction=0.3)
    return path


def test_a_table_without_cdc_is_refused_naming_it_and_the_key(plain: Path) -> None:
    for read in (
        lambda: read_cdc(HudiTable(str(plain)), begin_instant_time="0"),
        lambda: read_incremental(HudiTable(str(plain)), begin_instant_time="0", options={FORMAT: "cdc"}),
    ):
        with pytest.raises(CdcQueryError, match=r"hoodie\.table\.cdc\.enabled=true") as err:
            read()
        assert str(plain) in str(err.value)


def test_unknown_format_and_bad_flags_are_refused(plain: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match=rf"{FORMAT}='delta'.*latest_state or cdc"):
        incremental_format({FORMAT: "delta"})
    assert incremental_format({}) == "latest_state" and incremental_format({FORMAT: "CDC"}) == "cdc"
    out = str(tmp_path / "o.parquet")
    r = CliRunner().invoke(cli, ["read", str(plain), "--incremental-format", "cdc", "-o", out])
    assert r.exit_code == 2 and "need --query-type incremental" in r.output, r.output
    args = ["read", str(plain), "--query-type", "incremental", "--incremental-format", "cdc", "-o", out]
    r = CliRunner().invoke(cli, [*args, "--begin-instant-time", "0"])
    assert r.exit_code != 0 and "hoodie.table.cdc.enabled=true" in r.output + str(r.exception), r.output
    assert not Path(out).exists()
