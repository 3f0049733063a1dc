"""Bootstrap execution: the METADATA_ONLY skeleton base files at ``00000000000001`` and the FULL_RECORD bulk insert
at ``00000000000002``.

METADATA_ONLY mirrors Hudi 0.14/0.15 ``SparkBootstrapCommitActionExecutor.metadataBootstrap`` with
``ParquetBootstrapMetadataHandler`` / ``HoodieBootstrapHandle``: ``<01>.commit.requested`` and ``.inflight`` (both
empty; ``deltacommit`` on MERGE_ON_READ) are written first, then per source file one new file group (a plain UUID
file id, ``FSUtils.createNewFileIdPfx``) whose base file ``<fileId>_<token>_00000000000001.parquet`` holds only the
five meta columns, one row per source row in the source's order: the record key computed from the source's key
columns by the table's key generator, the partition path of the source folder, commit time
``00000000000001`` and Hudi's sequence numbers. Its Avro schema is ``HoodieAvroUtils.RECORD_KEY_SCHEMA`` with the
meta fields (record ``HoodieRecordKey``); its footer carries the bloom filter and the key range as any base file.
Each file gets its CREATE marker first, so a crashed bootstrap is rolled back like a failed write. The source files
are only read.

FULL_RECORD is ``fullBootstrap``: the records of the FULL_RECORD partitions written by this project's writer as a
bulk insert at ``00000000000002`` (its own requested -> inflight -> completed protocol).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lake_orchestration.engines.base import Engine, TaskAttempt
from lake_orchestration.engines.local import or_local
from lake_orchestration.errors import PlanError
from lake_orchestration.hudi.hfile.bootstrap_index import BootstrapFileMapping
from lake_orchestration.hudi.model.commit_metadata import RuntimeStats, WriteStat
from lake_orchestration.hudi.model.file_group import BaseFile
from lake_orchestration.hudi.model.instant import (
    FULL_BOOTSTRAP_INSTANT,
    METADATA_BOOTSTRAP_INSTANT,
    Action,
    Instant,
    InstantTime,
    State,
)
from lake_orchestration.hudi.model.schema import META_FIELDS, PARTITION_PATH, RECORD_KEY
from lake_orchestration.hudi.services.bootstrap.config import BootstrapConfig, BootstrapMode
from lake_orchestration.hudi.services.bootstrap.planner import BootstrapPlan, SourceFile
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.base_file_reader import source_storage_and_path, with_folder_partition_columns
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.hudi.table.marker import create_marker
from lake_orchestration.hudi.write.base_file import BaseFileWriter, ParquetWriteConfig
from lake_orchestration.hudi.write.file_group_writer import ensure_partition_metadata, partition_path_depth
from lake_orchestration.hudi.write.keys import record_keys
from lake_orchestration.hudi.write.records import is_complex_key
from lake_orchestration.hudi.write.writer import WriteOperation, WriteResult, write_table
from lake_orchestration.io.storage import Storage

SKELETON_AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieRecordKey",
    "doc": "",
    "fields": [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in META_FIELDS],
}
"""``HoodieAvroUtils.addMetadataFields(RECORD_KEY_SCHEMA)``: the writer schema of a skeleton file."""
SKELETON_ARROW_SCHEMA = pa.schema([pa.field(n, pa.string()) for n in META_FIELDS])
"""The five meta columns, nullable strings."""
_BATCH_ROWS = 131_072


@dataclass(frozen=True, kw_only=True)
class SkeletonTask:
    """One source file to write a skeleton base file for (an engine task: plain, picklable values)."""

    base_uri: str
    """The table's base path."""
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)
    """Storage options (secrets: never shown in a repr, never encoded)."""
    source: SourceFile
    """The source file."""
    bootstrap_base_path: str
    """The source dataset's base path (``hoodie.bootstrap.base.path``)."""
    partition_path: str
    """Partition path in the table (= the source folder)."""
    file_id: str
    """The new file group's id."""
    record_key_fields: tuple[str, ...]
    """The key generator's record key fields."""
    complex_key: bool
    """``field:value`` keys (ComplexKeyGenerator) rather than the plain value."""
    compression: str = "gzip"
    """``hoodie.parquet.compression.codec``."""
    attempt: TaskAttempt = field(default_factory=lambda: TaskAttempt(0, 0, 0))
    """The write token and the partition id of the commit sequence numbers."""


