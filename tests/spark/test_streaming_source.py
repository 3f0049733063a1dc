"""The ``hudi_changes`` Spark data source (issue 28): a Structured Streaming query over a MOR table gets every commit's
changes exactly once, across a restart from its checkpoint and a compaction; ``read.start-commit`` earliest, latest
and an instant; the batch read equals the incremental query; a hollow commit holds the offset back (BLOCK).

The expected rows are computed from what the tests wrote (the write inputs and the instants the writes returned),
not read back from the table: per micro-batch range, each key written in the range at its last written version,
with that write's instant as ``_hoodie_commit_time``. Each streaming run uses ``Trigger.AvailableNow`` (one
micro-batch: the source reads all available) to keep the Python workers' start-ups few.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.incremental import HollowCommitError, read_incremental
from lake_orchestration.hudi.write import write_table
from lake_orchestration.spark import CHECK_INTERVAL, SHORT_NAME, START_COMMIT, HudiChangesDataSource, register
from lake_orchestration.spark.source import HudiChangesStreamReader
from tests.oracle import assert_same_rows
from tests.trips import trips_options

pytestmark = pytest.mark.spark

OPTS = trips_options(table_type=TableType.MERGE_ON_READ, small_file_limit=0)
COMPARED = ("uuid", "city", "ts", "fare")


@dataclass
class History:
    """What was written: ``(instant, rows)`` per commit in order (rows None for a compaction)."""

    path: Path
    commits: list[tuple[str, pa.Table | None]] = field(default_factory=list)

    def write(self, data: pa.Table, operation: str) -> str:
        r = write_table(str(self.path), data, operation=operation, options=OPTS)
        self.commits.append((str(r.instant), data))
        return str(r.instant)

    def compact(self) -> str:
        sched = schedule_compaction(HudiTable(str(self.path)), force=True)
        assert sched.scheduled, sched.reason
        run_compaction(HudiTable(str(self.path)))
        self.commits.append((str(sched.instant), None))
        return str(sched.instant)

    def expected(self, begin: str, end: str) -> list[tuple]:
        """The incremental query of ``(begin, end]`` computed from the writes: each key's last version in the range
        (a compaction writes no new version)."""
        latest: dict[str, tuple] = {}
        for instant, rows in self.commits:
            if rows is None or not begin < instant <= end:
                continue
            for row in rows.select(list(COMPARED)).to_pylist():
                latest[row["uuid"]] = (instant, *(row[c] for c in COMPARED))
        return sorted(latest.values())


def _rows(t: pa.Table) -> list[tuple]:
    cols = ("_hoodie_commit_time", *COMPARED)
    return sorted(tuple(r[c] for c in cols) for r in t.select(list(cols)).to_pylist())


SLOW_WORKER = "Timed out while waiting for the Python worker to connect back"
"""Spark waits 10 s (hard-coded in PythonWorkerFactory) for the source's Python process to start: a loaded machine
can miss it before any offset is planned; the query is then started again from its checkpoint, once."""


def _stream(spark, path: Path, checkpoint: Path, sink: Path, **options: str):  # type: ignore[no-untyped-def]
    """One ``Trigger.AvailableNow`` run into a parquet sink; returns the finished query."""
    for attempt in range(2):
        reader = spark.readStream.format(SHORT_NAME)
        for k, v in options.items():
            reader = reader.option(k, v)
        q = (
            reader.load(str(path))
            .writeStream.format("parquet")
            .option("path", str(sink))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        try:
            q.awaitTermination(300)
        except StreamingQueryException as err:
            if attempt == 0 and SLOW_WORKER in str(err) and not q.recentProgress:
                continue
            raise
        assert not q.isActive, "the availableNow query did not finish in 300 s"
        return q
    raise AssertionError("unreachable")


def _sink_rows(spark, sink: Path) -> list[tuple]:  # type: ignore[no-untyped-def]
    if not (sink / "_spark_metadata").exists():
        return []
    return _rows(spark.read.parquet(str(sink)).toArrow())


def _offsets(q, which: str) -> list[str | None]:  # type: ignore[no-untyped-def]
    """The source's ``startOffset`` or ``endOffset`` instant of each micro-batch of ``q`` (None: no offset)."""
    out = []
    for p in q.recentProgress:
        raw = getattr(p.sources[0], which)  # the offset's JSON ("null" before the first offset)
        offset = json.loads(raw) if isinstance(raw, str) else raw
        out.append(offset["instant"] if offset else None)
    return out


