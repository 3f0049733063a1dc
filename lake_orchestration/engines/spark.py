"""The Spark engine: the only module that imports pyspark.

Tasks (see :mod:`lake_orchestration.engines.base`) run as Spark tasks through ``mapInArrow``, one task per Spark task;
only the DataFrame API is used, so Spark Connect works too. The SparkSession is injected (from dagster-pyspark, or
:func:`lake_orchestration.engines.spark_session.local_spark_session`), never created here unasked.

Storage options never travel in a DataFrame (nor in a plan, a job description or a log line): a task's
``storage_options`` are taken out of it on the driver, completed with what the driver resolves from its environment
(:func:`~lake_orchestration.io.executor_options.options_for_executors`), and shipped inside the pickled task
function, which puts them back into the task on the executor.

Results come back pickled (a binary column): they are the service's own typed values (write stats, delete results).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.engines.base import TaskAttempt
from lake_orchestration.engines.codec import decode_task, decode_value, encode_task, encode_value
from lake_orchestration.hudi.log.scanner import InstantFilter
from lake_orchestration.hudi.merge.record_merger import MergeConfig
from lake_orchestration.hudi.model.file_group import FileSlice
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import merge_config_for, read_file_slice, table_arrow_schema
from lake_orchestration.io.executor_options import options_for_executors

T = TypeVar("T")
R = TypeVar("R")

_CLOSURE_LIMIT = 1 << 20
"""Encoded task sets up to this many bytes travel inside the task closure; larger sets go through a DataFrame."""

GROUP_COLUMN = "__lo_group"
"""The column that tells the record groups of :meth:`SparkEngine.map_record_groups` apart."""

_MAX_GROUP_PARTITIONS = 256


class SparkEngine:
    """Runs tasks on Spark.

    Args:
        spark: an active SparkSession (classic or Spark Connect).
    """

    name = "spark"

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def map_tasks(self, fn: Callable[[T], list[R]], tasks: Sequence[T], *, description: str = "") -> list[R]:
        """One Spark task per task; returns all results.

        The tasks are ``spark.range(n, numPartitions=n)`` (partition i holds exactly the id i) and the tasks travel
        in the pickled task function: no local DataFrame upload and no range partitioning (whose bound sampling is a
        job of its own). Task sets whose encoding exceeds 1 MiB (the pickled function goes to every task) are
        uploaded as a DataFrame of encoded tasks (:mod:`~lake_orchestration.engines.codec`, without their storage
        options) and range-partitioned instead.
        """
        if not tasks:
            return []
        bare, shared = _split_storage_options(tasks)
        payloads = [encode_task(t) for t in bare]
        n = len(bare)
        if sum(len(p) for p in payloads) <= _CLOSURE_LIMIT:
            df = self.spark.range(n, numPartitions=n)
            runner = _MapTasks(fn, shared, tasks=bare)
        else:
            df = self.spark.createDataFrame(list(enumerate(payloads)), "idx int, payload string")
            # range partitioning on the index gives exactly one task per partition (hash partitioning does not)
            df = df.repartitionByRange(n, "idx")
            runner = _MapTasks(fn, shared)
        return self._collect(df, runner, description)

    def map_record_groups(
        self,
        fn: Callable[[T, pa.Table], list[R]],
        groups: Sequence[tuple[T, pa.Table]],
        *,
        description: str = "",
    ) -> list[R]:
        """The records of every group go in one DataFrame with a group column, repartitioned by it (one Spark
        partition per group up to 256); each Spark task runs ``fn`` on the groups of its partition. The tasks, with
        their storage options, travel only inside the pickled task function."""
        if not groups:
            return []
        bare, shared = _split_storage_options([t for t, _ in groups])
        tables = [
            recs.append_column(GROUP_COLUMN, pa.array([n] * recs.num_rows, pa.int32()))
            for n, (_, recs) in enumerate(groups)
        ]
        data = pa.concat_tables(tables, promote_options="permissive")
        df = self.spark.createDataFrame(data)
        # no sparkContext: this must work over Spark Connect
        df = df.repartitionByRange(max(1, min(len(groups), _MAX_GROUP_PARTITIONS)), GROUP_COLUMN)
        runner = _MapRecordGroups(fn, shared, dict(enumerate(bare)), data.schema)
        return self._collect(df, runner, description)

    def _collect(
        self, df: Any, runner: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]], description: str
    ) -> list[Any]:
        """Run ``runner`` on every partition of ``df`` (a Spark job named ``description``); its pickled results."""
        with _job_description(self.spark, description):
            rows = df.mapInArrow(runner, "result binary").collect()
        return [pickle.loads(r["result"]) for r in rows]

    def read_snapshot(self, table: HudiTable) -> pa.Table:
        """The merged snapshot, one Spark task per file slice; returns an Arrow table on the driver."""
        df = self.snapshot_dataframe(table)
        if df is None:
            schema = table_arrow_schema(table)
            return schema.empty_table() if schema is not None else pa.table({})
        return df.toArrow()

    def snapshot_dataframe(self, table: HudiTable) -> Any:
        """A Spark DataFrame of the merged snapshot (None for a table with no completed commit)."""
        import json

        latest = table.timeline.latest_completed_commit_time()
        if latest is None:
            return None
        slices = table.fs_view().latest_merged_file_slices_before_or_on(str(latest))
        schema = table_arrow_schema(table)
        if schema is None or not slices:
            return None
        from pyspark.sql.pandas.types import from_arrow_schema

        read = _SliceReadTask(
            base_uri=table.base_uri,
            storage_options=options_for_executors(table.base_uri, table.storage.options),
            flt=InstantFilter.from_timeline(table.timeline, latest_instant=str(latest)),
            merge=merge_config_for(table),
            schema=schema,
        )
        rows = [(i, json.dumps(encode_value(s))) for i, s in enumerate(slices)]
        # one partition per file slice (no sparkContext: this must work over Spark Connect)
        ops = (
            self.spark.createDataFrame(rows, "idx int, slice string")
            .repartitionByRange(max(1, min(len(slices), _MAX_GROUP_PARTITIONS)), "idx")
            .select("slice")
        )
        return ops.mapInArrow(read, from_arrow_schema(schema))


def warm_up(_task: object) -> list[None]:
    """A no-op task that imports the per-file-group code, so Python workers are started before timed work."""
    import lake_orchestration.hudi.services.compaction.executor  # noqa: F401

    return []


def build_spark_session(*, master: str, app_name: str, conf: Mapping[str, str]) -> Any:
    """Get or create a SparkSession (``SparkSession.builder``) with ``conf``; see ``local_spark_session``."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def _job_description(spark: Any, description: str) -> Iterator[None]:
    """Name the Spark jobs of a ``with`` block (classic Spark; Spark Connect has no SparkContext: nothing shown)."""
    if not description or not _is_classic(spark):
        yield
        return
    sc = spark.sparkContext
    previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(description)
    try:
        yield
    finally:
        sc.setJobDescription(previous)


