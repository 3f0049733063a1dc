"""Every service end to end on the S3 server, equal to the same flow on local disk.

One flow — bulk_insert, upserts, a delete, log compaction, compaction (local engine), clean, archive with a merge
of archive files, savepoint create/delete, a failed write rolled back, the snapshot read — runs once on a local
directory and once on the moto S3 server (HTTP on 127.0.0.1, through the clients the project uses in production).
The two tables must be the same: snapshot rows, the active and archived timelines (actions and states in order),
the file-group structure, and every file (names with instant times and file ids normalised). hudi-rs reads the S3
table (``HudiTableBuilder`` with storage options) equal to the local one.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.model.instant import State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.services.log_compaction import run_log_compaction, schedule_log_compaction
from lake_orchestration.hudi.services.rollback import rollback_stale_writes, stale_writes
from lake_orchestration.hudi.services.savepoint import create_savepoint, delete_savepoint, list_savepoints
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline
from lake_orchestration.hudi.write import WriteOptions, write_table
from lake_orchestration.hudi.write import writer as writer_module
from lake_orchestration.hudi.write.file_group_writer import write_file_group
from tests.conftest import HudiFixture
from tests.objectstore.conftest import S3Bucket
from tests.oracle import assert_same_rows
from tests.trips import trips_options

MAINTENANCE = {
    "hoodie.cleaner.commits.retained": "2",
    "hoodie.keep.min.commits": "3",
    "hoodie.keep.max.commits": "4",
    "hoodie.commits.archival.batch": "2",
    "hoodie.archive.merge.enable": "true",
    "hoodie.archive.merge.files.batch.size": "2",
}
# columns that carry instant times or file ids (different in the two runs by construction)
RUN_SPECIFIC = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name")
_INSTANT = re.compile(r"(?<!\d)\d{17}(?!\d)")
_FILE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+")
# write tokens <task partition>-<stage>-<attempt>: the task order follows the (random) file ids
_TOKEN = re.compile(r"(?<=_)\d+-\d+-\d+(?=_|$)")


@dataclass
class FlowResult:
    snapshot: pa.Table
    hudi_rs: pa.Table
    active: list[tuple[str, str]]
    archived: list[tuple[str, str]]
    structure: list[tuple[str, tuple[tuple[bool, int], ...]]]
    files: Counter[str]
    events: list[str]


class _FailAfterFirstTask(Exception):
    pass


def _fail_after_one_partition(tasks):  # type: ignore[no-untyped-def]
    """A write whose executor dies after writing the file groups of one partition: the instant stays inflight with
    files (the same ones in both runs: the order of the tasks follows the random file ids)."""
    for ctx, records in tasks:
        if ctx.partition_path == "city=chennai":
            write_file_group(records, ctx)
    raise _FailAfterFirstTask


def _run_flow(
    uri: str,
    storage_options: Mapping[str, str],
    table_type: TableType,
    list_files,  # type: ignore[no-untyped-def]
    hudi_rs_options: Mapping[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> FlowResult:
    so = dict(storage_options)
    opts = trips_options(table_name="trips", table_type=table_type, hive_style_partitioning=True, small_file_limit=0)
    mor = table_type is TableType.MERGE_ON_READ
    events: list[str] = []

    def table() -> HudiTable:
        return HudiTable(uri, storage_options=so)

    def write(data: pa.Table, op: str) -> None:
        r = write_table(uri, data, operation=op, options=opts, storage_options=so)
        events.append(f"{op}: +{r.inserted} ~{r.updated} -{r.deleted} files={len(r.files_written)}")

    base = generate_trips(300, partitions=3, seed=5)
    write(base, "bulk_insert")
    for n in range(2):
        write(generate_updates(base, fraction=0.1, seed=n, ts_offset=(n + 1) * 10**6), "upsert")
    write(pick_deletes(base, fraction=0.05, seed=3), "delete")
    if mor:
        cfg = CompactionConfig(log_compaction_blocks_threshold=2)
        sched = schedule_log_compaction(table(), config=cfg)
        assert sched.instant is not None, sched
        md = run_log_compaction(table(), str(sched.instant), config=cfg)
        events.append(f"log compaction: {sum(len(v) for v in md.partition_to_write_stats.values())} stats")
    for n in range(2, 9):
        write(generate_updates(base, fraction=0.1, seed=n, ts_offset=(n + 1) * 10**6), "upsert")
        if mor and n % 3 == 2:
            done = run_compaction(table(), schedule=True, config=CompactionConfig(max_delta_commits=1))
            events.append(f"compaction: {[(r.operations, r.rows_written) for r in done]}")
        cleaned = run_clean(table(), CleanConfig.from_options(MAINTENANCE))
        events.append(f"clean: {cleaned.deleted} deleted, {cleaned.failed} failed")
        archived = run_archive(table(), ArchiveConfig.from_options(MAINTENANCE))
        events.append(
            f"archive: {archived.archive_file is not None} merged={archived.merge.merged_file is not None} "
            f"deleted={len(archived.merge.deleted)}"
        )
    # savepoint a commit, then delete the savepoint
    last = table().timeline.completed_commits().instants[-1]
    create_savepoint(table(), str(last.time), user="test")
    events.append(f"savepoints: {[(s.files > 0) for s in list_savepoints(table())]}")
    assert delete_savepoint(table(), str(last.time))
    # a write that fails half-way, rolled back
    with monkeypatch.context() as m:
        m.setattr(writer_module, "run_tasks_locally", _fail_after_one_partition, raising=True)
        with pytest.raises(_FailAfterFirstTask):
            write_table(
                uri,
                generate_updates(base, fraction=0.5, seed=99, ts_offset=10**9),
                operation="upsert",
                options=opts,
                storage_options=so,
            )
    pending = [i for i in table().timeline.instants if not i.is_completed]
    assert len(pending) == 1 and pending[0].state is State.INFLIGHT, pending
    # judged stale by its heartbeat file's modification time (the store's Last-Modified on S3), then rolled back
    deadline = time.monotonic() + 60
    while not (stale := stale_writes(table(), interval_ms=250, tolerable_misses=2)):
        assert time.monotonic() < deadline, "the failed write's heartbeat never expired"
        time.sleep(0.1)
    assert [str(s.instant.time) for s in stale] == [str(pending[0].time)]
    done = rollback_stale_writes(table(), interval_ms=250, tolerable_misses=2)
    events.append(f"rolled back: {[(s.instant.action.value, type(r).__name__) for s, r in done]}")
    write(generate_updates(base, fraction=0.1, seed=42, ts_offset=10**8), "upsert")

    t = table()
    from hudi import HudiTableBuilder

    batches = HudiTableBuilder.from_base_uri(uri).with_storage_options(dict(hudi_rs_options)).build().read()
    view = t.fs_view()
    structure = sorted(
        (g.id.partition_path, tuple((s.base_file is not None, len(s.log_files)) for s in g.slices))
        for g in view.all_file_groups()
    )
    return FlowResult(
        snapshot=read_snapshot_table(t),
        hudi_rs=pa.Table.from_batches(batches),
        active=[(i.action.value, i.state.name) for i in t.timeline.instants],
        archived=[(e.instant.action.value, e.instant.state.name) for e in ArchivedTimeline.load(t.storage)],
        structure=structure,
        files=_normalised(list_files()),
        events=events,
    )


def _normalised(paths: list[str]) -> Counter[str]:
    """Relative file paths with instant times replaced by their rank, file ids and write tokens by placeholders."""
    instants = sorted({m for p in paths for m in _INSTANT.findall(p)})
    rank = {t: f"<t{n}>" for n, t in enumerate(instants)}
    return Counter(
        _INSTANT.sub(lambda m: rank[m.group(0)], _TOKEN.sub("<tok>", _FILE_ID.sub("<fid>", p))) for p in paths
    )


def _local_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("table_type", [TableType.MERGE_ON_READ, TableType.COPY_ON_WRITE], ids=["mor", "cow"])
def test_every_service_on_s3_equals_local_disk(
    tmp_path: Path, s3: S3Bucket, monkeypatch: pytest.MonkeyPatch, table_type: TableType
) -> None:
    local_root = tmp_path / "trips"
    local = _run_flow(str(local_root), {}, table_type, lambda: _local_files(local_root), {}, monkeypatch)
    remote = _run_flow(
        s3.uri("lake", "trips"),
        s3.storage_options,
        table_type,
        lambda: [k[len("lake/trips/") :] for k in s3.keys("lake/trips")],
        s3.hudi_rs_options,
        monkeypatch,
    )
    assert remote.events == local.events
    assert remote.active == local.active
    assert remote.archived == local.archived
    assert any(e.endswith("merged=True deleted=2") for e in local.events), "no archive merge happened"
    assert remote.files == local.files, (
        f"only on S3: {sorted((remote.files - local.files).elements())}; "
        f"only local: {sorted((local.files - remote.files).elements())}"
    )
    assert remote.structure == local.structure
    # rows: ours on S3 == ours locally == hudi-rs on S3 == hudi-rs locally
    keep = [c for c in local.snapshot.column_names if c not in RUN_SPECIFIC]
    assert remote.snapshot.num_rows > 0
    assert_same_rows(remote.snapshot.select(keep), local.snapshot.select(keep))
    assert_same_rows(remote.hudi_rs.select(keep), local.hudi_rs.select(keep))
    assert_same_rows(remote.snapshot, remote.hudi_rs)


def _upload(local: Path, s3: S3Bucket, prefix: str) -> None:
    """Copy the files only, one PUT each (as ``aws s3 sync`` or a writer that creates no directory markers would
    leave a table): no object stands for an empty folder (``.hoodie/archived/``, ``.hoodie/.temp/``, ...)."""
    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(**s3.storage_options)
    for f in sorted(p for p in local.rglob("*") if p.is_file()):
        with fs.open_output_stream(f"{s3.bucket}/{prefix}/{f.relative_to(local)}") as out:
            out.write(f.read_bytes())


def _java_flow(uri: str, storage_options: Mapping[str, str], hudi_rs_options: Mapping[str, str]) -> FlowResult:
    """Services on a table Java Hudi wrote: a forced compaction, an upsert, clean and archive (timeline kept short)."""
    so = dict(storage_options)
    events = []
    before = HudiTable(uri, storage_options=so)
    sched = schedule_compaction(before, force=True)
    events.append(f"scheduled: {sched.scheduled}")
    done = run_compaction(HudiTable(uri, storage_options=so))
    events.append(f"compaction: {[(r.operations, r.rows_written) for r in done]}")
    rows = read_snapshot_table(HudiTable(uri, storage_options=so))
    key = HudiTable(uri, storage_options=so).config.record_key_fields
    opts = WriteOptions(record_key_fields=key, small_file_limit=0)
    write_table(
        uri,
        rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie")]).slice(0, 3),
        operation="upsert",
        options=opts,
        storage_options=so,
    )
    options = {
        **MAINTENANCE,
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
        "hoodie.archive.merge.enable": "false",
    }
    cleaned = run_clean(HudiTable(uri, storage_options=so), CleanConfig.from_options(options))
    events.append(f"clean: {cleaned.deleted} deleted, {cleaned.failed} failed")
    archived = run_archive(HudiTable(uri, storage_options=so), ArchiveConfig.from_options(options))
    events.append(f"archive: {len(archived.archived_instants)} markers={len(archived.markers_deleted)}")
    t = HudiTable(uri, storage_options=so)
    from hudi import HudiTableBuilder

    batches = HudiTableBuilder.from_base_uri(uri).with_storage_options(dict(hudi_rs_options)).build().read()
    return FlowResult(
        snapshot=read_snapshot_table(t),
        hudi_rs=pa.Table.from_batches(batches),
        active=[(i.action.value, i.state.name) for i in t.timeline.instants],
        archived=[(e.instant.action.value, e.instant.state.name) for e in ArchivedTimeline.load(t.storage)],
        structure=sorted(
            (g.id.partition_path, tuple((s.base_file is not None, len(s.log_files)) for s in g.slices))
            for g in t.fs_view().all_file_groups()
        ),
        files=Counter(),
        events=events,
    )


@pytest.mark.fixtures
@pytest.mark.parametrize("fixture", [HudiFixture.TRIPS_MOR_AVRO, HudiFixture.MOR_ROLLBACK], ids=lambda f: f.name)
def test_java_written_table_on_s3_serviced_like_on_local_disk(
    fresh_fixture, s3: S3Bucket, fixture: HudiFixture
) -> None:
    """A table Java Hudi wrote, copied to S3 and opened as ``s3a://`` (Java's scheme): compaction, upsert, clean and
    archive give the same table as on local disk, and hudi-rs reads both the same."""
    path = fresh_fixture(fixture)
    _upload(path, s3, "java/t")
    local = _java_flow(str(path), {}, {})
    remote = _java_flow(s3.uri("java", "t", scheme="s3a"), s3.storage_options, s3.hudi_rs_options)
    assert remote.events == local.events
    assert remote.active == local.active
    assert remote.archived == local.archived
    assert remote.structure == local.structure
    keep = [c for c in local.snapshot.column_names if c not in RUN_SPECIFIC]
    assert_same_rows(remote.snapshot.select(keep), local.snapshot.select(keep))
    assert_same_rows(remote.hudi_rs.select(keep), local.hudi_rs.select(keep))
