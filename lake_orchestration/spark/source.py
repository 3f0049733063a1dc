"""``hudi_changes``: a PySpark (Spark 4) Python data source over a Hudi table's changes, batch and streaming.

``spark.readStream.format("hudi_changes").load(path)`` is the Spark counterpart of Flink's streaming read: each
micro-batch is the incremental query of :func:`~lake_orchestration.hudi.table.incremental.read_incremental` over
``(previous offset, new offset]``, so a downstream query sees every commit's changes once (each record at its latest
version in the micro-batch's range, as Hudi's incremental query returns it).

- **Offsets** are completed instants: ``{"instant": "<instant time>"}``, the last completed commit, deltacommit or
  replacecommit the micro-batch read up to (inclusive); the next micro-batch begins after it (exclusive). Spark
  writes them to the query's checkpoint (``offsets/``, ``commits/``), so a query restarted from its checkpoint
  resumes after the last instant whose micro-batch committed, and re-reads a planned but uncommitted micro-batch
  over the same range.
- **Start** (``read.start-commit``, Flink's option): ``earliest`` (default, as Java's Spark streaming source
  ``HoodieStreamSource`` starts), ``latest`` (only commits completed after the query first started) or an instant
  time (commits from that instant on, inclusive, as Flink reads it). Only the first run of a query uses it; a
  restart resumes from the checkpoint.
- **Check interval** (``read.streaming.check-interval``, seconds, Flink's option and default 60): the timeline is
  listed at most that often; a trigger in between reuses the previous listing (Spark polls an idle source every
  few milliseconds: without it an idle query would list ``.hoodie`` in a loop). ``Trigger.AvailableNow`` always
  lists once at its start.
- **Hollow commits**: a commit still pending while a later one completed would be skipped by an offset past it.
  The stream defaults ``hoodie.read.timeline.holes.resolution.policy`` to BLOCK: the offset stops before the first
  pending commit and moves on once it completes or is rolled back. FAIL (Java's batch default) stops the query
  instead; USE_TRANSITION_TIME is refused (offsets here are instant times, not completion times).
- **Partitions**: one per micro-batch (the incremental query reads the range's touched file groups in one task).

The batch reader (``spark.read.format("hudi_changes")``) is the incremental query itself:
``hoodie.datasource.read.begin.instanttime`` (required, exclusive) and ``...end.instanttime`` (inclusive, default:
the latest completed commit), with read_incremental's options and defaults (policy FAIL).

Options other than these are passed to read_incremental (``hoodie.datasource.read.incr.fallback.fulltablescan
.enable``, ...); ``storage.<name>`` options are the table's storage options (``storage.region``, ...).

The short name is not ``hudi``: Java Hudi's Spark bundle registers ``hudi`` (``DataSourceRegister``), and a session
with the bundle on its classpath would see two sources of one name; ``hudi_changes`` also says what it returns.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.incremental import (
    HollowCommitError,
    HollowCommitPolicy,
    first_hollow_commit,
    hollow_commit_policy,
    read_incremental,
)
from lake_orchestration.hudi.table.snapshot import table_arrow_schema

SHORT_NAME = "hudi_changes"
"""The format name: ``spark.readStream.format("hudi_changes")``."""
START_COMMIT = "read.start-commit"
"""Where a new streaming query starts: ``earliest``, ``latest`` or an instant time (inclusive)."""
CHECK_INTERVAL = "read.streaming.check-interval"
"""Seconds between two listings of the timeline (default 60)."""
EARLIEST = "earliest"
LATEST = "latest"
DEFAULT_CHECK_INTERVAL_SECONDS = 60.0
STORAGE_PREFIX = "storage."
BEGIN_OF_TIME = "0"
"""The offset before every instant (``begin.instanttime=0``: from the first commit)."""
_OWN_OPTIONS = frozenset({"path", START_COMMIT, CHECK_INTERVAL})
_WRITE_COMMITS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)
_MAX_BATCH_ROWS = 65_536


def _path(options: Mapping[str, str]) -> str:
    path = options.get("path")
    if not path:
        raise InvalidOptionError(
            f"{SHORT_NAME}: no table path: expected load(<table base path>) or .option('path', <table base path>)"
        )
    return str(path)


def _open(options: Mapping[str, str]) -> HudiTable:
    storage = {k[len(STORAGE_PREFIX) :]: str(v) for k, v in options.items() if k.startswith(STORAGE_PREFIX)}
    return HudiTable(_path(options), storage_options=storage or None)


def _read_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options read_incremental gets: everything but the path, this source's own and the storage options."""
    return {
        str(k): str(v) for k, v in options.items() if k not in _OWN_OPTIONS and not str(k).startswith(STORAGE_PREFIX)
    }


