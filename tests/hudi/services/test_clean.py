"""Clean and savepoints: what readers see as of every retained instant and savepoint is unchanged (hudi-rs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.engines.spark import SparkEngine
from lake_orchestration.errors import InvalidInstantStateError, PlanError
from lake_orchestration.hudi.model.avro import CleanerPlan
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.services.clean import (
    CleanConfig,
    CleanExecution,
    CleanPlanning,
    execute_clean,
    execute_clean_plan,
    plan_clean,
    run_clean,
    schedule_clean,
)
from lake_orchestration.hudi.services.clean import executor as clean_executor
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.services.savepoint import create_savepoint, delete_savepoint, list_savepoints
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.conftest import SHARED, HudiFixture, require_shared
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.tables import built_once, fake_metadata_table
from tests.trips import trips_options


def _reference_schema(name: str) -> dict:
    require_shared()
    text = (SHARED / "reference" / "hudi" / "avro" / name).read_text()
    return json.loads(re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def _resolve(path: Path, *names: str) -> dict:
    """Decode a timeline Avro file with Hudi's reference schema (named types resolved from their own files)."""
    named: dict = {}
    for n in names[1:]:
        fastavro.parse_schema(_reference_schema(n), named_schemas=named)
    schema = fastavro.parse_schema(_reference_schema(names[0]), named_schemas=named)
    with open(path, "rb") as f:
        (rec,) = list(fastavro.reader(f, reader_schema=schema))
    return rec


def _as_of(path: Path, instant: str) -> pa.Table | None:
    batches = HudiTableBuilder.from_base_uri(str(path)).build().read(HudiReadOptions().with_as_of_timestamp(instant))
    return pa.Table.from_batches(batches) if batches else None


def _data_files(path: Path) -> set[str]:
    return {
        str(p.relative_to(path))
        for p in path.rglob("*")
        if p.is_file() and ".hoodie" not in p.parts and not p.name.startswith(".hoodie_partition")
    }


def _mor(tmp_path: Path, *, rounds: int = 9, compact_every: int = 3) -> Path:
    """A MOR table: bulk insert, upserts and deletes, a compaction every few deltacommits (4 partitions); written
    once per test process and copied (tests.tables.built_once)."""

    def build(folder: Path) -> None:
        path = folder / "t"
        opts = trips_options(hive_style_partitioning=True, max_rows_per_file=80, small_file_limit=0)
        base = generate_trips(320, partitions=4, seed=1)
        write_table(str(path), base, operation="bulk_insert", options=opts)
        for n in range(rounds):
            write_table(
                str(path),
                generate_updates(base, fraction=0.15, seed=n, ts_offset=(n + 1) * 10**7),
                operation="upsert",
                options=opts,
            )
            if n % 4 == 3:
                write_table(str(path), pick_deletes(base, fraction=0.02, seed=50 + n), operation="delete", options=opts)
            if n % compact_every == compact_every - 1:
                run_compaction(HudiTable(str(path)), schedule=True, config=CompactionConfig(max_delta_commits=1))

    return built_once(tmp_path, ("test_clean._mor", rounds, compact_every), build)[0]


def _completed_commits(path: Path) -> list[str]:
    return [str(i.time) for i in HudiTable(str(path)).timeline.completed_commits()]


def _reads(path: Path, instants: list[str]) -> dict[str, pa.Table | None]:
    return {t: _as_of(path, t) for t in instants}


def _assert_reads_unchanged(path: Path, before: dict[str, pa.Table | None]) -> None:
    for t, rows in before.items():
        after = _as_of(path, t)
        if rows is None:
            assert after is None or after.num_rows == 0, f"as of {t}"
        else:
            assert after is not None, f"as of {t}: no rows after clean"
            assert_same_rows(after, rows)


