"""Write sequences read back — through hudi-rs — exactly as an independent pandas model of the sequence expects."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.errors import InvalidTablePropertiesError
from lake_orchestration.hudi.log.log_format import LogBlockType, iter_blocks
from lake_orchestration.hudi.model.bloom_filter import FOOTER_BLOOM_KEY, HoodieBloomFilter
from lake_orchestration.hudi.model.instant import State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.conftest import REPO_ROOT, HudiFixture
from tests.oracle import assert_same_rows, hudi_rs_snapshot


def _model(history: list[tuple[str, pd.DataFrame]], key_cols: tuple[str, ...]) -> pd.DataFrame:
    """Independent expectation: upserts replace by key (greatest ts wins), deletes remove."""
    state: dict[tuple, dict] = {}
    for op, df in history:
        for row in df.to_dict("records"):
            k = tuple(row[c] for c in key_cols)
            if op == "delete":
                state.pop(k, None)
            elif k not in state or row["ts"] >= state[k]["ts"]:
                state[k] = row
    return pd.DataFrame(list(state.values())).sort_values("uuid").reset_index(drop=True)


CASES = [
    pytest.param(TableType.MERGE_ON_READ, ("city",), ("uuid",), id="mor-partitioned-simple"),
    pytest.param(TableType.MERGE_ON_READ, (), ("uuid",), id="mor-nonpartitioned-simple"),
    pytest.param(TableType.MERGE_ON_READ, ("city",), ("uuid", "rider"), id="mor-partitioned-composite"),
    pytest.param(TableType.COPY_ON_WRITE, ("city",), ("uuid",), id="cow-partitioned-simple"),
    pytest.param(TableType.COPY_ON_WRITE, (), ("uuid", "rider"), id="cow-nonpartitioned-composite"),
]


@pytest.mark.parametrize(("table_type", "partitions", "keys"), CASES)
def test_write_bulk_insert_upserts_delete_upsert_hudi_rs_reads_model(
    tmp_path: Path, table_type: TableType, partitions: tuple[str, ...], keys: tuple[str, ...]
) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(
        table_name="t",
        table_type=table_type,
        record_key_fields=keys,
        partition_fields=partitions,
        precombine_field="ts",
        hive_style_partitioning=True,
        max_rows_per_file=150,
        small_file_limit=0,
    )
    base = generate_trips(300, partitions=3, seed=1)
    history = [("upsert", base.to_pandas())]
    write_table(path, base, operation="bulk_insert", options=opts)
    for n in range(5):
        upd = pa.concat_tables(
            [generate_updates(base, fraction=0.15, seed=n, ts_offset=(n + 1) * 10**7), generate_trips(15, seed=50 + n)]
        )
        write_table(path, upd, operation="upsert", options=opts)
        history.append(("upsert", upd.to_pandas()))
    dele = pick_deletes(base, fraction=0.1, seed=70)
    write_table(path, dele, operation="delete", options=opts)
    history.append(("delete", dele.to_pandas()))
    last = pa.concat_tables(
        [generate_updates(base, fraction=0.1, seed=99, ts_offset=9 * 10**7), generate_trips(10, seed=98)]
    )
    write_table(path, last, operation="upsert", options=opts)
    history.append(("upsert", last.to_pandas()))

    expected = _model(history, keys)
    theirs = hudi_rs_snapshot(path)
    assert theirs is not None
    got = theirs.to_pandas().sort_values("uuid").reset_index(drop=True)
    assert got["uuid"].tolist() == expected["uuid"].tolist()
    assert got["fare"].tolist() == expected["fare"].tolist()
    assert got["ts"].tolist() == expected["ts"].tolist()
    assert got["city"].tolist() == expected["city"].tolist()
    assert_same_rows(read_snapshot_table(HudiTable(path)), theirs)
    t = HudiTable(path)
    assert all(i.is_completed for i in t.timeline)
    assert not (tmp_path / "t" / ".hoodie" / ".temp").exists() or not any(
        (tmp_path / "t" / ".hoodie" / ".temp").iterdir()
    )


def test_write_cow_upsert_rewrites_base_file_preserving_unchanged_commit_times(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(
        table_name="t",
        table_type=TableType.COPY_ON_WRITE,
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        small_file_limit=0,
    )
    base = generate_trips(100, partitions=1, seed=4)
    first = write_table(path, base, operation="bulk_insert", options=opts)
    upd = generate_updates(base, fraction=0.1, seed=5)
    second = write_table(path, upd, operation="upsert", options=opts)
    (fs,) = HudiTable(path).fs_view().latest_file_slices()
    assert fs.base_instant == second.instant and not fs.log_files
    rows = pq.read_table(tmp_path / "t" / fs.base_file.relative_path).to_pylist()
    updated = set(upd.column("uuid").to_pylist())
    for r in rows:
        assert r["_hoodie_commit_time"] == (second.instant if r["uuid"] in updated else first.instant)
        assert r["_hoodie_file_name"] == fs.base_file.name
    stat = second.metadata.write_stats()[0]
    assert (stat.numUpdateWrites, stat.numWrites, stat.prevCommit) == (10, 100, first.instant)


def test_write_base_file_footer_bloom_contains_every_key(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(table_name="t", record_key_fields=("uuid",), partition_fields=("city",))
    write_table(path, generate_trips(500, partitions=1, seed=2), operation="bulk_insert", options=opts)
    (fs,) = HudiTable(path).fs_view().latest_file_slices()
    f = tmp_path / "t" / fs.base_file.relative_path
    meta = {k.decode(): v.decode() for k, v in pq.read_metadata(f).metadata.items()}
    keys = pq.read_table(f).column("_hoodie_record_key").to_pylist()
    bloom = HoodieBloomFilter.deserialize(meta[FOOTER_BLOOM_KEY], meta["hoodie_bloom_filter_type_code"])
    assert all(bloom.might_contain_all(keys))
    assert meta["hoodie_min_record_key"] == min(keys) and meta["hoodie_max_record_key"] == max(keys)
    assert '"_hoodie_commit_time"' in meta["parquet.avro.schema"]


def test_write_small_file_takes_inserts_instead_of_new_group(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(
        table_name="t", table_type=TableType.COPY_ON_WRITE, record_key_fields=("uuid",), partition_fields=("city",)
    )
    write_table(path, generate_trips(50, partitions=1, seed=1), operation="insert", options=opts)
    write_table(path, generate_trips(30, partitions=1, seed=2), operation="insert", options=opts)
    slices = HudiTable(path).fs_view().latest_file_slices()
    assert len(slices) == 1
    assert hudi_rs_snapshot(path).num_rows == 80


def test_write_options_mismatch_existing_table_raises_naming_key(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(table_name="t", record_key_fields=("uuid",), partition_fields=("city",))
    write_table(path, generate_trips(10, seed=1), operation="insert", options=opts)
    before = sorted(p.name for p in (tmp_path / "t" / ".hoodie").iterdir())
    bad = WriteOptions(table_name="t", record_key_fields=("rider",))
    with pytest.raises(InvalidTablePropertiesError, match=r"hoodie.table.recordkey.fields='rider'.*'uuid'"):
        write_table(path, generate_trips(10, seed=2), operation="upsert", options=bad)
    assert sorted(p.name for p in (tmp_path / "t" / ".hoodie").iterdir()) == before


def test_write_hudi_options_keys_create_table(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions.from_hudi_options(
        {
            "hoodie.table.name": "trips",
            "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
            "hoodie.datasource.write.recordkey.field": "uuid",
            "hoodie.datasource.write.partitionpath.field": "city",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.hive_style_partitioning": "true",
        }
    )
    write_table(path, generate_trips(20, seed=3), operation="insert", options=opts)
    cfg = HudiTable(path).config
    assert (cfg.table_type, cfg.record_key_fields, cfg.partition_fields, cfg.precombine_field) == (
        TableType.COPY_ON_WRITE,
        ("uuid",),
        ("city",),
        "ts",
    )
    assert all(p.startswith("city=") for p in HudiTable(path).list_partitions())


@pytest.mark.parametrize(
    "fixture",
    [
        HudiFixture.TRIPS_MOR_AVRO,
        HudiFixture.MOR_SIMPLE_NONHIVE,
        HudiFixture.MOR_ROLLBACK,
        HudiFixture.COW_COMPLEX_HIVE,
        HudiFixture.COW_NONPARTITIONED,
    ],
    ids=lambda f: f.name,
)
def test_write_upsert_delete_into_java_fixture_hudi_rs_reads_expected(fresh_fixture, fixture: HudiFixture) -> None:
    base = fresh_fixture(fixture)
    t = HudiTable(str(base))
    before = read_snapshot_table(t)
    key_field = t.config.record_key_fields[0]
    order = t.config.precombine_field
    rows = before.drop_columns([c for c in before.column_names if c.startswith("_hoodie_")])
    # update every row (bigger ordering value, changed payload) and delete the first one
    upd = rows.set_column(
        rows.schema.get_field_index(order),
        order,
        pa.compute.add(rows.column(order), pa.scalar(10**6, rows.schema.field(order).type)),
    )
    upd = upd.slice(1)
    write_table(str(base), upd, operation="upsert")
    write_table(str(base), rows.slice(0, 1), operation="delete")
    after = hudi_rs_snapshot(base)
    assert after is not None and after.num_rows == before.num_rows - 1
    exp = {r[key_field]: r[order] for r in upd.to_pylist()}
    got = {r[key_field]: r[order] for r in after.to_pylist()}
    assert got == exp
    assert_same_rows(read_snapshot_table(HudiTable(str(base))), after)
    # every log file we wrote decodes with the reference layout (no corrupt block)
    for f in base.rglob(".*.log.*"):
        assert all(b.block_type is not LogBlockType.CORRUPT_BLOCK for b in iter_blocks(f.read_bytes()))


# a write of 200 base files (100,000 rows, 500 a file), long enough to be killed midway (generating the rows was
# most of the test's time when it wrote the same 200 files of 2,000 rows)
_KILL_SCRIPT = """
import sys
from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.write import WriteOptions, write_table
opts = WriteOptions(table_name="t", record_key_fields=("uuid",), partition_fields=("city",), precombine_field="ts",
                    max_rows_per_file=500, small_file_limit=0)
