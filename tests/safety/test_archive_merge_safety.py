"""Merge of small archive files never loses an archived entry.

A small archive file that does not read completely (truncated, empty, garbage, a block whose content does not
decode) is neither merged nor deleted, and older small files are not merged past it (the archive order stays);
recovery of a crashed merge deletes only what is fully present in another file. Tables are written by the project,
archived timelines read back file by file.
"""

from __future__ import annotations

import logging
import shutil
import struct
from collections import Counter
from pathlib import Path

import pytest

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, encode_block
from lake_orchestration.hudi.model.avro import MergeArchiveFilePlan, schema_text
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import merge_archive_files, run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import (
    MERGE_ARCHIVE_PLAN_NAME,
    archive_dir,
    archive_file_name,
    list_archive_files,
    read_archive_file,
)
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options, write_trips_history

COMMITS = 18
RUNS = (15, 12, 9, 6, 3)  # hoodie.keep.min.commits of each archival run: 3 instants (9 entries) per archive file
MERGE = {
    "hoodie.archive.merge.enable": "true",
    "hoodie.archive.merge.files.batch.size": "3",
    "hoodie.cleaner.commits.retained": "1",
}


def _archive_opts(lo: int, *, merge: bool = False) -> dict[str, str]:
    opts = {
        "hoodie.keep.min.commits": str(lo),
        "hoodie.keep.max.commits": str(lo + 1),
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.commits.archival.batch": "4",  # several blocks per file: a truncation keeps some of them
    }
    return {**opts, **MERGE} if merge else opts