def test_clean_keep_latest_commits_mor_reads_as_of_retained_instants_unchanged(tmp_path: Path) -> None:
    path = _mor(tmp_path)
    opts = {"hoodie.cleaner.commits.retained": "4"}
    t = HudiTable(str(path))
    ectr = plan_clean(t, CleanConfig.from_options(opts)).earliest_commit_to_retain
    assert ectr is not None
    commits = _completed_commits(path)
    # the ECTR is the 4th completed commit from the end
    assert str(ectr.time) == commits[-4]
    retained = [c for c in commits if c >= str(ectr.time)]
    before = _reads(path, retained)
    snapshot = hudi_rs_snapshot(path)
    files_before = _data_files(path)

    res = run_clean(HudiTable(str(path)), CleanConfig.from_options(opts))

    assert len(res.instants) == 1 and res.deleted == res.file_count > 0 and res.failed == 0
    gone = files_before - _data_files(path)
    assert {g.rsplit("/", 1)[-1] for g in gone} == {n for v in res.files.values() for n in v}
    # every deleted file belongs to a slice older than the ECTR
    for g in gone:
        name = g.rsplit("/", 1)[-1]
        base_instant = name.split("_")[1] if name.startswith(".") else name.rsplit("_", 1)[-1].split(".")[0]
        assert base_instant < str(ectr.time), g
    _assert_reads_unchanged(path, before)
    assert_same_rows(hudi_rs_snapshot(path), snapshot)
    # plan and metadata are what Java Hudi reads
    inst = res.instants[0]
    plan = _resolve(path / ".hoodie" / f"{inst}.clean.requested", "HoodieCleanerPlan.avsc")
    assert plan["policy"] == "KEEP_LATEST_COMMITS" and plan["version"] == 2
    assert plan["earliestInstantToRetain"]["timestamp"] == str(ectr.time)
    assert plan["earliestInstantToRetain"]["state"] == "COMPLETED"
    assert plan["lastCompletedCommitTimestamp"] == commits[-1]
    assert sum(len(v) for v in plan["filePathsToBeDeletedPerPartition"].values()) == len(gone)
    assert (path / ".hoodie" / f"{inst}.clean.inflight").read_bytes() == (
        path / ".hoodie" / f"{inst}.clean.requested"
    ).read_bytes()
    md = _resolve(path / ".hoodie" / f"{inst}.clean", "HoodieCleanMetadata.avsc", "HoodieCleanPartitionMetadata.avsc")
    assert md["startCleanTime"] == inst and md["totalFilesDeleted"] == len(gone)
    assert md["earliestCommitToRetain"] == str(ectr.time)
    assert sum(len(p["successDeleteFiles"]) for p in md["partitionMetadata"].values()) == len(gone)
    # nothing new: the trigger (hoodie.clean.max.commits=1) does not fire, a second run is a no-op
    again = run_clean(HudiTable(str(path)), CleanConfig.from_options(opts))
    assert again.instants == () and "not triggered" in again.reason


