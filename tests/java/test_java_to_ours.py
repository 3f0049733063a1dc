"""Java writes → our services → Java reads, then Java writes and runs its own services on top of ours.

Each test is one cell of the interop matrix (docs/interop.md). The Java-written histories are built once per run
(:func:`tests.java.interop.java_history`); each cell works on a private copy. Where Java has the same service as a
Spark SQL procedure (``run_clean``), Java runs it on a second copy and is the oracle of what ours must do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_orchestration.datagen import generate_updates, pick_deletes
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import ArchiveConfig, run_archive
from lake_orchestration.hudi.services.clean import CleanConfig, run_clean
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.services.log_compaction import run_log_compaction, schedule_log_compaction
from lake_orchestration.hudi.services.rollback import rollback_write
from lake_orchestration.hudi.services.savepoint import create_savepoint
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.hudi.write import write_table
from tests.java.harness import JavaHudi, JavaHudiError
from tests.java.interop import (
    COMPLEX,
    NON_PARTITIONED,
    PARTITIONED,
    TIMESTAMP,
    JavaTable,
    Shape,
    assert_rows_equal,
    data_files,
    instant_time,
    java_read,
    java_write,
    keyed_meta,
    procedure,
    trips,
)
from tests.oracle import hudi_rs_snapshot

pytestmark = [pytest.mark.java]

MOR, COW = TableType.MERGE_ON_READ, TableType.COPY_ON_WRITE
DIRECTION = "Java writes → our service → Java reads"
TYPE_NAME = {MOR: "MOR", COW: "COW"}
NO_METADATA = "hoodie.metadata.enable=false"
"""Java's procedures that write build a write client from the table's options: without this it would create a
metadata table the histories do not have."""


def cells(service: str, checks: str, cases: list[tuple[str, str, tuple[Any, ...]]]) -> list[Any]:
    """One ``pytest.param`` per ``(id, table description, values)``, each marked as its own interop cell (a cell's
    table differs per case, and a mark on the function would be the closest one)."""
    return [
        pytest.param(
            *values,
            id=case_id,
            marks=pytest.mark.interop(direction=DIRECTION, table=table, service=service, checks=checks),
        )
        for case_id, table, values in cases
    ]


def java_continues(java: JavaHudi, t: JavaTable, **options: str) -> None:
    """Java writes again on top of ours (an upsert of new and existing keys, then a delete), running its own
    compaction (MOR), clean and archive inline; then Java, our reader and hudi-rs read the same rows, equal to the
    model. ``options`` override Java's write options (e.g. ``hoodie.keep.*``, ``hoodie.archive.merge.*``).

    One retained commit and updates of existing keys: Java's clean always has file slices to delete."""
    extra = {
        "hoodie.clean.automatic": "true",
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.archive.automatic": "true",
        "hoodie.keep.min.commits": "3",
        "hoodie.keep.max.commits": "4",
    }
    if t.table_type is MOR:
        extra |= {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
    extra |= options
    ours_before = set(t.instants)
    current = t.expected()
    more = pa.concat_tables(
        [generate_updates(current, fraction=0.2, seed=97, ts_offset=3 * 10**6), trips(30, seed=99).cast(t.schema)]
    )
    java_write(java, t, more, "upsert", **extra)
    gone = pa.concat_tables([more.slice(0, 5), more.slice(more.num_rows - 5, 5)])
    java_write(java, t, gone, "delete", **extra)
    new = [i for i in t.instants if i not in ours_before]
    actions = {i.split(".", 1)[1] for i in new}
    if t.table_type is MOR:
        assert "commit" in actions, f"Java ran no compaction of its own on top of ours: {new}"
    assert "clean" in actions, f"Java ran no clean on top of ours: {new}"
    assert list((t.path / ".hoodie" / "archived").glob(".commits_.archive.*")), "Java archived nothing"
    theirs = java_read(java, t)
    assert_rows_equal(theirs, t.expected(), "Java's read after Java wrote on top of ours")
    ours = read_snapshot_table(HudiTable(str(t.path)))
    assert_rows_equal(ours, theirs, "our read vs Java's")
    assert keyed_meta(ours) == keyed_meta(theirs), "meta columns: ours vs Java's"
    rs = hudi_rs_snapshot(t.path)
    assert rs is not None
    assert_rows_equal(rs, theirs, "hudi-rs vs Java's")


def assert_java_reads_model(java: JavaHudi, t: JavaTable, before: pa.Table) -> pa.Table:
    """Java's snapshot equals the model and, in its meta columns, Java's read before our service."""
    after = java_read(java, t)
    assert_rows_equal(after, t.expected(), "Java's snapshot after our service vs the expected rows")
    assert keyed_meta(after) == keyed_meta(before), "a service changed keys, partitions or commit times"
    return after


def timeline_files(t: JavaTable) -> set[str]:
    return {p.name for p in (t.path / ".hoodie").iterdir() if p.is_file()}


# -- compaction ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape",
    cells(
        "compaction",
        "snapshot, read-optimized, incremental; show_compaction, show_commits; "
        "Java upserts + compacts + cleans + archives after",
        [(s.name, f"MOR {s.name}", (s,)) for s in (PARTITIONED, NON_PARTITIONED, COMPLEX)],
    ),
)
def test_our_compaction(java_hudi: JavaHudi, java_table, shape: Shape) -> None:  # type: ignore[no-untyped-def]
    t = java_table(shape, MOR)
    before = java_read(java_hudi, t)
    first = instant_time(t.instants[0])
    incr_before = java_read(java_hudi, t, "incremental", **{"hoodie.datasource.read.begin.instanttime": first})

    config = CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"})
    results = run_compaction(HudiTable(str(t.path)), schedule=True, config=config)
    assert results, "nothing compacted: the Java history has log files in every partition"
    instant = results[0].instant

    assert_java_reads_model(java_hudi, t, before)
    ro = java_read(java_hudi, t, "read_optimized")
    assert_rows_equal(ro, t.expected(), "Java's read-optimized query after our compaction (all slices compacted)")
    incr = java_read(java_hudi, t, "incremental", **{"hoodie.datasource.read.begin.instanttime": first})
    assert_rows_equal(incr, incr_before, "Java's incremental query: before vs after our compaction")

    compactions = procedure(java_hudi, "show_compaction", t)
    assert {r["timestamp"]: r["state"] for r in compactions}.get(instant) == "COMPLETED", compactions
    commits = procedure(java_hudi, "show_commits", t)
    assert instant in {r["commit_time"] for r in commits}, commits

    java_continues(java_hudi, t)