def _is_classic(spark: Any) -> bool:
    return not type(spark).__module__.startswith("pyspark.sql.connect")


def _split_storage_options(tasks: Sequence[T]) -> tuple[list[T], dict[str, dict[str, Any]]]:
    """The tasks without their storage options, and those options completed for executors, by base URI."""
    bare: list[T] = []
    shared: dict[str, dict[str, Any]] = {}
    for t in tasks:
        if not _has_field(t, "storage_options"):
            bare.append(t)
            continue
        base_uri: str = t.base_uri  # type: ignore[attr-defined]
        if base_uri not in shared:
            shared[base_uri] = options_for_executors(base_uri, t.storage_options)  # type: ignore[attr-defined]
        bare.append(replace(t, storage_options={}))  # type: ignore[type-var]
    return bare, shared


def _has_field(task: object, name: str) -> bool:
    return is_dataclass(task) and any(f.name == name for f in fields(task))


def _on_executor(task: T, shared: Mapping[str, dict[str, Any]], tc: Any) -> T:
    """The task as it runs: its storage options back, and the running Spark task attempt as its write token."""
    if _has_field(task, "storage_options"):
        task = replace(task, storage_options=shared.get(task.base_uri, {}))  # type: ignore[type-var, attr-defined]
    if tc is not None and _has_field(task, "attempt"):
        attempt = TaskAttempt(task.attempt.partition_id, tc.stageId(), tc.taskAttemptId())  # type: ignore[attr-defined]
        task = replace(task, attempt=attempt)  # type: ignore[type-var]
    return task