def test_clean_keep_latest_file_versions_on_java_cow_fixture(fresh_fixture) -> None:
    path = fresh_fixture(HudiFixture.COW_COMPLEX_HIVE)
    before = hudi_rs_snapshot(path)
    files_before = _data_files(path)
    res = run_clean(
        HudiTable(str(path)),
        CleanConfig.from_options(
            {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1"}
        ),
    )
    gone = files_before - _data_files(path)
    # the fixture's updated file group keeps two base file versions; the older one goes
    assert len(gone) == 1 and res.deleted == 1
    assert_same_rows(hudi_rs_snapshot(path), before)
    plan = _resolve(path / ".hoodie" / f"{res.instants[0]}.clean.requested", "HoodieCleanerPlan.avsc")
    assert plan["earliestInstantToRetain"] is None and plan["policy"] == "KEEP_LATEST_FILE_VERSIONS"


def test_clean_removes_replaced_file_groups_of_insert_overwrite(fresh_fixture) -> None:
    path = fresh_fixture(HudiFixture.COW_OVERWRITE_TABLE)
    before = hudi_rs_snapshot(path)
    t = HudiTable(str(path))
    replaced = t.replaced_file_groups()
    assert replaced
    res = run_clean(t, CleanConfig.from_options({"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS"}))
    left = {p.name.split("_")[0] for p in path.rglob("*.parquet")}
    assert not left & {fg.file_id for fg in replaced}, "replaced file groups are deleted"
    assert res.deleted > 0
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_savepoint_protects_files_from_clean_until_deleted(tmp_path: Path) -> None:
    path = _mor(tmp_path, rounds=9)
    commits = _completed_commits(path)
    sp = commits[2]
    as_of_sp = _as_of(path, sp)
    assert as_of_sp is not None and as_of_sp.num_rows > 0
    md = create_savepoint(HudiTable(str(path)), sp, user="ops", comments="before migration")
    saved = {n for pm in md.partition_metadata.values() for n in pm.savepoint_data_file}
    assert saved
    rec = _resolve(path / ".hoodie" / f"{sp}.savepoint", "HoodieSavePointMetadata.avsc")
    assert rec["savepointedBy"] == "ops" and rec["comments"] == "before migration"
    assert (path / ".hoodie" / f"{sp}.savepoint.inflight").read_bytes() == b""
    assert [s.instant_time for s in list_savepoints(HudiTable(str(path)))] == [sp]

    opts = {"hoodie.cleaner.commits.retained": "2"}
    res = run_clean(HudiTable(str(path)), CleanConfig.from_options(opts))
    assert res.deleted > 0
    with open(path / ".hoodie" / f"{res.instants[0]}.clean", "rb") as f:
        (written,) = list(fastavro.reader(f))
    # the plan's savepoints travel into the .clean, where Java 0.15's next clean looks for deleted savepoints
    assert written["extraMetadata"] == {"savepointed_timestamps": sp}
    names = {p.name for p in path.rglob("*") if p.is_file()}
    assert saved <= names, "a savepointed file was cleaned"
    assert_same_rows(_as_of(path, sp), as_of_sp)
    # a savepoint of a commit the cleaner may already have removed is refused
    with pytest.raises(InvalidInstantStateError, match="older than the earliest commit"):
        create_savepoint(HudiTable(str(path)), commits[0])
    with pytest.raises(InvalidInstantStateError, match="already savepointed"):
        create_savepoint(HudiTable(str(path)), sp)

    assert delete_savepoint(HudiTable(str(path)), sp)
    assert not list(path.joinpath(".hoodie").glob(f"{sp}.savepoint*"))
    assert not delete_savepoint(HudiTable(str(path)), sp)
    # once the savepoint is gone its files are cleanable (a new commit makes the trigger fire)
    base = generate_trips(5, partitions=4, seed=9)
    write_table(str(path), base, operation="upsert")
    snapshot = hudi_rs_snapshot(path)
    run_clean(HudiTable(str(path)), CleanConfig.from_options(opts))
    names = {p.name for p in path.rglob("*") if p.is_file()}
    assert saved - names, "files only the savepoint kept are cleaned after it is deleted"
    assert_same_rows(hudi_rs_snapshot(path), snapshot)


def test_clean_keeps_slices_a_pending_compaction_reads(tmp_path: Path) -> None:
    path = _mor(tmp_path, rounds=7, compact_every=3)  # compactions after rounds 3 and 6, then one more upsert
    t = HudiTable(str(path))
    sched = schedule_compaction(t, force=True)
    assert sched.scheduled
    pending = list(sched.plan.operations)
    run_clean(
        HudiTable(str(path)),
        CleanConfig.from_options(
            {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1"}
        ),
    )
    for op in pending:
        folder = path / (op.partition_path or "")
        if op.data_file_path:
            assert (folder / op.data_file_path.rsplit("/", 1)[-1]).exists(), "base file of a pending operation"
        for log in op.delta_file_paths:
            assert (folder / log.rsplit("/", 1)[-1]).exists(), "log file of a pending operation"
    before = hudi_rs_snapshot(path)
    run_compaction(HudiTable(str(path)))
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=("_hoodie_file_name",))


def test_clean_dry_run_writes_nothing(tmp_path: Path) -> None:
    path = _mor(tmp_path, rounds=6)
    listing = sorted(str(p) for p in path.rglob("*"))
    res = run_clean(
        HudiTable(str(path)), CleanConfig.from_options({"hoodie.cleaner.commits.retained": "2"}), dry_run=True
    )
    assert res.dry_run and res.file_count > 0 and res.deleted == 0
    assert sorted(str(p) for p in path.rglob("*")) == listing
    real = run_clean(HudiTable(str(path)), CleanConfig.from_options({"hoodie.cleaner.commits.retained": "2"}))
    assert {n for v in real.files.values() for n in v} == {n for v in res.files.values() for n in v}


def test_clean_crash_midway_next_run_converges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _mor(tmp_path)
    opts = {"hoodie.cleaner.commits.retained": "3"}
    snapshot = hudi_rs_snapshot(path)
    inst, planning, _ = schedule_clean(HudiTable(str(path)), CleanConfig.from_options(opts))
    assert inst is not None and planning is not None and planning.file_count > 4
    real_delete = clean_executor._delete
    calls = {"n": 0}

    def dying_delete(st, partition, p):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] > 3:
            raise KeyboardInterrupt("crash injected mid-clean")
        return real_delete(st, partition, p)

    monkeypatch.setattr(clean_executor, "_delete", dying_delete)
    monkeypatch.setattr(clean_executor, "_LOCAL_THREADS", 1)
    with pytest.raises(KeyboardInterrupt):
        execute_clean(HudiTable(str(path)), str(inst.time))
    monkeypatch.setattr(clean_executor, "_delete", real_delete)
    t = HudiTable(str(path))
    assert t.timeline.get(str(inst.time), Action.CLEAN).state is State.INFLIGHT
    assert_same_rows(hudi_rs_snapshot(path), snapshot)
    res = run_clean(t, CleanConfig.from_options(opts))
    assert res.instants[0] == str(inst.time)
    md = _resolve(
        path / ".hoodie" / f"{inst.time}.clean", "HoodieCleanMetadata.avsc", "HoodieCleanPartitionMetadata.avsc"
    )
    # files deleted before the crash count as deleted when the plan is re-executed
    assert md["totalFilesDeleted"] == planning.file_count
    assert not any(p["failedDeleteFiles"] for p in md["partitionMetadata"].values())
    assert_same_rows(hudi_rs_snapshot(path), snapshot)
    assert all(not (path / f).exists() for f in _planned_relative(path, planning.plan))