def _check_instant(value: str, option: str, path: str) -> str:
    v = str(value).strip()
    if not v.isdigit() or len(v) > 20:
        raise InvalidOptionError(
            f"{SHORT_NAME} on {path}: {option}={value!r}: expected {EARLIEST}, {LATEST} or an instant time "
            "(yyyyMMddHHmmssSSS)"
            if option == START_COMMIT
            else f"{SHORT_NAME} on {path}: {option}={value!r}: expected an instant time (yyyyMMddHHmmssSSS)"
        )
    return v


def _offset(start: Mapping[str, Any] | None, path: str) -> str:
    v = (start or {}).get("instant")
    if not isinstance(v, str) or not v.isdigit():
        raise InvalidOptionError(
            f"{SHORT_NAME} on {path}: offset {start!r} is not a Hudi changes offset: expected "
            '{"instant": "<instant time>"} (was the checkpoint written by another source?)'
        )
    return v


def spark_schema(table: HudiTable) -> StructType:
    """The table's latest schema (meta columns included) as a Spark ``StructType``.

    Raises:
        InvalidOptionError: the table has no completed commit yet (no schema to read): pass one with ``.schema()``.
    """
    schema = table_arrow_schema(table)
    if schema is None:
        raise InvalidOptionError(
            f"{SHORT_NAME} on {table.base_uri}: the table has no completed commit, so no schema to read changes "
            "with: write a first commit, or give the schema with .schema(...)"
        )
    return from_arrow_schema(schema)


