"""The HFile reader and writer against the nine Java-written HFiles in ../shared/fixtures/hfiles.

Each fixture's content is known from its name and from the tests that wrote it (hudi-rs ``crates/core/src/hfile``,
apache/hudi ``TestHFileReader``): keys ``hudi-key-%09d`` (with a suffix or a long infix in some), values
``hudi-value-%09d``. The expected entries are generated here from that description, independently of the reader.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.hudi.hfile import (
    Compression,
    HFileReader,
    HFileWriter,
    HFileWriterOptions,
    SeekResult,
)
from tests.conftest import FIXTURE_HFILES, require_shared

pytestmark = pytest.mark.fixtures

LARGE = "hudi-key-" + "a" * 100 + "-"
"""The key prefix of the two ``large_keys`` fixtures."""


def _unique(n: int, key: Callable[[int], str] = lambda i: f"hudi-key-{i:09d}") -> list[tuple[str, str]]:
    return [(key(i), f"hudi-value-{i:09d}") for i in range(n)]


def _non_unique() -> list[tuple[str, str]]:
    out = []
    for i in range(200):
        out.append((f"hudi-key-{i:09d}", f"hudi-value-{i:09d}"))
        out.extend((f"hudi-key-{i:09d}", f"hudi-value-{i:09d}_{j}") for j in range(20))
    return out


@dataclass(frozen=True)
class Fixture:
    name: str
    entries: list[tuple[str, str]]
    compression: Compression
    block_size: int
    index_levels: int
    comparator: str = "org.apache.hadoop.hbase.KeyValue$KVComparator"
    max_chunk_size: int = 128 * 1024
    min_index_num_entries: int = 16

    @property
    def path(self) -> Path:
        return FIXTURE_HFILES / self.name


FIXTURES = [
    Fixture("hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile", _unique(5000), Compression.NONE, 16 * 1024, 1),
    Fixture("hudi_1_0_hbase_2_4_9_64KB_NONE_5000.hfile", _unique(5000), Compression.NONE, 64 * 1024, 1),
    Fixture("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile", _unique(20000), Compression.GZ, 16 * 1024, 1),
    Fixture("hudi_1_0_hbase_2_4_9_512KB_GZ_20000.hfile", _unique(20000), Compression.GZ, 512 * 1024, 1),
    Fixture("hudi_1_0_hbase_2_4_9_16KB_GZ_200_20_non_unique.hfile", _non_unique(), Compression.GZ, 16 * 1024, 1),
    Fixture(
        "hudi_1_0_hbase_2_4_13_16KB_GZ_20000_fake_first_key.hfile",
        _unique(20000, lambda i: f"hudi-key-{i:09d}-abcdefghij"),
        Compression.GZ,
        16 * 1024,
        1,
    ),
    Fixture(
        "hudi_1_0_hbase_2_4_13_1KB_GZ_20000_large_keys.hfile",
        _unique(20000, lambda i: f"{LARGE}{i:09d}"),
        Compression.GZ,
        1024,
        2,
    ),
    # Written with a 2 KB index chunk and 14 entries minimum per intermediate block (found by matching the
    # layout: these give the Java file byte for byte), which is what makes its index three levels deep.
    Fixture(
        "hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile",
        _unique(10000, lambda i: f"{LARGE}{i:09d}"),
        Compression.GZ,
        1024,
        3,
        max_chunk_size=2048,
        min_index_num_entries=14,
    ),
    Fixture(
        "hudi_1_0_hbase_2_4_9_no_entry.hfile",
        [],
        Compression.GZ,
        64 * 1024,
        1,
        comparator="org.apache.hudi.io.storage.HoodieHBaseKVComparator",
    ),
]
BY_NAME = {f.name: f for f in FIXTURES}
_IDS = [f.name.removeprefix("hudi_1_0_hbase_").removesuffix(".hfile") for f in FIXTURES]


@pytest.fixture(scope="module")
def readers() -> dict[str, HFileReader]:
    require_shared(FIXTURE_HFILES)
    return {f.name: HFileReader.open(f.path, verify_checksums=True) for f in FIXTURES}


def test_fixture_dir_holds_exactly_the_nine_java_files() -> None:
    require_shared(FIXTURE_HFILES)
    assert sorted(p.name for p in FIXTURE_HFILES.glob("*.hfile")) == sorted(BY_NAME)


@pytest.mark.parametrize("fixture", FIXTURES, ids=_IDS)
def test_reader_java_fixture_reads_every_entry_exactly(readers: dict[str, HFileReader], fixture: Fixture) -> None:
    reader = readers[fixture.name]
    expected = [(k.encode(), v.encode()) for k, v in fixture.entries]
    assert [(r.key, r.value) for r in reader.records()] == expected
    assert reader.num_entries == len(expected)
    trailer = reader.trailer
    assert (trailer.major_version, trailer.minor_version) == (3, 3)
    assert trailer.compression == fixture.compression
    assert trailer.num_data_index_levels == fixture.index_levels
    assert trailer.comparator_class_name == fixture.comparator
    assert reader.last_key == (expected[-1][0] if expected else None)
    assert reader.meta_block_names == ("bloomFilter",)


@pytest.mark.parametrize("fixture", FIXTURES, ids=_IDS)
def test_reader_java_fixture_file_info_holds_hbase_and_custom_entries(
    readers: dict[str, HFileReader], fixture: Fixture
) -> None:
    info = readers[fixture.name].file_info
    assert info["KEY_VALUE_VERSION"] == (1).to_bytes(4, "big")
    assert info["MAX_MEMSTORE_TS_KEY"] == bytes(8)
    assert info["hfile.CREATE_TIME_TS"] == bytes(8)
    n = len(fixture.entries)
    avg_key = sum(len(k) + 12 for k, _ in fixture.entries) // n if n else 0
    avg_value = sum(len(v) for _, v in fixture.entries) // n if n else 0
    assert int.from_bytes(info["hfile.AVG_KEY_LEN"], "big") == avg_key
    assert int.from_bytes(info["hfile.AVG_VALUE_LEN"], "big") == avg_value
    if n:
        assert info["hudi_hfile_testing.custom_key"] == b"hudi_custom_value"
    else:
        assert info["bloomFilterTypeCode"] == b"DYNAMIC_V0"
        assert info["minRecordKey"] == info["maxRecordKey"] == b""
        assert b'"name":"trip"' in info["schema"]
        assert "hfile.LASTKEY" not in info


def test_reader_empty_fixture_has_no_entries_and_a_gz_meta_block(readers: dict[str, HFileReader]) -> None:
    reader = readers["hudi_1_0_hbase_2_4_9_no_entry.hfile"]
    cursor = reader.cursor()
    assert cursor.seek_to_first() is False
    assert cursor.record() is None
    assert cursor.seek_to("hudi-key-000000000") is SeekResult.EOF
    assert reader.get("anything") is None
    assert reader.data_blocks == ()
    assert reader.trailer.first_data_block_offset == reader.trailer.last_data_block_offset == -1
    bloom = reader.meta_block("bloomFilter")
    assert bloom is not None and len(bloom) == 431380


def test_cursor_seek_exact_in_range_before_first_and_eof_as_hudi_reader(readers: dict[str, HFileReader]) -> None:
    cursor = readers["hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile"].cursor()
    assert cursor.seek_to_first()
    assert cursor.seek_to("aaa") is SeekResult.BEFORE_FILE_FIRST_KEY
    assert cursor.seek_to("hudi-key-000000100") is SeekResult.FOUND
    assert cursor.seek_to("hudi-key-000000100a") is SeekResult.IN_RANGE
    record = cursor.record()
    assert record is not None and record.key == b"hudi-key-000000100"
    assert cursor.seek_to("hudi-key-000001688") is SeekResult.FOUND
    assert cursor.seek_to("hudi-key-000004999") is SeekResult.FOUND
    assert cursor.next() is False
    assert cursor.record() is None
    fresh = readers["hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile"].cursor()
    assert fresh.seek_to("hudi-key-999999999") is SeekResult.EOF


def test_cursor_backward_seek_raises_value_error(readers: dict[str, HFileReader]) -> None:
    cursor = readers["hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile"].cursor()
    assert cursor.seek_to("hudi-key-000002000") is SeekResult.FOUND
    with pytest.raises(ValueError, match="backward seek"):
        cursor.seek_to("hudi-key-000001000")


def test_cursor_fake_first_key_between_index_key_and_block_first_key_is_before_block_first_key(
    readers: dict[str, HFileReader],
) -> None:
    reader = readers["hudi_1_0_hbase_2_4_13_16KB_GZ_20000_fake_first_key.hfile"]
    # The third block's index key is HBase's shortened midpoint "hudi-key-00000047", not its first real key.
    assert reader.data_blocks[2].first_key == b"hudi-key-00000047"
    cursor = reader.cursor()
    assert cursor.seek_to("hudi-key-000000469-abcdefghij") is SeekResult.FOUND
    assert cursor.seek_to("hudi-key-000000470") is SeekResult.BEFORE_BLOCK_FIRST_KEY
    record = cursor.record()
    assert record is not None and record.key == b"hudi-key-000000470-abcdefghij"
    assert reader.get("hudi-key-000000470") is None
    assert reader.get("hudi-key-000000470-abcdefghij") == b"hudi-value-000000470"


def test_cursor_non_unique_keys_seek_finds_first_copy_and_next_walks_the_rest(
    readers: dict[str, HFileReader],
) -> None:
    reader = readers["hudi_1_0_hbase_2_4_9_16KB_GZ_200_20_non_unique.hfile"]
    cursor = reader.cursor()
    for i in (0, 5, 77, 199):
        key = f"hudi-key-{i:09d}".encode()
        assert cursor.seek_to(key) is SeekResult.FOUND
        values = []
        record = cursor.record()
        while record is not None and record.key == key:
            values.append(record.value)
            cursor.next()
            record = cursor.record()
        expected = [f"hudi-value-{i:09d}".encode()] + [f"hudi-value-{i:09d}_{j}".encode() for j in range(20)]
        assert values == expected
        assert reader.get(key) == expected[0]
        assert reader.get_all(key) == expected


@pytest.mark.parametrize(
    "name",
    [
        "hudi_1_0_hbase_2_4_13_1KB_GZ_20000_large_keys.hfile",
        "hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile",
        "hudi_1_0_hbase_2_4_9_512KB_GZ_20000.hfile",
    ],
)
def test_lookup_multi_level_and_large_block_fixtures_finds_every_sampled_key(
    readers: dict[str, HFileReader], name: str
) -> None:
    reader = readers[name]
    fixture = BY_NAME[name]
    sample = [*fixture.entries[:: max(1, len(fixture.entries) // 97)], fixture.entries[-1]]
    cursor = reader.cursor()
    for key, value in sample:
        assert reader.get(key) == value.encode()
        assert cursor.seek_to(key) is SeekResult.FOUND
        record = cursor.record()
        assert record is not None and record.value == value.encode()
    assert cursor.seek_to(fixture.entries[-1][0] + "a") is SeekResult.EOF
    assert reader.get("hudi-key-nonexistent") is None


def test_scan_prefix_returns_exactly_the_matching_keys(readers: dict[str, HFileReader]) -> None:
    reader = readers["hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile"]
    assert [r.key.decode() for r in reader.scan_prefix("hudi-key-00000010")] == [
        f"hudi-key-{i:09d}" for i in range(100, 110)
    ]
    assert list(reader.scan_prefix("nonexistent-prefix-")) == []


def test_reader_flipped_byte_fails_the_block_checksum() -> None:
    require_shared(FIXTURE_HFILES)
    data = bytearray(BY_NAME["hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile"].path.read_bytes())
    data[100] ^= 0x01
    reader = HFileReader(bytes(data), path="flipped.hfile", verify_checksums=True)
    with pytest.raises(CorruptFileError, match=r"flipped\.hfile.*checksum chunk 0"):
        list(reader.records())


def test_reader_truncated_file_raises_corrupt_file_error() -> None:
    require_shared(FIXTURE_HFILES)
    data = BY_NAME["hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile"].path.read_bytes()
    with pytest.raises(CorruptFileError, match=r"cut\.hfile"):
        HFileReader(data[:3000], path="cut.hfile")
    with pytest.raises(CorruptFileError, match=r"major version 196608 .*only version 3"):
        HFileReader(data[:-1], path="cut.hfile")


@pytest.mark.parametrize("fixture", FIXTURES, ids=_IDS)
def test_writer_same_input_as_java_fixture_gives_identical_bytes(
    readers: dict[str, HFileReader], fixture: Fixture
) -> None:
    java = readers[fixture.name]
    writer = HFileWriter(
        HFileWriterOptions(
            block_size=fixture.block_size,
            compression=fixture.compression,
            comparator_class_name=fixture.comparator,
            max_chunk_size=fixture.max_chunk_size,
            min_index_num_entries=fixture.min_index_num_entries,
        )
    )
    for key, value in fixture.entries:
        writer.append(key, value.encode())
    for key, value in java.file_info.items():
        if not key.startswith("hfile.") and key not in ("KEY_VALUE_VERSION", "MAX_MEMSTORE_TS_KEY"):
            writer.append_file_info(key, value)
    bloom = java.meta_block("bloomFilter")
    assert bloom is not None
    writer.append_meta_block("bloomFilter", bloom)
    assert writer.finish() == fixture.path.read_bytes()