def _planned_relative(path: Path, plan: CleanerPlan) -> list[str]:
    return [
        str(Path(i.file_path.removeprefix("file:")).relative_to(path))
        for v in plan.file_paths_to_be_deleted_per_partition.values()
        for i in v
    ]


def test_clean_refuses_a_plan_pointing_outside_its_partition(tmp_path: Path) -> None:
    path = _mor(tmp_path, rounds=4)
    victim = tmp_path / "precious.parquet"
    victim.write_bytes(b"keep me")
    t = HudiTable(str(path))
    plan = CleanerPlan(
        policy="KEEP_LATEST_COMMITS",
        version=2,
        files_to_be_deleted_per_partition={},
        file_paths_to_be_deleted_per_partition={"city=a": ()},
        partitions_to_be_deleted=(),
    )
    from lake_orchestration.hudi.model.avro import CleanFileInfo

    bad = CleanerPlan(
        **{
            **plan.__dict__,
            "file_paths_to_be_deleted_per_partition": {
                "city=a": (CleanFileInfo(file_path=str(victim), is_bootstrap_base_file=False),)
            },
        }
    )
    t.create_requested(Instant(t.new_instant_time(), Action.CLEAN, State.REQUESTED), bad.to_bytes())
    with pytest.raises(PlanError, match=r"precious\.parquet"):
        run_clean(HudiTable(str(path)))
    assert victim.read_bytes() == b"keep me"


