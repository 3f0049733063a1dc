"""Tables written by our writer read back, through hudi-rs, as an independent pandas computation expects."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.oracle import assert_same_rows, hudi_rs_snapshot


def _expected(frames: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """Independent model of the write sequence: upserts replace by key, deletes remove."""
    state: dict[str, dict] = {}
    for op, df in frames:
        for row in df.to_dict("records"):
            if op == "delete":
                state.pop(row["uuid"], None)
            else:
                state[row["uuid"]] = row
    return pd.DataFrame(list(state.values())).sort_values("uuid").reset_index(drop=True)


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "non_partitioned"])
def test_write_mor_sequence_hudi_rs_reads_expected_rows(tmp_path: Path, partitioned: bool) -> None:
    path = tmp_path / "t"
    opts = WriteOptions(
        table_name="t", table_type=TableType.MERGE_ON_READ, record_key_fields=("uuid",),
        partition_fields=("city",) if partitioned else (), precombine_field="ts", hive_style_partitioning=True,
    )
    base = generate_trips(400, partitions=3, seed=1)
    history = [("upsert", base.to_pandas())]
    write_table(str(path), base, operation="bulk_insert", options=opts)
    for n in range(3):
        upd = pa.concat_tables([generate_updates(base, fraction=0.2, seed=n, ts_offset=(n + 1) * 10**7),
                                generate_trips(20, seed=50 + n)])
        write_table(str(path), upd, operation="upsert", options=opts)
        history.append(("upsert", upd.to_pandas()))
        dele = pick_deletes(base, fraction=0.05, seed=70 + n)
        write_table(str(path), dele, operation="delete", options=opts)
        history.append(("delete", dele.to_pandas()))
    expected = _expected(history)
    theirs = hudi_rs_snapshot(path)
    assert theirs is not None
    got = theirs.to_pandas().sort_values("uuid").reset_index(drop=True)
    assert got["uuid"].tolist() == expected["uuid"].tolist()
    assert got["fare"].tolist() == expected["fare"].tolist()
    assert got["ts"].tolist() == expected["ts"].tolist()
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), theirs)


def test_write_log_files_named_with_base_instant_not_deltacommit(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = WriteOptions(table_name="t", record_key_fields=("uuid",), partition_fields=("city",), precombine_field="ts")
    base = generate_trips(50, partitions=1, seed=3)
    first = write_table(str(path), base, operation="bulk_insert", options=opts)
    second = write_table(str(path), generate_updates(base, fraction=0.5), operation="upsert", options=opts)
    t = HudiTable(str(path))
    (fs,) = t.fs_view().latest_file_slices()
    assert fs.base_instant == first.instant
    assert [lf.base_instant for lf in fs.log_files] == [first.instant]
    assert second.instant != first.instant
    stats = second.metadata.write_stats()
    assert stats[0].logFiles == [fs.log_files[0].name] and stats[0].prevCommit == first.instant