@dataclass(frozen=True, kw_only=True)
class SkeletonWrite:
    """A skeleton base file written: its write stat and the source file it stands for (the index entry)."""

    stat: WriteStat
    """The skeleton's write stat (``HoodieCreateHandle``'s)."""
    mapping: BootstrapFileMapping
    """File group -> source file, for the bootstrap index."""


def write_skeleton(task: SkeletonTask) -> list[SkeletonWrite]:
    """Engine task: the skeleton base file of one source file (see the module doc)."""
    t0 = time.monotonic()
    storage = Storage(task.base_uri, options=task.storage_options)
    src_storage, src_path = source_storage_and_path(storage, task.source.uri)
    source = src_storage.open_parquet(src_path)
    instant = METADATA_BOOTSTRAP_INSTANT
    token = task.attempt.write_token
    name = BaseFile(task.file_id, token, InstantTime(instant)).name
    ensure_partition_metadata(storage, task.partition_path, instant, partition_path_depth(task.partition_path))
    create_marker(storage, instant, task.partition_path, name, "CREATE")
    writer = BaseFileWriter(
        storage,
        partition_path=task.partition_path,
        file_id=task.file_id,
        write_token=token,
        instant=instant,
        avro_schema=SKELETON_AVRO_SCHEMA,
        arrow_schema=SKELETON_ARROW_SCHEMA,
        config=ParquetWriteConfig(compression=task.compression.lower()),
    )
    rows = 0
    for batch in source.iter_batches(batch_size=_BATCH_ROWS, columns=list(task.record_key_fields)):
        keys = record_keys(pa.Table.from_batches([batch]), task.record_key_fields, complex_key=task.complex_key)
        n = len(keys)
        writer.write(
            pa.table(
                {
                    RECORD_KEY: keys,
                    PARTITION_PATH: pa.array([task.partition_path] * n, pa.string()),
                }
            )
        )
        rows += n
    bf = writer.close()
    stat = WriteStat(
        fileId=task.file_id,
        path=bf.relative_path,
        prevCommit="null",
        numWrites=rows,
        numInserts=rows,
        totalWriteBytes=bf.size,
        partitionPath=task.partition_path,
        fileSizeInBytes=bf.size,
        runtimeStats=RuntimeStats(totalCreateTime=int((time.monotonic() - t0) * 1000)),
    )
    mapping = BootstrapFileMapping(
        bootstrap_base_path=task.bootstrap_base_path,
        bootstrap_partition_path=task.partition_path,
        partition_path=task.partition_path,
        file_id=task.file_id,
        bootstrap_file_status=task.source.file_status(),
    )
    return [SkeletonWrite(stat=stat, mapping=mapping)]


@dataclass(frozen=True, kw_only=True)
class MetadataOnlyExecution:
    """What the METADATA_ONLY execute step wrote: the inflight instant and the skeletons (the commit's input)."""

    inflight: Instant
    """``00000000000001`` in its inflight state."""
    writes: tuple[SkeletonWrite, ...]
    """The skeleton files written, with their source files."""

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "instant": str(self.inflight.time),
            "action": self.inflight.action.value,
            "skeleton_files": len(self.writes),
            "rows": sum(w.stat.numWrites for w in self.writes),
        }


def metadata_only_instant(table: HudiTable) -> Instant:
    """``00000000000001`` with the table's commit action (``commit``, ``deltacommit`` on MERGE_ON_READ)."""
    action = Action.DELTA_COMMIT if table.config.is_mor else Action.COMMIT
    return Instant(InstantTime(METADATA_BOOTSTRAP_INSTANT), action, State.REQUESTED)


