"""Archiving a table with a metadata table on S3 given only storage options (no ``AWS_*`` environment): the
archiver's bound (the metadata table's latest compaction) opens the metadata table with the data table's storage
options. It used to open it without them: on S3 the request went to the default endpoint (amazonaws.com) and the
archive failed with "metadata table unreadable" (found by benchmarks/s3_metadata_requests.py)."""

from __future__ import annotations

from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.archive.planner import metadata_table_compaction_bound
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.objectstore.conftest import S3Bucket


def test_archive_bound_opens_the_metadata_table_with_the_storage_options(s3: S3Bucket) -> None:
    uri, so = s3.uri("t"), s3.storage_options
    options = WriteOptions(
        table_name="t",
        table_type=TableType.MERGE_ON_READ,
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        options={"hoodie.metadata.enable": "true"},
    )
    write_table(
        uri, generate_trips(20, partitions=2, seed=1), operation="bulk_insert", options=options, storage_options=so
    )
    table = HudiTable(uri, storage_options=so)
    assert table.metadata_partitions() == ["files"]
    assert metadata_table_compaction_bound(table) == (True, None)
    # nothing to archive, and no error
    result = run_archive(table, ArchiveConfig.from_options({}, table_properties=table.config.raw))
    assert not result.archive_file
