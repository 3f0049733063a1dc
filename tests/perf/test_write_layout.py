"""The vectorised write driver lays rows out as Hudi's partitioner rules say, checked against a plain-Python model.

bulk_insert: per partition, the rows sorted by key and cut into new file groups of ``max_rows_per_file`` (each base
file sorted by key, key ranges disjoint). insert with small files: the small file of the partition takes inserts in
arrival order up to its capacity, the rest go to new file groups cut from the key-sorted remainder. MERGE_ON_READ
upserts keep the arrival order of a group's records in its log block. hudi-rs reads every table equal to the model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.log.block_content import decode_avro_data
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, iter_blocks
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.oracle import hudi_rs_snapshot


def _base_files(path: str) -> dict[str, list[list[str]]]:
    """Partition -> the record keys of each latest base file (in file order)."""
    out: dict[str, list[list[str]]] = {}
    for fs in HudiTable(path).fs_view().latest_file_slices():
        keys = pq.read_table(Path(path) / fs.base_file.relative_path, columns=["_hoodie_record_key"])
        out.setdefault(fs.partition_path, []).append(keys.column(0).to_pylist())
    return out


def test_bulk_insert_cuts_key_sorted_partitions_into_groups_of_max_rows(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    rows = generate_trips(2500, partitions=3, seed=11)
    opts = WriteOptions(
        table_name="t",
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        max_rows_per_file=300,
    )
    write_table(path, rows, operation="bulk_insert", options=opts)

    model: dict[str, list[list[str]]] = {}
    for city in set(rows.column("city").to_pylist()):
        keys = sorted(r["uuid"] for r in rows.to_pylist() if r["city"] == city)
        model[city] = [keys[i : i + 300] for i in range(0, len(keys), 300)]
    got = _base_files(path)
    assert set(got) == set(model)
    for city, files in got.items():
        assert all(f == sorted(f) for f in files), "base file not sorted by key"
        assert sorted(files) == sorted(model[city])  # the same key chunks, each in one file
    theirs = hudi_rs_snapshot(path)
    assert theirs is not None
    assert sorted(theirs.column("uuid").to_pylist()) == sorted(rows.column("uuid").to_pylist())


def test_insert_fills_the_small_file_in_arrival_order_then_new_key_sorted_groups(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(
        table_name="t",
        table_type=TableType.COPY_ON_WRITE,
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        max_rows_per_file=100,
    )
    first = generate_trips(60, partitions=1, seed=1)
    write_table(path, first, operation="insert", options=opts)
    second = generate_trips(250, partitions=1, seed=2)  # same single city
    write_table(path, second, operation="insert", options=opts)

    incoming = second.column("uuid").to_pylist()
    fill = incoming[:40]  # the 60-row small file takes 40 more (max_rows_per_file 100), in arrival order
    rest = sorted(incoming[40:])
    expected = [sorted(first.column("uuid").to_pylist() + fill), *[rest[i : i + 100] for i in range(0, 210, 100)]]
    (files,) = _base_files(path).values()
    assert sorted(files) == sorted(expected)
    assert hudi_rs_snapshot(path).num_rows == 310


def test_mor_upsert_log_block_keeps_arrival_order_and_hudi_rs_reads_the_updates(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(
        table_name="t",
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        max_rows_per_file=400,
        small_file_limit=0,
    )
    base = generate_trips(1200, partitions=2, seed=3)
    write_table(path, base, operation="bulk_insert", options=opts)
    updates = generate_updates(base, fraction=0.25, seed=4)
    updates = updates.take(pa.array(list(range(updates.num_rows))[::-1]))  # not in key or file order
    write_table(path, updates, operation="upsert", options=opts)

    position = {k: i for i, k in enumerate(updates.column("uuid").to_pylist())}
    logged = 0
    for lf in Path(path).rglob(".*.log.*"):
        for block in iter_blocks(lf.read_bytes(), path=str(lf)):
            if block.block_type is LogBlockType.AVRO_DATA_BLOCK:
                text = block.get(HeaderKey.SCHEMA)
                keys = decode_avro_data(block.content, text, json.loads(text)).column("uuid").to_pylist()
                assert [position[k] for k in keys] == sorted(position[k] for k in keys)
                logged += len(keys)
    assert logged == updates.num_rows
    theirs = hudi_rs_snapshot(path)
    assert theirs is not None
    fares = dict(zip(theirs.column("uuid").to_pylist(), theirs.column("fare").to_pylist(), strict=True))
    for r in updates.to_pylist():
        assert fares[r["uuid"]] == r["fare"]


def test_writes_honour_hoodie_parquet_options_and_skip_the_dictionary_on_the_key(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.parquet.block.size": "65536",
        "hoodie.parquet.small.file.limit": "0",
    }
    rows = generate_trips(6000, partitions=1, seed=21)
    write_table(path, rows, operation="bulk_insert", options=WriteOptions.from_hudi_options(options))
    (fs,) = HudiTable(path).fs_view().latest_file_slices()
    meta = pq.read_metadata(Path(path) / fs.base_file.relative_path)
    assert meta.num_row_groups > 1  # closed by hoodie.parquet.block.size, not one group per write
    names = [meta.row_group(0).column(i).path_in_schema for i in range(meta.num_columns)]

    def encodings(name: str) -> set[str]:
        col = meta.row_group(0).column(names.index(name))
        return set(col.encodings)

    for unique in ("uuid", "_hoodie_record_key", "_hoodie_commit_seqno"):
        assert not encodings(unique) & {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}, unique
    assert encodings("rider") & {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}
    assert sorted(hudi_rs_snapshot(path).column("uuid").to_pylist()) == sorted(rows.column("uuid").to_pylist())


def test_an_invalid_hoodie_parquet_option_fails_before_any_instant(tmp_path: Path) -> None:
    from lake_orchestration.errors import InvalidOptionError

    path = str(tmp_path / "t")
    good = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
    }
    rows = generate_trips(100, partitions=1, seed=22)
    write_table(path, rows, operation="bulk_insert", options=WriteOptions.from_hudi_options(good))
    before = sorted(p.name for p in (Path(path) / ".hoodie").iterdir())
    bad = WriteOptions.from_hudi_options({**good, "hoodie.parquet.page.size": "big"})
    try:
        write_table(path, rows, operation="upsert", options=bad)
    except InvalidOptionError as err:
        assert "hoodie.parquet.page.size" in str(err) and "big" in str(err)
    else:
        raise AssertionError("no error for hoodie.parquet.page.size=big")
    assert sorted(p.name for p in (Path(path) / ".hoodie").iterdir()) == before