# -- log compaction -----------------------------------------------------------------------------------------------


@pytest.mark.interop(
    direction=DIRECTION,
    table="MOR partitioned",
    service="log compaction",
    checks="snapshot (meta columns kept); show_commits lists our deltacommit; "
    "Java upserts + compacts our merged log files + cleans + archives after",
)
def test_our_log_compaction(java_hudi: JavaHudi, java_table) -> None:  # type: ignore[no-untyped-def]
    t = java_table(PARTITIONED, MOR)
    before = java_read(java_hudi, t)
    files_before = data_files(t.path)
    table = HudiTable(str(t.path))
    config = CompactionConfig.from_options({"hoodie.log.compaction.blocks.threshold": "2"})
    scheduled = schedule_log_compaction(table, config=config)
    assert scheduled.scheduled, f"no log compaction scheduled: {scheduled.reason}"
    instant = str(scheduled.instant)
    run_log_compaction(table, instant, config=config)
    assert f"{instant}.deltacommit" in timeline_files(t)
    assert {f for f in data_files(t.path) - files_before if ".log." in f}, "log compaction wrote no log file"

    assert_java_reads_model(java_hudi, t, before)
    commits = {r["commit_time"]: r for r in procedure(java_hudi, "show_commits", t)}
    assert instant in commits, commits
    assert commits[instant].get("action", "deltacommit") == "deltacommit", commits[instant]

    java_continues(java_hudi, t)


# -- clean --------------------------------------------------------------------------------------------------------

RETAIN = {"commits": 1, "file_versions": 1, "hours": 1}


