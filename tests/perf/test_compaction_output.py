"""The layout of the base files a compaction writes: row groups sized by ``hoodie.parquet.block.size`` (not one per
merged batch), dictionary and page settings as configured, the codec at parquet-mr's level, the same rows as hudi-rs
read before and Java's footer metadata whatever the layout (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.hudi.model.bloom_filter import HoodieBloomFilter
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot

FOOTER_KEYS = {
    b"org.apache.hudi.bloomfilter",
    b"hoodie_bloom_filter_type_code",
    b"hoodie_min_record_key",
    b"hoodie_max_record_key",
    b"parquet.avro.schema",
    b"writer.model.name",
}
UNIQUE = ("_hoodie_commit_seqno", "_hoodie_record_key", "uuid")


def _table(path: Path, rows: int, *, codec: str = "gzip") -> Path:
    """A MERGE_ON_READ table of one file group (project writer, Hudi's defaults but the codec), 10 % updated."""
    opts = WriteOptions(
        table_name="t", table_type=TableType.MERGE_ON_READ, record_key_fields=("uuid",), partition_fields=("city",),
        precombine_field="ts", hive_style_partitioning=True, max_rows_per_file=rows, compression=codec,
    )  # fmt: skip
    base = generate_trips(rows, partitions=1, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    write_table(str(path), generate_updates(base, fraction=0.1, seed=2), operation="upsert", options=opts)
    return path


def _compact(path: Path, cfg: CompactionConfig) -> pq.ParquetFile:
    """Compact the table; the new base file."""
    t = HudiTable(str(path))
    sched = schedule_compaction(t, force=True)
    assert sched.scheduled, sched.reason
    (r,) = run_compaction(HudiTable(str(path)), config=cfg)
    (stat,) = r.stats
    return pq.ParquetFile(str(path / stat.path))


def _encodings(pf: pq.ParquetFile) -> dict[str, set[str]]:
    md = pf.metadata
    out: dict[str, set[str]] = {}
    for i in range(md.num_row_groups):
        for j in range(md.num_columns):
            c = md.row_group(i).column(j)
            out.setdefault(c.path_in_schema, set()).update(c.encodings)
    return out


def _group_bytes(md: pq.FileMetaData, i: int) -> int:
    return sum(md.row_group(i).column(j).total_compressed_size for j in range(md.num_columns))


@pytest.fixture(scope="module")
def small_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _table(tmp_path_factory.mktemp("small") / "t", 120_000)


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_row_groups_sized_by_block_size_rows_and_footer_kept(small_table: Path, tmp_path: Path) -> None:
    """A small hoodie.parquet.block.size gives several row groups of about that many compressed bytes; the rows are
    what hudi-rs read before, and the footer's key-value metadata is byte for byte the one written with one row
    group (same bloom filter, min/max keys, schema)."""
    block = 400_000
    small = _copy(small_table, tmp_path / "small")
    before = hudi_rs_snapshot(small)
    pf = _compact(small, CompactionConfig.from_options({"hoodie.parquet.block.size": str(block)}))
    md = pf.metadata
    assert md.num_rows == 120_000
    assert md.num_row_groups >= 4, md.num_row_groups
    sizes = [_group_bytes(md, i) for i in range(md.num_row_groups)]
    for i, size in enumerate(sizes[:-1]):
        assert 0.6 * block <= size <= 1.4 * block, (i, sizes)
    assert sizes[-1] <= 1.4 * block, sizes
    assert_same_rows(hudi_rs_snapshot(small), before, ignore=REWRITTEN_BY_SERVICES)

    one = _copy(small_table, tmp_path / "one")
    pf1 = _compact(one, CompactionConfig())
    assert pf1.metadata.num_row_groups == 1  # 120,000 rows: far below 120 MiB
    assert_same_rows(hudi_rs_snapshot(one), before, ignore=REWRITTEN_BY_SERVICES)
    # the Parquet schema is the one pyarrow writes for the plain Arrow schema (_hoodie_file_name: BYTE_ARRAY UTF8)
    data = pf.read()
    assert data.schema.field("_hoodie_file_name").type == pa.string()
    sink = pa.BufferOutputStream()
    pq.write_table(data, sink, version="1.0", store_schema=False)
    assert pf.schema.equals(pq.read_metadata(pa.BufferReader(sink.getvalue())).schema)
    assert pf.schema.equals(pf1.schema)
    kv, kv1 = md.metadata, pf1.metadata.metadata
    assert set(kv) == FOOTER_KEYS == set(kv1)  # Java's keys only (no ARROW:schema)
    assert kv == kv1
    # and they hold what Java would write: min/max keys and a filter that contains every key
    keys = pf.read(columns=["_hoodie_record_key"]).column(0)
    mm = pc.min_max(keys)
    assert kv[b"hoodie_min_record_key"].decode() == mm["min"].as_py()
    assert kv[b"hoodie_max_record_key"].decode() == mm["max"].as_py()
    bloom = HoodieBloomFilter.deserialize(
        kv[b"org.apache.hudi.bloomfilter"].decode(), kv[b"hoodie_bloom_filter_type_code"].decode()
    )
    assert bloom.might_contain_all(keys).all()


def test_row_groups_with_spilled_log_side(small_table: Path, tmp_path: Path) -> None:
    """Spilling (hoodie.memory.compaction.max.size) with buffered row groups: the buffered rows read from the
    memory-mapped spill files are written before the spill files go; rows as hudi-rs read them before."""
    path = _copy(small_table, tmp_path / "t")
    before = hudi_rs_snapshot(path)
    cfg = CompactionConfig.from_options(
        {"hoodie.parquet.block.size": "400000", "hoodie.memory.compaction.max.size": "2048"}
    )
    md = _compact(path, cfg).metadata
    assert md.num_rows == 120_000 and md.num_row_groups >= 4
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)


def test_default_block_size_writes_one_row_group_per_1m_row_file_group(tmp_path: Path) -> None:
    """Hudi's default 120 MiB block size: a file group of 1,000,000 rows (~100 MB of snappy) is one row group, not
    one per merged batch of 131,072 rows."""
    path = _table(tmp_path / "t", 1_000_000, codec="snappy")
    pf = _compact(path, CompactionConfig(compression="snappy"))
    assert pf.metadata.num_rows == 1_000_000
    assert pf.metadata.num_row_groups == 1
    assert pf.metadata.row_group(0).column(0).compression == "SNAPPY"


def test_dictionary_and_page_size_as_configured(small_table: Path, tmp_path: Path) -> None:
    on = _copy(small_table, tmp_path / "on")
    enc = _encodings(_compact(on, CompactionConfig()))
    for name in UNIQUE:  # unique by construction: PLAIN, no dictionary to fall back from
        assert "PLAIN_DICTIONARY" not in enc[name] and "PLAIN" in enc[name], (name, enc[name])
    for name in ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_file_name", "rider", "city"):
        assert enc[name] >= {"PLAIN_DICTIONARY"} and "PLAIN" not in enc[name], (name, enc[name])

    off = _copy(small_table, tmp_path / "off")
    enc = _encodings(_compact(off, CompactionConfig.from_options({"hoodie.parquet.dictionary.enabled": "false"})))
    assert not [n for n, e in enc.items() if "PLAIN_DICTIONARY" in e or "RLE_DICTIONARY" in e], enc

    # hoodie.parquet.page.size is also the dictionary page limit (as Hudi sets it): the 500 riders' dictionary
    # (~5 KB) does not fit in 1 KiB, so the column falls back to PLAIN
    tiny = _copy(small_table, tmp_path / "tiny")
    before = hudi_rs_snapshot(tiny)
    enc = _encodings(_compact(tiny, CompactionConfig.from_options({"hoodie.parquet.page.size": "1024"})))
    assert {"PLAIN_DICTIONARY", "PLAIN"} <= enc["rider"], enc["rider"]
    assert enc["city"] >= {"PLAIN_DICTIONARY"} and "PLAIN" not in enc["city"]  # 1 value: fits
    assert_same_rows(hudi_rs_snapshot(tiny), before, ignore=REWRITTEN_BY_SERVICES)


def test_gzip_at_parquet_mr_level(small_table: Path, tmp_path: Path) -> None:
    """gzip at zlib's default level 6 (parquet-mr through Hadoop's GzipCodec), not Arrow's default 9: the column
    chunks are exactly what Arrow writes at level 6."""
    from lake_orchestration.hudi.write.base_file import ParquetWriteConfig

    assert ParquetWriteConfig().level == 6 and ParquetWriteConfig(compression="zstd").level == 3
    assert ParquetWriteConfig(compression="snappy").level is None
    pf = _compact(_copy(small_table, tmp_path / "t"), CompactionConfig())
    data = pf.read()
    col = data.select(["rider"])
    sizes = {}
    for level in (6, 9):
        sink = pa.BufferOutputStream()
        pq.write_table(col, sink, compression="gzip", compression_level=level, version="1.0",
                       row_group_size=data.num_rows, store_schema=False)  # fmt: skip
        sizes[level] = pq.read_metadata(pa.BufferReader(sink.getvalue())).row_group(0).column(0).total_compressed_size
    got = pf.metadata.row_group(0).column(pf.schema_arrow.get_field_index("rider")).total_compressed_size
    assert got == sizes[6], (got, sizes)


def test_invalid_parquet_options_name_key_and_value() -> None:
    from lake_orchestration.hudi.write.base_file import ParquetWriteConfig

    with pytest.raises(InvalidOptionError, match=r"hoodie\.parquet\.block\.size='?0'?"):
        CompactionConfig.from_options({"hoodie.parquet.block.size": "0"})
    with pytest.raises(InvalidOptionError, match=r"hoodie\.parquet\.dictionary\.enabled='yes'"):
        CompactionConfig.from_options({"hoodie.parquet.dictionary.enabled": "yes"})
    with pytest.raises(InvalidOptionError, match=r"hoodie\.parquet\.page\.size='x'"):
        ParquetWriteConfig.from_options({"hoodie.parquet.page.size": "x"}, service="write")
