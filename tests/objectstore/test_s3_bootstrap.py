"""Bootstrap on S3 (the moto server): a source dataset and the table in a bucket; the index records the source's
S3 paths and the snapshot read stitches each skeleton with its source object; upsert and compaction work there."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.hudi.services.bootstrap import BootstrapMode, bootstrap
from lake_orchestration.hudi.services.compaction import execute_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.hudi.services.test_bootstrap import DATA_COLUMNS, DATES, _config, _full_record_for, _make_source
from tests.objectstore.conftest import ACCESS_KEY, REGION, SECRET_KEY, S3Bucket


def test_bootstrap_on_s3_regex_mixed_reads_source_rows_then_upsert_and_compaction(s3: S3Bucket, tmp_path: Path) -> None:
    local = tmp_path / "source"
    rows = _make_source(local)
    fs = pafs.S3FileSystem(endpoint_override=s3.endpoint, region=REGION, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    pafs.copy_files(str(local), f"{s3.bucket}/source", destination_filesystem=fs)
    before = {k: fs.get_file_info(f"{s3.bucket}/{k}").size for k in s3.keys("source")}
    config = _config(
        Path("unused"), **{HoodieKey.BOOTSTRAP_BASE_PATH.key: s3.uri("source"), **_full_record_for("dt=2024-01-03")}
    )
    table_uri = s3.uri("events")
    result = bootstrap(table_uri, config, storage_options=s3.storage_options)

    assert [p.mode for p in result.plan.partitions] == [BootstrapMode.METADATA_ONLY] * 2 + [BootstrapMode.FULL_RECORD]
    table = HudiTable(table_uri, storage_options=s3.storage_options)
    sources = set(table.bootstrap_sources().values())
    assert sources == {s3.uri(k) for k in s3.keys("source/dt=2024-01-01") + s3.keys("source/dt=2024-01-02")}
    got = read_snapshot_table(table).to_pandas().sort_values("id").reset_index(drop=True)
    want = rows.sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(got[DATA_COLUMNS], want[DATA_COLUMNS], check_dtype=False)
    assert (got.loc[got["dt"] != DATES[2], "_hoodie_commit_time"] == "00000000000001").all()

    update = want.iloc[[0, 40]].copy()
    update["price"] = -5.0
    schema = pq.read_schema(next(local.rglob("*.parquet")))
    upsert = pa.Table.from_pandas(update, schema=schema, preserve_index=False)
    write_table(table_uri, upsert, operation="upsert", options=WriteOptions(), storage_options=s3.storage_options)
    table = HudiTable(table_uri, storage_options=s3.storage_options)
    scheduled = schedule_compaction(table, force=True)
    execute_compaction(table, str(scheduled.instant))
    after = read_snapshot_table(HudiTable(table_uri, storage_options=s3.storage_options)).to_pandas()
    after = after.sort_values("id").reset_index(drop=True)
    want.loc[want["id"].isin(update["id"]), "price"] = -5.0
    pd.testing.assert_frame_equal(after[DATA_COLUMNS], want[DATA_COLUMNS], check_dtype=False)
    assert {k: fs.get_file_info(f"{s3.bucket}/{k}").size for k in s3.keys("source")} == before
