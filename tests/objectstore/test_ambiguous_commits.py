"""Ambiguous commits on an object store: the commit file's conditional PUT applied by the store, its answer lost.

A fault-injecting proxy (:mod:`tests.objectstore.fault_proxy`) sits between the clients and the S3 server (moto):
it forwards the PUT of the commit file and then closes the connection without the response (or answers 5xx a few
times, or hangs). The client retries; the store answers ``412`` (the object exists: ours). Taken for a lost race,
a durable commit looks failed: a retried write duplicates every row, the archiver writes the same instants again
under the next archive file name, the Paimon committer deletes the manifests of its now-committed snapshot. The
project reads the object back and decides by its content.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline, list_archive_files
from lake_orchestration.hudi.write import write_table
from lake_orchestration.paimon.model import FileKind
from lake_orchestration.paimon.services.compaction import run_compaction
from lake_orchestration.paimon.table import PaimonTable
from tests.conftest import REPO_ROOT, REQUIRE_SHARED, SHARED
from tests.objectstore.conftest import ACCESS_KEY, REGION, SECRET_KEY, S3Bucket
from tests.objectstore.fault_proxy import Fault, FaultProxy
from tests.trips import trips_options

COMMIT_FILE = r"/\.hoodie/\d{17}\.commit$"
"""The completed instant of a COPY_ON_WRITE write (not ``.commit.requested``/``.inflight``)."""


def _via(s3: S3Bucket, proxy: FaultProxy) -> dict[str, str]:
    return {**s3.storage_options, "endpoint_override": proxy.endpoint}


def _hudi_rs_rows(s3: S3Bucket, uri: str):  # type: ignore[no-untyped-def]
    import pyarrow as pa
    from hudi import HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(uri).with_storage_options(s3.hudi_rs_options).build()
    return pa.Table.from_batches(table.read())


FAULTS = {
    "response_dropped": Fault("PUT", COMMIT_FILE, "drop_response"),
    # more 503s than obstore's 10 retries: the create fails, the object is absent, the create is sent again
    "503_past_retries": Fault("PUT", COMMIT_FILE, "error", times=11),
    # applied by the store, then no answer for 2 s and the connection reset
    "applied_then_hang": Fault("PUT", COMMIT_FILE, "hang", seconds=2, forward=True),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_write_whose_commit_response_is_lost_reports_success_and_rows_once(
    s3: S3Bucket, proxy: FaultProxy, tmp_path: Path, fault: str
) -> None:
    uri = s3.uri("trips")
    opts = trips_options(table_type=TableType.COPY_ON_WRITE)
    base = generate_trips(120, partitions=2, seed=5)
    write_table(uri, base, operation="bulk_insert", options=opts, storage_options=s3.storage_options)
    new = generate_trips(80, partitions=2, seed=6)
    rows = tmp_path / "new.parquet"
    pq.write_table(new, rows)

    proxy.add(replace(FAULTS[fault]))  # a fresh copy: a fault counts down as it fires
    env = {**os.environ, **s3.env, "AWS_ENDPOINT_URL": proxy.endpoint, "PYTHONPATH": str(REPO_ROOT)}
    argv = [sys.executable, "-m", "lake_orchestration.cli.app", "write", uri, "--input", str(rows)]
    argv += [
        "--operation",
        "bulk_insert",
        "--record-key",
        "uuid",
        "--precombine-field",
        "ts",
        "--partition-field",
        "city",
    ]
    first = subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proxy.hits, f"the fault never fired: {first.stderr}"
    if first.returncode != 0:
        # what a user (or an orchestrator's retry policy) does after a failed write
        subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)

    got = _hudi_rs_rows(s3, uri)
    keys = got.column("uuid")
    assert pc.count_distinct(keys).as_py() == got.num_rows, "rows are duplicated"
    assert got.num_rows == base.num_rows + new.num_rows
    assert first.returncode == 0, f"a durable commit reported as failed: {first.stderr}"
    table = HudiTable(uri, storage_options=s3.storage_options)
    assert len(table.timeline.completed_commits()) == 2
    assert not table.timeline.pending()


def test_archive_whose_archive_file_response_is_lost_archives_each_instant_once(
    s3: S3Bucket, proxy: FaultProxy
) -> None:
    uri = s3.uri("trips")
    so = _via(s3, proxy)
    opts = trips_options(table_type=TableType.COPY_ON_WRITE)
    base = generate_trips(60, partitions=1, seed=7)
    write_table(uri, base, operation="bulk_insert", options=opts, storage_options=so)
    for n in range(6):
        upd = generate_updates(base, fraction=0.2, seed=n, ts_offset=(n + 1) * 10**6)
        write_table(uri, upd, operation="upsert", options=opts, storage_options=so)
    maintenance = {
        "hoodie.cleaner.commits.retained": "2",
        "hoodie.keep.min.commits": "3",
        "hoodie.keep.max.commits": "4",
    }
    run_clean(HudiTable(uri, storage_options=so), CleanConfig.from_options(maintenance))

    proxy.add(Fault("PUT", r"/\.hoodie/archived/\.commits_\.archive\.\d+_1-0-1$", "drop_response"))
    result = run_archive(HudiTable(uri, storage_options=so), ArchiveConfig.from_options(maintenance))
    assert proxy.hits_of("drop_response"), "the fault never fired"
    assert result.archive_file is not None

    table = HudiTable(uri, storage_options=s3.storage_options)
    files = list_archive_files(table.storage, table.storage.join(".hoodie", "archived"))
    assert [f.version for f in files] == [1], f"one archive file expected: {[f.name for f in files]}"
    archived = Counter(
        (str(e.instant.time), e.instant.action.value, e.instant.state.name)
        for e in ArchivedTimeline.load(table.storage)
    )
    assert archived and max(archived.values()) == 1, f"archived twice: {archived}"
    # what was archived left the active timeline, and the rest of the table reads as before
    active = {str(i.time) for i in table.timeline}
    assert not active & {t for t, _, _ in archived}
    got = _hudi_rs_rows(s3, uri)
    assert got.num_rows == base.num_rows


GOLDEN = SHARED / "fixtures" / "paimon-tables" / "pk_global_index_golden.tar.gz"


def _golden_on_s3(s3: S3Bucket, proxy: FaultProxy, tmp_path: Path) -> PaimonTable:
    """The Java-written golden table ``test_pk_global_index_golden`` back to snapshot 3 (Java compacts at 4), on the
    S3 server under ``paimon/t``, opened through the proxy."""
    if not GOLDEN.is_file():
        if REQUIRE_SHARED:
            pytest.fail(f"Java-written Paimon tables not found at {GOLDEN}")
        pytest.skip(f"Java-written Paimon tables not found at {GOLDEN} (they live in ../shared)")
    with tarfile.open(GOLDEN) as tar:
        tar.extractall(tmp_path, filter="data")
    local = tmp_path / "default.db" / "test_pk_global_index_golden"
    # back to snapshot 3 (the Java table compacts at 4)
    for p in (local / "snapshot").glob("snapshot-*"):
        if int(p.name.split("-")[1]) > 3:
            p.unlink()
    (local / "snapshot" / "LATEST").write_text("3")
    fs = pafs.S3FileSystem(endpoint_override=s3.endpoint, region=REGION, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    pafs.copy_files(str(local), f"{s3.bucket}/paimon/t", destination_filesystem=fs)

    return PaimonTable.open(s3.uri("paimon", "t"), storage_options=_via(s3, proxy))


def test_paimon_compaction_whose_snapshot_response_is_lost_keeps_its_files(
    s3: S3Bucket, proxy: FaultProxy, tmp_path: Path
) -> None:
    table = _golden_on_s3(s3, proxy, tmp_path)
    before = table.latest_snapshot()
    assert before is not None and before.id == 3
    proxy.add(Fault("PUT", r"/paimon/t/snapshot/snapshot-4$", "drop_response"))
    result = run_compaction(table)
    assert proxy.hits_of("drop_response"), "the fault never fired"
    assert result.commit is not None and result.commit.snapshot.id == 4 and result.replans == 0

    fresh = PaimonTable.open(s3.uri("paimon", "t"), storage_options=s3.storage_options)
    snap = fresh.latest_snapshot()
    assert snap is not None and snap.id == 4 and snap.commit_kind.name == "COMPACT"
    # every manifest list, manifest and live data file the committed snapshot references exists and reads
    keys = set(s3.keys("paimon/t"))
    for name in (snap.base_manifest_list, snap.delta_manifest_list):
        assert f"paimon/t/manifest/{name}" in keys
        for meta in fresh.manifest_list(name):
            assert f"paimon/t/manifest/{meta.file_name}" in keys
    live = fresh.live_entries(snap)
    assert live and all(e.kind is FileKind.ADD for e in live)
    for e in live:
        assert any(k.endswith(f"/{e.file.file_name}") for k in keys), f"live file {e.file.file_name} is gone"
    assert result.execution is not None
    assert fresh.live_entries(before) != live


def test_create_undecidable_raises_commit_state_unknown_and_leaves_the_object(s3: S3Bucket, proxy: FaultProxy) -> None:
    """The answer of the create is lost and the object cannot be read back: neither success nor a lost race."""
    from lake_orchestration.errors import CommitStateUnknownError, FileAlreadyExistsError
    from lake_orchestration.io.storage import Storage

    storage = Storage(s3.uri("t"), options=_via(s3, proxy))
    # a 412 answering the first request is a lost race even when the content is the same (mutual exclusion)
    taken = storage.join(".hoodie", "20250101000000000.commit.requested")
    storage.create_if_absent(taken, b"same")
    with pytest.raises(FileAlreadyExistsError):
        Storage(s3.uri("t"), options=_via(s3, proxy)).create_if_absent(taken, b"same")
    # an empty object cannot be told apart: its lost answer leaves the state unknown
    empty = storage.join(".hoodie", "20250101000000000.compaction.inflight")
    proxy.add(Fault("PUT", r"/t/\.hoodie/20250101000000000\.compaction\.inflight$", "drop_response"))
    with pytest.raises(CommitStateUnknownError):
        storage.create_if_absent(empty, b"")

    path = storage.join(".hoodie", "20260101000000000.commit")
    lost = proxy.add(Fault("PUT", r"/t/\.hoodie/20260101000000000\.commit$", "drop_response"))
    proxy.add(Fault("*", r"/t/\.hoodie/20260101000000000\.commit$", "error", times=1000, after=lost))
    with pytest.raises(CommitStateUnknownError) as info:
        storage.create_if_absent(path, b"attempt-1")
    assert info.value.path == storage.uri(path) and storage.uri(path) in str(info.value)
    proxy.clear()
    assert Storage(s3.uri("t"), options=s3.storage_options).read_bytes(path) == b"attempt-1"


def test_write_whose_heartbeat_deletion_fails_after_commit_reports_success_with_warning(
    s3: S3Bucket, proxy: FaultProxy, tmp_path: Path
) -> None:
    """Housekeeping after the commit point (here: deleting the heartbeat) fails: the write is committed and says so."""
    uri = s3.uri("trips")
    opts = trips_options(table_type=TableType.COPY_ON_WRITE)
    base = generate_trips(50, partitions=1, seed=5)
    write_table(uri, base, operation="bulk_insert", options=opts, storage_options=s3.storage_options)
    new = generate_trips(40, partitions=1, seed=6)
    rows = tmp_path / "new.parquet"
    pq.write_table(new, rows)
    proxy.add(Fault("DELETE", r"/trips/\.hoodie/\.heartbeat/\d{17}$", "error", times=1000))
    env = {**os.environ, **s3.env, "AWS_ENDPOINT_URL": proxy.endpoint, "PYTHONPATH": str(REPO_ROOT)}
    argv = [sys.executable, "-m", "lake_orchestration.cli.app", "write", uri, "--input", str(rows)]
    argv += [
        "--operation",
        "bulk_insert",
        "--record-key",
        "uuid",
        "--precombine-field",
        "ts",
        "--partition-field",
        "city",
    ]
    first = subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proxy.hits, f"the fault never fired: {first.stderr}"
    if first.returncode != 0:
        subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)  # a user's retry
    got = _hudi_rs_rows(s3, uri)
    assert pc.count_distinct(got.column("uuid")).as_py() == got.num_rows == base.num_rows + new.num_rows
    assert first.returncode == 0, f"a durable commit reported as failed: {first.stderr}"
    assert "is committed, but deleting the heartbeat failed" in first.stderr, first.stderr


def test_paimon_commit_state_unknown_deletes_nothing(s3: S3Bucket, proxy: FaultProxy, tmp_path: Path) -> None:
    """The snapshot's answer is lost and it cannot be read back: CommitStateUnknownError, every file kept."""
    from lake_orchestration.errors import CommitStateUnknownError

    table = _golden_on_s3(s3, proxy, tmp_path)
    lost = proxy.add(Fault("PUT", r"/paimon/t/snapshot/snapshot-4$", "drop_response"))
    proxy.add(Fault("*", r"/paimon/t/snapshot/snapshot-4$", "error", times=1000, after=lost))
    keys_before = set(s3.keys("paimon/t"))
    with pytest.raises(CommitStateUnknownError):
        run_compaction(table)
    proxy.clear()
    keys_after = set(s3.keys("paimon/t"))
    assert keys_before <= keys_after, f"deleted: {keys_before - keys_after}"
    fresh = PaimonTable.open(s3.uri("paimon", "t"), storage_options=s3.storage_options)
    snap = fresh.latest_snapshot()
    assert snap is not None and snap.id == 4  # the store did apply it: it must be whole
    for name in (snap.base_manifest_list, snap.delta_manifest_list):
        for meta in fresh.manifest_list(name):
            assert f"paimon/t/manifest/{meta.file_name}" in keys_after
    for e in fresh.live_entries(snap):
        assert any(k.endswith(f"/{e.file.file_name}") for k in keys_after), f"live file {e.file.file_name} is gone"