@pytest.fixture(scope="module")
def registered(spark):  # type: ignore[no-untyped-def]
    register(spark)
    return spark


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """MOR trips: bulk insert (c1), upsert of existing keys (c2), compaction (c3), upsert with new keys (c4)."""
    h = History(tmp_path_factory.mktemp("hudi-changes") / "t")
    base = generate_trips(30, partitions=2, seed=1)
    h.write(base, "bulk_insert")
    h.write(generate_updates(base, fraction=0.3, seed=2, ts_offset=10**6), "upsert")
    h.compact()
    more = generate_trips(6, partitions=2, seed=3, ts_offset=3 * 10**6)
    h.write(pa.concat_tables([generate_updates(base, fraction=0.2, seed=4, ts_offset=3 * 10**6), more]), "upsert")
    return h


def _copy(h: History, dest: Path) -> History:
    shutil.copytree(h.path, dest)
    return History(dest, list(h.commits))


def test_stream_restart_from_checkpoint_gets_each_commit_once(registered, history: History, tmp_path: Path) -> None:
    spark = registered
    h = _copy(history, tmp_path / "t")
    ck, sink = tmp_path / "checkpoint", tmp_path / "sink"
    first_end = h.commits[-1][0]
    q1 = _stream(spark, h.path, ck, sink)  # read.start-commit: earliest (the default)
    assert _offsets(q1, "startOffset") == [None]
    assert _offsets(q1, "endOffset") == [first_end]  # the offset is the last completed instant
    # the query is stopped; more commits land: an upsert of existing keys, a compaction, new keys
    base = history.commits[0][1]
    assert base is not None
    h.write(generate_updates(base, fraction=0.4, seed=5, ts_offset=5 * 10**6), "upsert")
    h.compact()
    h.write(generate_trips(5, partitions=2, seed=6, ts_offset=6 * 10**6), "insert")
    q2 = _stream(spark, h.path, ck, sink)  # the same checkpoint: resumes after first_end
    assert _offsets(q2, "startOffset") == [first_end]
    assert _offsets(q2, "endOffset") == [h.commits[-1][0]]
    got = _sink_rows(spark, sink)
    expected = sorted(h.expected("0", first_end) + h.expected(first_end, h.commits[-1][0]))
    assert len(got) == len(expected)  # no duplicates, nothing lost
    assert got == expected
    # the restart's micro-batch: the changes of the three new commits only (the compaction's none)
    assert {r[0] for r in got if r[0] > first_end} == {h.commits[-3][0], h.commits[-1][0]}


def test_start_commit_instant_and_latest(registered, history: History, tmp_path: Path) -> None:
    spark = registered
    c1, c2, last = history.commits[0][0], history.commits[1][0], history.commits[-1][0]
    # an instant time is inclusive (Flink's read.start-commit): from the second commit on
    _stream(spark, history.path, tmp_path / "ck1", tmp_path / "sink1", **{START_COMMIT: c2})
    got = _sink_rows(spark, tmp_path / "sink1")
    assert got == history.expected(c1, last)
    assert {r[0] for r in got} == {c2, last}
    # latest: only what completes after the query started (a running query, the timeline listed at every trigger)
    h = _copy(history, tmp_path / "t")
    for attempt in range(2):
        q = (
            spark.readStream.format(SHORT_NAME)
            .option(START_COMMIT, "latest")
            .option(CHECK_INTERVAL, "0")
            .load(str(h.path))
            .writeStream.format("memory")
            .queryName("hudi_changes_latest")
            .option("checkpointLocation", str(tmp_path / "ck2"))
            .trigger(processingTime="1 second")
            .start()
        )
        try:
            q.processAllAvailable()
            break
        except StreamingQueryException as err:
            if attempt == 0 and SLOW_WORKER in str(err) and not q.recentProgress:
                continue
            raise
    try:
        assert spark.table("hudi_changes_latest").count() == 0
        new = h.write(generate_trips(4, partitions=2, seed=9, ts_offset=9 * 10**6), "insert")
        deadline = time.monotonic() + 120
        while spark.table("hudi_changes_latest").count() == 0 and time.monotonic() < deadline:
            q.processAllAvailable()
        assert _rows(spark.table("hudi_changes_latest").toArrow()) == h.expected(last, new)
    finally:
        q.stop()