@pytest.fixture(scope="module")
def archived_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A COW table whose archived timeline is 5 small files (versions 1..5, 9 entries each), merge never run."""
    path = tmp_path_factory.mktemp("merge") / "t"
    opts = trips_options(table_type=TableType.COPY_ON_WRITE)
    write_trips_history(path, opts, rows=30, upserts=COMMITS - 1, fraction=0.2)
    for lo in RUNS:
        run_archive(HudiTable(str(path)), ArchiveConfig.from_options(_archive_opts(lo)))
    files = list_archive_files(HudiTable(str(path)).storage, _dir(HudiTable(str(path))))
    assert [f.version for f in files] == [1, 2, 3, 4, 5]
    return path


@pytest.fixture
def table(archived_table: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "t"
    shutil.copytree(archived_table, dst)
    return dst


def _dir(t: HudiTable) -> str:
    return archive_dir(t.storage, t.config.archivelog_folder)


def _archived(path: Path) -> Path:
    return path / ".hoodie" / "archived"


def _readable_entries(path: Path) -> Counter:  # type: ignore[type-arg]
    """(time, action, state) of every entry that reads, over all archive files (a file that does not decode
    contributes the entries of none of its blocks)."""
    storage = HudiTable(str(path)).storage
    out: Counter = Counter()  # type: ignore[type-arg]
    for f in list_archive_files(storage, archive_dir(storage, "archived")):
        try:
            out.update(e.key for e in read_archive_file(storage, f).entries)
        except CorruptFileError:
            pass
    return out


def _undecodable_block() -> bytes:
    """A well-framed Avro data block whose content says 3 records but holds none."""
    content = struct.pack(">ii", 3, 3)
    return encode_block(
        LogBlockType.AVRO_DATA_BLOCK, [(HeaderKey.SCHEMA, schema_text("HoodieArchivedMetaEntry"))], content
    )


def _corrupt(data: bytes, kind: str) -> bytes:
    if kind == "truncated":
        return data[: len(data) * 3 // 4]
    if kind == "empty":
        return b""
    if kind == "garbage":
        return bytes((i * 37 + 11) % 256 for i in range(len(data)))
    if kind == "undecodable":
        return data + _undecodable_block()
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["truncated", "empty", "garbage", "undecodable"])
def test_merge_never_merges_nor_deletes_a_file_that_does_not_read_completely(
    table: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    bad = _archived(table) / archive_file_name(2)
    bad.write_bytes(_corrupt(bad.read_bytes(), kind))
    bad_bytes = bad.read_bytes()
    v1 = (_archived(table) / archive_file_name(1)).read_bytes()
    before = _readable_entries(table)
    snapshot = hudi_rs_snapshot(table)
    with caplog.at_level(logging.WARNING):
        result = merge_archive_files(HudiTable(str(table)), ArchiveConfig.from_options(MERGE))
    assert bad.exists() and bad.read_bytes() == bad_bytes, "the unreadable file must stay as it was"
    # the newer small files 5, 4, 3 are merged; 2 stops the run, 1 (older) is not merged past it
    assert result.candidates == tuple(archive_file_name(v) for v in (5, 4, 3))
    assert result.merged_file == archive_file_name(6)
    assert result.skipped == (archive_file_name(2),)
    names = sorted(p.name for p in _archived(table).iterdir())
    assert names == sorted([archive_file_name(1), archive_file_name(2), archive_file_name(6)])
    assert (_archived(table) / archive_file_name(1)).read_bytes() == v1
    assert _readable_entries(table) == before, "an archived entry was lost or duplicated by the merge"
    assert any(archive_file_name(2) in r.getMessage() and r.levelno >= logging.WARNING for r in caplog.records)
    assert_same_rows(hudi_rs_snapshot(table), snapshot)


def test_merge_with_the_newest_file_unreadable_merges_nothing(table: Path, caplog: pytest.LogCaptureFixture) -> None:
    newest = _archived(table) / archive_file_name(5)
    newest.write_bytes(newest.read_bytes()[:100])
    before = sorted(p.name for p in _archived(table).iterdir())
    entries = _readable_entries(table)
    with caplog.at_level(logging.WARNING):
        result = run_archive(HudiTable(str(table)), ArchiveConfig.from_options(_archive_opts(3, merge=True)))
    assert result.merge.merged_file is None and not result.merge.deleted
    assert sorted(p.name for p in _archived(table).iterdir()) == before
    assert _readable_entries(table) == entries
    assert any(archive_file_name(5) in r.getMessage() for r in caplog.records)


def test_merge_recovery_keeps_candidates_the_merged_file_does_not_fully_hold(table: Path) -> None:
    """A crash after the first candidate was deleted, then the merged file lost its tail: recovery must not delete
    the remaining candidates, whose entries the merged file no longer holds."""

    class Crash(Exception):
        pass

    def crash(at: str) -> None:
        if at == "first_candidate_deleted":
            raise Crash(at)

    from lake_orchestration.hudi.services.archive.merge import merge_small_archive_files

    storage = HudiTable(str(table)).storage
    before = _readable_entries(table)
    with pytest.raises(Crash):
        merge_small_archive_files(
            storage, archive_dir(storage, "archived"), small_file_limit=10**9, min_files=3, batch=4, crash=crash
        )
    merged = _archived(table) / archive_file_name(6)
    assert merged.exists() and not (_archived(table) / archive_file_name(5)).exists()
    merged.write_bytes(merged.read_bytes()[: merged.stat().st_size // 2])  # the merged file loses its tail
    survivors = {v: (_archived(table) / archive_file_name(v)).read_bytes() for v in (1, 2, 3, 4)}
    held = _readable_entries(table)
    merge_archive_files(
        HudiTable(str(table)), ArchiveConfig.from_options({**MERGE, "hoodie.archive.merge.enable": "false"})
    )
    assert not (_archived(table) / MERGE_ARCHIVE_PLAN_NAME).exists()
    for v, data in survivors.items():
        assert (_archived(table) / archive_file_name(v)).read_bytes() == data, f"candidate {v} was deleted"
    assert _readable_entries(table) == held
    assert set(held) <= set(before)


def test_merge_recovery_never_deletes_a_merged_file_that_is_not_a_copy_of_the_candidates(table: Path) -> None:
    """A plan naming an archive file that holds other entries (another run wrote that version) as its merged file:
    recovery with every candidate present must not delete it."""
    before = _readable_entries(table)
    plan = MergeArchiveFilePlan(
        candidate=tuple(f"file:{_archived(table) / archive_file_name(v)}" for v in (4, 3)),
        merged_archive_file_name=archive_file_name(5),
    )
    (_archived(table) / MERGE_ARCHIVE_PLAN_NAME).write_bytes(plan.to_bytes())
    result = merge_archive_files(
        HudiTable(str(table)), ArchiveConfig.from_options({**MERGE, "hoodie.archive.merge.enable": "false"})
    )
    assert result.recovered == "reverted"
    assert (_archived(table) / archive_file_name(5)).exists()
    assert not (_archived(table) / MERGE_ARCHIVE_PLAN_NAME).exists()
    assert _readable_entries(table) == before


def test_merge_recovery_of_a_partial_copy_deletes_it_and_keeps_every_entry(table: Path) -> None:
    """The usual crash: merged file written, no candidate deleted yet: the copy goes, the candidates stay."""

    class Crash(Exception):
        pass

    def crash(at: str) -> None:
        if at == "merged_file_written":
            raise Crash(at)

    from lake_orchestration.hudi.services.archive.merge import merge_small_archive_files

    before = _readable_entries(table)
    with pytest.raises(Crash):
        merge_small_archive_files(
            HudiTable(str(table)).storage,
            _dir(HudiTable(str(table))),
            small_file_limit=10**9,
            min_files=3,
            batch=4,
            crash=crash,
        )
    result = merge_archive_files(HudiTable(str(table)), ArchiveConfig.from_options(MERGE))
    assert result.recovered == "reverted"
    assert _readable_entries(table) == before
    assert sorted(p.name for p in _archived(table).iterdir()) == [archive_file_name(6)]
