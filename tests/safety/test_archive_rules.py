"""Archival retention rules with exact archived/kept instants (``HoodieTimelineArchiver.getCommitInstantsToArchive``
of Hudi 0.14/0.15).

* Replacecommits (clustering, insert_overwrite): ``ClusteringUtils.getOldestInstantToRetainForClustering`` keeps
  every commit from the first replacecommit at or after the last clean's earliest instant to retain (all of them
  when there was no clean): a replacecommit leaves the active timeline only once the cleaner has deleted the file
  groups it replaced, otherwise the file-system view would show them again.
* Metadata table: nothing at or after the metadata table's latest compaction is archived (none at all before its
  first compaction). Java 0.14 names metadata-table instants with suffixes: its compaction is
  ``<latest deltacommit> + "001"`` (20 digits), its initial commits ``00000000000000010`` and so on.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.conftest import HudiFixture
from tests.oracle import assert_same_rows, hudi_rs_snapshot

pytestmark = pytest.mark.fixtures

# keep 2..3 commits (the cleaner, KEEP_LATEST_COMMITS with 1 retained, retains from the latest commit on:
# (#commits after it = 0) + 2 = 2 does not raise min)
ARCHIVE = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}


def _timeline_files(path: Path) -> set[str]:
    return {p.name for p in (path / ".hoodie").iterdir() if p.is_file() and p.name[0].isdigit()}


def _completed(path: Path) -> list[str]:
    return sorted(
        n.split(".")[0] for n in _timeline_files(path) if n.endswith((".commit", ".deltacommit", ".replacecommit"))
    )


def _archived(path: Path) -> list[tuple[str, str, str]]:
    return sorted(
        (str(e.instant.time), e.instant.action.value, e.instant.state.name)
        for e in ArchivedTimeline.load(HudiTable(str(path)).storage)
    )


def _upsert_fixture_row(path: Path, n: int) -> None:
    """One more commit on the fixture table: the surviving row with a new longField (the project's writer)."""
    rows = read_snapshot_table(HudiTable(str(path)))
    rows = rows.select([c for c in rows.column_names if not c.startswith("_hoodie_")])
    rows = rows.set_column(
        rows.schema.get_field_index("longField"), "longField", pa.array([1_000_000_000 + n] * rows.num_rows, pa.int64())
    )
    write_table(str(path), rows, operation="upsert")


def test_replacecommit_stays_until_its_replaced_file_groups_are_cleaned(fresh_fixture) -> None:  # type: ignore[no-untyped-def]
    path = fresh_fixture(HudiFixture.COW_OVERWRITE_TABLE)
    (c1, c2, r3) = _completed(path)
    assert f"{r3}.replacecommit" in _timeline_files(path)
    replaced = sorted(p.relative_to(path).as_posix() for p in path.rglob("*.parquet") if r3 not in p.name)
    for n in range(4):
        _upsert_fixture_row(path, n)
    c4, c5, c6, c7 = _completed(path)[3:]
    before = hudi_rs_snapshot(path)

    # 7 commits > max 3: up to 7 - 2 = 5 could go, but the replacecommit r3 (never cleaned) stops archival
    res = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(ARCHIVE))
    assert [str(i.time) for i in res.archived_instants] == [c1, c2]
    assert _completed(path) == [r3, c4, c5, c6, c7]
    assert {f"{r3}.replacecommit{s}" for s in ("", ".inflight", ".requested")} <= _timeline_files(path)
    assert _archived(path) == sorted(
        [(c, "commit", s) for c in (c1, c2) for s in ("REQUESTED", "INFLIGHT", "COMPLETED")]
    )
    # the replaced file groups are still on disk and still hidden
    assert all((path / f).exists() for f in replaced)
    assert_same_rows(hudi_rs_snapshot(path), before)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), before)
    # nothing changed for the cleaner: a second run archives nothing
    assert not run_archive(HudiTable(str(path)), ArchiveConfig.from_options(ARCHIVE)).archived_instants

    # the cleaner deletes the replaced file groups; then r3 may go: 5 commits > 3, the 5 - 2 oldest
    run_clean(HudiTable(str(path)), CleanConfig.from_options({"hoodie.cleaner.commits.retained": "1"}))
    assert not any((path / f).exists() for f in replaced)
    res = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(ARCHIVE))
    assert [str(i.time) for i in res.archived_instants] == [r3, c4, c5]
    assert _completed(path) == [c6, c7]
    assert (r3, "replacecommit", "COMPLETED") in _archived(path)
    assert_same_rows(hudi_rs_snapshot(path), before)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), before)


