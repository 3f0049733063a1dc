"""HFile writer -> reader round trips and the byte-level encodings, without the Java fixtures."""

from __future__ import annotations

import random
import struct

import pytest

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.hudi.hfile import (
    Compression,
    HFileReader,
    HFileWriter,
    HFileWriterOptions,
    SeekResult,
    Trailer,
)
from lake_orchestration.hudi.hfile.encoding import (
    crc32c,
    read_uvarint,
    read_vlong,
    write_uvarint,
    write_vlong,
)
from lake_orchestration.hudi.hfile.key import TYPE_MAXIMUM, TYPE_PUT, encode_key, index_key


def _write(entries: list[tuple[bytes, bytes]], **options: object) -> bytes:
    writer = HFileWriter(HFileWriterOptions(**options))  # type: ignore[arg-type]
    for key, value in entries:
        writer.append(key, value)
    return writer.finish()


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZ])
def test_round_trip_many_blocks_non_unique_keys_reads_back_every_entry(compression: Compression) -> None:
    rng = random.Random(7)
    keys = sorted(f"part={rng.randrange(300):05d};fileid={rng.randrange(10**6):x}".encode() for _ in range(3000))
    entries = [(k, rng.randbytes(rng.randrange(0, 200))) for k in keys]
    data = _write(entries, block_size=2048, compression=compression)
    reader = HFileReader(data, verify_checksums=True)
    assert [(r.key, r.value) for r in reader.records()] == entries
    assert reader.num_entries == len(entries)
    assert len(reader.data_blocks) > 50
    assert reader.trailer.num_data_index_levels == 1
    for key in sorted(set(keys))[::37]:
        assert reader.get_all(key) == [v for k, v in entries if k == key]


def test_round_trip_small_index_chunks_writes_a_multi_level_index() -> None:
    entries = [(f"key-{'x' * 80}-{i:07d}".encode(), str(i).encode()) for i in range(4000)]
    data = _write(entries, block_size=512, max_chunk_size=1024, compression=Compression.GZ)
    reader = HFileReader(data, verify_checksums=True)
    assert reader.trailer.num_data_index_levels >= 3
    assert [(r.key, r.value) for r in reader.records()] == entries
    cursor = reader.cursor()
    for key, value in entries[::53]:
        assert cursor.seek_to(key) is SeekResult.FOUND
        record = cursor.record()
        assert record is not None and record.value == value


def test_round_trip_empty_file_has_no_entries_and_unset_offsets() -> None:
    reader = HFileReader(_write([]))
    assert reader.num_entries == 0
    assert list(reader.records()) == []
    assert reader.trailer.first_data_block_offset == -1
    assert reader.last_key is None


def test_writer_file_info_and_meta_blocks_read_back_sorted() -> None:
    writer = HFileWriter()
    writer.append("a", b"1")
    writer.append_file_info("INDEX_INFO", b"\x01\x02")
    writer.append_meta_block("zeta", b"z")
    writer.append_meta_block("bloomFilter", b"b")
    reader = HFileReader(writer.finish())
    assert reader.file_info["INDEX_INFO"] == b"\x01\x02"
    assert reader.file_info["hfile.LASTKEY"] == encode_key(b"a")
    assert reader.meta_block_names == ("bloomFilter", "zeta")
    assert reader.meta_block("zeta") == b"z"
    assert reader.meta_block("absent") is None


def test_writer_reserved_file_info_prefix_raises_value_error() -> None:
    with pytest.raises(ValueError, match="reserved"):
        HFileWriter().append_file_info("hfile.LASTKEY", b"")


def test_writer_key_out_of_order_raises_value_error() -> None:
    writer = HFileWriter()
    writer.append("b", b"")
    with pytest.raises(ValueError, match="ascending order"):
        writer.append("a", b"")


def test_writer_duplicate_keys_never_split_across_blocks() -> None:
    entries = [(b"same", bytes(100))] * 100 + [(b"zz", b"")]
    reader = HFileReader(_write(entries, block_size=256))
    assert len(reader.data_blocks) == 2
    assert len(reader.block_records(0)) == 100


def test_index_key_midpoint_mirrors_hbase_get_midpoint() -> None:
    assert index_key(None, b"abc") == encode_key(b"abc", key_type=TYPE_PUT)
    # the byte after the common prefix can be bumped: "ab" + ("c"+1) sorts between
    assert index_key(b"abc", b"abz") == encode_key(b"abd", key_type=TYPE_MAXIMUM)
    # adjacent bytes: the right row's prefix up to the differing byte
    assert index_key(b"hudi-key-000000277", b"hudi-key-000000278") == encode_key(
        b"hudi-key-000000278", key_type=TYPE_MAXIMUM
    )
    assert index_key(b"hudi-key-000000469-x", b"hudi-key-000000470-x") == encode_key(
        b"hudi-key-00000047", key_type=TYPE_MAXIMUM
    )
    # left is a prefix of right
    assert index_key(b"ab", b"abcd") == encode_key(b"abc", key_type=TYPE_MAXIMUM)


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**32, 2**63 - 1, -1, -(2**63)])
def test_protobuf_varint_round_trip(value: int) -> None:
    encoded = write_uvarint(value)
    decoded, end = read_uvarint(encoded, 0)
    assert end == len(encoded)
    assert decoded == value % 2**64
    if value < 0:
        assert len(encoded) == 10


@pytest.mark.parametrize("value", [0, 1, -1, -112, -113, 127, 128, 255, 256, 70000, 2**40, -(2**40)])
def test_hadoop_vlong_round_trip_and_single_byte_range(value: int) -> None:
    encoded = write_vlong(value)
    assert read_vlong(encoded, 0) == (value, len(encoded))
    assert (len(encoded) == 1) == (-112 <= value <= 127)


def test_crc32c_known_vector() -> None:
    assert crc32c(b"123456789") == 0xE3069283


def test_trailer_serialize_parse_round_trip_is_4096_bytes() -> None:
    trailer = Trailer(
        file_info_offset=10,
        load_on_open_data_offset=5,
        uncompressed_data_index_size=3,
        total_uncompressed_bytes=9000,
        data_index_count=1,
        meta_index_count=0,
        entry_count=2,
        num_data_index_levels=1,
        first_data_block_offset=-1,
        last_data_block_offset=-1,
        comparator_class_name="c",
        compression=Compression.GZ,
    )
    raw = trailer.serialize()
    assert len(raw) == 4096
    assert raw[-4:] == struct.pack(">I", 3 | (3 << 24))
    assert Trailer.parse(raw) == trailer


def test_reader_random_corruption_raises_only_corrupt_file_error() -> None:
    rng = random.Random(11)
    entries = [(f"k{i:05d}".encode(), rng.randbytes(30)) for i in range(400)]
    for compression in (Compression.NONE, Compression.GZ):
        good = _write(entries, block_size=1024, max_chunk_size=256, compression=compression)
        for _ in range(300):
            data = bytearray(good)
            if rng.random() < 0.3:
                data = data[: rng.randrange(len(data))]
            else:
                for _ in range(rng.randrange(1, 4)):
                    data[rng.randrange(len(data))] = rng.randrange(256)
            try:
                reader = HFileReader(bytes(data), path="fuzz.hfile")
                list(reader.records())
                reader.get(b"k00200")
            except CorruptFileError as err:
                assert "fuzz.hfile" in str(err)