def test_batch_read_equals_incremental_query(registered, history: History) -> None:
    spark = registered
    c1, c2, compaction, c4 = (c for c, _ in history.commits)
    table = HudiTable(str(history.path))
    for begin, end in [(c1, c4), ("0", c2), (c2, compaction)]:
        df = (
            spark.read.format(SHORT_NAME)
            .option(HoodieKey.READ_BEGIN_INSTANTTIME.key, begin)
            .option(HoodieKey.READ_END_INSTANTTIME.key, end)
            .load(str(history.path))
        )
        got = df.toArrow()
        ours = read_incremental(table, begin_instant_time=begin, end_instant_time=end).table
        assert got.column_names == ours.column_names
        assert_same_rows(got, ours)
        assert _rows(got) == history.expected(begin, end)
    assert_same_rows(  # no end: up to the latest commit
        spark.read.format(SHORT_NAME)
        .option(HoodieKey.READ_BEGIN_INSTANTTIME.key, c2)
        .load(str(history.path))
        .toArrow(),
        read_incremental(table, begin_instant_time=c2).table,
    )


def _reader(path: Path, **options: str) -> HudiChangesStreamReader:
    opts = {"path": str(path), **options}
    ds = HudiChangesDataSource(opts)
    r = ds.streamReader(ds.schema())
    assert isinstance(r, HudiChangesStreamReader)
    return r


def test_hollow_commit_blocks_the_offset_until_it_completes(history: History, tmp_path: Path) -> None:
    """A deltacommit still pending (its completed file not yet there) while a later one completed: the offset stops
    before it (BLOCK, the stream's default); once it completes, the next micro-batch reads it and the later one.
    Also: read.streaming.check-interval keeps a listing for its interval."""
    h = _copy(history, tmp_path / "t")
    c4 = h.commits[-1][0]
    base = history.commits[0][1]
    assert base is not None
    c5 = h.write(generate_updates(base, fraction=0.2, seed=7, ts_offset=7 * 10**6), "upsert")
    c6 = h.write(generate_trips(3, partitions=2, seed=8, ts_offset=8 * 10**6), "insert")
    completed = h.path / ".hoodie" / f"{c5}.deltacommit"
    held = tmp_path / "held"
    completed.rename(held)  # c5 is pending again (requested + inflight), c6 completed after it
    r = _reader(h.path, **{CHECK_INTERVAL: "0"})
    assert r.latestOffset({"instant": c4}, r.getDefaultReadLimit()) == {"instant": c4}
    assert r.partitions({"instant": c4}, {"instant": c4}) == []
    held.rename(completed)  # c5 completes
    end = r.latestOffset({"instant": c4}, r.getDefaultReadLimit())
    assert end == {"instant": c6}
    (part,) = r.partitions({"instant": c4}, end)
    got = pa.Table.from_batches(list(r.read(part)))
    assert _rows(got) == h.expected(c4, c6)
    assert {row[0] for row in _rows(got)} == {c5, c6}
    # FAIL instead of BLOCK stops the query, naming the hollow commit
    completed.rename(held)
    with pytest.raises(HollowCommitError, match=f"hollow commit {c5}"):
        _reader(h.path, **{HoodieKey.READ_TIMELINE_HOLES_RESOLUTION_POLICY.key: "FAIL"}).latestOffset(
            {"instant": c4}, r.getDefaultReadLimit()
        )
    held.rename(completed)
    # read.streaming.check-interval: within it (default 60 s) a trigger reuses the previous listing
    cached = _reader(h.path)
    assert cached.latestOffset({"instant": c4}, cached.getDefaultReadLimit()) == {"instant": c6}
    c7 = h.write(generate_trips(2, partitions=2, seed=10, ts_offset=10 * 10**6), "insert")
    assert cached.latestOffset({"instant": c4}, cached.getDefaultReadLimit()) == {"instant": c6}
    assert r.latestOffset({"instant": c6}, r.getDefaultReadLimit()) == {"instant": c7}  # check-interval 0


def test_bad_options_fail_naming_the_path_and_value(history: History) -> None:
    with pytest.raises(InvalidOptionError, match=rf"{history.path}.*{START_COMMIT}='yesterday'.*earliest, latest"):
        _reader(history.path, **{START_COMMIT: "yesterday"})
    with pytest.raises(InvalidOptionError, match=rf"{CHECK_INTERVAL}='-1'"):
        _reader(history.path, **{CHECK_INTERVAL: "-1"})
    with pytest.raises(InvalidOptionError, match="USE_TRANSITION_TIME is not supported by the streaming source"):
        _reader(history.path, **{HoodieKey.READ_TIMELINE_HOLES_RESOLUTION_POLICY.key: "USE_TRANSITION_TIME"})
    with pytest.raises(InvalidOptionError, match=HoodieKey.READ_BEGIN_INSTANTTIME.key):
        ds = HudiChangesDataSource({"path": str(history.path)})
        ds.reader(ds.schema())
