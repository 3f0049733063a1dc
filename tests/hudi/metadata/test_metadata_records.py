"""HoodieMetadataRecord for the metadata table's ``files`` partition: the merge rules of Java 0.15's
``HoodieMetadataPayload.preCombine`` / ``combineFileSystemMetadata`` and the constructors' checks, each expected
value written out by hand from Java's rules. Decoding and encoding against Java-written files:
tests/java/test_metadata_table_java.py."""

from __future__ import annotations

import json

import pytest

from lake_orchestration.hudi.metadata.records import (
    DELETED,
    RECORDKEY_PARTITION_LIST,
    FileInfo,
    MetadataRecord,
    MetadataRecordType,
    decode_value,
    encode_value,
    merge_records,
    partition_files_record,
    partition_identifier,
    partition_list_record,
    partition_path,
    writer_schema_text,
)


def test_non_partitioned_identifier_is_dot() -> None:
    assert partition_identifier("") == "."
    assert partition_identifier("a/b") == "a/b"
    assert partition_path(".") == ""
    assert partition_list_record(["", "x"]).filesystem_metadata == {".": FileInfo(0), "x": FileInfo(0)}
    assert partition_files_record("", {"f.parquet": 5}).key == "."


def test_newer_deletion_removes_an_older_file_and_is_dropped() -> None:
    old = partition_files_record("p", {"a.parquet": 10, "b.parquet": 20})
    new = partition_files_record("p", {"c.parquet": 5}, deleted=["a.parquet"])
    merged = new.pre_combine(old)
    assert merged.filesystem_metadata == {"b.parquet": FileInfo(20), "c.parquet": FileInfo(5)}


def test_deletion_of_an_unknown_file_is_kept_as_tombstone() -> None:
    # the log side is merged first, then with the base file: the deletion must survive to cancel the base's entry
    old = partition_files_record("p", {"b.parquet": 20})
    new = partition_files_record("p", deleted=["a.parquet"])
    merged = new.pre_combine(old)
    assert merged.filesystem_metadata == {"b.parquet": FileInfo(20), "a.parquet": DELETED}
    assert merged.files() == ["b.parquet"] and merged.deletions() == ["a.parquet"]
    base = partition_files_record("p", {"a.parquet": 7})
    assert merged.pre_combine(base).files() == ["b.parquet"]


def test_repeated_deletion_is_kept() -> None:
    a = partition_files_record("p", deleted=["x.log.1_0-1-1"])
    assert a.pre_combine(a).filesystem_metadata == {"x.log.1_0-1-1": DELETED}


def test_sizes_of_a_file_added_twice_take_the_max_either_order() -> None:
    small = partition_files_record("p", {".f.log.1_0-1-1": 100})
    large = partition_files_record("p", {".f.log.1_0-1-1": 300})
    assert large.pre_combine(small).filesystem_metadata == {".f.log.1_0-1-1": FileInfo(300)}
    assert small.pre_combine(large).filesystem_metadata == {".f.log.1_0-1-1": FileInfo(300)}


def test_tombstone_wins_and_a_later_record_replaces_it() -> None:
    rec = partition_files_record("p", {"a.parquet": 1})
    tomb = MetadataRecord("p", MetadataRecordType.FILE_LIST, None, is_deleted=True)
    assert tomb.pre_combine(rec) is tomb
    assert rec.pre_combine(tomb) is rec
    merged = merge_records([rec, tomb, partition_files_record("p", {"b.parquet": 2})])
    assert merged["p"].files() == ["b.parquet"]


def test_partition_list_merge_and_deleted_partition() -> None:
    merged = merge_records(
        [
            partition_list_record(["a", "b"]),
            partition_list_record(["c"]),
            partition_list_record(["b"], is_deleted=True),
        ]
    )
    assert merged[RECORDKEY_PARTITION_LIST].files() == ["a", "c"]


def test_mismatched_records_and_empty_files_are_refused() -> None:
    with pytest.raises(ValueError, match="type 1 with 2"):
        partition_files_record("p", {"a": 1}).pre_combine(partition_list_record(["p"]))
    with pytest.raises(ValueError, match="keys differ"):
        partition_files_record("p", {"a": 1}).pre_combine(partition_files_record("q", {"a": 1}))
    with pytest.raises(ValueError, match="size 0: expected > 0"):
        partition_files_record("p", {"a.parquet": 0})
    bad = MetadataRecord("p", MetadataRecordType.FILE_LIST, {"a.parquet": FileInfo(0)})
    with pytest.raises(ValueError, match="should have size > 0"):
        bad.pre_combine(partition_files_record("p", {"b.parquet": 1}))


def test_writer_schema_is_the_record_schema_with_meta_fields_first() -> None:
    fields = [f["name"] for f in json.loads(writer_schema_text())["fields"]]
    assert fields == [
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
        "key",
        "type",
        "filesystemMetadata",
        "BloomFilterMetadata",
        "ColumnStatsMetadata",
        "recordIndexMetadata",
    ]


def test_value_has_empty_key_and_decodes_with_the_hfile_key() -> None:
    rec = partition_files_record("p", {"a.parquet": 1234})
    value = encode_value(rec)
    # five null meta fields, then key "" (length 0), then type 2 (zig-zag 4), then the map branch
    assert value[:8] == b"\x00\x00\x00\x00\x00\x00\x04\x02"
    assert decode_value(b"p", value) == rec