def skeleton_tasks(table: HudiTable, plan: BootstrapPlan, config: BootstrapConfig) -> list[SkeletonTask]:
    """One task per source file of the METADATA_ONLY partitions, each with a new file id."""
    cfg = table.config
    complex_key = is_complex_key(cfg)
    tasks: list[SkeletonTask] = []
    for part in plan.partitions_in(BootstrapMode.METADATA_ONLY):
        for f in part.files:
            n = len(tasks)
            tasks.append(
                SkeletonTask(
                    base_uri=table.base_uri,
                    storage_options=table.storage.options,
                    source=f,
                    bootstrap_base_path=plan.source_path,
                    partition_path=part.partition_path,
                    file_id=str(uuid.uuid4()),
                    record_key_fields=tuple(cfg.record_key_fields),
                    complex_key=complex_key,
                    compression=config.write.compression,
                    attempt=TaskAttempt(n, 0, n),
                )
            )
    return tasks


def execute_metadata_only(
    table: HudiTable, plan: BootstrapPlan, config: BootstrapConfig, *, engine: Engine | None = None
) -> MetadataOnlyExecution:
    """``<01>.requested`` -> ``.inflight`` (both empty), then the skeleton base files (with their markers).

    Returns the inflight instant and the skeletons written, in task order. Nothing is committed: see
    :func:`~lake_orchestration.hudi.services.bootstrap.committer.commit_metadata_only`.

    Raises:
        PlanError: the table got a commit since it was planned.
        TableLockedError: another process holds the table lock past its wait time.
    """
    # Under the table lock, as a write creates its instant: no other writer commits between the check that the
    # timeline has no commit and the bootstrap's requested instant.
    with table_lock(
        table, operation=f"bootstrap {METADATA_BOOTSTRAP_INSTANT} (instant creation)", config=config.write.lock
    ):
        done = table.timeline.completed_commits().last
        if done is not None:
            raise PlanError(f"Cannot bootstrap {table.base_uri}: the table got a commit ({done.time}) meanwhile")
        requested = table.create_requested(metadata_only_instant(table))
    inflight = table.transition_to_inflight(requested)
    tasks = skeleton_tasks(table, plan, config)
    writes = or_local(engine).map_tasks(write_skeleton, tasks, description=f"bootstrap {METADATA_BOOTSTRAP_INSTANT}")
    return MetadataOnlyExecution(inflight=inflight, writes=tuple(writes))


def read_source_rows(table: HudiTable, files: Sequence[SourceFile], *, partition_path: str = "") -> pa.Table:
    """The rows of ``files`` of the source partition ``partition_path``, in order (the FULL_RECORD input;
    ``SparkParquetBootstrapDataProvider``, which reads them with Spark's partition discovery: hive-style partition
    columns the files lack come from the folder, as strings)."""
    parts = []
    for f in files:
        src_storage, src_path = source_storage_and_path(table.storage, f.uri)
        parts.append(with_folder_partition_columns(src_storage.open_parquet(src_path).read(), partition_path))
    data = pa.concat_tables(parts, promote_options="permissive")
    return data.drop_columns([c for c in data.column_names if c in META_FIELDS])


def execute_full_record(
    table: HudiTable, plan: BootstrapPlan, config: BootstrapConfig, *, engine: Engine | None = None
) -> WriteResult | None:
    """The FULL_RECORD partitions bulk-inserted at ``00000000000002`` (None when there is none).

    The writer runs its own commit protocol, so this step commits too.
    """
    partitions = plan.partitions_in(BootstrapMode.FULL_RECORD)
    if not partitions:
        return None
    rows = pa.concat_tables(
        [read_source_rows(table, p.files, partition_path=p.partition_path) for p in partitions],
        promote_options="permissive",
    )
    return write_table(
        table.base_uri,
        rows,
        operation=WriteOperation.BULK_INSERT,
        options=config.write,
        storage_options=table.storage.options,
        engine=engine,
        instant_time=FULL_BOOTSTRAP_INSTANT,
    )
