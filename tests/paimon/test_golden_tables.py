"""Our Paimon model reads the three Java-written golden tables exactly (../shared/fixtures/paimon-tables).

The expectations below were taken from the files themselves (snapshot JSON, and the Avro manifests decoded with a
plain container reader), not from our model: per snapshot the commit kind, record counts, the delta entries (kind,
file, level, rows, file source) and the live files by level. Java wrote COMPACT snapshots with both upgrades
(DELETE at level 0 + ADD of the same file higher) and rewrites (new file, ``_FILE_SOURCE`` = COMPACT).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lake_orchestration.errors import PaimonTableNotFoundError
from lake_orchestration.paimon.model import CommitKind, FileKind, FileSource
from lake_orchestration.paimon.model.avro import read_container
from lake_orchestration.paimon.model.manifest import (
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    ManifestEntry,
    ManifestFileMeta,
)
from lake_orchestration.paimon.services.compaction import pick_unit
from lake_orchestration.paimon.table import PaimonTable

pytestmark = pytest.mark.fixtures

A, C = FileSource.APPEND, FileSource.COMPACT
ADD, DEL = FileKind.ADD, FileKind.DELETE
LONG_MAX = 2**63 - 1

# snapshot id -> (kind, totalRecordCount, deltaRecordCount, delta entries, live files in run order)
# entries: (kind, file-name prefix, level, rows, source); live: (file-name prefix, level, rows)
GOLDEN: dict[str, dict[int, tuple]] = {
    "test_pk_full_text_golden": {
        1: ("APPEND", 1, 1, [(ADD, "beb96add", 0, 1, A)], [("beb96add", 0, 1)]),
        2: ("COMPACT", 1, 0, [(DEL, "beb96add", 0, 1, A), (ADD, "beb96add", 2, 1, A)], [("beb96add", 2, 1)]),
        3: ("APPEND", 2, 1, [(ADD, "7dc090cb", 0, 1, A)], [("7dc090cb", 0, 1), ("beb96add", 2, 1)]),
        4: (
            "COMPACT", 2, 0,
            [(DEL, "7dc090cb", 0, 1, A), (ADD, "7dc090cb", 1, 1, A)],
            [("7dc090cb", 1, 1), ("beb96add", 2, 1)],
        ),
        5: (
            "APPEND", 3, 1,
            [(ADD, "2f952e8c", 0, 1, A)],
            [("2f952e8c", 0, 1), ("7dc090cb", 1, 1), ("beb96add", 2, 1)],
        ),
        6: (
            "COMPACT", 3, 0,
            [
                (DEL, "beb96add", 2, 1, A),
                (DEL, "7dc090cb", 1, 1, A),
                (DEL, "2f952e8c", 0, 1, A),
                (ADD, "9d461e75", 2, 3, C),
            ],
            [("9d461e75", 2, 3)],
        ),
        7: ("APPEND", 4, 1, [(ADD, "1d8df134", 0, 1, A)], [("1d8df134", 0, 1), ("9d461e75", 2, 3)]),
        8: (
            "COMPACT", 4, 0,
            [(DEL, "1d8df134", 0, 1, A), (ADD, "1d8df134", 1, 1, A)],
            [("1d8df134", 1, 1), ("9d461e75", 2, 3)],
        ),
    },
    "test_pk_global_index_golden": {
        1: ("APPEND", 2, 2, [(ADD, "70baee15", 0, 2, A)], [("70baee15", 0, 2)]),
        2: ("COMPACT", 2, 0, [(DEL, "70baee15", 0, 2, A), (ADD, "70baee15", 2, 2, A)], [("70baee15", 2, 2)]),
        3: ("APPEND", 4, 2, [(ADD, "aea3eab0", 0, 2, A)], [("aea3eab0", 0, 2), ("70baee15", 2, 2)]),
        4: (
            "COMPACT", 4, 0,
            [(DEL, "70baee15", 2, 2, A), (DEL, "aea3eab0", 0, 2, A), (ADD, "1204a156", 2, 4, C)],
            [("1204a156", 2, 4)],
        ),
        5: ("APPEND", 6, 2, [(ADD, "247786b6", 0, 2, A)], [("247786b6", 0, 2), ("1204a156", 2, 4)]),
        6: (
            "COMPACT", 6, 0,
            [(DEL, "247786b6", 0, 2, A), (ADD, "247786b6", 1, 2, A)],
            [("247786b6", 1, 2), ("1204a156", 2, 4)],
        ),
    },
    "test_pk_vector_golden": {
        1: ("APPEND", 4, 4, [(ADD, "254abdaf", 0, 4, A)], [("254abdaf", 0, 4)]),
        2: ("COMPACT", 4, 0, [(DEL, "254abdaf", 0, 4, A), (ADD, "68671611", 5, 4, C)], [("68671611", 5, 4)]),
    },
}  # fmt: skip

TABLES = sorted(GOLDEN)


def _prefix(name: str) -> str:
    return name.removeprefix("data-")[:8]


@pytest.mark.parametrize("name", TABLES)
def test_golden_table_every_snapshot_kind_counts_entries_and_levels_match(paimon_golden: Path, name: str) -> None:
    table = PaimonTable.open(str(paimon_golden / name))
    expected = GOLDEN[name]
    assert table.earliest_snapshot_id() == 1
    assert table.latest_snapshot_id() == max(expected)
    for snapshot_id, (kind, total, delta, entries, live) in expected.items():
        snap = table.snapshot(snapshot_id)
        assert (snap.commit_kind, snap.total_record_count, snap.delta_record_count) == (CommitKind(kind), total, delta)
        assert snap.commit_identifier == LONG_MAX and snap.schema_id == 0
        got_entries = [
            (e.kind, _prefix(e.file.file_name), e.file.level, e.file.row_count, e.file.file_source)
            for e in table.delta_entries(snap)
        ]
        assert got_entries == entries, f"snapshot {snapshot_id}"
        (bucket,) = table.buckets(snap)
        assert (bucket.bucket, bucket.total_buckets, bucket.partition.arity) == (0, 1, 0)
        got_live = [(_prefix(f.file_name), f.level, f.row_count) for f in bucket.files]
        assert got_live == live, f"snapshot {snapshot_id}"
        # record counts are consistent with the manifests (Java: total = live rows, delta = added - deleted rows)
        assert bucket.row_count == total
        assert sum(r if k is ADD else -r for k, _, _, r, _ in entries) == delta


@pytest.mark.parametrize("name", TABLES)
def test_golden_table_picker_picks_what_java_compacted(paimon_golden: Path, name: str) -> None:
    """For every COMPACT snapshot N, our universal picker on snapshot N-1 picks the files Java compacted (its
    DELETE entries) with the output level of its ADD entries (deletion vectors on: ForceUpLevel0Compaction)."""
    table = PaimonTable.open(str(paimon_golden / name))
    options = table.options()
    assert options.deletion_vectors_enabled
    compacts = [i for i, snap in GOLDEN[name].items() if snap[0] == "COMPACT"]
    assert compacts
    for snapshot_id in compacts:
        (before,) = table.buckets(table.snapshot(snapshot_id - 1))
        unit = pick_unit(before.levels, options)
        assert unit is not None, f"snapshot {snapshot_id}"
        entries = table.delta_entries(table.snapshot(snapshot_id))
        assert sorted(f.file_name for f in unit.files) == sorted(e.file.file_name for e in entries if e.kind is DEL)
        assert {unit.output_level} == {e.file.level for e in entries if e.kind is ADD}


@pytest.mark.parametrize("name", TABLES)
def test_golden_table_snapshot_json_round_trips_in_java_key_order(paimon_golden: Path, name: str) -> None:
    table = PaimonTable.open(str(paimon_golden / name))
    for snapshot_id in table.snapshot_ids():
        raw = json.loads((paimon_golden / name / "snapshot" / f"snapshot-{snapshot_id}").read_text())
        obj = table.snapshot(snapshot_id).to_json_obj()
        assert list(obj.items()) == list(raw.items())


@pytest.mark.parametrize("name", TABLES)
def test_golden_table_manifest_schemas_and_records_round_trip_exactly(paimon_golden: Path, name: str) -> None:
    """Our writer schemas are the ones Java embeds, and every record converts to the model and back unchanged."""
    for path in sorted((paimon_golden / name / "manifest").iterdir()):
        if path.name.startswith("index-manifest"):
            continue
        container = read_container(path.read_bytes(), path=str(path))
        assert container.codec == "zstandard"
        if path.name.startswith("manifest-list-"):
            assert container.schema == MANIFEST_FILE_META_SCHEMA
            assert [ManifestFileMeta.from_avro(r).to_avro() for r in container.records] == list(container.records)
        else:
            assert container.schema == MANIFEST_ENTRY_SCHEMA
            assert [ManifestEntry.from_avro(r).to_avro() for r in container.records] == list(container.records)


@pytest.mark.parametrize("name", TABLES)
def test_golden_table_live_files_match_their_parquet_system_columns(paimon_golden: Path, name: str) -> None:
    """Row counts, sequence numbers and min/max keys of the live files agree with their ``_KEY_*``,
    ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` columns."""
    table = PaimonTable.open(str(paimon_golden / name))
    schema = table.schema()
    (bucket,) = table.buckets()
    for f in bucket.files:
        data = pq.read_table(Path(table.bucket_path(bucket.partition, bucket.bucket)) / f.file_name)
        keys = data.column("_KEY_id").to_pylist()
        seqs = data.column("_SEQUENCE_NUMBER").to_pylist()
        kinds = data.column("_VALUE_KIND").to_pylist()
        assert data.num_rows == f.row_count
        assert (min(seqs), max(seqs)) == (f.min_sequence_number, f.max_sequence_number)
        assert (min(keys),) == f.min_key.to_values(schema.key_types)
        assert (max(keys),) == f.max_key.to_values(schema.key_types)
        assert sum(1 for k in kinds if k in (1, 3)) == f.delete_row_count


def test_open_directory_without_schema_raises_paimon_table_not_found(tmp_path: Path) -> None:
    with pytest.raises(PaimonTableNotFoundError, match=r"No Paimon table at .*schema/schema-"):
        PaimonTable.open(str(tmp_path))


def test_snapshot_hints_missing_or_stale_fall_back_to_listing_as_java(paimon_golden: Path, tmp_path: Path) -> None:
    """Java ``HintFileUtils``: LATEST is trusted only if snapshot-<hint+1> does not exist, EARLIEST only if its
    snapshot exists; otherwise the snapshot directory listing decides."""
    copy = tmp_path / "t"
    shutil.copytree(paimon_golden / "test_pk_full_text_golden", copy)
    table = PaimonTable.open(str(copy))
    (copy / "snapshot" / "LATEST").write_text("3")
    (copy / "snapshot" / "EARLIEST").write_text("0")
    assert (table.latest_snapshot_id(), table.earliest_snapshot_id()) == (8, 1)
    (copy / "snapshot" / "LATEST").unlink()
    (copy / "snapshot" / "EARLIEST").write_text("not a number")
    assert (table.latest_snapshot_id(), table.earliest_snapshot_id()) == (8, 1)
    for i in (1, 2):
        (copy / "snapshot" / f"snapshot-{i}").unlink()
    (copy / "snapshot" / "LATEST").write_text("8")
    assert (table.latest_snapshot_id(), table.earliest_snapshot_id()) == (8, 3)
    latest = table.latest_snapshot()
    assert latest is not None and latest.commit_kind is CommitKind.COMPACT