write_table(sys.argv[1], generate_trips(100_000, partitions=8, seed=9), operation="insert", options=opts)
"""


def test_write_killed_midway_leaves_inflight_and_readers_see_previous_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = WriteOptions(table_name="t", record_key_fields=("uuid",), partition_fields=("city",), precombine_field="ts")
    write_table(str(path), generate_trips(200, partitions=3, seed=1), operation="bulk_insert", options=opts)
    before_ours = read_snapshot_table(HudiTable(str(path)))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(path)], env=env, cwd=REPO_ROOT)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            inflight = {p.name.split(".")[0] for p in (path / ".hoodie").glob("*.deltacommit.inflight")}
            done = {p.name.split(".")[0] for p in (path / ".hoodie").glob("*.deltacommit")}
            written = list(path.rglob("*.parquet"))
            if inflight - done and len(written) > 3 + 3:  # the write is inflight and some new files are on disk
                break
            assert proc.poll() is None, "the write finished before it could be killed"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    t = HudiTable(str(path))
    pending = t.timeline.pending()
    assert len(pending) == 1 and pending.instants[0].state is State.INFLIGHT
    assert (path / ".hoodie" / ".temp" / str(pending.instants[0].time)).is_dir()  # markers for the rollback
    assert_same_rows(read_snapshot_table(t), hudi_rs_snapshot(path))
    assert_same_rows(read_snapshot_table(t), before_ours)


def test_write_unsupported_keygen_fixture_refused_before_any_instant(fresh_fixture) -> None:
    base = fresh_fixture(HudiFixture.COW_TIMEBASED)
    before = sorted(p.name for p in (base / ".hoodie").iterdir())
    rows = read_snapshot_table(HudiTable(str(base)))
    with pytest.raises(ValueError, match="TimestampBasedKeyGenerator"):
        write_table(
            str(base), rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie")]), operation="upsert"
        )
    assert sorted(p.name for p in (base / ".hoodie").iterdir()) == before


def test_write_missing_table_column_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(table_name="t", record_key_fields=("uuid",), partition_fields=("city",), precombine_field="ts")
    base = generate_trips(20, seed=1)
    write_table(path, base, operation="insert", options=opts)
    with pytest.raises(ValueError, match=r"lack the table's column\(s\) \['fare'\]"):
        write_table(path, base.drop_columns(["fare"]), operation="upsert")


def test_write_first_write_with_bad_key_field_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = WriteOptions(table_name="t", record_key_fields=("nope",), partition_fields=("city",))
    with pytest.raises(ValueError, match=r"\['nope'\] are not columns"):
        write_table(str(path), generate_trips(5), operation="insert", options=opts)
    assert not path.exists()
