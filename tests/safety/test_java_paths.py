"""Paths in rollback and clean plans/metadata have the forms Java Hudi writes (checked against the Java-written
rollback fixture), and our readers still take the scheme-less paths older releases wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_trips
from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.log.log_format import iter_blocks
from lake_orchestration.hudi.model.avro import (
    CleanerPlan,
    CleanMetadata,
    InstantInfo,
    RollbackMetadata,
    RollbackPlan,
    RollbackRequest,
)
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.services.clean import execute_clean, run_clean, schedule_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.rollback import rollback_write
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.conftest import REPO_ROOT, HudiFixture
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

# An upsert (updates -> log blocks, inserts -> new base files) killed once its files are written, before its
# deltacommit (and before the commit's table lock).
_KILLED_UPSERT = """
import os, signal, sys
import pyarrow as pa
import lake_orchestration.hudi.write.writer as writer
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.write import WriteOptions, write_table

real = writer.run_tasks_locally
def crash(*args, **kwargs):
    real(*args, **kwargs)  # every file of the write is on disk
    os.kill(os.getpid(), signal.SIGKILL)
writer.run_tasks_locally = crash
base = generate_trips(400, partitions=2, seed=1)
rows = pa.concat_tables([generate_updates(base, fraction=0.2, seed=3, ts_offset=10**8),
                         generate_trips(50, partitions=2, seed=77)])