# -- the metadata table's compaction bounds archival --------------------------------------------------------------
def _cow(tmp_path: Path, commits: int) -> Path:
    path = tmp_path / "t"
    opts = WriteOptions(
        table_name="t",
        table_type=TableType.COPY_ON_WRITE,
        record_key_fields=("id",),
        partition_fields=("p",),
        precombine_field="ts",
    )
    for n in range(commits):
        rows = pa.table({"id": ["a", "b"], "p": ["x", "y"], "ts": pa.array([n, n], pa.int64()), "v": [n, -n]})
        write_table(str(path), rows, operation="upsert", options=opts)
    return path


def _java_metadata_table(path: Path, data_instants: list[str], compacted_at: str | None) -> None:
    """The timeline a Java 0.14 writer keeps in ``.hoodie/metadata``: initial deltacommit ``00000000000000010``,
    one deltacommit per data commit, and a compaction ``<deltacommit> + 001`` after ``compacted_at``."""
    HudiTable(str(path)).update_properties({"hoodie.table.metadata.partitions": "files"})
    mdt = path / ".hoodie" / "metadata" / ".hoodie"
    mdt.mkdir(parents=True)
    (mdt / "hoodie.properties").write_text(
        "hoodie.table.name=t_metadata\nhoodie.table.type=MERGE_ON_READ\nhoodie.table.version=6\n"
        "hoodie.table.base.file.format=HFILE\nhoodie.populate.meta.fields=false\n"
        "hoodie.compaction.payload.class=org.apache.hudi.metadata.HoodieMetadataPayload\n"
        "hoodie.table.recordkey.fields=key\nhoodie.archivelog.folder=archived\nhoodie.timeline.layout.version=1\n"
    )
    md = b'{"partitionToWriteStats":{},"compacted":false,"extraMetadata":{},"operationType":"UPSERT_PREPPED"}'
    for ts in ["00000000000000010", *data_instants]:
        (mdt / f"{ts}.deltacommit.requested").write_bytes(b"")
        (mdt / f"{ts}.deltacommit.inflight").write_bytes(md)
        (mdt / f"{ts}.deltacommit").write_bytes(md)
        if ts == compacted_at:
            c = f"{ts}001"
            (mdt / f"{c}.compaction.requested").write_bytes(b"")
            (mdt / f"{c}.compaction.inflight").write_bytes(b"")
            (mdt / f"{c}.commit").write_bytes(md.replace(b'"compacted":false', b'"compacted":true'))


@pytest.mark.parametrize("compacted", [None, 2, 4, 7], ids=["never-compacted", "at-3rd", "at-5th", "at-8th"])
def test_archive_never_passes_the_metadata_table_compaction(tmp_path: Path, compacted: int | None) -> None:
    path = _cow(tmp_path, 8)
    commits = _completed(path)
    before = hudi_rs_snapshot(path)
    _java_metadata_table(path, commits, commits[compacted] if compacted is not None else None)
    res = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(ARCHIVE))
    # without the metadata table: 8 > max 3, archive the 8 - min 2 = 6 oldest; with it only those before
    # "<compacted deltacommit>001" (a string comparison: the compacted deltacommit itself is before it)
    expected = {None: [], 2: commits[:3], 4: commits[:5], 7: commits[:6]}[compacted]
    assert [str(i.time) for i in res.archived_instants] == expected
    assert _completed(path) == commits[len(expected) :]
    assert (path / ".hoodie" / "metadata" / ".hoodie" / "hoodie.properties").exists()
    got = hudi_rs_snapshot(path)
    assert got is not None and before is not None
    assert_same_rows(got.filter(pc.is_valid(got.column("id"))), before)
