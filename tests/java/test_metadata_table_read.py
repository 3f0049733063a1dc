"""Reading the metadata table's ``files`` partition of tables Java Hudi 0.15 writes with its defaults (metadata table
on), against independent oracles:

- the storage listing of the table's data files (names and sizes), and Java's own ``show_metadata_table_files``;
- every HFile value Java wrote (MDT base files and HFile data blocks) re-encodes byte for byte from our decoded
  record, and the SCHEMA header is ours;
- an MDT block whose data instant did not complete is ignored (``getValidInstantTimestamps``);
- snapshot reads through the metadata table equal the expected rows (an independent model) and reads that list
  storage.

The histories (``tests/java/metadata_history.py``): insert, upsert, delete, upsert with the data table's inline
compaction (MOR), upsert with an automatic clean (files deleted in the MDT), upsert of new keys; the MDT is compacted
every 3 deltacommits so its slice has a base HFile and log files.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lake_orchestration.hudi.hfile import HFileReader
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, iter_blocks
from lake_orchestration.hudi.metadata.reader import MetadataTableReader, metadata_file_listing
from lake_orchestration.hudi.metadata.records import decode_value, encode_value, writer_schema_text
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.snapshot import ReadStats, file_listing
from tests.java.harness import JavaHudi
from tests.java.interop import NON_PARTITIONED, PARTITIONED, JavaTable, assert_rows_equal, data_files, procedure
from tests.java.metadata_history import java_mdt_history
from tests.objectstore.conftest import S3Bucket, s3, s3_server  # noqa: F401 (the S3 server's fixtures)

pytestmark = [pytest.mark.java]

S3_PREFIX = "t"

CASES = {
    "mor-partitioned": (TableType.MERGE_ON_READ, PARTITIONED),
    "cow-partitioned": (TableType.COPY_ON_WRITE, PARTITIONED),
    "cow-non-partitioned": (TableType.COPY_ON_WRITE, NON_PARTITIONED),
}


@pytest.fixture(scope="module")
def mdt_tables(java_hudi: JavaHudi, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, JavaTable]]:
    built: dict[str, JavaTable] = {}
    for name, (table_type, shape) in CASES.items():
        root = tmp_path_factory.mktemp(f"java-mdt-{name}")
        built[name] = java_mdt_history(java_hudi, root / "t", table_type, shape=shape)
    yield built


def _storage_listing(path: Path) -> dict[str, dict[str, int]]:
    """Partition ("" for the table's root) -> data file name -> size, from the file system."""
    out: dict[str, dict[str, int]] = {}
    for rel in data_files(path):
        p = Path(rel)
        part = "" if str(p.parent) == "." else str(p.parent)
        out.setdefault(part, {})[p.name] = (path / rel).stat().st_size
    return out


def _our_listing(table: HudiTable) -> dict[str, dict[str, int]]:
    listing = metadata_file_listing(table)
    assert listing is not None, f"{table.base_uri}: expected a metadata table listing"
    return {p: {f.name: f.size for f in files} for p, files in listing.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_listing_equals_storage_and_java(case: str, mdt_tables: dict[str, JavaTable], java_hudi: JavaHudi) -> None:
    jt = mdt_tables[case]
    table = HudiTable(str(jt.path))
    assert "files" in table.config.raw["hoodie.table.metadata.partitions"]
    reader = MetadataTableReader(table)
    slices = reader.file_slices()
    assert len(slices) == 1 and slices[0].base_file is not None, f"{case}: expected a compacted MDT slice: {slices}"
    ours = {p: {f.name: f.size for f in files} for p, files in reader.listing().items()}
    assert ours == _our_listing(table)
    assert reader.stats.total_log_blocks > 0, f"{case}: the MDT slice should have log blocks to merge"
    expected = _storage_listing(jt.path)
    assert ours == expected, f"{case}: MDT listing differs from storage: {set(ours) ^ set(expected)} / " + str(
        {p: set(ours.get(p, {}).items()) ^ set(expected.get(p, {}).items()) for p in expected}
    )
    # the clean deleted files: the oldest base files of the first insert are gone from both
    first = jt.instants[0].split(".", 1)[0]
    if jt.table_type is TableType.COPY_ON_WRITE:
        assert not any(n.endswith(f"_{first}.parquet") for files in ours.values() for n in files), case
    if jt.shape.partition:
        for partition, files in sorted(ours.items()):
            rows = procedure(java_hudi, "show_metadata_table_files", jt, partition=partition)
            assert {r["file_path"] for r in rows} == set(files), f"{case}: Java's MDT files of {partition} differ"


@pytest.mark.parametrize("case", list(CASES))
def test_java_values_reencode_byte_for_byte(case: str, mdt_tables: dict[str, JavaTable]) -> None:
    files_dir = mdt_tables[case].path / ".hoodie" / "metadata" / "files"
    values = 0
    for f in sorted(files_dir.iterdir()):
        if f.name.endswith(".hfile"):
            reader = HFileReader(f.read_bytes(), path=str(f))
            assert reader.file_info["schema"].decode() == writer_schema_text()
            for rec in reader.records():
                assert encode_value(decode_value(rec.key, rec.value), file_name=f.name) == rec.value, (f, rec.key)
                values += 1
        elif ".log." in f.name and not f.name.endswith(".crc"):
            for block in iter_blocks(f.read_bytes(), str(f)):
                if block.block_type is not LogBlockType.HFILE_DATA_BLOCK:
                    continue
                assert block.get(HeaderKey.SCHEMA) == writer_schema_text(), f
                for rec in HFileReader(block.content, path=str(f)).records():
                    assert encode_value(decode_value(rec.key, rec.value)) == rec.value, (f, rec.key)
                    values += 1
    assert values > 3, f"{case}: expected MDT records in base files and log blocks, found {values}"


def test_block_of_an_uncommitted_data_instant_is_ignored(mdt_tables: dict[str, JavaTable], tmp_path: Path) -> None:
    """The data table's last deltacommit made undone (its completed file removed, as a writer killed after the MDT
    deltacommit leaves it): the files it wrote are not listed; everything else still is."""
    src = mdt_tables["mor-partitioned"]
    path = tmp_path / "t"
    shutil.copytree(src.path, path)
    table = HudiTable(str(path))
    last = table.timeline.completed().with_actions(Action.DELTA_COMMIT).last
    assert last is not None
    written = {
        (p, Path(s.path or "").name)
        for p, stats in table.commit_metadata(last).partition_to_write_stats.items()
        for s in stats
    }
    assert written
    (path / ".hoodie" / last.file_name).unlink()
    assert (path / ".hoodie" / f"{last.time}.deltacommit.inflight").exists()
    table = HudiTable(str(path))
    assert str(last.time) not in table.timeline.completed().times()
    ours = _our_listing(table)
    expected = _storage_listing(path)
    for p, name in written:
        expected[p].pop(name)
    assert ours == expected


@pytest.mark.parametrize("case", list(CASES))
def test_snapshot_through_the_metadata_table(case: str, mdt_tables: dict[str, JavaTable]) -> None:
    jt = mdt_tables[case]
    with_mdt, without = ReadStats(), ReadStats()
    got = read_snapshot_table(HudiTable(str(jt.path)), stats=with_mdt)
    listed = read_snapshot_table(HudiTable(str(jt.path)), stats=without, options={"hoodie.metadata.enable": "false"})
    assert_rows_equal(got, jt.expected(), f"{case}: snapshot through the metadata table")
    assert_rows_equal(listed, jt.expected(), f"{case}: snapshot listing storage")
    assert (with_mdt.file_slices, with_mdt.base_files, with_mdt.log_files) == (
        without.file_slices,
        without.base_files,
        without.log_files,
    )


# -- S3: the requests of opening a table and reading a snapshot, with and without the metadata table ---------------


def test_s3_requests_with_and_without_the_metadata_table(
    mdt_tables: dict[str, JavaTable],
    s3: S3Bucket,  # noqa: F811 (the fixture)
    record_property: Any,
) -> None:
    """The Java-written MOR table copied to the S3 server; requests counted at the server (docs/performance.md):
    listing storage costs one LIST per folder of the table, the metadata table a fixed two (its timeline and its
    ``files`` folder) plus GETs of its properties, base HFile and log files, whatever the number of partitions."""
    import pyarrow.fs as pafs

    src = mdt_tables["mor-partitioned"]
    dest = pafs.S3FileSystem(**s3.storage_options)
    pafs.copy_files(str(src.path), f"{s3.bucket}/{S3_PREFIX}", pafs.LocalFileSystem(), dest)
    uri, so = s3.uri(S3_PREFIX), s3.storage_options
    partitions = HudiTable(str(src.path)).list_partitions()
    figures: dict[str, dict[str, int]] = {}

    def count(step: str) -> dict[str, int]:
        reqs = s3.requests.list()
        c = {"LIST": 0, "GET": 0, "HEAD": 0}
        for r in reqs:
            c[r.kind] = c.get(r.kind, 0) + 1
        c["data folders listed"] = sum(
            1 for r in reqs if r.kind == "LIST" and any(f"prefix={S3_PREFIX}%2F{p}" in r.query for p in partitions)
        )
        c["total"] = len(reqs)
        figures[step] = c
        return c

    for mdt in ("true", "false"):
        opts = {"hoodie.metadata.enable": mdt}
        s3.requests.reset()
        t = HudiTable(uri, storage_options=so)
        view = t.fs_view(file_listing(t, opts))
        assert sorted(view.partitions) == partitions
        opened = count(f"open table + file-system view, hoodie.metadata.enable={mdt}")
        s3.requests.reset()
        rows = read_snapshot_table(HudiTable(uri, storage_options=so), options=opts)
        assert_rows_equal(rows, src.expected(), f"snapshot on S3, hoodie.metadata.enable={mdt}")
        read = count(f"snapshot read (open included), hoodie.metadata.enable={mdt}")
        if mdt == "true":
            assert opened["data folders listed"] == 0 and read["data folders listed"] == 0, figures
        else:
            assert opened["data folders listed"] == len(partitions), figures
    record_property("s3_requests", figures)
    print("\n".join(f"{k}: {v}" for k, v in figures.items()))