def clean_options(policy: str) -> dict[str, str]:
    return {
        "hoodie.cleaner.policy": policy,
        "hoodie.cleaner.commits.retained": str(RETAIN["commits"]),
        "hoodie.cleaner.fileversions.retained": str(RETAIN["file_versions"]),
        "hoodie.cleaner.hours.retained": str(RETAIN["hours"]),
    }


def java_clean(java: JavaHudi, t: JavaTable, policy: str, *, retain_commits: int = RETAIN["commits"]) -> dict[str, Any]:
    """Java's ``run_clean`` procedure with ``policy`` and :data:`RETAIN`; its one result row (Java returns none when
    it planned nothing)."""
    rows = procedure(
        java,
        "run_clean",
        t,
        clean_policy=policy,
        retain_commits=retain_commits,
        file_versions_retained=RETAIN["file_versions"],
        hours_retained=RETAIN["hours"],
        options=NO_METADATA,
    )
    assert len(rows) == 1, f"Java's run_clean ({policy}) returned {rows}: it cleaned nothing"
    return rows[0]


CLEAN_CASES = [
    (policy.lower().replace("_", "-") + f"-{TYPE_NAME[tt]}", f"{TYPE_NAME[tt]} partitioned", (tt, policy))
    for tt, policy in (
        (COW, "KEEP_LATEST_COMMITS"),
        (COW, "KEEP_LATEST_FILE_VERSIONS"),
        (COW, "KEEP_LATEST_BY_HOURS"),
        (MOR, "KEEP_LATEST_FILE_VERSIONS"),
    )
]


@pytest.mark.parametrize(
    ("table_type", "policy"),
    cells(
        "clean",
        "the files deleted equal those Java's run_clean deletes on a copy (and its earliest commit to retain); "
        "snapshot; Java upserts + cleans incrementally on top of our .clean + archives after",
        CLEAN_CASES,
    ),
)
def test_our_clean(java_hudi: JavaHudi, java_table, tmp_path, table_type: TableType, policy: str) -> None:  # type: ignore[no-untyped-def]
    t = java_table(PARTITIONED, table_type)
    if table_type is MOR:  # slices to clean: our compaction gives every file group a second slice
        run_compaction(
            HudiTable(str(t.path)),
            schedule=True,
            config=CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"}),
        )
    before = java_read(java_hudi, t)
    theirs = t.copy(tmp_path / "java" / "t")
    files = data_files(t.path)

    java_policy, now, retain = policy, None, RETAIN["commits"]
    if policy == "KEEP_LATEST_BY_HOURS":
        # Java counts the hours back from its own clock and the history is seconds old: ours counts back from an
        # hour after the third commit, so its earliest commit to retain is the third; Java's oracle is then
        # KEEP_LATEST_COMMITS retaining 2 (the same instant), whose slices kept are the same by construction
        # (CleanPlanner.getFilesToCleanKeepingLatestHours is getFilesToCleanKeepingLatestCommits with it)
        third = InstantTime(instant_time(t.instants[2]))
        now, java_policy, retain = third.to_datetime("UTC").add(hours=RETAIN["hours"]), "KEEP_LATEST_COMMITS", 2
    result = run_clean(HudiTable(str(t.path)), CleanConfig.from_options(clean_options(policy)), now=now)
    ours_deleted = files - data_files(t.path)
    java_row = java_clean(java_hudi, theirs, java_policy, retain_commits=retain)
    java_deleted = files - data_files(theirs.path)

    assert java_deleted, f"Java's {java_policy} clean deleted nothing: the cell checks nothing"
    assert sorted(ours_deleted) == sorted(java_deleted), f"{policy}: we deleted {ours_deleted}, Java {java_deleted}"
    assert result.deleted == len(java_deleted) == java_row["total_files_deleted"], (result, java_row)
    planned = {f"{p}/{n}" if p else n for p, names in result.files.items() for n in names}
    assert planned == ours_deleted, (planned, ours_deleted)
    assert (result.earliest_commit_to_retain or "") == (java_row["earliest_commit_to_retain"] or ""), (
        result,
        java_row,
    )
    assert f"{result.instants[-1]}.clean" in timeline_files(t)

    assert_java_reads_model(java_hudi, t, before)
    # Java's clock again: seconds-old commits are never cleaned by hours, so Java continues by commits
    java_continues(java_hudi, t, **{"hoodie.cleaner.policy": java_policy})


