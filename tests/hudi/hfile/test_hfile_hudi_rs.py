"""Our HFile writer's files read by hudi-rs (the ``hudi`` 0.5.0 wheel), an independent HFile reader.

hudi-rs reads HFiles only as base files of a metadata table, decoding each value with the Avro schema stored in
the file info under ``schema``; so each file is placed as a base file of a minimal metadata table.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import fastavro
import hudi
import pytest

from lake_orchestration.hudi.hfile import Compression, HFileReader, HFileWriter, HFileWriterOptions

SCHEMA = {
    "type": "record",
    "name": "HoodieMetadataRecord",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "key", "type": "string"},
        {"name": "type", "type": "int"},
        {"name": "payload", "type": ["null", "string"], "default": None},
    ],
}
MDT_PROPERTIES = """hoodie.table.name=t_metadata
hoodie.table.type=MERGE_ON_READ
hoodie.table.version=6
hoodie.table.base.file.format=HFILE
hoodie.table.recordkey.fields=key
hoodie.populate.meta.fields=false
hoodie.table.keygenerator.class=org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator
hoodie.timeline.layout.version=1
"""
BASE_FILE = "files/files-0000-0_0-0-0_20240101000000000.hfile"


def _read_with_hudi_rs(tmp_path: Path, data: bytes) -> dict[str, list[object]]:
    mdt = tmp_path / "t" / ".hoodie" / "metadata"
    (mdt / ".hoodie").mkdir(parents=True)
    (mdt / ".hoodie" / "hoodie.properties").write_text(MDT_PROPERTIES)
    (mdt / "files").mkdir()
    (mdt / BASE_FILE).write_bytes(data)
    reader = hudi.HudiFileGroupReader(str(mdt))
    assert reader.is_metadata_table
    return reader.read_file_slice_from_paths(BASE_FILE, []).to_pydict()


@pytest.mark.parametrize(
    ("compression", "block_size", "max_chunk_size"),
    [(Compression.NONE, 64 * 1024, 128 * 1024), (Compression.GZ, 1024, 512)],
    ids=["none-single-level", "gz-multi-level"],
)
def test_hudi_rs_reads_every_record_of_our_hfile(
    tmp_path: Path, compression: Compression, block_size: int, max_chunk_size: int
) -> None:
    rng = random.Random(3)
    keys = sorted({f"key-{'k' * rng.randrange(0, 60)}-{rng.randrange(10**9):09d}" for _ in range(3000)})
    rows = [
        {"key": k, "type": rng.randrange(1, 6), "payload": None if i % 7 == 0 else f"v{i}"} for i, k in enumerate(keys)
    ]
    parsed = fastavro.parse_schema(SCHEMA)
    writer = HFileWriter(
        HFileWriterOptions(
            block_size=block_size,
            max_chunk_size=max_chunk_size,
            compression=compression,
            comparator_class_name="org.apache.hudi.io.storage.HoodieHBaseKVComparator",
        )
    )
    for row in rows:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, row)
        writer.append(row["key"], buf.getvalue())
    writer.append_file_info("schema", json.dumps(SCHEMA).encode())
    data = writer.finish()
    levels = HFileReader(data).trailer.num_data_index_levels
    assert levels == (1 if compression is Compression.NONE else 3)

    got = _read_with_hudi_rs(tmp_path, data)
    assert got == {
        "key": [r["key"] for r in rows],
        "type": [r["type"] for r in rows],
        "payload": [r["payload"] for r in rows],
    }