def _conform(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """``t`` with exactly ``schema``'s columns and types (a column the range's files lack is null: an older
    writer schema), as Spark's Python data source worker checks it."""
    cols = []
    for f in schema:
        if f.name in t.column_names:
            c = t.column(f.name)
            cols.append(c if c.type.equals(f.type) else c.cast(f.type))
        else:
            cols.append(pa.nulls(t.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _batches(result: pa.Table, spark_type: StructType) -> Iterator[pa.RecordBatch]:
    target = to_arrow_schema(spark_type, timezone="UTC")
    yield from _conform(result, target).to_batches(max_chunksize=_MAX_BATCH_ROWS)


class HudiChangesPartition(InputPartition):
    """One incremental query: ``(begin, end]`` (end None = up to the latest completed commit)."""

    def __init__(self, begin: str, end: str | None) -> None:
        super().__init__((begin, end))
        self.begin = begin
        self.end = end


class HudiChangesBatchReader(DataSourceReader):
    """``spark.read.format("hudi_changes")``: the incremental query, as one partition."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = {str(k): str(v) for k, v in options.items()}
        self.schema = schema
        path = _path(self.options)
        begin = self.options.get(HoodieKey.READ_BEGIN_INSTANTTIME.key)
        if begin is None:
            raise InvalidOptionError(
                f"{SHORT_NAME} on {path}: a batch read needs {HoodieKey.READ_BEGIN_INSTANTTIME.key} (exclusive; "
                f"{BEGIN_OF_TIME} = from the first commit); use readStream for a continuous read"
            )
        self.begin = _check_instant(begin, HoodieKey.READ_BEGIN_INSTANTTIME.key, path)
        end = self.options.get(HoodieKey.READ_END_INSTANTTIME.key)
        self.end = _check_instant(end, HoodieKey.READ_END_INSTANTTIME.key, path) if end is not None else None
        hollow_commit_policy(self.options)  # a bad value fails at planning, not in a task

    def partitions(self) -> list[InputPartition]:
        return [HudiChangesPartition(self.begin, self.end)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, HudiChangesPartition)
        result = read_incremental(
            _open(self.options),
            begin_instant_time=partition.begin,
            end_instant_time=partition.end,
            options=_read_options(self.options),
        )
        yield from _batches(result.table, self.schema)


class HudiChangesStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("hudi_changes")``: offsets are completed instants, a micro-batch is the
    incremental query between two of them (see the module doc)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = {str(k): str(v) for k, v in options.items()}
        self.schema = schema
        self.path = _path(self.options)
        self.read_options = _read_options(self.options)
        # the stream's default is BLOCK: a pending earlier commit holds the offset back instead of failing the query
        self.read_options.setdefault(
            HoodieKey.READ_TIMELINE_HOLES_RESOLUTION_POLICY.key, HollowCommitPolicy.BLOCK.value
        )
        self.policy = hollow_commit_policy(self.read_options)
        if self.policy is HollowCommitPolicy.USE_TRANSITION_TIME:
            raise InvalidOptionError(
                f"{SHORT_NAME} on {self.path}: {HoodieKey.READ_TIMELINE_HOLES_RESOLUTION_POLICY.key}="
                f"{self.policy.value} is not supported by the streaming source (its offsets are instant times, not "
                f"completion times): expected {HollowCommitPolicy.BLOCK.value} (default) or "
                f"{HollowCommitPolicy.FAIL.value}"
            )
        raw = self.options.get(CHECK_INTERVAL)
        try:
            self.check_interval = float(raw) if raw is not None else DEFAULT_CHECK_INTERVAL_SECONDS
            if self.check_interval < 0:
                raise ValueError(raw)
        except ValueError as err:
            raise InvalidOptionError(
                f"{SHORT_NAME} on {self.path}: {CHECK_INTERVAL}={raw!r}: expected a number of seconds >= 0"
            ) from err
        start = (self.options.get(START_COMMIT) or EARLIEST).strip()
        self.start_commit = (
            start.lower() if start.lower() in (EARLIEST, LATEST) else _check_instant(start, START_COMMIT, self.path)
        )
        self._latest: str | None = None
        self._listed_at: float | None = None
        self._target: str | None = None

    # -- the timeline (driver side) ----------------------------------------------------------------------------------

    def _list_latest(self) -> str | None:
        """The last completed write instant an offset may reach: before the first hollow commit (BLOCK), or
        HollowCommitError (FAIL)."""
        table = _open(self.options)
        completed = list(table.timeline.completed().with_actions(*_WRITE_COMMITS))
        if not completed:
            return None
        hollow = first_hollow_commit(table, completed)
        if hollow is not None:
            if self.policy is HollowCommitPolicy.FAIL:
                raise HollowCommitError(table.base_uri, str(hollow[0].time), str(hollow[1].time))
            completed = [i for i in completed if i.time < hollow[0].time]
        return str(completed[-1].time) if completed else None

    def _latest_listed(self, *, force: bool = False) -> str | None:
        now = time.monotonic()
        if force or self._listed_at is None or now - self._listed_at >= self.check_interval:
            self._latest = self._list_latest()
            self._listed_at = now
        return self._latest

    def initialOffset(self) -> dict[str, str]:
        if self.start_commit == EARLIEST:
            return {"instant": BEGIN_OF_TIME}
        if self.start_commit == LATEST:
            return {"instant": self._latest_listed(force=True) or BEGIN_OF_TIME}
        # an instant time is inclusive (Flink's read.start-commit): the offset just before it
        t = self.start_commit
        return {"instant": str(int(t) - 1).zfill(len(t)) if int(t) > 0 else BEGIN_OF_TIME}

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest_listed(force=True) or BEGIN_OF_TIME

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, str]:
        begin = _offset(start, self.path)
        latest = self._latest_listed() or BEGIN_OF_TIME
        if self._target is not None:
            latest = min(latest, self._target)
        return {"instant": max(begin, latest)}  # never behind the start: an offset does not go back

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, str] | None:
        return {"instant": self._latest} if self._latest is not None else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begin, stop = _offset(start, self.path), _offset(end, self.path)
        if stop <= begin:
            return []
        return [HudiChangesPartition(begin, stop)]

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the offsets live in Spark's checkpoint, the table is only read."""

    # -- executor side ------------------------------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, HudiChangesPartition)
        result = read_incremental(
            _open(self.options),
            begin_instant_time=partition.begin,
            end_instant_time=partition.end,
            options=self.read_options,
        )
        yield from _batches(result.table, self.schema)


class HudiChangesDataSource(DataSource):
    """The ``hudi_changes`` format: register it with :func:`lake_orchestration.spark.register`."""

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def schema(self) -> StructType:
        return spark_schema(_open(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return HudiChangesBatchReader(self.options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return HudiChangesStreamReader(self.options, schema)