# -- archive ------------------------------------------------------------------------------------------------------

ARCHIVE_OPTIONS = {
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.archive.merge.enable": "true",
    "hoodie.archive.merge.files.batch.size": "2",
}


def java_archived(java: JavaHudi, t: JavaTable) -> set[tuple[str, str]]:
    """(instant time, action) of the commits Java's ``show_archived_commits_metadata`` lists."""
    rows = procedure(
        java, "show_archived_commits_metadata", t, limit=100000, start_ts="00000000000000", end_ts="99999999999999999"
    )
    return {(r["commit_time"], r["action"]) for r in rows}


@pytest.mark.interop(
    direction=DIRECTION,
    table="COW partitioned",
    service="archive (+ merge of archive files)",
    checks="show_archived_commits_metadata lists what we archived (time, action) from our merged file; snapshot; "
    "Java upserts + cleans + archives and merges our merged file with its own, then still lists them",
)
def test_our_archive_with_merge(java_hudi: JavaHudi, java_table) -> None:  # type: ignore[no-untyped-def]
    t = java_table(PARTITIONED, COW)
    java_commits = {(instant_time(n), n.split(".", 1)[1]) for n in t.instants}
    table = HudiTable(str(t.path))
    config = ArchiveConfig.from_options(ARCHIVE_OPTIONS, table_properties=table.config.raw)
    first = run_archive(table, config)
    assert first.archive_file, f"nothing archived: {first}"
    # two more commits of ours, then a second archive file: two small files, merged
    current = t.expected()
    update = generate_updates(current, fraction=0.2, seed=31, ts_offset=4 * 10**6)
    write_table(str(t.path), update, operation="upsert", options=PARTITIONED.write_options(COW))
    t.model.upsert(update)
    gone = pick_deletes(current, fraction=0.05, seed=32)
    gone = gone.filter(pc.invert(pc.is_in(gone.column("uuid"), update.column("uuid"))))
    write_table(str(t.path), gone, operation="delete", options=PARTITIONED.write_options(COW))
    t.model.delete(gone)
    second = run_archive(HudiTable(str(t.path)), config)
    assert second.archive_file and second.merge.merged_file, f"no second archive file merged: {second}"
    archives = sorted(p.name for p in (t.path / ".hoodie" / "archived").glob(".commits_.archive.*"))
    assert archives == [second.merge.merged_file], archives

    ours = {
        (str(i.time), i.action.value)
        for r in (first, second)
        for i in r.archived_instants
        if i.action.value in ("commit", "deltacommit", "replacecommit")
    }
    assert {c for c in java_commits if c in ours} == {c for c in java_commits if c[0] <= max(o[0] for o in ours)}
    listed = java_archived(java_hudi, t)
    assert listed == ours, f"Java lists {sorted(listed)}, we archived {sorted(ours)}"

    theirs = java_read(java_hudi, t)
    assert_rows_equal(theirs, t.expected(), "Java's snapshot after our archive")
    java_continues(java_hudi, t, **{k: v for k, v in ARCHIVE_OPTIONS.items() if "merge" in k})
    assert ours <= java_archived(java_hudi, t), "Java's own archive and merge lost instants we archived"


# -- savepoint ----------------------------------------------------------------------------------------------------


