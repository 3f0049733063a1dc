"""WriteBehind: the background-thread base file writer keeps batch order, the footer, and surfaces errors."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_orchestration.hudi.model.bloom_filter import FOOTER_BLOOM_KEY, HoodieBloomFilter
from lake_orchestration.hudi.model.schema import RECORD_KEY, avro_to_arrow_schema, with_meta_fields
from lake_orchestration.hudi.write.base_file import BaseFileWriter, WriteBehind
from lake_orchestration.io.storage import Storage

_AVRO = with_meta_fields(
    {"type": "record", "name": "r", "fields": [{"name": "uuid", "type": "string"}, {"name": "v", "type": "long"}]}
)


def _writer(tmp_path: Path) -> BaseFileWriter:
    return BaseFileWriter(
        Storage(str(tmp_path)),
        partition_path="p",
        file_id="f1",
        write_token="0-1-0",
        instant="20240101000000000",
        avro_schema=_AVRO,
        arrow_schema=avro_to_arrow_schema(_AVRO),
        compression="snappy",
    )


def _batch(lo: int, hi: int) -> pa.Table:
    keys = [f"k{i:06d}" for i in range(lo, hi)]
    return pa.table({RECORD_KEY: keys, "uuid": keys, "v": pa.array(range(lo, hi), pa.int64())})


def test_write_behind_keeps_order_and_footer(tmp_path: Path) -> None:
    w = WriteBehind(_writer(tmp_path), depth=1)
    for lo in range(0, 5000, 700):
        w.write(_batch(lo, min(lo + 700, 5000)))
    f = w.close()
    out = pq.read_table(tmp_path / f.relative_path)
    assert out.column("v").to_pylist() == list(range(5000))
    meta = pq.read_metadata(tmp_path / f.relative_path).metadata
    assert meta[b"hoodie_min_record_key"] == b"k000000" and meta[b"hoodie_max_record_key"] == b"k004999"
    bloom = HoodieBloomFilter.deserialize(meta[FOOTER_BLOOM_KEY.encode()].decode(), "DYNAMIC_V0")
    assert bloom.might_contain_all(out.column("uuid")).all()


def test_write_behind_raises_the_writer_threads_error_and_stops(tmp_path: Path) -> None:
    w = WriteBehind(_writer(tmp_path), depth=1)
    bad = pa.table({RECORD_KEY: ["a"], "uuid": ["a"], "v": ["not a long"]})
    w.write(bad)
    with pytest.raises(pa.ArrowInvalid):
        for lo in range(0, 100_000, 10):  # a later write (or close) re-raises on the caller's thread
            w.write(_batch(lo, lo + 10))
        w.close()
    assert not any(t.name.startswith("write-behind") for t in threading.enumerate())
