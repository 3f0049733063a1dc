"""The Spark engine: the only module that imports pyspark.

Tasks (see :mod:`lake_orchestration.engines.base`) run as Spark tasks through ``mapInArrow``, one task per Spark task;
only the DataFrame API is used, so Spark Connect works too. The SparkSession is injected (from dagster-pyspark, or
:func:`lake_orchestration.engines.spark_session.local_spark_session`), never created here unasked.

Storage options never travel in a DataFrame (nor in a plan, a job description or a log line): a task's
``storage_options`` are taken out of it on the driver, completed with what the driver resolves from its environment
(:func:`~lake_orchestration.io.executor_options.options_for_executors`), and shipped inside the pickled task
function, which puts them back into the task on the executor.

Results come back pickled (a binary column): they are the service's own typed values (write stats, delete results).
:meth:`SparkEngine.map_arrow` instead leaves the rows a task function yields in a DataFrame (a table format's reader
builds its Spark read on it).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.engines.base import TaskAttempt
from lake_orchestration.engines.codec import decode_task, encode_task
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
    in_process = False

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

    def map_arrow(
        self,
        fn: Callable[[T], Iterable[pa.Table]],
        tasks: Sequence[T],
        schema: pa.Schema,
        *,
        description: str = "",
    ) -> Any:
        """A DataFrame (lazy: nothing runs until it is used) of the rows ``fn`` yields for every task, each table
        conforming to ``schema``; one Spark partition per task up to 256. The tasks travel as data, encoded
        (:mod:`~lake_orchestration.engines.codec`) without their storage options, which travel inside the pickled
        function as in :meth:`map_tasks`. ``description`` names the Spark job once the DataFrame runs in
        :meth:`collect_arrow`."""
        from pyspark.sql.pandas.types import from_arrow_schema

        bare, shared = _split_storage_options(tasks)
        rows = [(i, encode_task(t)) for i, t in enumerate(bare)]
        # one partition per task (no sparkContext: this must work over Spark Connect)
        df = (
            self.spark.createDataFrame(rows, "idx int, payload string")
            .repartitionByRange(max(1, min(len(rows), _MAX_GROUP_PARTITIONS)), "idx")
            .select("payload")
        )
        return df.mapInArrow(_MapArrow(fn, shared), from_arrow_schema(schema))

    def collect_arrow(self, df: Any, *, description: str = "") -> pa.Table:
        """``df`` collected on the driver as an Arrow table (one Spark job named ``description``)."""
        with _job_description(self.spark, description):
            return df.toArrow()


def warm_up(module: str) -> list[None]:
    """A no-op task that imports ``module`` (the per-file-group code of a service), so Python workers are started
    (and have imported it) before timed work."""
    import importlib

    importlib.import_module(module)
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


@dataclass(frozen=True)
class _MapArrow:
    """Picklable per-partition function of :meth:`SparkEngine.map_arrow`: decode each task of the batch and yield
    the rows ``fn`` gives for it. ``shared`` (storage options per base URI) travels only inside it."""

    fn: Callable[[Any], Iterable[pa.Table]]
    shared: dict[str, dict[str, Any]]

    def __repr__(self) -> str:  # never show the storage options
        return f"_MapArrow({getattr(self.fn, '__qualname__', type(self.fn).__qualname__)!r})"

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tc = _task_context()
        for batch in batches:
            for payload in batch.column(0).to_pylist():
                for t in self.fn(_on_executor(decode_task(payload), self.shared, tc)):
                    yield from t.to_batches()