def test_clean_options_are_validated() -> None:
    with pytest.raises(PlanError, match=r"hoodie.cleaner.policy='KEEP_SOME'.*KEEP_LATEST_COMMITS"):
        CleanConfig.from_options({"hoodie.cleaner.policy": "KEEP_SOME"})
    with pytest.raises(PlanError, match=r"hoodie\.cleaner\.fileversions\.retained=0"):
        CleanConfig.from_options({"hoodie.cleaner.fileversions.retained": "0"})
    # as in Java, commits.retained=0 finds no commit to retain: nothing is cleaned
    assert CleanConfig.from_options({"hoodie.cleaner.commits.retained": "0"}).commits_retained == 0


def test_clean_on_spark_deletes_the_same_files(tmp_path: Path, spark) -> None:  # type: ignore[no-untyped-def]
    path = _mor(tmp_path, rounds=6)
    snapshot = hudi_rs_snapshot(path)
    dry = run_clean(
        HudiTable(str(path)), CleanConfig.from_options({"hoodie.cleaner.commits.retained": "2"}), dry_run=True
    )
    res = run_clean(
        HudiTable(str(path)),
        CleanConfig.from_options({"hoodie.cleaner.commits.retained": "2"}),
        engine=SparkEngine(spark),
    )
    assert res.deleted == dry.file_count > 0
    assert_same_rows(hudi_rs_snapshot(path), snapshot)