@pytest.mark.interop(
    direction=DIRECTION,
    table="COW partitioned",
    service="savepoint",
    checks="show_savepoints; Java's run_clean keeps the savepointed files; Java's rollback_to_savepoint restores "
    "the rows as of the savepoint; Java upserts + cleans + archives after",
)
def test_our_savepoint(java_hudi: JavaHudi, java_table) -> None:  # type: ignore[no-untyped-def]
    t = java_table(PARTITIONED, COW)
    at = instant_time(t.instants[1])  # the first upsert: later upserts and the delete replace its file slices
    md = create_savepoint(HudiTable(str(t.path)), at, user="interop", comments="test_our_savepoint")
    pinned = {f"{p}/{n}" for p, pm in md.partition_metadata.items() for n in pm.savepoint_data_file}
    assert pinned, md

    listed = procedure(java_hudi, "show_savepoints", t)
    assert at in {r["savepoint_time"] for r in listed}, listed

    latest = {
        f"{fs.partition_path}/{fs.base_file.name}"
        for fs in HudiTable(str(t.path)).fs_view().latest_file_slices()
        if fs.base_file is not None
    }
    files = data_files(t.path)
    row = java_clean(java_hudi, t, "KEEP_LATEST_COMMITS")
    deleted = files - data_files(t.path)
    assert deleted and row["total_files_deleted"] == len(deleted), row
    assert not pinned & deleted, f"Java's clean deleted savepointed files {pinned & deleted}"
    assert pinned - latest, "every savepointed file is still a latest slice: the savepoint protected nothing"

    # the procedure has no options: its write client takes hoodie.* from the session (else it would build a
    # metadata table the table does not have, and fail the restore on it)
    java_hudi.call("sql", query=f"set {NO_METADATA}")
    try:
        out = procedure(java_hudi, "rollback_to_savepoint", t, instant_time=at)
    finally:
        java_hudi.call("sql", query="reset hoodie.metadata.enable")
    assert out and all(r.get("rollback_savepoint_result", True) for r in out), out
    t.model = t.model_as_of(at)
    restored = java_read(java_hudi, t)
    assert_rows_equal(restored, t.expected(), f"Java's snapshot after its restore to our savepoint {at}")
    assert_rows_equal(read_snapshot_table(HudiTable(str(t.path))), restored, "our read after Java's restore")
    assert data_files(t.path) >= pinned, "a savepointed file is gone after the restore"

    # the savepoint stays: Java's archive stops at it, so keep fewer instants for it to archive the first commit
    java_continues(java_hudi, t, **{"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3"})


# -- rollback of a failed Java write ------------------------------------------------------------------------------

FAILING_VALIDATOR = {
    "hoodie.precommit.validators": "org.apache.hudi.client.validator.SqlQuerySingleResultPreCommitValidator",
    # never true: the validator fails the write after its data files are written, before the commit
    "hoodie.precommit.validators.single.value.sql.queries": "select count(*) from <TABLE_NAME> where fare < 0#1",
}


@pytest.mark.parametrize(
    "table_type",
    cells(
        "rollback (failed Java write)",
        "the failed write's inflight and files are gone; snapshot without its rows; show_rollbacks lists ours; "
        "Java upserts + cleans + archives after",
        [(TYPE_NAME[tt], f"{TYPE_NAME[tt]} partitioned", (tt,)) for tt in (COW, MOR)],
    ),
)
def test_our_rollback_of_failed_java_write(java_hudi: JavaHudi, java_table, table_type: TableType) -> None:  # type: ignore[no-untyped-def]
    t = java_table(PARTITIONED, table_type)
    files = data_files(t.path)
    timeline = timeline_files(t)
    failed_rows = pa.concat_tables(
        [generate_updates(t.expected(), fraction=0.3, seed=41, ts_offset=5 * 10**6), trips(25, seed=42)]
    )
    expected_before = t.expected()
    with pytest.raises(JavaHudiError, match=r"HoodieValidationException|validation"):
        java_write(java_hudi, t, failed_rows, "upsert", **FAILING_VALIDATOR)
    inflight = [n for n in timeline_files(t) - timeline if n.endswith(".inflight")]
    assert len(inflight) == 1, f"the failed write left {inflight}"
    failed = instant_time(inflight[0])
    written = data_files(t.path) - files
    assert any(failed in f for f in written), f"the failed write {failed} left no data file: {written}"
    # the model did not change (java_write raised before updating it)
    assert_rows_equal(t.expected(), expected_before, "model")

    rb = rollback_write(HudiTable(str(t.path)), failed)
    rb_time = str(rb.time)  # type: ignore[union-attr]
    after = timeline_files(t)
    assert not [n for n in after if n.startswith(failed)], f"the failed instant's files remain: {sorted(after)}"
    assert f"{rb_time}.rollback" in after
    assert not {f for f in data_files(t.path) if failed in f and f.endswith(".parquet")}, "base files remain"

    theirs = java_read(java_hudi, t)
    assert_rows_equal(theirs, t.expected(), "Java's snapshot after our rollback of the failed write")
    rollbacks = procedure(java_hudi, "show_rollbacks", t)
    assert any(rb_time in str(r.values()) and failed in str(r.values()) for r in rollbacks), rollbacks

    java_continues(java_hudi, t)