write_table(sys.argv[1], rows, operation="upsert", options=WriteOptions(small_file_limit=0, max_rows_per_file=100))
"""


def _failed_mor_write(tmp_path: Path) -> tuple[Path, str, pa.Table]:
    """A MOR table and a deltacommit left inflight by a SIGKILL (base files, log blocks and markers on disk)."""
    path = tmp_path / "t"
    opts = trips_options(small_file_limit=0, max_rows_per_file=100)
    write_table(str(path), generate_trips(400, partitions=2, seed=1), operation="bulk_insert", options=opts)
    before = hudi_rs_snapshot(path)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-c", _KILLED_UPSERT, str(path)], env=env, cwd=REPO_ROOT, timeout=300)
    assert proc.returncode == -9
    hoodie = path / ".hoodie"
    (failed,) = {p.name.split(".")[0] for p in hoodie.glob("*.deltacommit.inflight")} - {
        p.name.split(".")[0] for p in hoodie.glob("*.deltacommit")
    }
    return path, failed, before


def _form(p: str) -> str:
    """``file:`` (Hadoop-qualified local path), ``plain`` (absolute path without scheme) or ``other``."""
    if p.startswith("file:/") and not p.startswith("file://"):
        return "file:"
    return "plain" if p.startswith("/") else "other"


def _java_fixture_forms(hudi_fixture) -> dict[str, set[str]]:  # type: ignore[no-untyped-def]
    hoodie = hudi_fixture(HudiFixture.MOR_ROLLBACK) / ".hoodie"
    plan = RollbackPlan.from_bytes((hoodie / "20250126040936578.rollback.requested").read_bytes(), path="fixture")
    md = RollbackMetadata.from_bytes((hoodie / "20250126040936578.rollback").read_bytes(), path="fixture")
    return _forms(plan, md)


def _forms(plan: RollbackPlan, md: RollbackMetadata) -> dict[str, set[str]]:
    reqs = plan.rollback_requests or ()
    parts = (md.partition_metadata or {}).values()
    return {
        "filesToBeDeleted": {_form(f) for r in reqs for f in r.files_to_be_deleted},
        "logBlocksToBeDeleted": {_form(f) for r in reqs for f in r.log_blocks_to_be_deleted or {}},
        "successDeleteFiles": {_form(f) for m in parts for f in m.success_delete_files},
        "rollbackLogFiles": {_form(f) for m in parts for f in m.rollback_log_files or {}},
        "logFilesFromFailedCommit": {_form(f) for m in parts for f in m.log_files_from_failed_commit or {}},
    }


def _rollback_files(path: Path, rb: str) -> tuple[RollbackPlan, RollbackMetadata]:
    hoodie = path / ".hoodie"
    plan = RollbackPlan.from_bytes((hoodie / f"{rb}.rollback.requested").read_bytes(), path="plan")
    md = RollbackMetadata.from_bytes((hoodie / f"{rb}.rollback").read_bytes(), path="metadata")
    return plan, md


@pytest.mark.fixtures
def test_rollback_plan_and_metadata_paths_have_javas_forms(tmp_path: Path, hudi_fixture) -> None:  # type: ignore[no-untyped-def]
    java = _java_fixture_forms(hudi_fixture)
    # what Java wrote for a table whose base path is a plain local path: listed log files qualified (file:/...),
    # base files as basePath + relative path
    assert java == {
        "filesToBeDeleted": {"plain"},
        "logBlocksToBeDeleted": {"file:"},
        "successDeleteFiles": {"plain"},
        "rollbackLogFiles": {"file:"},
        "logFilesFromFailedCommit": {"file:"},
    }
    path, failed, before = _failed_mor_write(tmp_path)
    rb = rollback_write(HudiTable(str(path)), failed)
    plan, md = _rollback_files(path, str(rb.time))
    assert _forms(plan, md) == java
    # every path names the file it is about
    for r in plan.rollback_requests:
        assert all(f.startswith(f"{path}/{r.partition_path}/") for f in r.files_to_be_deleted)
        for log in r.log_blocks_to_be_deleted:
            local = Path(log.removeprefix("file:"))
            assert local.exists() and any(b.instant_time == failed for b in iter_blocks(local.read_bytes()))
    for m in md.partition_metadata.values():
        assert all(Path(f.removeprefix("file:")).exists() for f in m.rollback_log_files)
        assert all(not Path(f).exists() for f in m.success_delete_files)
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_rollback_of_a_table_opened_as_file_uri_writes_hadoop_qualified_base_files(tmp_path: Path) -> None:
    path, failed, before = _failed_mor_write(tmp_path)
    rb = rollback_write(HudiTable(f"file://{path}"), failed)  # Java: new Path("file:///…", rel) -> "file:/…"
    plan, md = _rollback_files(path, str(rb.time))
    files = [f for r in plan.rollback_requests for f in r.files_to_be_deleted]
    assert files and all(f.startswith(f"file:{path}/") for f in files)
    assert sorted(f for m in md.partition_metadata.values() for f in m.success_delete_files) == sorted(files)
    assert all(not Path(f.removeprefix("file:")).exists() for f in files)
    assert_same_rows(hudi_rs_snapshot(path), before)


def _request_rollback(path: Path, failed: str, requests: list[RollbackRequest]) -> None:
    """Leave a pending (requested) rollback of ``failed`` whose plan holds ``requests``."""
    t = HudiTable(str(path))
    plan = RollbackPlan(
        instant_to_rollback=InstantInfo(commit_time=failed, action="deltacommit"),
        rollback_requests=tuple(requests),
        version=1,
    )
    t.create_requested(Instant(t.new_instant_time(), Action.ROLLBACK, State.REQUESTED), plan.to_bytes())


@pytest.mark.parametrize("form", ["java", "scheme-less (older releases)"])
def test_a_pending_rollback_plan_is_resumed_whatever_the_path_form(tmp_path: Path, form: str) -> None:
    path, failed, before = _failed_mor_write(tmp_path)
    written = sorted(p for p in path.rglob("*.parquet") if failed in p.name)
    assert written, "the failed write created no base file"
    prefix = "file:" if form == "java" else ""
    reqs = [
        RollbackRequest(
            partition_path=p.parent.name,
            file_id="",
            latest_base_instant="",
            files_to_be_deleted=(f"{prefix}{p}",),
            log_blocks_to_be_deleted={},
        )
        for p in written
    ]
    _request_rollback(path, failed, reqs)
    rollback_write(HudiTable(str(path)), failed)  # resumes the pending plan
    assert not any(p.exists() for p in written), "a planned base file was not deleted"
    assert not list((path / ".hoodie").glob(f"{failed}.*"))
    assert_same_rows(hudi_rs_snapshot(path), before)


def _assert_rollback_refuses_outside_file(tmp_path: Path, outside: Callable[[Path, Path], str]) -> None:
    """A pending plan deleting a base file of the failed write and ``outside(table path, victim)`` is refused,
    naming the victim, and deletes neither."""
    path, failed, _ = _failed_mor_write(tmp_path)
    victim = tmp_path / "elsewhere.parquet"
    victim.write_bytes(b"x")
    written = sorted(p for p in path.rglob("*.parquet") if failed in p.name)
    req = RollbackRequest(
        partition_path="",
        file_id="",
        latest_base_instant="",
        files_to_be_deleted=(f"file:{written[0]}", outside(path, victim)),
        log_blocks_to_be_deleted={},
    )
    _request_rollback(path, failed, [req])
    with pytest.raises(InvalidInstantStateError, match=r"elsewhere\.parquet"):
        rollback_write(HudiTable(str(path)), failed)
    assert victim.exists() and written[0].exists()


def test_a_rollback_plan_naming_a_file_outside_the_table_deletes_nothing(tmp_path: Path) -> None:
    _assert_rollback_refuses_outside_file(tmp_path, lambda path, victim: f"file:{victim}")


def test_a_rollback_plan_climbing_out_of_the_table_with_dot_dot_deletes_nothing(tmp_path: Path) -> None:
    """A path that starts with the base path but leaves it through ``..`` is outside the table too."""
    _assert_rollback_refuses_outside_file(tmp_path, lambda path, victim: f"file:{path}/../{victim.name}")


@pytest.mark.fixtures
def test_clean_plan_paths_are_qualified_and_metadata_holds_names(fresh_fixture) -> None:  # type: ignore[no-untyped-def]
    path = fresh_fixture(HudiFixture.COW_COMPLEX_HIVE)
    before = hudi_rs_snapshot(path)
    res = run_clean(
        HudiTable(str(path)),
        CleanConfig.from_options(
            {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1"}
        ),
    )
    (instant,) = res.instants
    hoodie = path / ".hoodie"
    plan = CleanerPlan.from_bytes((hoodie / f"{instant}.clean.requested").read_bytes(), path="plan")
    files = [i.file_path for v in plan.file_paths_to_be_deleted_per_partition.values() for i in v]
    # Java lists the files to clean from the file system: qualified paths (file:/…), like the fixture's listed logs
    assert files and all(f.startswith(f"file:{path}/") for f in files)
    assert all(not Path(f.removeprefix("file:")).exists() for f in files)
    md = CleanMetadata.from_bytes((hoodie / f"{instant}.clean").read_bytes(), path="metadata")
    names = [n for m in md.partition_metadata.values() for n in (*m.delete_path_patterns, *m.success_delete_files)]
    assert names and all("/" not in n for n in names)  # file names only, as Java's clean metadata
    assert_same_rows(hudi_rs_snapshot(path), before)


@pytest.mark.fixtures
def test_a_scheme_less_clean_plan_of_an_older_release_is_still_executed(fresh_fixture) -> None:  # type: ignore[no-untyped-def]
    path = fresh_fixture(HudiFixture.COW_COMPLEX_HIVE)
    before = hudi_rs_snapshot(path)
    t = HudiTable(str(path))
    inst, _, why = schedule_clean(
        t,
        CleanConfig.from_options(
            {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1"}
        ),
    )
    assert inst is not None, why
    req = path / ".hoodie" / f"{inst.time}.clean.requested"
    plan = CleanerPlan.from_bytes(req.read_bytes(), path="plan")
    old = {
        p: tuple(type(i)(file_path=i.file_path.removeprefix("file:"), is_bootstrap_base_file=False) for i in v)
        for p, v in plan.file_paths_to_be_deleted_per_partition.items()
    }
    req.write_bytes(CleanerPlan(**{**plan.__dict__, "file_paths_to_be_deleted_per_partition": old}).to_bytes())
    execute_clean(HudiTable(str(path)), str(inst.time))
    files = [i.file_path for v in old.values() for i in v]
    assert files and all(f.startswith("/") and not Path(f).exists() for f in files)
    assert_same_rows(hudi_rs_snapshot(path), before)


def test_path_forms_for_object_stores_and_hdfs() -> None:
    from lake_orchestration.io.hadoop_paths import base_path_form, qualified_path, storage_path_of

    s3 = SimpleNamespace(is_local=False, base_uri="s3a://bucket/lake/t", base_path="bucket/lake/t")
    assert qualified_path(s3, "bucket/lake/t/p/a.parquet") == "s3a://bucket/lake/t/p/a.parquet"
    assert base_path_form(s3, "bucket/lake/t/p/a.parquet") == "s3a://bucket/lake/t/p/a.parquet"
    assert storage_path_of(s3, "s3a://bucket/lake/t/p/a.parquet") == "bucket/lake/t/p/a.parquet"
    assert storage_path_of(s3, "s3://bucket/lake/t/p/a.parquet") == "bucket/lake/t/p/a.parquet"
    assert storage_path_of(s3, "bucket/lake/t/p/a.parquet") == "bucket/lake/t/p/a.parquet"  # an older plan of ours
    assert storage_path_of(s3, "s3a://bucket/other/a.parquet") is None
    hdfs = SimpleNamespace(is_local=False, base_uri="hdfs://nn:8020/warehouse/t", base_path="/warehouse/t")
    assert qualified_path(hdfs, "/warehouse/t/p/.f_1.log.1_0-1-0") == "hdfs://nn:8020/warehouse/t/p/.f_1.log.1_0-1-0"
    assert storage_path_of(hdfs, "hdfs://nn:8020/warehouse/t/p/a.parquet") == "/warehouse/t/p/a.parquet"
    local = SimpleNamespace(is_local=True, base_uri="/data/t", base_path="/data/t")
    assert qualified_path(local, "/data/t/p/a.parquet") == "file:/data/t/p/a.parquet"
    assert base_path_form(local, "/data/t/p/a.parquet") == "/data/t/p/a.parquet"
    for old_or_java in ("/data/t/p/a.parquet", "file:/data/t/p/a.parquet", "file:///data/t/p/a.parquet"):
        assert storage_path_of(local, old_or_java) == "/data/t/p/a.parquet"
    assert storage_path_of(local, "/data/t2/a.parquet") is None
    for escaping in ("/data/t/../t2/a.parquet", "file:/data/t/p/../../x", "/data/t/./a.parquet", "/data/t//a"):
        assert storage_path_of(local, escaping) is None, escaping
    assert storage_path_of(s3, "s3a://bucket/lake/t/../other/a.parquet") is None
    uri = SimpleNamespace(is_local=True, base_uri="file:///data/t", base_path="/data/t")
    assert base_path_form(uri, "/data/t/p/a.parquet") == "file:/data/t/p/a.parquet"
