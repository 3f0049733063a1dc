"""Ambiguous completed-instant writes of the table services (clean, log compaction) on an object store.

The completed instant is the commit point; its write fails through the fault-injecting proxy
(:mod:`tests.objectstore.fault_proxy`), either applied by the store with the answer lost and the object unreadable
afterwards (undecidable), or refused outright. Both must end in ``CommitStateUnknownError`` (never a plain
``StorageError`` a caller would clean up after), and the commit retried with the same execution completes the
instant from the timeline alone: the applied one is a no-op returning the timeline's metadata, the refused one is
written then; no file is deleted or written again, and the snapshot is unchanged (hudi-rs reads it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.errors import CommitStateUnknownError
from lake_orchestration.hudi.model.avro import CleanMetadata
from lake_orchestration.hudi.model.instant import Action, Instant
from lake_orchestration.hudi.services.clean import commit_clean, execute_clean_plan, schedule_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.services.log_compaction import (
    commit_log_compaction,
    execute_log_compaction,
    schedule_log_compaction,
)
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.objectstore.conftest import ACCESS_KEY, REGION, SECRET_KEY, S3Bucket
from tests.objectstore.fault_proxy import Fault, FaultProxy
from tests.oracle import assert_same_rows
from tests.trips import trips_options


@pytest.fixture(scope="module")
def local_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A MOR table built once locally (fast): bulk insert, two upserts (log files), a compaction, two more upserts.
    The compaction leaves a slice to clean; the two upserts after it are log blocks to log-compact."""
    path = tmp_path_factory.mktemp("svc") / "t"
    opts = trips_options(hive_style_partitioning=True, small_file_limit=0)
    base = generate_trips(60, partitions=1, seed=3)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    for n in range(4):
        upd = generate_updates(base, fraction=0.3, seed=n, ts_offset=(n + 1) * 10**7)
        write_table(str(path), upd, operation="upsert", options=opts)
        if n == 1:
            run_compaction(HudiTable(str(path)), schedule=True, config=CompactionConfig(max_delta_commits=1))
    return path


def _hudi_rs_rows(s3: S3Bucket, uri: str) -> pa.Table:
    from hudi import HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(uri).with_storage_options(s3.hudi_rs_options).build()
    return pa.Table.from_batches(table.read())


def _clean(table: HudiTable) -> tuple[str, Any, Callable[[HudiTable, Any], Any]]:
    inst, planning, reason = schedule_clean(table, CleanConfig.from_options({"hoodie.cleaner.commits.retained": "1"}))
    assert inst is not None and planning is not None and planning.file_count, f"no clean planned: {reason}"
    return str(inst.time), execute_clean_plan(table, str(inst.time)), lambda t, e: commit_clean(t, e)


def _log_compaction(table: HudiTable) -> tuple[str, Any, Callable[[HudiTable, Any], Any]]:
    cfg = CompactionConfig(log_compaction_blocks_threshold=2)
    sched = schedule_log_compaction(table, config=cfg)
    assert sched.scheduled, sched.reason
    instant = str(sched.instant)
    return instant, execute_log_compaction(table, instant, config=cfg), lambda t, e: commit_log_compaction(t, e)


def _read_clean(table: HudiTable, done: Instant) -> CleanMetadata:
    return table.read_model(done, CleanMetadata)


def _clean_summary(md: Any) -> object:
    return md.total_files_deleted, sorted((p, sorted(m.success_delete_files)) for p, m in md.partition_metadata.items())


def _log_compaction_summary(md: Any) -> object:
    return md.operation_type, sorted((s.path, s.numWrites, s.numDeletes) for s in md.write_stats())


SERVICES = {
    "clean": (_clean, _clean_summary, _read_clean, Action.CLEAN, "clean"),
    "log_compaction": (
        _log_compaction,
        _log_compaction_summary,
        HudiTable.commit_metadata,
        Action.DELTA_COMMIT,
        "deltacommit",
    ),
}


