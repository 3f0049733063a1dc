"""Our COMPACT snapshots have the structure of Java's, on copies of the Java-written golden tables.

For a COMPACT snapshot N that Java wrote, a copy of the table is taken back to snapshot N-1 (later snapshot files
removed, ``LATEST`` = N-1) and compacted by us. Our snapshot N must then be what Java's is: the same delta entries
(kind, level, rows, file source, delete count; an upgrade is the same file name at a new level), the same base
manifest list records (Java's base = previous base + delta), a delta manifest list of one manifest with the same
counts and levels, the same commit kind, identifier and record counts; a rewritten file holds Java's rows in Java's
parquet layout and its metadata (keys, statistics, sequence numbers) equals Java's.

Known difference: Java also rebuilds the tables' global indexes (full-text, btree, vector) when it rewrites a file
and writes a new index manifest; this compaction carries the previous index manifest over. On the vector table the
level-0 file moved to the max level is rewritten, not upgraded, as Java does (a vector index is built only from
compacted files above level 0).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lake_orchestration.errors import PaimonCommitConflictError, PlanError
from lake_orchestration.paimon.model import FileKind, Snapshot
from lake_orchestration.paimon.model.avro import read_container, write_container
from lake_orchestration.paimon.model.manifest import MANIFEST_ENTRY_SCHEMA, DataFileMeta, ManifestEntry
from lake_orchestration.paimon.model.pk_index import (
    PrimaryKeyIndexSourceMeta,
    is_global_index_payload,
    is_index_source,
    source_meta,
    stale_payloads,
)
from lake_orchestration.paimon.services.compaction import (
    PaimonCompactionExecution,
    commit_compaction,
    execute_compaction,
    plan_compaction,
    run_compaction,
)
from lake_orchestration.paimon.services.compaction.committer import java_json
from lake_orchestration.paimon.table import PaimonTable

pytestmark = pytest.mark.fixtures

CASES = [
    ("test_pk_full_text_golden", 2),  # upgrade 0 -> 2 (max level)
    ("test_pk_full_text_golden", 4),  # upgrade 0 -> 1
    ("test_pk_full_text_golden", 6),  # rewrite of three runs to level 2
    ("test_pk_full_text_golden", 8),  # upgrade 0 -> 1
    ("test_pk_global_index_golden", 2),
    ("test_pk_global_index_golden", 4),  # rewrite
    ("test_pk_global_index_golden", 6),
    ("test_pk_vector_golden", 2),  # rewrite of the single level-0 file moved to level 5 (vector index source)
]


def _back_to(paimon_golden: Path, name: str, snapshot_id: int, dest: Path) -> PaimonTable:
    """A copy of golden table ``name`` whose latest snapshot is ``snapshot_id``."""
    shutil.copytree(paimon_golden / name, dest)
    java = PaimonTable.open(str(paimon_golden / name))
    for later in java.snapshot_ids():
        if later > snapshot_id:
            (dest / "snapshot" / f"snapshot-{later}").unlink()
    (dest / "snapshot" / "LATEST").write_text(str(snapshot_id))
    return PaimonTable.open(str(dest))


def _entry_facts(e: ManifestEntry) -> tuple[object, ...]:
    f = e.file
    return (e.kind, e.bucket, e.total_buckets, f.level, f.row_count, f.delete_row_count, f.file_source, f.schema_id)


@pytest.mark.parametrize(("name", "snapshot_id"), CASES)
def test_compaction_of_golden_table_copy_same_structure_as_java_compact_snapshot(
    paimon_golden: Path, tmp_path: Path, name: str, snapshot_id: int
) -> None:
    java = PaimonTable.open(str(paimon_golden / name))
    java_snap = java.snapshot(snapshot_id)
    table = _back_to(paimon_golden, name, snapshot_id - 1, tmp_path / name)

    result = run_compaction(table)
    assert result.commit is not None and result.execution is not None
    ours = table.latest_snapshot()
    assert ours is not None and ours.id == snapshot_id

    # the snapshot: same kind, identifier, counts, schema, next row id; same JSON keys in Java's order
    facts = ("version", "schema_id", "commit_kind", "commit_identifier", "total_record_count", "delta_record_count")
    facts += ("next_row_id", "changelog_manifest_list", "watermark")
    assert {f: getattr(ours, f) for f in facts} == {f: getattr(java_snap, f) for f in facts}
    ours_keys = [k for k in ours.to_json_obj() if k != "indexManifest"]
    assert ours_keys == [k for k in java_snap.to_json_obj() if k != "indexManifest"]
    raw = (Path(table.uri) / "snapshot" / f"snapshot-{snapshot_id}").read_text()
    assert raw == java_json(json.loads(raw))  # Jackson's pretty printing, as Java's snapshot files

    # delta entries: DELETEs then ADDs, same facts; upgrades keep the file name
    ours_entries, java_entries = table.delta_entries(ours), java.delta_entries(java_snap)
    assert [_entry_facts(e) for e in ours_entries] == [_entry_facts(e) for e in java_entries]
    java_deleted = {e.file.file_name for e in java_entries if e.kind is FileKind.DELETE}
    for o, j in zip(ours_entries, java_entries, strict=True):
        if o.kind is FileKind.DELETE or j.file.file_name in java_deleted:
            assert o.file == j.file  # the same file (deleted, or upgraded to a new level)
            continue
        # a rewritten file: Java's rows and layout, Java's metadata but for the name, size and creation time
        for field in ("min_key", "max_key", "key_stats", "value_stats", "value_stats_cols", "min_sequence_number"):
            assert getattr(o.file, field) == getattr(j.file, field), field
        assert o.file.max_sequence_number == j.file.max_sequence_number
        assert o.file.file_name.startswith("data-") and o.file.file_name.endswith("-0.parquet")
        ours_data = pq.read_table(Path(table.uri) / "bucket-0" / o.file.file_name)
        java_data = pq.read_table(paimon_golden / name / "bucket-0" / j.file.file_name)
        assert ours_data.schema.equals(java_data.schema, check_metadata=True)  # field ids included
        assert ours_data.to_pylist() == java_data.to_pylist()

    # manifest lists: base = the previous snapshot's base + delta manifests (records equal to Java's); delta = one
    # manifest with Java's counts, partition statistics, bucket and level ranges
    assert table.manifest_list(ours.base_manifest_list) == java.manifest_list(java_snap.base_manifest_list)
    (ours_meta,) = table.manifest_list(ours.delta_manifest_list)
    (java_meta,) = java.manifest_list(java_snap.delta_manifest_list)
    keep = ("num_added_files", "num_deleted_files", "partition_stats", "schema_id", "min_bucket", "max_bucket")
    keep += ("min_level", "max_level", "min_row_id", "max_row_id", "version")
    assert {k: getattr(ours_meta, k) for k in keep} == {k: getattr(java_meta, k) for k in keep}
    manifest = Path(table.uri) / "manifest" / ours_meta.file_name
    container = read_container(manifest.read_bytes(), path=str(manifest))
    assert (container.schema, container.codec) == (MANIFEST_ENTRY_SCHEMA, "zstandard")
    assert ours_meta.file_size == manifest.stat().st_size
    assert ours.delta_manifest_list_size == (Path(table.uri) / "manifest" / ours.delta_manifest_list).stat().st_size
    assert (Path(table.uri) / "snapshot" / "LATEST").read_text() == str(snapshot_id)


@pytest.mark.parametrize("name", sorted({n for n, _ in CASES}))
def test_java_json_golden_snapshots_rewritten_byte_for_byte(paimon_golden: Path, name: str) -> None:
    for path in sorted((paimon_golden / name / "snapshot").glob("snapshot-*")):
        text = path.read_text()
        assert java_json(Snapshot.from_json(text, path=str(path)).to_json_obj()) == text


@pytest.mark.parametrize("name", sorted({n for n, _ in CASES}))
def test_write_container_golden_manifests_records_and_schema_read_back_equal(paimon_golden: Path, name: str) -> None:
    for path in sorted((paimon_golden / name / "manifest").glob("manifest-*")):
        java = read_container(path.read_bytes(), path=str(path))
        ours = read_container(write_container(java.schema, list(java.records)), path="ours")
        assert (ours.schema, ours.codec, ours.records) == (java.schema, "zstandard", java.records)


def test_commit_refuses_a_level_that_would_no_longer_be_one_sorted_run(paimon_golden: Path, tmp_path: Path) -> None:
    """Java ``noConflictsOrFail``: files of a level >= 1 must not overlap in key range after the commit; here an
    execution that adds a level-2 file over the live level-2 file without deleting it."""
    table = _back_to(paimon_golden, "test_pk_full_text_golden", 5, tmp_path / "t")
    execution = execute_compaction(plan_compaction(table), storage=table.storage)
    (result,) = execution.results
    (new_file,) = result.after
    assert new_file.level == 2 and any(f.level == 2 for f in result.before)
    only_add = PaimonCompactionExecution(plan=execution.plan, results=(replace(result, before=()),))
    manifests = sorted((Path(table.uri) / "manifest").iterdir())
    with pytest.raises(PaimonCommitConflictError, match="overlap in key range"):
        commit_compaction(table, only_add)
    assert table.latest_snapshot_id() == 5
    assert sorted((Path(table.uri) / "manifest").iterdir()) == manifests  # nothing written
    commit = commit_compaction(table, execution)
    assert commit is not None and commit.snapshot.id == 6


def test_plan_refuses_files_of_a_schema_with_other_columns(paimon_golden: Path, tmp_path: Path) -> None:
    table = _back_to(paimon_golden, "test_pk_full_text_golden", 5, tmp_path / "t")
    schema = json.loads((Path(table.uri) / "schema" / "schema-0").read_text())
    schema["id"] = 1
    schema["fields"].append({"id": 2, "name": "added", "type": "INT"})
    schema["highestFieldId"] = 2
    (Path(table.uri) / "schema" / "schema-1").write_text(json.dumps(schema))
    with pytest.raises(PlanError, match=r"written with schema 0, whose columns differ from schema 1"):
        plan_compaction(table)
    # only options changed: the same columns, the plan goes ahead
    schema["fields"].pop()
    schema["options"]["target-file-size"] = "64 mb"
    (Path(table.uri) / "schema" / "schema-1").write_text(json.dumps(schema))
    assert not plan_compaction(table).is_empty


def test_plan_to_json_obj_lists_each_bucket_unit(paimon_golden: Path, tmp_path: Path) -> None:
    table = _back_to(paimon_golden, "test_pk_full_text_golden", 5, tmp_path / "t")
    obj = json.loads(json.dumps(plan_compaction(table).to_json_obj()))
    (bucket,) = obj["buckets"]
    assert (obj["snapshot_id"], obj["full"], obj["input_files"]) == (5, False, 3)
    assert (bucket["bucket"], bucket["output_level"], bucket["drop_delete"], bucket["partition_values"]) == (
        0,
        2,
        True,
        [],
    )
    assert [f["level"] for f in bucket["files"]] == [0, 1, 2]
    assert obj["input_bytes"] == sum(f["file_size"] for f in bucket["files"])


def _live_files(table: PaimonTable, snapshot: Snapshot) -> dict[tuple[bytes, int], list[DataFileMeta]]:
    live: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in table.live_entries(snapshot):
        live.setdefault((e.partition.data, e.bucket), []).append(e.file)
    return live


def _stale(table: PaimonTable, snapshot: Snapshot) -> set[str]:
    return stale_payloads(table.index_manifest_records(snapshot), _live_files(table, snapshot), where=table.uri)


@pytest.mark.parametrize(("name", "snapshot_id"), CASES)
def test_index_manifest_after_our_compaction_java_ignores_exactly_the_payloads_of_changed_levels(
    paimon_golden: Path, tmp_path: Path, name: str, snapshot_id: int
) -> None:
    """Java 2.0's rule (``Pk*BucketIndexState.fromActiveDataFiles``): a payload is used only when its source list
    is its level's live COMPACT files. Every payload Java wrote is valid by it at every snapshot (our decoding of
    ``_SOURCE_META`` and of the rule, on Java's data); our COMPACT keeps the index manifest, so exactly the payloads
    of the levels our compaction changed become stale (Java reads those levels without the index), and none covers
    a file our compaction wrote or moved."""
    java = PaimonTable.open(str(paimon_golden / name))
    for sid in java.snapshot_ids():
        assert _stale(java, java.snapshot(sid)) == set(), sid

    table = _back_to(paimon_golden, name, snapshot_id - 1, tmp_path / name)
    previous = table.latest_snapshot()
    assert previous is not None
    result = run_compaction(table)
    assert result.execution is not None
    ours = table.latest_snapshot()
    assert ours is not None and ours.index_manifest == previous.index_manifest

    changed_levels = {f.level for r in result.execution.results for f in (*r.before, *r.after) if is_index_source(f)}
    previous_payloads = {
        r["_FILE_NAME"]: source_meta(r, where=name).data_level
        for r in table.index_manifest_records(previous)
        if is_global_index_payload(r)
    }
    assert _stale(table, ours) == {p for p, level in previous_payloads.items() if level in changed_levels}
    covered = {
        f
        for r in table.index_manifest_records(ours)
        if is_global_index_payload(r) and r["_FILE_NAME"] not in _stale(table, ours)
        for f, _ in source_meta(r, where=name).source_files
    }
    assert not covered & {f.file_name for r in result.execution.results for f in r.after}


def test_plan_refuses_a_global_index_without_primary_key_source_meta(paimon_golden: Path, tmp_path: Path) -> None:
    """A global index payload that does not name its source files cannot be left stale safely: refused."""
    table = _back_to(paimon_golden, "test_pk_global_index_golden", 5, tmp_path / "t")
    snapshot = table.latest_snapshot()
    assert snapshot is not None and snapshot.index_manifest is not None
    path = Path(table.uri) / "manifest" / snapshot.index_manifest
    container = read_container(path.read_bytes(), path=str(path))
    records = [dict(r) for r in container.records]
    records[0] = {**records[0], "_GLOBAL_INDEX": {**records[0]["_GLOBAL_INDEX"], "_SOURCE_META": None}}
    path.write_bytes(write_container(container.schema, records))
    with pytest.raises(PlanError, match=r"has no _SOURCE_META.*does not rebuild global indexes"):
        plan_compaction(table)
    records[0]["_GLOBAL_INDEX"]["_SOURCE_META"] = b"\x00\x00\x00\x02"
    path.write_bytes(write_container(container.schema, records))
    with pytest.raises(PlanError, match=r"not a primary-key index source meta"):
        plan_compaction(table)


@pytest.mark.parametrize("name", sorted({n for n, _ in CASES}))
def test_primary_key_index_source_meta_of_golden_payloads_round_trips_byte_for_byte(
    paimon_golden: Path, name: str
) -> None:
    java = PaimonTable.open(str(paimon_golden / name))
    latest = java.latest_snapshot()
    assert latest is not None
    payloads = [r for r in java.index_manifest_records(latest) if is_global_index_payload(r)]
    assert payloads
    for r in payloads:
        raw = bytes(r["_GLOBAL_INDEX"]["_SOURCE_META"])
        meta = PrimaryKeyIndexSourceMeta.deserialize(raw, where=name)
        assert meta.serialize() == raw
        assert meta.data_level > 0 and all(f.startswith("data-") for f, _ in meta.source_files)
