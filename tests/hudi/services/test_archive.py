"""Archival: Hudi's selection rules, the archive file layout, crash convergence, merge of small archive files."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pendulum
import pyarrow as pa
import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.errors import PlanError
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, iter_blocks
from lake_orchestration.hudi.model.avro import CleanerPlan, CleanMetadata, SavepointMetadata, schema_text
from lake_orchestration.hudi.model.instant import INSTANT_FORMAT
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import archive, merge_archive_files, run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.archive.executor import archive_records
from lake_orchestration.hudi.services.archive.planner import raw_instants
from lake_orchestration.hudi.services.compaction import run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.archived_timeline import (
    MERGE_ARCHIVE_PLAN_NAME,
    ArchivedTimeline,
    decode_archive_block_records,
    encode_archive_block,
)
from lake_orchestration.hudi.write import write_table
from tests.conftest import HudiFixture
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.tables import trips_table
from tests.trips import trips_options

SMALL = {"hoodie.keep.min.commits": "11", "hoodie.keep.max.commits": "12"}


class _Crash(Exception):
    pass


def _hoodie_names(path: Path) -> set[str]:
    return {p.name for p in (path / ".hoodie").iterdir() if p.is_file()}


def _completed_commit_times(path: Path) -> list[str]:
    return sorted(n.split(".")[0] for n in _hoodie_names(path) if n.endswith((".commit", ".deltacommit")))


def _state_files(path: Path, times: list[str]) -> set[str]:
    ts = set(times)
    return {n for n in _hoodie_names(path) if n.split(".")[0] in ts}


def _archived_keys(path: Path) -> list[tuple[str, str, int]]:
    return [e.key for e in ArchivedTimeline.load(HudiTable(str(path)).storage)]


def _plus_ms(ts: str, ms: int) -> str:
    dt = pendulum.from_format(ts, INSTANT_FORMAT, tz="UTC").add(microseconds=1000 * ms)
    return f"{dt.format('YYYYMMDDHHmmss')}{dt.microsecond // 1000:03d}"


def test_archive_mor_defaults_archives_oldest_keeps_min_and_snapshot_unchanged(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 35)
    times = _completed_commit_times(path)
    originals = {t: json.loads((path / ".hoodie" / f"{t}.deltacommit").read_text()) for t in times}
    expected_files = _state_files(path, times[:15])  # 35 > max 30: archive 35 - min 20 = 15 oldest
    before = hudi_rs_snapshot(path)

    result = run_archive(HudiTable(str(path)))

    assert [str(i.time) for i in result.archived_instants] == times[:15]
    assert set(result.deleted_files) == expected_files and len(expected_files) == 45
    assert result.archive_file == ".commits_.archive.1_1-0-1"
    assert _completed_commit_times(path) == times[15:]
    assert not _state_files(path, times[:15])
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), before)
    assert_same_rows(hudi_rs_snapshot(path), before)
    # every archived state is readable, with the metadata the commit file held
    archived = ArchivedTimeline.load(HudiTable(str(path)).storage)
    assert {
        f"{e.instant.time}.{e.instant.action.value}"
        + ("" if e.instant.is_completed else f".{e.instant.state.name.lower()}")
        for e in archived
    } == expected_files
    for e in archived.entries:
        if not e.instant.is_completed:
            continue
        md = e.entry.hoodie_commit_metadata
        orig = originals[str(e.instant.time)]
        assert md["operationType"] == orig["operationType"]
        assert md["extraMetadata"] == {**orig["extraMetadata"], "ROLLING_STAT": ""}
        got = {
            p: sorted((s["fileId"], s["path"], s["numWrites"], s["totalWriteBytes"]) for s in stats)
            for p, stats in md["partitionToWriteStats"].items()
        }
        want = {
            p: sorted((s["fileId"], s["path"], s["numWrites"], s["totalWriteBytes"]) for s in stats)
            for p, stats in orig["partitionToWriteStats"].items()
        }
        assert got == want
    # the next write is accepted and still read by the oracle
    base = generate_trips(40, partitions=2, seed=1)
    write_table(
        str(path),
        generate_updates(base, fraction=0.2, seed=99, ts_offset=10**9),
        operation="upsert",
        options=trips_options(),
    )
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), hudi_rs_snapshot(path))
    # a second run has nothing to do
    again = run_archive(HudiTable(str(path)))
    assert not again.archived_instants and again.archive_file is None


def test_archive_file_block_layout_is_hudi_archive_format(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 16, TableType.COPY_ON_WRITE)
    run_archive(HudiTable(str(path)), ArchiveConfig.from_options({**SMALL, "hoodie.commits.archival.batch": "4"}))
    data = (path / ".hoodie" / "archived" / ".commits_.archive.1_1-0-1").read_bytes()
    blocks = list(iter_blocks(data))
    counts = []
    for b in blocks:
        assert b.block_type is LogBlockType.AVRO_DATA_BLOCK
        assert b.header == ((int(HeaderKey.SCHEMA), schema_text("HoodieArchivedMetaEntry")),)
        assert b.footer == ()
        version, n = struct.unpack_from(">ii", b.content, 0)
        assert version == 3
        counts.append(n)
    assert counts == [4, 4, 4, 3]  # 16 - 11 = 5 commits x 3 state files, 4 per block
    assert json.loads(schema_text("HoodieArchivedMetaEntry"))["name"] == "HoodieArchivedMetaEntry"


def test_archive_keep_min_not_above_cleaner_retained_raises(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 2)
    with pytest.raises(PlanError, match=r"hoodie.keep.min.commits=10 to be greater than hoodie.cleaner.commits"):
        run_archive(
            HudiTable(str(path)),
            ArchiveConfig.from_options({"hoodie.keep.min.commits": "10", "hoodie.keep.max.commits": "30"}),
        )
    with pytest.raises(PlanError, match=r"hoodie.keep.max.commits=20 to be greater"):
        run_archive(
            HudiTable(str(path)),
            ArchiveConfig.from_options({"hoodie.keep.min.commits": "20", "hoodie.keep.max.commits": "20"}),
        )
    with pytest.raises(PlanError, match=r"hoodie.keep.min.commits='x'"):
        run_archive(HudiTable(str(path)), ArchiveConfig.from_options({"hoodie.keep.min.commits": "x"}))


def test_archive_pending_instant_keeps_commits_from_the_last_completed_before_it(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 20, TableType.COPY_ON_WRITE)
    times = _completed_commit_times(path)
    pending = _plus_ms(times[7], 1)
    assert pending < times[8]
    (path / ".hoodie" / f"{pending}.commit.requested").write_bytes(b"")
    # KEEP_LATEST_FILE_VERSIONS: no earliest commit to retain, so only the pending rule binds:
    # oldest commit to retain = times[7] (last completed before the pending one) -> times[:7] (count limit: 9)
    options = {**SMALL, "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS"}
    result = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(options), dry_run=True)
    assert [str(i.time) for i in result.archived_instants] == times[:7]
    # KEEP_LATEST_COMMITS (10): the cleaner retains from times[7] (its earliest commit to retain stops before the
    # pending instant) -> min = 12 completed after it + 2 = 14, max = 15; 20 > 15 -> archive 20 - 14 = 6
    result = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(SMALL))
    assert (result.min_instants_to_keep, result.max_instants_to_keep) == (14, 15)
    assert result.earliest_commit_to_retain == times[7]
    assert [str(i.time) for i in result.archived_instants] == times[:6]
    assert (path / ".hoodie" / f"{pending}.commit.requested").exists()


@pytest.mark.parametrize("beyond", [False, True])
def test_archive_savepoint_stops_archival_unless_beyond_savepoint(tmp_path: Path, beyond: bool) -> None:
    path, _ = trips_table(tmp_path, 20, TableType.COPY_ON_WRITE)
    times = _completed_commit_times(path)
    sp = SavepointMetadata(savepointed_by="test", savepointed_at=0, comments="", partition_metadata={})
    (path / ".hoodie" / f"{times[4]}.savepoint.inflight").write_bytes(b"")
    (path / ".hoodie" / f"{times[4]}.savepoint").write_bytes(sp.to_bytes())
    options = {**SMALL, "hoodie.archive.beyond.savepoint": str(beyond).lower()}
    result = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(options))
    got = [str(i.time) for i in result.archived_instants]
    assert got == ([t for t in times[:10] if t != times[4]] if beyond else times[:4])
    assert (path / ".hoodie" / f"{times[4]}.commit").exists()


def test_archive_mor_keeps_deltacommits_a_compaction_trigger_needs(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 35)
    times = _completed_commit_times(path)
    result = run_archive(
        HudiTable(str(path)), ArchiveConfig.from_options({**SMALL, "hoodie.compact.inline.max.delta.commits": "20"})
    )
    # no compaction yet: keep the last 20 deltacommits, i.e. archive only before times[15] (count limit: 24)
    assert [str(i.time) for i in result.archived_instants] == times[:15]
    result = run_archive(
        HudiTable(str(path)),
        ArchiveConfig.from_options({**SMALL, "hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED"}),
    )
    assert [str(i.time) for i in result.archived_instants] == times[15:24]  # the rule does not apply


def test_archive_compaction_groups_plan_and_commit_with_metadata(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 12)
    t = HudiTable(str(path))
    sched = schedule_compaction(t, force=True)
    run_compaction(t)
    c = str(sched.instant)
    opts = trips_options()
    base = generate_trips(40, partitions=2, seed=1)
    for i in range(12):
        write_table(
            str(path),
            generate_updates(base, fraction=0.1, seed=50 + i, ts_offset=(50 + i) * 10**6),
            operation="upsert",
            options=opts,
        )
    before = hudi_rs_snapshot(path)
    result = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(SMALL))
    # 25 completed commits, keep 11; compaction rule keeps the last 5 deltacommits after the compaction
    assert len(result.archived_instants) == 14 and c in {str(i.time) for i in result.archived_instants}
    assert {f"{c}.compaction.requested", f"{c}.compaction.inflight", f"{c}.commit"} <= set(result.archived_files)
    archived = ArchivedTimeline.load(HudiTable(str(path)).storage)
    req = next(e for e in archived if str(e.instant.time) == c and e.instant.is_requested)
    assert req.entry.action_type == "compaction" and req.entry.hoodie_compaction_plan.operations
    done = next(e for e in archived if str(e.instant.time) == c and e.instant.is_completed)
    assert done.entry.action_type == "commit"
    assert done.entry.hoodie_commit_metadata["operationType"] == "COMPACT"
    assert done.entry.hoodie_commit_metadata["compacted"] is True
    assert_same_rows(hudi_rs_snapshot(path), before)


def _add_clean(path: Path, ts: str) -> None:
    plan = CleanerPlan(
        policy="KEEP_LATEST_COMMITS",
        version=2,
        files_to_be_deleted_per_partition={},
        file_paths_to_be_deleted_per_partition={},
    )
    md = CleanMetadata(
        start_clean_time=ts,
        time_taken_in_millis=1,
        total_files_deleted=0,
        earliest_commit_to_retain="",
        partition_metadata={},
        version=2,
    )
    hoodie = path / ".hoodie"
    (hoodie / f"{ts}.clean.requested").write_bytes(plan.to_bytes())
    (hoodie / f"{ts}.clean.inflight").write_bytes(plan.to_bytes())
    (hoodie / f"{ts}.clean").write_bytes(md.to_bytes())


def test_archive_cleans_archived_by_their_own_count(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 3, TableType.COPY_ON_WRITE)
    last = _completed_commit_times(path)[-1]
    cleans = [_plus_ms(last, 10 * (k + 1)) for k in range(13)]
    for ts in cleans:
        _add_clean(path, ts)
    result = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(SMALL))
    assert [str(i.time) for i in result.archived_instants] == cleans[:2]  # 13 > 12: archive 13 - 11
    archived = ArchivedTimeline.load(HudiTable(str(path)).storage)
    assert len(archived) == 6
    for e in archived:
        assert e.entry.action_type == "clean"
        if e.instant.is_completed:
            assert e.entry.hoodie_clean_metadata.start_clean_time == str(e.instant.time)
        else:
            assert e.entry.hoodie_cleaner_plan.policy == "KEEP_LATEST_COMMITS"
    assert len(_completed_commit_times(path)) == 3


@pytest.mark.parametrize("stage", ["archive_written", "after_first_instant_deleted", "after_pending_deleted"])
def test_archive_crash_next_run_converges_without_loss_or_duplicates(tmp_path: Path, stage: str) -> None:
    path, _ = trips_table(tmp_path, 20, TableType.COPY_ON_WRITE)
    times = _completed_commit_times(path)
    expected = _state_files(path, times[:9])
    before = hudi_rs_snapshot(path)

    def crash(at: str) -> None:
        if at == stage:
            raise _Crash(at)

    with pytest.raises(_Crash):
        run_archive(HudiTable(str(path)), ArchiveConfig.from_options(SMALL), _crash_at=crash)
    assert_same_rows(hudi_rs_snapshot(path), before)
    dry = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(SMALL), dry_run=True)
    assert dry.repaired_files and set(dry.repaired_files) <= expected
    result = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(SMALL))
    assert set(result.repaired_files) <= expected and not result.archived_instants
    keys = _archived_keys(path)
    assert len(keys) == len(set(keys)) == len(expected)
    assert _completed_commit_times(path) == times[9:]
    assert not _state_files(path, times[:9])
    assert_same_rows(hudi_rs_snapshot(path), before)


def _merge_runs(path: Path, crash=None) -> list:  # type: ignore[no-untyped-def]
    results = []
    for k, lo in enumerate((31, 27, 23)):
        options = {
            "hoodie.keep.min.commits": str(lo),
            "hoodie.keep.max.commits": str(lo + 1),
            "hoodie.archive.merge.enable": "true",
            "hoodie.archive.merge.files.batch.size": "3",
        }
        results.append(
            run_archive(HudiTable(str(path)), ArchiveConfig.from_options(options), _crash_at=crash if k == 2 else None)
        )
    return results


def _archive_files(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie" / "archived").iterdir())


def test_archive_merge_small_files_end_as_one_with_every_instant_readable(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 35, TableType.COPY_ON_WRITE)
    times = _completed_commit_times(path)
    r1, r2, r3 = _merge_runs(path)
    assert [len(r.archived_instants) for r in (r1, r2, r3)] == [4, 4, 4]
    assert not r1.merge.candidates and not r2.merge.candidates
    assert r3.merge.candidates == (
        ".commits_.archive.3_1-0-1",
        ".commits_.archive.2_1-0-1",
        ".commits_.archive.1_1-0-1",
    )
    assert _archive_files(path) == [".commits_.archive.4_1-0-1"] == [r3.merge.merged_file]
    keys = _archived_keys(path)
    assert len(keys) == len(set(keys)) == 36
    assert sorted({k[0] for k in keys}) == times[:12]
    archived = ArchivedTimeline.load(HudiTable(str(path)).storage)
    assert all(e.entry.hoodie_commit_metadata is not None for e in archived)


def test_archive_step_then_merge_step_end_as_run_archive_does(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 35, TableType.COPY_ON_WRITE)
    times = _completed_commit_times(path)
    before = hudi_rs_snapshot(path)
    for lo in (31, 27, 23):
        options = {
            "hoodie.keep.min.commits": str(lo),
            "hoodie.keep.max.commits": str(lo + 1),
            "hoodie.archive.merge.enable": "true",
            "hoodie.archive.merge.files.batch.size": "3",
        }
        config = ArchiveConfig.from_options(options)
        archived = archive(HudiTable(str(path)), config)
        assert len(archived.archived_instants) == 4 and not archived.merge.candidates  # the step never merges
        merged = merge_archive_files(HudiTable(str(path)), config)
    # the last merge step merged the three small files, as run_archive's third run does
    assert merged.candidates == (
        ".commits_.archive.3_1-0-1",
        ".commits_.archive.2_1-0-1",
        ".commits_.archive.1_1-0-1",
    )
    assert _archive_files(path) == [".commits_.archive.4_1-0-1"] == [merged.merged_file]
    keys = _archived_keys(path)
    assert len(keys) == len(set(keys)) == 36
    assert sorted({k[0] for k in keys}) == times[:12]
    assert_same_rows(hudi_rs_snapshot(path), before)


@pytest.mark.parametrize("stage", ["merge_plan_written", "merged_file_written", "first_candidate_deleted"])
def test_archive_merge_crash_next_run_completes_or_undoes(tmp_path: Path, stage: str) -> None:
    path, _ = trips_table(tmp_path, 35, TableType.COPY_ON_WRITE)
    times = _completed_commit_times(path)
    before = hudi_rs_snapshot(path)

    def crash(at: str) -> None:
        if at == stage:
            raise _Crash(at)

    with pytest.raises(_Crash):
        _merge_runs(path, crash)
    assert (path / ".hoodie" / "archived" / MERGE_ARCHIVE_PLAN_NAME).exists()
    options = {
        "hoodie.keep.min.commits": "23",
        "hoodie.keep.max.commits": "24",
        "hoodie.archive.merge.enable": "true",
        "hoodie.archive.merge.files.batch.size": "3",
    }
    result = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(options))
    assert result.merge.recovered == ("completed" if stage == "first_candidate_deleted" else "reverted")
    files = _archive_files(path)
    assert MERGE_ARCHIVE_PLAN_NAME not in files and len(files) == 1
    keys = _archived_keys(path)
    assert len(keys) == len(set(keys)) == 36
    assert sorted({k[0] for k in keys}) == times[:12]
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_archive_unreadable_merge_plan_is_discarded(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 3, TableType.COPY_ON_WRITE)
    (path / ".hoodie" / "archived" / MERGE_ARCHIVE_PLAN_NAME).write_bytes(b"Obj\x01trunc")
    result = run_archive(HudiTable(str(path)), ArchiveConfig.from_options({"hoodie.archive.merge.enable": "true"}))
    assert result.merge.recovered == "discarded"
    assert not (path / ".hoodie" / "archived" / MERGE_ARCHIVE_PLAN_NAME).exists()


def test_archive_dry_run_writes_and_deletes_nothing(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 14, TableType.COPY_ON_WRITE)
    names = _hoodie_names(path)
    result = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(SMALL), dry_run=True)
    assert result.dry_run and len(result.archived_instants) == 3 and result.archive_file is None
    assert _hoodie_names(path) == names and _archive_files(path) == []


@pytest.mark.parametrize("fixture", list(HudiFixture), ids=lambda f: f.name)
def test_archive_entries_of_java_written_instants_encode_and_read_back(hudi_fixture, fixture: HudiFixture) -> None:  # type: ignore[no-untyped-def]
    t = HudiTable(str(hudi_fixture(fixture)))
    assert len(ArchivedTimeline.load(t.storage, t.config.archivelog_folder)) == 0  # fixtures have none
    assert not run_archive(t, dry_run=True).archived_instants
    files = raw_instants(t)
    records = archive_records(t, files)
    content = decode_archive_block_records(_content(records), schema_text("HoodieArchivedMetaEntry"), path="mem")
    assert content == records
    for f, rec in zip(files, records, strict=True):
        assert (rec["commitTime"], rec["actionState"]) == (str(f.time), f.state.name)
        if f.action.value == "rollback" and f.is_completed:
            assert rec["hoodieRollbackMetadata"]["commitsRollback"]
        if f.action.value == "replacecommit" and f.is_completed:
            assert rec["hoodieReplaceCommitMetadata"]["partitionToReplaceFileIds"]


def _content(records: list) -> bytes:  # type: ignore[type-arg]
    (block,) = list(iter_blocks(encode_archive_block(records)))
    return block.content


def test_archive_cli_dry_run_then_archive_then_show_archived(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 14, TableType.COPY_ON_WRITE)
    runner = CliRunner()
    opts = ["--option", "hoodie.keep.min.commits=11", "--option", "hoodie.keep.max.commits=12"]
    out = runner.invoke(cli, ["archive", str(path), "--dry-run", "--json", *opts])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["dry_run"] is True and len(json.loads(out.output)["archived_instants"]) == 3
    out = runner.invoke(cli, ["archive", str(path), *opts])
    assert out.exit_code == 0 and "Archived 3 instant(s) (9 file(s)) into .commits_.archive.1_1-0-1" in out.output
    out = runner.invoke(cli, ["timeline", "show", str(path), "--archived", "--json"])
    rows = json.loads(out.output)
    assert len(rows) == 9 and {r["file"] for r in rows} == {".commits_.archive.1_1-0-1"}
    out = runner.invoke(cli, ["archive", str(path), "--option", "hoodie.keep.min.commits=5"])
    assert out.exit_code == 1 and "hoodie.keep.min.commits=5" in out.output


def test_archive_table_stays_writable_and_readable_after_archiving_all_but_min(tmp_path: Path) -> None:
    path, _ = trips_table(tmp_path, 13)
    run_archive(
        HudiTable(str(path)), ArchiveConfig.from_options({**SMALL, "hoodie.compact.inline.max.delta.commits": "1"})
    )
    assert len(_completed_commit_times(path)) == 11
    extra = pa.concat_tables([generate_trips(5, partitions=2, seed=7)])
    write_table(str(path), extra, operation="insert", options=trips_options())
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), hudi_rs_snapshot(path))