# -- our writer on Java-written tables ----------------------------------------------------------------------------

WRITE_CASES = [
    (f"{TYPE_NAME[tt]}-{s.name}", f"{TYPE_NAME[tt]} {s.name}", (s, tt))
    for s in (PARTITIONED, NON_PARTITIONED, COMPLEX)
    for tt in (COW, MOR)
]


@pytest.mark.parametrize(
    ("shape", "table_type"),
    cells(
        "upsert + delete (our writer)",
        "snapshot; incremental query of our upsert returns our rows; Java upserts + compacts + cleans + archives after",
        WRITE_CASES,
    ),
)
def test_our_upsert_and_delete(java_hudi: JavaHudi, java_table, shape: Shape, table_type: TableType) -> None:  # type: ignore[no-untyped-def]
    t = java_table(shape, table_type)
    last_java = instant_time(t.instants[-1])
    current = t.expected()
    upsert = pa.concat_tables(
        [generate_updates(current, fraction=0.25, seed=51, ts_offset=4 * 10**6), trips(20, seed=52).cast(t.schema)]
    )
    options = shape.write_options(table_type)
    ours = write_table(str(t.path), upsert, operation="upsert", options=options)
    t.model.upsert(upsert)
    gone = pick_deletes(current, fraction=0.05, seed=53)
    gone = gone.filter(pc.invert(pc.is_in(gone.column("uuid"), upsert.column("uuid"))))
    assert gone.num_rows
    write_table(str(t.path), gone, operation="delete", options=options)
    t.model.delete(gone)

    theirs = java_read(java_hudi, t)
    assert_rows_equal(theirs, t.expected(), "Java's snapshot after our upsert and delete")
    incr = java_read(
        java_hudi,
        t,
        "incremental",
        **{
            "hoodie.datasource.read.begin.instanttime": last_java,
            "hoodie.datasource.read.end.instanttime": ours.instant,
        },
    )
    assert_rows_equal(incr, upsert, f"Java's incremental query of our upsert {ours.instant}")
    assert set(incr.column("_hoodie_commit_time").to_pylist()) == {ours.instant}

    java_continues(java_hudi, t)


# -- a timestamp-based key generator ------------------------------------------------------------------------------


@pytest.mark.interop(
    direction=DIRECTION,
    table="MOR timestamp key (TimestampBasedKeyGenerator, yyyy/MM/dd)",
    service="compaction + clean; our upsert refused",
    checks="snapshot after our compaction and clean; our writer refuses an upsert naming the key generator; "
    "Java upserts + compacts + cleans + archives after",
)
def test_our_services_on_timestamp_keygen(java_hudi: JavaHudi, java_histories, tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = java_histories(TIMESTAMP, MOR).copy(tmp_path / "t")
    partitions = {p.parent.relative_to(t.path) for p in t.path.rglob(".hoodie_partition_metadata")}
    assert partitions == {Path("2023/09/18")}, partitions
    before = java_read(java_hudi, t)
    table = HudiTable(str(t.path))
    done = run_compaction(
        table, schedule=True, config=CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"})
    )
    assert done, "nothing compacted"
    cleaned = run_clean(HudiTable(str(t.path)), CleanConfig.from_options(clean_options("KEEP_LATEST_FILE_VERSIONS")))
    assert cleaned.deleted, cleaned
    assert_java_reads_model(java_hudi, t, before)

    timeline = timeline_files(t)
    with pytest.raises(ValueError, match="TimestampBasedKeyGenerator"):
        write_table(
            str(t.path), trips(5, seed=61).cast(t.schema), operation="upsert", options=TIMESTAMP.write_options(MOR)
        )
    assert timeline_files(t) == timeline, "the refused write left timeline files"

    java_continues(java_hudi, t)