def _task_context() -> Any:
    from pyspark import TaskContext

    return TaskContext.get()


def _results_batch(results: list[bytes]) -> Iterator[pa.RecordBatch]:
    """The pickled results of a Spark task as its one output batch (none without results)."""
    if results:
        yield pa.RecordBatch.from_pydict({"result": results}, schema=pa.schema([("result", pa.binary())]))


@dataclass(frozen=True)
class _MapTasks:
    """Picklable per-partition function; ``shared`` (storage options per base URI) travels only inside it."""

    fn: Callable[[Any], list[Any]]
    shared: dict[str, dict[str, Any]]
    tasks: list | None = None

    def __repr__(self) -> str:  # never show the storage options
        return f"_MapTasks({getattr(self.fn, '__qualname__', self.fn)!r})"

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # A Spark task owns one core: keep Arrow's own thread pool from competing with the other tasks.
        pa.set_cpu_count(1)
        tc = _task_context()
        out: list[bytes] = []
        for b in batches:
            if self.tasks is not None:  # rows of spark.range: task indexes
                todo = [self.tasks[i] for i in b.column(0).to_pylist()]
            else:  # rows (idx, payload)
                todo = [decode_task(p) for p in b.column(1).to_pylist()]
            for task in todo:
                out.extend(pickle.dumps(r) for r in self.fn(_on_executor(task, self.shared, tc)))
        yield from _results_batch(out)


@dataclass(frozen=True)
class _MapRecordGroups:
    """Picklable task: collect each group's batches of the partition, run ``fn`` on the group, yield its results."""

    fn: Callable[[Any, pa.Table], list[Any]]
    shared: dict[str, dict[str, Any]]
    tasks: dict
    schema: pa.Schema

    def __repr__(self) -> str:  # never show the storage options
        return f"_MapRecordGroups({len(self.tasks)} groups)"

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tc = _task_context()
        parts: dict[int, list[pa.Table]] = {}
        for b in batches:
            t = pa.Table.from_batches([b])
            for g in pc.unique(t.column(GROUP_COLUMN)).to_pylist():
                parts.setdefault(g, []).append(t.filter(pc.equal(t.column(GROUP_COLUMN), g)))
        fields_ = [f for f in self.schema if f.name != GROUP_COLUMN]
        out: list[bytes] = []
        for g, ts in parts.items():
            recs = pa.concat_tables(ts).drop_columns([GROUP_COLUMN])
            recs = pa.Table.from_arrays([recs.column(f.name).cast(f.type) for f in fields_], schema=pa.schema(fields_))
            out.extend(pickle.dumps(r) for r in self.fn(_on_executor(self.tasks[g], self.shared, tc), recs))
        yield from _results_batch(out)


@dataclass(frozen=True, kw_only=True)
class _SliceReadTask:
    """Picklable per-partition function: read each slice of the batch and yield its merged rows. The storage options
    (completed for executors) travel only inside it."""

    base_uri: str
    storage_options: dict[str, Any]
    flt: InstantFilter
    merge: MergeConfig
    schema: pa.Schema

    def __repr__(self) -> str:  # never show the storage options
        return f"_SliceReadTask({self.base_uri!r})"

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import json

        from lake_orchestration.hudi.merge.record_merger import conform
        from lake_orchestration.io.storage import Storage

        storage = Storage(self.base_uri, options=self.storage_options)
        for batch in batches:
            for text in batch.column(0).to_pylist():
                fs = decode_value(FileSlice, json.loads(text))
                for t in read_file_slice(storage, fs, instant_filter=self.flt, merge_config=self.merge):
                    yield from conform(t, self.schema).to_batches()
