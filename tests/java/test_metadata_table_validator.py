"""The harness's MDT validation (:func:`tests.java.mdt_validate.validate_metadata_table`) can fail.

Java writes a partitioned MERGE_ON_READ table with its metadata table (MDT) on: an insert, then an upsert (log
files). Java's validation passes, with latest base files and latest file slices in every partition. Then a base file
the MDT lists is deleted from storage (a stale MDT: what a write that forgot its MDT update would leave): Java's
file listing check (``validate_metadata_table_files`` against a storage listing) and the latest base files / file
slices checks both find it, naming the partition and the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.hudi.model.properties import TableType
from tests.java.harness import JavaHudi
from tests.java.interop import PARTITIONED, JavaTable, Model, java_write, trips
from tests.java.mdt_validate import latest_slices_diffs, validate_metadata_table

pytestmark = [pytest.mark.java]

MDT_ON = {"hoodie.metadata.enable": "true"}


def test_validation_finds_a_stale_metadata_table(java_hudi: JavaHudi, tmp_path: Path) -> None:
    base = trips(120, seed=71)
    table = JavaTable(
        tmp_path / "t", PARTITIONED, TableType.MERGE_ON_READ, Model(("city", "uuid")), base.schema, [], tmp_path
    )
    java_write(java_hudi, table, base, "insert", **MDT_ON)
    java_write(java_hudi, table, generate_updates(base, fraction=0.3, seed=72, ts_offset=10**6), "upsert", **MDT_ON)

    views = validate_metadata_table(java_hudi, table, "Java's own table")
    assert views["checked"] and all(c["base_files"] and c["file_slices"] for c in views["checked"].values()), views
    assert views["partitions"]["metadata"] == sorted(views["checked"])

    # a stale MDT: a base file it lists is gone from storage
    victim = sorted(table.path.glob("*/*.parquet"))[0]
    partition = victim.parent.name
    victim.unlink()
    victim.with_name(f".{victim.name}.crc").unlink(missing_ok=True)

    diffs = latest_slices_diffs(java_hudi, table)["diffs"]
    assert {(d["partition"], d["check"]) for d in diffs} == {
        (partition, "latest base files"),
        (partition, "latest file slices"),
    }, diffs
    by_check = {d["check"]: d for d in diffs}
    mdt_names = {b["file_name"] for b in by_check["latest base files"]["metadata"]}
    fs_names = {b["file_name"] for b in by_check["latest base files"]["fs"]}
    assert mdt_names - fs_names == {victim.name}, by_check["latest base files"]
    assert victim.name in str(by_check["latest file slices"]["metadata"]), by_check["latest file slices"]
    assert victim.name not in str(by_check["latest file slices"]["fs"]), by_check["latest file slices"]

    with pytest.raises(AssertionError) as failed:
        validate_metadata_table(java_hudi, table.path, "stale")
    message = str(failed.value)
    assert f"latest base files check fails for partition '{partition}'" in message, message
    assert f"latest file slices check fails for partition '{partition}'" in message, message
    # the listing check finds it too: Java's MDT listing has the file, storage has not
    assert "Java's MDT listing != storage" in message and victim.name in message, message
