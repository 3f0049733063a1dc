"""Requests per table service on the S3 server: upper bounds on the listings, so a regression that lists the
timeline (``.hoodie/``) or the whole table again is caught.

Counted at the HTTP server (the moto fixture's request log): what a user pays. The table: MERGE_ON_READ, 3
partitions x 2 file groups, a bulk_insert and upserts (every file group has a base file and log files), written by
this project on the server. Each service runs on a fresh ``HudiTable`` as a scheduler would run it. Hudi's goal is
O(1) listings of the timeline per service, and no listing of partitions a service does not touch.

The bounds and the counts before this work (benchmarks/s3_requests.py, docs/performance.md):

====================================  ===================  ===========================
step                                  ``.hoodie/`` LISTs   other bound
====================================  ===================  ===========================
open table + timeline + fs view       1 (was 1)            no recursive LIST (was 1)
schedule compaction (2nd, trigger)    1 (was 1 + one per   no recursive LIST
                                      completed commit)
run compaction                        3 (was 6-7)
clean (full, then incremental)        3 (was 6)            no recursive LIST (was 3);
                                                           incremental lists only the
                                                           partitions written
archive (+ merge)                     1 (was 2-3)          ``archived/`` listed once
                                                           (was 2-4)
====================================  ===================  ===========================

Timeline files are immutable, so a service reads each once: a pending clean's plan (was read three times by the
clean that finishes it), the last clean's metadata (twice by the next clean).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from urllib.parse import parse_qs

import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import run_clean, schedule_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.objectstore.conftest import S3Bucket, S3Request
from tests.trips import trips_options

PREFIX = "t"
COMPACTION = {"hoodie.compact.inline.max.delta.commits": "2"}
CLEAN = {"hoodie.cleaner.commits.retained": "1"}
ARCHIVE = {
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
    "hoodie.archive.merge.enable": "true",
    "hoodie.archive.merge.files.batch.size": "2",
    "hoodie.compact.inline.max.delta.commits": "2",  # archival keeps the deltacommits the compaction trigger needs
}
OPTS = trips_options(max_rows_per_file=10, small_file_limit=0)


@dataclass
class Listings:
    """The LIST requests of one step, by prefix (relative to the table), and whether each had a delimiter."""

    requests: list[S3Request] = field(default_factory=list)

    def _lists(self) -> list[tuple[str, bool]]:
        out = []
        for r in self.requests:
            if r.kind != "LIST":
                continue
            q = parse_qs(r.query, keep_blank_values=True)
            prefix = (q.get("prefix") or [""])[0]
            rel = prefix[len(PREFIX) + 1 :] if prefix.startswith(PREFIX + "/") else prefix
            out.append((rel.rstrip("/"), "delimiter" in q))
        return out

    def of(self, rel: str) -> int:
        """Listings of the folder ``rel`` (e.g. ``.hoodie``; pages count one each)."""
        return sum(1 for p, _ in self._lists() if p == rel)

    @property
    def recursive(self) -> list[str]:
        """Prefixes listed without a delimiter (every key below), except a marker folder ``.hoodie/.temp/<ts>``."""
        return [p for p, d in self._lists() if not d and not p.startswith(".hoodie/.temp/")]

    @property
    def partitions(self) -> list[str]:
        """Data folders listed (neither the base path nor anything under ``.hoodie/``)."""
        return sorted(p for p, _ in self._lists() if p and not p.startswith(".hoodie"))

    def describe(self) -> str:
        return ", ".join(f"{p or '<base>'}{'' if d else ' (recursive)'}" for p, d in self._lists())


@contextmanager
def counted(s3: S3Bucket) -> Iterator[Listings]:
    s3.requests.reset()
    out = Listings()
    yield out
    out.requests = s3.requests.list()


def _upsert(uri: str, s3: S3Bucket, base: pa.Table, n: int) -> None:
    upd = generate_updates(base, fraction=0.3, seed=n, ts_offset=n * 10**6)
    write_table(uri, upd, operation="upsert", options=OPTS, storage_options=s3.storage_options)


def _table(s3: S3Bucket) -> HudiTable:
    return HudiTable(s3.uri(PREFIX), storage_options=s3.storage_options)


def test_listings_per_service_are_bounded(s3: S3Bucket) -> None:
    uri, so = s3.uri(PREFIX), s3.storage_options
    exceeded: list[str] = []

    def bound(ok: bool, detail: object) -> None:
        """A bound on the requests of a step: every one is checked, and all that fail are reported together."""
        if not ok:
            frame = inspect.stack()[1]
            exceeded.append(f"line {frame.lineno}: {(frame.code_context or [''])[0].strip()}  <- {detail}")

    base = generate_trips(60, partitions=3, seed=1)
    write_table(uri, base, operation="bulk_insert", options=OPTS, storage_options=so)
    for n in range(1, 3):
        _upsert(uri, s3, base, n)
    partitions = _table(s3).list_partitions()
    assert len(partitions) == 3

    # opening a table: properties, one listing of .hoodie/, one per folder of the table, never a recursive listing
    # of the whole table (.hoodie/ and its archive included)
    with counted(s3) as open_:
        t = _table(s3)
        _ = t.timeline
        view = t.fs_view()
    assert sorted(view.partitions) == partitions
    bound(open_.of(".hoodie") == 1, open_.describe())
    bound(open_.recursive == [], open_.describe())
    bound(open_.partitions == partitions, open_.describe())

    # schedule + run a first compaction (so that the next scheduling has a completed compaction to look for)
    with counted(s3) as schedule1:
        first = schedule_compaction(_table(s3), config=CompactionConfig.from_options(COMPACTION))
    assert first.scheduled, first.reason
    bound(schedule1.of(".hoodie") == 1, schedule1.describe())
    bound(schedule1.recursive == [], schedule1.describe())
    with counted(s3) as run:
        (result,) = run_compaction(_table(s3))
    assert result.instant == str(first.instant) and result.operations == len(first.plan.operations)
    bound(run.of(".hoodie") <= 3, run.describe())
    bound(run.recursive == [], run.describe())
    bound(run.partitions == [], run.describe())  # the plan names every file: no data folder is listed

    # a second scheduling, with completed commits on the timeline: still one listing of .hoodie/
    for n in range(3, 5):
        _upsert(uri, s3, base, n)
    with counted(s3) as schedule2:
        second = schedule_compaction(_table(s3), config=CompactionConfig.from_options(COMPACTION))
    assert second.scheduled, second.reason
    bound(schedule2.of(".hoodie") == 1, schedule2.describe())
    run_compaction(_table(s3))

    # clean: a full scan first (no previous clean), then an incremental one that lists only what was written since
    with counted(s3) as clean1:
        c1 = run_clean(_table(s3), CleanConfig.from_options(CLEAN))
    assert c1.deleted and c1.deleted == c1.file_count and not c1.failed
    bound(clean1.of(".hoodie") <= 3, clean1.describe())
    bound(clean1.recursive == [], clean1.describe())
    bound(clean1.partitions == partitions, clean1.describe())
    # two upserts into one partition only, a clean after each: the second clean's incremental scan covers the
    # commits between the previous clean's earliest commit to retain and its own, i.e. the first of them
    city = partitions[0].split("=")[-1]
    one = base.filter(pc.equal(base.column("city"), city))
    _upsert(uri, s3, one, 5)
    run_clean(_table(s3), CleanConfig.from_options(CLEAN))
    _upsert(uri, s3, one, 6)
    with counted(s3) as clean2:
        run_clean(_table(s3), CleanConfig.from_options(CLEAN))
    bound(clean2.of(".hoodie") <= 3, clean2.describe())
    bound(clean2.recursive == [], clean2.describe())
    bound(clean2.partitions == [partitions[0]], clean2.describe())

    # archive: one listing of .hoodie/ and one of the archive folder per run, the merge included
    with counted(s3) as archive1:
        a1 = run_archive(_table(s3), ArchiveConfig.from_options(ARCHIVE))
    assert a1.archive_file, a1
    for n in range(7, 10):
        _upsert(uri, s3, base, n)
    with counted(s3) as archive2:
        a2 = run_archive(_table(s3), ArchiveConfig.from_options(ARCHIVE))
    assert a2.archive_file and a2.merge.merged_file and len(a2.merge.deleted) == 2, a2
    for step in (archive1, archive2):
        bound(step.of(".hoodie") == 1, step.describe())
        bound(step.of(".hoodie/archived") == 1, step.describe())
        bound(step.recursive == [], step.describe())
        bound(step.partitions == [], step.describe())
    assert not exceeded, "request bounds exceeded:\n" + "\n".join(exceeded)


def test_timeline_files_are_read_once_per_service(s3: S3Bucket) -> None:
    """A pending clean's plan is read once by the clean that finishes it (was three times: the empty-plan check, the
    run, the execution), and the last clean's metadata once by the next clean (was twice: the trigger, the
    incremental scan)."""
    uri, so = s3.uri(PREFIX), s3.storage_options
    cow = replace(OPTS, table_type=TableType.COPY_ON_WRITE)
    base = generate_trips(40, partitions=2, seed=1)
    write_table(uri, base, operation="bulk_insert", options=cow, storage_options=so)
    for n in range(1, 3):
        upd = generate_updates(base, fraction=0.5, seed=n, ts_offset=n * 10**6)
        write_table(uri, upd, operation="upsert", options=cow, storage_options=so)
    inst, planning, _ = schedule_clean(
        _table(s3), CleanConfig.from_options(CLEAN)
    )  # left pending, as by a crash before its execution
    assert inst is not None and planning is not None and planning.file_count
    requested = f"{PREFIX}/.hoodie/{inst.file_name}"

    with counted(s3) as finish:
        done = run_clean(_table(s3), CleanConfig.from_options(CLEAN))
    assert str(inst.time) in done.instants and done.deleted == planning.file_count
    gets = [r for r in finish.requests if r.kind == "GET" and r.key == requested]
    assert len(gets) == 1, [(r.kind, r.key) for r in finish.requests if r.key == requested]

    upd = generate_updates(base, fraction=0.5, seed=3, ts_offset=3 * 10**6)
    write_table(uri, upd, operation="upsert", options=cow, storage_options=so)
    last = _table(s3).timeline.completed().with_actions(Action.CLEAN).last
    assert last is not None
    with counted(s3) as nxt:
        run_clean(_table(s3), CleanConfig.from_options(CLEAN))
    gets = [r for r in nxt.requests if r.kind == "GET" and r.key == f"{PREFIX}/.hoodie/{last.file_name}"]
    assert len(gets) == 1, [(r.kind, r.key) for r in nxt.requests if ".clean" in r.key]