def _on_s3(s3: S3Bucket, proxy: FaultProxy, local_table: Path) -> tuple[str, dict[str, str], pa.Table]:
    """The local table copied to ``t`` on the S3 server; its URI, the storage options through the proxy and its
    snapshot (hudi-rs)."""
    fs = pafs.S3FileSystem(endpoint_override=s3.endpoint, region=REGION, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    pafs.copy_files(str(local_table), f"{s3.bucket}/t", destination_filesystem=fs)
    uri = s3.uri("t")
    return uri, {**s3.storage_options, "endpoint_override": proxy.endpoint}, _hudi_rs_rows(s3, uri)


def _assert_committed_once(
    s3: S3Bucket, uri: str, service: str, instant: str, got: Any, execution: Any, keys_before: set[str]
) -> None:
    _, summary, read, action, suffix = SERVICES[service]
    table = HudiTable(uri, storage_options=s3.storage_options)
    done = table.timeline.get(instant, action)
    assert done is not None and done.is_completed, f"{instant}.{suffix} expected completed: {table.timeline}"
    assert not table.timeline.pending(), f"pending instants left: {list(table.timeline.pending())}"
    assert summary(got) == summary(execution.metadata) == summary(read(table, done)), (
        f"the commit of {instant} returned other metadata than executed"
    )
    keys_after = set(s3.keys("t"))
    assert keys_after - keys_before == {f"t/.hoodie/{instant}.{suffix}"}, (
        f"expected only t/.hoodie/{instant}.{suffix} new after the commit: {sorted(keys_after - keys_before)}"
    )
    assert f"t/.hoodie/.heartbeat/{instant}" not in keys_after, "the attempt's heartbeat is left after the commit"


@pytest.mark.parametrize("service", list(SERVICES))
def test_service_commit_applied_whose_answer_is_lost_and_retry_refused_reports_the_commit(
    s3: S3Bucket, proxy: FaultProxy, local_table: Path, service: str
) -> None:
    """The store applies the completed instant's PUT, the answer is lost and the client's retry is refused (403):
    the store reports a plain failure, but the timeline shows the commit, so it is reported committed (a failure
    would make the caller run the service again on a committed instant)."""
    uri, via, before = _on_s3(s3, proxy, local_table)
    prepare = SERVICES[service][0]
    instant, execution, commit = prepare(HudiTable(uri, storage_options=s3.storage_options))
    completed = rf"/t/\.hoodie/{instant}\.{SERVICES[service][4]}$"
    lost = proxy.add(Fault("PUT", completed, "drop_response"))
    proxy.add(Fault("PUT", completed, "error", status=403, times=1000, after=lost))
    keys_before = set(s3.keys("t"))

    got = commit(HudiTable(uri, storage_options=via), execution)
    assert proxy.hits_of("drop_response"), "the fault never fired"
    proxy.clear()
    _assert_committed_once(s3, uri, service, instant, got, execution, keys_before)
    assert_same_rows(_hudi_rs_rows(s3, uri), before)


@pytest.mark.parametrize("service", list(SERVICES))
def test_service_commit_applied_but_undecidable_raises_unknown_then_retry_completes_from_timeline(
    s3: S3Bucket, proxy: FaultProxy, local_table: Path, service: str
) -> None:
    """The store applies the completed instant's PUT, the answer is lost (the retry is answered 412) and the object
    cannot be read back:
    ``CommitStateUnknownError``, nothing cleaned up; the commit retried with the same execution finds the instant
    on the timeline and is a no-op returning its metadata (nothing deleted or written again)."""
    uri, via, before = _on_s3(s3, proxy, local_table)
    prepare = SERVICES[service][0]
    instant, execution, commit = prepare(HudiTable(uri, storage_options=s3.storage_options))
    completed = rf"/t/\.hoodie/{instant}\.{SERVICES[service][4]}$"
    lost = proxy.add(Fault("PUT", completed, "drop_response"))
    for method in ("HEAD", "GET"):  # the client's retry is answered 412, the read-back that would decide refused
        proxy.add(Fault(method, completed, "error", status=403, times=1000, after=lost))
    keys_before = set(s3.keys("t"))

    with pytest.raises(CommitStateUnknownError) as info:
        commit(HudiTable(uri, storage_options=via), execution)
    assert proxy.hits_of("drop_response"), "the fault never fired"
    assert instant in str(info.value), f"the error names the instant {instant}: {info.value}"
    proxy.clear()
    kept = set(s3.keys("t"))
    assert keys_before <= kept, f"deleted after an unknown commit state: {sorted(keys_before - kept)}"

    got = commit(HudiTable(uri, storage_options=via), execution)
    _assert_committed_once(s3, uri, service, instant, got, execution, keys_before)
    assert_same_rows(_hudi_rs_rows(s3, uri), before)