def test_clean_and_savepoint_cli(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from lake_orchestration.cli.app import cli

    path = _mor(tmp_path, rounds=6)
    run = CliRunner().invoke
    snapshot = hudi_rs_snapshot(path)
    sp = _completed_commits(path)[-2]
    r = run(cli, ["savepoint", "create", str(path), "--instant-time", sp, "--user", "ops", "--json"])
    assert r.exit_code == 0, r.output
    saved = {n for v in json.loads(r.output)["files"].values() for n in v}
    r = run(cli, ["savepoint", "show", str(path), "--json"])
    assert [s["instant_time"] for s in json.loads(r.output)] == [sp]
    listing = _data_files(path)
    r = run(cli, ["clean", str(path), "--dry-run", "--option", "hoodie.cleaner.commits.retained=1"])
    assert r.exit_code == 0 and r.output.startswith("Would delete"), r.output
    assert _data_files(path) == listing
    r = run(cli, ["clean", str(path), "--option", "hoodie.cleaner.commits.retained=1", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["deleted"] == out["file_count"] > 0 and not out["dry_run"]
    assert saved <= {p.rsplit("/", 1)[-1] for p in _data_files(path)}
    assert_same_rows(hudi_rs_snapshot(path), snapshot)
    r = run(cli, ["clean", str(path), "--option", "hoodie.cleaner.policy=SOMETIMES"])
    assert r.exit_code == 1 and "hoodie.cleaner.policy='SOMETIMES'" in r.output
    r = run(cli, ["savepoint", "delete", str(path), "--instant-time", sp])
    assert r.exit_code == 0 and "Deleted savepoint" in r.output
    r = run(cli, ["savepoint", "delete", str(path), "--instant-time", sp])
    assert r.exit_code == 1 and "No savepoint" in r.output


def test_clean_refuses_a_table_with_a_metadata_table_unless_disabled(tmp_path: Path) -> None:
    from lake_orchestration.errors import MetadataTableError

    path = _mor(tmp_path, rounds=6)
    fake_metadata_table(path)
    snapshot = hudi_rs_snapshot(path)
    listing = _data_files(path)
    with pytest.raises(MetadataTableError, match=r"hoodie\.metadata\.enable=false"):
        run_clean(HudiTable(str(path)), CleanConfig.from_options({"hoodie.cleaner.commits.retained": "2"}))
    assert _data_files(path) == listing
    res = run_clean(
        HudiTable(str(path)),
        CleanConfig.from_options({"hoodie.cleaner.commits.retained": "2", "hoodie.metadata.enable": "false"}),
    )
    assert res.deleted > 0
    t = HudiTable(str(path))
    assert not t.has_metadata_table() and "hoodie.table.metadata.partitions" not in t.config.raw
    assert not (path / ".hoodie" / "metadata").exists()
    assert_same_rows(hudi_rs_snapshot(path), snapshot)


def test_a_metadata_partitions_property_without_its_table_is_refused_before_any_write(tmp_path: Path) -> None:
    """hoodie.table.metadata.partitions=files with .hoodie/metadata gone (deleted by hand): the commit could not
    update the metadata table, so the writer and the services refuse before writing anything (no inflight instant,
    no file), naming the property; hoodie.metadata.enable=false clears the property and goes on."""
    from lake_orchestration.errors import MetadataTableError

    path = _mor(tmp_path, rounds=6)
    HudiTable(str(path)).update_properties({"hoodie.table.metadata.partitions": "files"})
    before = sorted(p.relative_to(path) for p in path.rglob("*") if p.is_file())
    batch = generate_trips(10, partitions=2, seed=78)
    with pytest.raises(MetadataTableError, match=r"hoodie\.table\.metadata\.partitions lists \['files'\]"):
        write_table(str(path), batch, operation="upsert")
    with pytest.raises(MetadataTableError, match="no table in it"):
        run_clean(HudiTable(str(path)), CleanConfig.from_options({"hoodie.cleaner.commits.retained": "2"}))
    assert sorted(p.relative_to(path) for p in path.rglob("*") if p.is_file()) == before
    write_table(str(path), batch, operation="upsert", options=WriteOptions(options={"hoodie.metadata.enable": "false"}))
    t = HudiTable(str(path))
    assert "hoodie.table.metadata.partitions" not in t.config.raw and not t.has_metadata_table()
    assert set(batch.column("uuid").to_pylist()) <= set(hudi_rs_snapshot(path).column("uuid").to_pylist())


def test_empty_pending_clean_is_removed_and_cleaning_goes_on(tmp_path: Path) -> None:
    path = _mor(tmp_path, rounds=6)
    t = HudiTable(str(path))
    empty = t.create_requested(Instant(t.new_instant_time(), Action.CLEAN, State.REQUESTED), b"")
    res = run_clean(HudiTable(str(path)), CleanConfig.from_options({"hoodie.cleaner.commits.retained": "2"}))
    assert str(empty.time) not in res.instants and res.deleted > 0
    assert not list((path / ".hoodie").glob(f"{empty.time}.clean*"))


def test_plan_paths_map_back_to_the_table_for_every_scheme() -> None:
    from types import SimpleNamespace

    from lake_orchestration.hudi.services.clean.executor import _relative_to_table

    local = SimpleNamespace(is_local=True, base_path="/data/t")
    assert _relative_to_table(local, "file:/data/t/p/a.parquet") == "p/a.parquet"
    assert _relative_to_table(local, "/data/t/p/a.parquet") == "p/a.parquet"
    assert _relative_to_table(local, "/data/other/a.parquet") == ""
    s3 = SimpleNamespace(is_local=False, base_path="bucket/lake/t")
    assert _relative_to_table(s3, "s3a://bucket/lake/t/p/a.parquet") == "p/a.parquet"
    hdfs = SimpleNamespace(is_local=False, base_path="/warehouse/t")
    assert _relative_to_table(hdfs, "hdfs://namenode:8020/warehouse/t/p/.f_1.log.1_0-1-0") == "p/.f_1.log.1_0-1-0"
    assert _relative_to_table(hdfs, "hdfs://namenode:8020/warehouse/other/x.parquet") == ""


def test_writer_refuses_a_table_with_a_metadata_table_unless_disabled(tmp_path: Path) -> None:
    from lake_orchestration.errors import MetadataTableError

    path = _mor(tmp_path, rounds=1)
    fake_metadata_table(path)
    batch = generate_trips(10, partitions=2, seed=77)
    with pytest.raises(MetadataTableError, match="this writer"):
        write_table(str(path), batch, operation="upsert")
    assert HudiTable(str(path)).has_metadata_table()
    write_table(str(path), batch, operation="upsert", options=WriteOptions(options={"hoodie.metadata.enable": "false"}))
    assert not HudiTable(str(path)).has_metadata_table()
    keys = set(hudi_rs_snapshot(path).column("uuid").to_pylist())
    assert set(batch.column("uuid").to_pylist()) <= keys


def _executed_clean(tmp_path: Path) -> tuple[Path, pa.Table, Instant, CleanPlanning, CleanExecution]:
    """A MOR table (:func:`_mor`), its snapshot, and a clean planned (keep 3 commits) and executed, not committed."""
    path = _mor(tmp_path)
    snapshot = hudi_rs_snapshot(path)
    inst, planning, _ = schedule_clean(
        HudiTable(str(path)), CleanConfig.from_options({"hoodie.cleaner.commits.retained": "3"})
    )
    assert inst is not None and planning is not None and planning.file_count > 0
    execution = execute_clean_plan(HudiTable(str(path)), str(inst.time))
    return path, snapshot, inst, planning, execution


def test_clean_execute_then_commit_as_separate_steps_completes_once(tmp_path: Path) -> None:
    import pickle

    from lake_orchestration.hudi.services.clean import commit_clean

    path, snapshot, inst, planning, execution = _executed_clean(tmp_path)
    # executed: every planned file gone, the clean still inflight, its attempt's heartbeat kept for the commit
    assert not {f.rsplit("/", 1)[-1] for fs in planning.files.values() for f in fs} & {
        Path(f).name for f in _data_files(path)
    }
    assert HudiTable(str(path)).timeline.get(str(inst.time), Action.CLEAN).state is State.INFLIGHT
    heartbeat = path / ".hoodie" / ".heartbeat" / str(inst.time)
    assert heartbeat.read_bytes() == execution.attempt
    files_after_execute = _data_files(path)
    # the commit may run elsewhere (a Dagster op): the execution pickles, and committing deletes nothing more
    md = commit_clean(HudiTable(str(path)), pickle.loads(pickle.dumps(execution)))
    assert HudiTable(str(path)).timeline.get(str(inst.time), Action.CLEAN).is_completed
    assert md.total_files_deleted == planning.file_count == execution.deleted
    assert _data_files(path) == files_after_execute and not heartbeat.exists()
    assert_same_rows(hudi_rs_snapshot(path), snapshot)


def test_clean_commit_failed_then_retried_alone_completes_without_executing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store drops the first write of ``<ts>.clean`` (as a Dagster clean commit op would see it): the failed
    commit keeps the attempt's heartbeat, so the commit retried with the same execution completes the clean; no file
    is deleted again, and a third commit is a no-op."""
    from lake_orchestration.errors import CommitStateUnknownError, StorageError
    from lake_orchestration.hudi.services.clean import commit_clean

    path, snapshot, inst, planning, execution = _executed_clean(tmp_path)
    files_after_execute = _data_files(path)
    heartbeat = path / ".hoodie" / ".heartbeat" / str(inst.time)
    real = HudiTable.transition_to_completed
    writes: list[str] = []

    def drop_first_write(self: HudiTable, inflight: Instant, content: bytes) -> Instant:
        writes.append(str(inflight.time))
        if len(writes) == 1:
            raise StorageError("injected: the store dropped the write", path=self.instant_path(inflight))
        return real(self, inflight, content)

    monkeypatch.setattr(HudiTable, "transition_to_completed", drop_first_write)

    def no_delete(*args: object, **kwargs: object) -> None:
        raise AssertionError("a commit must not delete files")

    monkeypatch.setattr(clean_executor, "delete_files", no_delete)
    # the ambiguous-write rule of the one commit path: not on the timeline -> the commit state is unknown
    with pytest.raises(CommitStateUnknownError, match="dropped the write"):
        commit_clean(HudiTable(str(path)), execution)
    assert HudiTable(str(path)).timeline.get(str(inst.time), Action.CLEAN).state is State.INFLIGHT
    assert heartbeat.read_bytes() == execution.attempt  # kept for the retried commit

    md = commit_clean(HudiTable(str(path)), execution)
    assert writes == [str(inst.time), str(inst.time)]
    assert HudiTable(str(path)).timeline.get(str(inst.time), Action.CLEAN).is_completed
    assert md.total_files_deleted == planning.file_count == execution.deleted
    assert _data_files(path) == files_after_execute and not heartbeat.exists()
    again = commit_clean(HudiTable(str(path)), execution)  # committed already: nothing written
    assert writes == [str(inst.time), str(inst.time)] and again.total_files_deleted == md.total_files_deleted
    assert_same_rows(hudi_rs_snapshot(path), snapshot)


def test_clean_commit_refused_when_another_attempt_took_over(tmp_path: Path) -> None:
    from lake_orchestration.hudi.services.clean import commit_clean

    path, _, inst, _, execution = _executed_clean(tmp_path)
    heartbeat = path / ".hoodie" / ".heartbeat" / str(inst.time)
    heartbeat.write_bytes(b"another attempt\n")  # judged dead and taken over meanwhile
    with pytest.raises(InvalidInstantStateError, match="no longer this process's"):
        commit_clean(HudiTable(str(path)), execution)
    assert HudiTable(str(path)).timeline.get(str(inst.time), Action.CLEAN).state is State.INFLIGHT
    assert heartbeat.read_bytes() == b"another attempt\n"  # the other attempt's heartbeat is left alone


def test_clean_plan_decodes_each_pending_compaction_plan_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lake_orchestration.hudi.model.avro import CompactionPlan

    path = _mor(tmp_path, rounds=7, compact_every=3)
    assert schedule_compaction(HudiTable(str(path)), force=True).scheduled
    decoded: list[str] = []
    real = CompactionPlan.from_bytes.__func__  # type: ignore[attr-defined]

    def counting(cls, data, *, path):  # type: ignore[no-untyped-def]
        decoded.append(path)
        return real(cls, data, path=path)

    monkeypatch.setattr(CompactionPlan, "from_bytes", classmethod(counting))
    planning = plan_clean(
        HudiTable(str(path)),
        CleanConfig.from_options(
            {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1"}
        ),
    )
    # the file-system view and the cleaner's pending bases both need the plan: decoded once
    assert len(decoded) == 1 and decoded[0].endswith(".compaction.requested"), decoded
    assert planning.partitions_scanned


def test_split_clean_verbs_finish_pending_cleans_first_then_plan_a_new_one(tmp_path: Path) -> None:
    """``plan_cleans`` -> ``execute_cleans`` -> ``commit_cleans`` (one per Dagster op, pickled between them): a
    pending clean is finished alone (a new plan must see its deletes), the next round plans a new one; the result
    is the one ``run_clean`` returns."""
    import pickle

    from lake_orchestration.hudi.services.clean import commit_cleans, execute_cleans, plan_cleans

    path = _mor(tmp_path)
    cfg = CleanConfig.from_options({"hoodie.cleaner.commits.retained": "3"})
    inst, planning, _ = schedule_clean(HudiTable(str(path)), cfg)
    assert inst is not None and planning is not None
    planned = plan_cleans(HudiTable(str(path)), cfg)
    assert planned.instants == (str(inst.time),) and "pending" in planned.reason
    executed = execute_cleans(HudiTable(str(path)), pickle.loads(pickle.dumps(planned)), config=cfg)
    res = commit_cleans(HudiTable(str(path)), pickle.loads(pickle.dumps(executed)), config=cfg)
    assert res.instants == (str(inst.time),) and res.deleted == planning.file_count == res.file_count
    assert HudiTable(str(path)).timeline.get(str(inst.time), Action.CLEAN).is_completed
    # nothing pending: the next round schedules (here: nothing left to delete for 3 retained commits)
    again = plan_cleans(HudiTable(str(path)), cfg)
    assert "pending" not in again.reason and str(inst.time) not in again.instants
    dry = commit_cleans(
        HudiTable(str(path)),
        execute_cleans(HudiTable(str(path)), plan_cleans(HudiTable(str(path)), cfg, dry_run=True)),
        config=cfg,
    )
    assert dry.dry_run and dry.deleted == 0
