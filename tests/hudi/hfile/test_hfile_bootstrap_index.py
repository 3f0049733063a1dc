"""The bootstrap index (HFileBootstrapIndex, Hudi 0.14): what we write reads back, in Java's layout.

Java acceptance cannot be tested here (no JVM Hudi); the layout is checked against what
``HFileBootstrapIndex.HFileBootstrapIndexWriter`` does: keys, value records, INDEX_INFO, HFile context.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import fastavro
import pytest

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.hudi.hfile import Compression, HFileReader, HFileWriter
from lake_orchestration.hudi.hfile.bootstrap_index import (
    BOOTSTRAP_INDEX_COMPARATOR,
    FILE_ID_INDEX_PATH,
    INDEX_INFO_KEY,
    PARTITION_INDEX_PATH,
    BootstrapFileMapping,
    BootstrapIndexReader,
    write_bootstrap_index,
)
from lake_orchestration.hudi.model.avro.bootstrap import FilePath, FileStatus, FSPermission
from lake_orchestration.hudi.model.avro.schema import schema_text

SOURCE = "file:/data/source"


def _status(path: Path) -> FileStatus:
    """As ``FileStatusUtils.fromFileStatus`` fills it for a local file."""
    st = path.stat()
    mtime = int(st.st_mtime * 1000)
    return FileStatus(
        path=FilePath(uri=f"file:{path}"),
        length=st.st_size,
        is_dir=False,
        block_replication=1,
        block_size=32 * 1024 * 1024,
        modification_time=mtime,
        access_time=mtime,
        permission=FSPermission.from_mode(st.st_mode),
        owner=str(st.st_uid),
        group=str(st.st_gid),
    )


@pytest.fixture
def mappings(tmp_path: Path) -> list[BootstrapFileMapping]:
    out = []
    for partition in ("2024/01/02", "2024/01/01", "2023/12/31"):
        for n in range(3):
            src = tmp_path / partition / f"part-{n:05d}.parquet"
            src.parent.mkdir(parents=True, exist_ok=True)
            src.write_bytes(os.urandom(100 + n))
            out.append(
                BootstrapFileMapping(
                    bootstrap_base_path=SOURCE,
                    bootstrap_partition_path=partition,
                    partition_path=partition,
                    file_id=f"{partition.replace('/', '')}-{n:04d}-0000-0000-000000000000-0",
                    bootstrap_file_status=_status(src),
                )
            )
    return out


def test_index_paths_are_hudis_well_known_names() -> None:
    name = "00000000-0000-0000-0000-000000000000-0_1-0-1_00000000000001.hfile"
    assert PARTITION_INDEX_PATH == f".hoodie/.aux/.bootstrap/.partitions/{name}"
    assert FILE_ID_INDEX_PATH == f".hoodie/.aux/.bootstrap/.fileids/{name}"


def test_write_read_round_trip_gives_back_every_mapping(mappings: list[BootstrapFileMapping]) -> None:
    files = write_bootstrap_index(mappings, bootstrap_base_path=SOURCE, created_timestamp=1700000000000)
    reader = BootstrapIndexReader(files.partition_index, files.file_id_index, base_path="/t")
    assert reader.bootstrap_base_path == SOURCE
    assert reader.indexed_partitions() == ["2023/12/31", "2024/01/01", "2024/01/02"]
    assert reader.indexed_file_groups() == sorted((m.partition_path, m.file_id) for m in mappings)
    for partition in ("2023/12/31", "2024/01/01", "2024/01/02"):
        expected = sorted((m for m in mappings if m.partition_path == partition), key=lambda m: m.file_id)
        assert sorted(reader.mappings_for_partition(partition), key=lambda m: m.file_id) == expected
    assert reader.mappings_for_partition("1999/01/01") == []
    wanted = [(m.partition_path, m.file_id) for m in mappings[::2]] + [("2024/01/01", "missing")]
    found = reader.mappings_for_file_groups(wanted)
    assert found == {(m.partition_path, m.file_id): m for m in mappings[::2]}


def test_index_info_counts_keys_per_file(mappings: list[BootstrapFileMapping]) -> None:
    files = write_bootstrap_index(mappings, bootstrap_base_path=SOURCE, created_timestamp=1700000000000)
    reader = BootstrapIndexReader(files.partition_index, files.file_id_index)
    assert (reader.index_info.num_keys, reader.file_id_index_info.num_keys) == (3, 9)
    assert reader.index_info.created_timestamp == 1700000000000
    assert reader.index_info.version == 1


def test_hfiles_use_hudi_comparator_keys_and_java_avro_values(mappings: list[BootstrapFileMapping]) -> None:
    files = write_bootstrap_index(mappings, bootstrap_base_path=SOURCE, created_timestamp=1)
    partitions = HFileReader(files.partition_index, verify_checksums=True)
    file_ids = HFileReader(files.file_id_index, verify_checksums=True)
    for reader in (partitions, file_ids):
        assert reader.trailer.comparator_class_name == BOOTSTRAP_INDEX_COMPARATOR
        assert reader.trailer.compression is Compression.NONE
        assert reader.file_info["hfile.CREATE_TIME_TS"] == bytes(8)
        assert INDEX_INFO_KEY in reader.file_info
    assert [r.key for r in partitions.records()] == [b"part=2023/12/31", b"part=2024/01/01", b"part=2024/01/02"]
    first = next(iter(file_ids.records()))
    assert first.key == b"part=2023/12/31;fileid=20231231-0000-0000-0000-000000000000-0"
    # The values are Avro container files with Java's writer schema; decoded here by fastavro alone.
    with io.BytesIO(first.value) as buf:
        avro = fastavro.reader(buf)
        assert avro.metadata["avro.schema"] == schema_text("HoodieBootstrapFilePartitionInfo")
        (record,) = list(avro)
    assert record["version"] is None
    assert record["partitionPath"] == "2023/12/31"
    assert record["bootstrapFileStatus"]["path"]["uri"].endswith("2023/12/31/part-00000.parquet")
    assert record["bootstrapFileStatus"]["permission"]["version"] == 1
    with io.BytesIO(partitions.get("part=2024/01/01") or b"") as buf:
        (partition,) = list(fastavro.reader(buf))
    assert sorted(partition["fileIdToBootstrapFile"]) == [
        f"20240101-{n:04d}-0000-0000-000000000000-0" for n in range(3)
    ]


def test_many_file_groups_span_several_blocks_and_all_resolve(tmp_path: Path) -> None:
    src = tmp_path / "f.parquet"
    src.write_bytes(b"x")
    status = _status(src)
    mappings = [
        BootstrapFileMapping(
            bootstrap_base_path=SOURCE,
            bootstrap_partition_path=f"p={p:03d}",
            partition_path=f"p={p:03d}",
            file_id=f"{n:08d}-aaaa-bbbb-cccc-000000000000-0",
            bootstrap_file_status=status,
        )
        for p in range(40)
        for n in range(25)
    ]
    files = write_bootstrap_index(mappings, bootstrap_base_path=SOURCE, created_timestamp=1)
    reader = BootstrapIndexReader(files.partition_index, files.file_id_index)
    assert len(HFileReader(files.file_id_index).data_blocks) > 5
    found = reader.mappings_for_file_groups([(m.partition_path, m.file_id) for m in mappings])
    assert len(found) == len(mappings)
    assert len(reader.mappings_for_partition("p=017")) == 25


def test_same_file_group_twice_raises_value_error(mappings: list[BootstrapFileMapping]) -> None:
    with pytest.raises(ValueError, match="two source files"):
        write_bootstrap_index([*mappings, mappings[0]], bootstrap_base_path=SOURCE, created_timestamp=1)


def test_reader_index_without_index_info_raises_corrupt_file_error() -> None:
    writer = HFileWriter()
    writer.append("part=a", b"")
    data = writer.finish()
    with pytest.raises(CorruptFileError, match="INDEX_INFO"):
        BootstrapIndexReader(data, data, base_path="/t")
