"""Incremental queries: the records a range of commits wrote, as Hudi 0.14/0.15's incremental query returns them.

``hoodie.datasource.query.type=incremental`` with ``hoodie.datasource.read.begin.instanttime`` (exclusive) and
``hoodie.datasource.read.end.instanttime`` (inclusive, default: the latest completed commit) returns the records
whose ``_hoodie_commit_time`` is in the range, each at its latest version in the range. It mirrors Java's
``IncrementalRelation`` (copy-on-write) and ``MergeOnReadIncrementalRelation`` (merge-on-read) of 0.15:

- the range's instants are the completed commits, deltacommits and replacecommits (a compaction completes as a
  commit, a log compaction as a deltacommit) whose instant time is in ``(begin, end]``;
- the files read are the files those instants' commit metadata lists (write stats), as a file-system view over
  that listing alone: the latest merged file slice of each touched file group as of the range's last instant, so a
  base file written before the range is not read and log blocks are merged up to the range's last instant;
- the merged rows are kept when their ``_hoodie_commit_time`` lies between the range's first and last instant. A
  compaction or log compaction rewrites records without changing their commit time, so a range covering only such
  an instant returns nothing; clustering and insert_overwrite likewise keep or set commit times like Java's.

Hollow commits (``hoodie.read.timeline.holes.resolution.policy``, ``TimelineUtils.handleHollowCommitIfNeeded``): a
commit, deltacommit or replacecommit (clustering aside) still pending while a later one completed makes a range
unsafe: a checkpoint past it would skip it once it completes. FAIL (default) refuses, BLOCK reads only the commits
before it, USE_TRANSITION_TIME selects instants by their completion time (the completed file's modification time,
as 0.15 derives ``stateTransitionTime``) instead.

Instants archived out of the active timeline are read from the archived timeline (their commit metadata is
archived with them). A file of the range that clean deleted fails the read, naming the instant, unless
``hoodie.datasource.read.incr.fallback.fulltablescan.enable=true``: then (as in Java, also when the begin instant
precedes the active timeline) the latest snapshot is read and filtered by commit time.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import pendulum
import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import IncrementalQueryError, InvalidOptionError
from lake_orchestration.hudi.log.scanner import InstantFilter
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import Action, Instant
from lake_orchestration.hudi.model.properties import TimelineTimezone
from lake_orchestration.hudi.table import cdc
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline
from lake_orchestration.hudi.table.clustering import is_clustering
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import (
    ReadStats,
    merge_config_for,
    read_file_slice,
    read_snapshot,
    table_arrow_schema,
)
from lake_orchestration.io.storage import FileInfo

log = logging.getLogger(__name__)

COMMIT_TIME = "_hoodie_commit_time"
_WRITE_COMMITS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)


class QueryType(str, enum.Enum):
    """``hoodie.datasource.query.type`` values this project reads."""

    SNAPSHOT = "snapshot"
    INCREMENTAL = "incremental"


class HollowCommitPolicy(str, enum.Enum):
    """``hoodie.read.timeline.holes.resolution.policy`` (``TimelineUtils.HollowCommitHandling``)."""

    FAIL = "FAIL"
    BLOCK = "BLOCK"
    USE_TRANSITION_TIME = "USE_TRANSITION_TIME"


class HollowCommitError(IncrementalQueryError):
    """A pending commit older than a completed one (``Found hollow commit`` in Java) under policy FAIL."""

    def __init__(self, table_uri: str, instant: str, later: str) -> None:
        self.instant = instant
        super().__init__(
            table_uri,
            f"found hollow commit {instant}: it is still pending while the later commit {later} completed, so a "
            f"checkpoint past {later} would miss its records once it completes. Set "
            f"{HoodieKey.READ_TIMELINE_HOLES_RESOLUTION_POLICY.key}=BLOCK (read only up to it) or "
            "USE_TRANSITION_TIME (select instants by completion time), or finish or roll back that commit",
        )


class IncrementalFilesCleanedError(IncrementalQueryError):
    """A file the range needs was deleted by clean (Java: ``HoodieIncrementalPathNotFoundException``)."""

    def __init__(self, table_uri: str, instant: str, path: str, begin: str) -> None:
        self.instant = instant
        self.path = path
        super().__init__(
            table_uri,
            f"file {path} written by instant {instant} no longer exists (clean retained fewer commits than the range "
            f"beginning after {begin} needs). Either set {HoodieKey.READ_INCR_FALLBACK_FULLTABLESCAN.key}=true "
            "(read the latest snapshot filtered by _hoodie_commit_time: each record's latest version, if it is in "
            f"the range), or begin at or after {instant} ({HoodieKey.READ_BEGIN_INSTANTTIME.key}={instant})",
        )


@dataclass(frozen=True)
class IncrementalResult:
    """What an incremental query returned.

    Attributes:
        table: the rows (all columns, meta columns included).
        begin_instant_time: the exclusive lower bound asked for.
        end_instant_time: the inclusive upper bound asked for (None = up to the latest completed commit).
        instants: the completed instants the range covers, in timeline order (archived ones included).
        checkpoint: the last completed instant read (its completion time under USE_TRANSITION_TIME): the next
            query's begin instant. ``begin_instant_time`` when the range holds no instant.
        full_table_scan: True when the rows come from the snapshot filtered by commit time (the fallback).
        stats: what the read touched.
    """

    table: pa.Table
    begin_instant_time: str
    end_instant_time: str | None
    instants: tuple[Instant, ...]
    checkpoint: str
    full_table_scan: bool = False
    stats: ReadStats = field(default_factory=ReadStats)

    @property
    def num_rows(self) -> int:
        return self.table.num_rows


@dataclass(frozen=True)
class _RangeInstant:
    instant: Instant
    metadata: CommitMetadata
    completion: str
    archived: bool = False


def _opt(options: Mapping[str, str], key: HoodieKey) -> str | None:
    for k in key.lookup_keys:
        v = options.get(k)
        if v is not None and str(v).strip() != "":
            return str(v).strip()
    return None


def _check_time(value: str, key: HoodieKey) -> str:
    v = str(value).strip()
    if not v.isdigit() or len(v) > 20:
        raise InvalidOptionError(
            f"{key.key}={value!r}: expected an instant time (yyyyMMddHHmmssSSS, or a shorter prefix such as 0)"
        )
    return v


def hollow_commit_policy(options: Mapping[str, str] | None) -> HollowCommitPolicy:
    """The policy ``options`` set (default FAIL).

    Raises:
        InvalidOptionError: not FAIL, BLOCK or USE_TRANSITION_TIME.
    """
    raw = _opt(options or {}, HoodieKey.READ_TIMELINE_HOLES_RESOLUTION_POLICY) or HollowCommitPolicy.FAIL.value
    try:
        return HollowCommitPolicy(raw.upper())
    except ValueError as err:
        raise InvalidOptionError(
            f"{HoodieKey.READ_TIMELINE_HOLES_RESOLUTION_POLICY.key}={raw!r}: expected one of "
            f"{[p.value for p in HollowCommitPolicy]}"
        ) from err


def first_hollow_commit(table: HudiTable, completed: list[Instant]) -> tuple[Instant, Instant] | None:
    """The first pending commit/deltacommit/replacecommit (clustering aside) with a completed commit after it, and
    that later commit; None if there is none."""
    pending = [i for i in table.timeline.with_actions(*_WRITE_COMMITS).pending() if not is_clustering(table, i)]
    if not pending:
        return None
    first = pending[0]
    later = [i for i in completed if i.time > first.time]
    return (first, later[0]) if later else None


def _completion_times(table: HudiTable, instants: list[Instant]) -> dict[str, str]:
    """0.15's ``stateTransitionTime`` of each completed instant: its completed file's modification time, formatted
    as an instant time in the table's timeline timezone."""
    listing = table._hoodie_listing()  # the cached .hoodie listing: no extra request
    tz = "UTC" if table.config.timeline_timezone is TimelineTimezone.UTC else pendulum.local_timezone()
    out: dict[str, str] = {}
    for i in instants:
        f = listing.get(i.file_name)
        ms = f.mtime_ms if f is not None else 0
        out[str(i.time)] = pendulum.from_timestamp(ms / 1000, tz=tz).format("YYYYMMDDHHmmssSSS")
    return out


def _archived_range(table: HudiTable, begin: str, before: str | None) -> list[_RangeInstant]:
    """Completed write instants of the archived timeline after ``begin`` (and before the active timeline)."""
    folder = table.config.raw.get(HoodieKey.ARCHIVELOG_FOLDER.key) or HoodieKey.ARCHIVELOG_FOLDER.default or ""
    archived = ArchivedTimeline.load(table.storage, folder)
    out = []
    for e in archived:
        i = e.instant
        if not i.is_completed or i.action not in _WRITE_COMMITS or i.time <= begin:
            continue
        if before is not None and i.time >= before:
            continue
        payload = e.entry.hoodie_replace_commit_metadata or e.entry.hoodie_commit_metadata or {}
        md = CommitMetadata.from_bytes(
            json.dumps(payload).encode(), path=f"{table.storage.uri(e.file)} ({i.time} {i.action.value})"
        )
        out.append(_RangeInstant(i, md, str(i.time), archived=True))
    return out


def read_incremental(
    table: HudiTable,
    *,
    begin_instant_time: str,
    end_instant_time: str | None = None,
    options: Mapping[str, str] | None = None,
    stats: ReadStats | None = None,
) -> IncrementalResult:
    """The records written in ``(begin_instant_time, end_instant_time]``, each at its latest version in the range.

    Args:
        table: the table.
        begin_instant_time: exclusive lower bound (``0``: from the first commit). The previous result's
            ``checkpoint`` resumes where it stopped.
        end_instant_time: inclusive upper bound (default: the latest completed commit).
        options: read options: ``hoodie.datasource.query.incremental.format`` (``cdc``: the change records of a
            CDC table, :func:`lake_orchestration.hudi.table.cdc.read_cdc`; the other options do not apply),
            ``hoodie.read.timeline.holes.resolution.policy``,
            ``hoodie.datasource.read.incr.fallback.fulltablescan.enable``, ``hoodie.metadata.enable`` (fallback
            snapshot only).
        stats: counters to update.

    Raises:
        InvalidOptionError: an instant time or option value that does not parse.
        IncrementalQueryError: the table has no meta fields (``hoodie.populate.meta.fields=false``: no commit time
            to filter on, Java refuses too).
        HollowCommitError: policy FAIL and a pending commit precedes a completed one.
        IncrementalFilesCleanedError: a file of the range was cleaned and the fallback is off.
    """
    opts = dict(options or {})
    stats = stats if stats is not None else ReadStats()
    if cdc.incremental_format(opts) == cdc.CDC_FORMAT:
        r = cdc.read_cdc(table, begin_instant_time=begin_instant_time, end_instant_time=end_instant_time, stats=stats)
        return IncrementalResult(r.table, r.begin_instant_time, end_instant_time, r.instants, r.checkpoint, stats=stats)
    begin = _check_time(begin_instant_time, HoodieKey.READ_BEGIN_INSTANTTIME)
    end = _check_time(end_instant_time, HoodieKey.READ_END_INSTANTTIME) if end_instant_time is not None else None
    policy = hollow_commit_policy(opts)
    fallback = (_opt(opts, HoodieKey.READ_INCR_FALLBACK_FULLTABLESCAN) or "false").lower() == "true"
    if not table.config.populate_meta_fields:
        raise IncrementalQueryError(
            table.base_uri,
            f"{HoodieKey.POPULATE_META_FIELDS.key}=false: the table has no {COMMIT_TIME} column to select a range "
            "of commits by (Java refuses incremental queries on such tables too); read a snapshot instead",
        )

    def empty(instants: tuple[Instant, ...] = (), checkpoint: str = begin) -> IncrementalResult:
        schema = table_arrow_schema(table)
        t = schema.empty_table() if schema is not None else pa.table({})
        return IncrementalResult(t, begin, end, instants, checkpoint, stats=stats)

    completed = list(table.timeline.completed().with_actions(*_WRITE_COMMITS))
    if not completed:
        return empty()
    if policy is not HollowCommitPolicy.USE_TRANSITION_TIME:
        hollow = first_hollow_commit(table, completed)
        if hollow is not None:
            if policy is HollowCommitPolicy.FAIL:
                raise HollowCommitError(table.base_uri, str(hollow[0].time), str(hollow[1].time))
            log.warning(
                "Hollow commit %s on %s: %s=BLOCK, no data returned beyond it until it completes",
                hollow[0].time,
                table.base_uri,
                HoodieKey.READ_TIMELINE_HOLES_RESOLUTION_POLICY.key,
            )
            completed = [i for i in completed if i.time < hollow[0].time]
            if not completed:
                return empty()

    active_start = str(completed[0].time)
    begin_archived = begin < active_start
    if policy is HollowCommitPolicy.USE_TRANSITION_TIME:
        done = _completion_times(table, completed)
        upper = end or max(done.values())
        chosen = [i for i in completed if begin < done[str(i.time)] <= upper]
        chosen.sort(key=lambda i: (done[str(i.time)], i.time))
        in_range = [_RangeInstant(i, table.commit_metadata(i), done[str(i.time)]) for i in chosen]
    else:
        upper = end or str(completed[-1].time)
        in_range = [
            _RangeInstant(i, table.commit_metadata(i), str(i.time)) for i in completed if begin < i.time <= upper
        ]
        if begin_archived and not fallback:
            in_range = _archived_range(table, begin, active_start) + in_range
            in_range = [r for r in in_range if r.instant.time <= upper]

    if fallback and begin_archived:
        if policy is HollowCommitPolicy.USE_TRANSITION_TIME:
            raise IncrementalQueryError(
                table.base_uri, "cannot select instants by transition time while falling back to a full table scan"
            )
        return _full_table_scan(table, begin, end, upper, in_range, opts, stats)
    if not in_range:
        return empty()

    instants = tuple(r.instant for r in in_range)
    checkpoint = in_range[-1].completion
    times = {str(r.instant.time) for r in in_range}
    first_time = min(times)
    last_time = max(times)

    # the files the range's commits wrote, as the listing of a file-system view (HoodieInputFormatUtils
    # .listAffectedFilesForCommits: built from the write stats, not from storage); the view hides replaced groups
    written: dict[str, dict[str, tuple[str, int]]] = {}  # partition -> file name -> (instant that wrote it, size)
    for r in in_range:
        for partition, ws_list in r.metadata.partition_to_write_stats.items():
            for ws in ws_list:
                if not ws.path:
                    continue
                part = ws.partitionPath if ws.partitionPath is not None else partition
                written.setdefault(part or "", {})[ws.path.rsplit("/", 1)[-1]] = (
                    str(r.instant.time),
                    ws.fileSizeInBytes,
                )
    if not written:
        return empty(instants, checkpoint)
    listing = {
        part: [
            FileInfo(path=table.storage.join(part, n) if part else n, name=n, size=sz, mtime_ms=0)
            for n, (_, sz) in names.items()
        ]
        for part, names in written.items()
    }
    slices = table.fs_view(listing).latest_merged_file_slices_before_or_on(last_time)

    # a file the read needs that clean deleted: Java's read fails (HoodieIncrementalPathNotFoundException) unless
    # the fallback is on
    listed = table.partition_listing(sorted(written))
    present = {(part, f.name) for part, fs in listed.items() for f in fs if not f.is_dir}
    missing = sorted(
        (written[fs.file_group_id.partition_path][name][0], fs.file_group_id.partition_path, name)
        for fs in slices
        for name in ([fs.base_file.name] if fs.base_file is not None else []) + [lf.name for lf in fs.log_files]
        if (fs.file_group_id.partition_path, name) not in present
    )
    if missing:
        instant, part, name = missing[-1]
        path = table.storage.uri(table.storage.join(part, name) if part else name)
        if fallback:
            log.info("Falling back to a full table scan of %s: %s was cleaned", table.base_uri, path)
            return _full_table_scan(table, begin, end, upper, in_range, opts, stats)
        raise IncrementalFilesCleanedError(table.base_uri, instant, path, begin)

    flt = InstantFilter.from_timeline(table.timeline, latest_instant=last_time)
    cfg = merge_config_for(table)
    schema = table_arrow_schema(table)
    parts: list[pa.Table] = []
    use_set = policy is HollowCommitPolicy.USE_TRANSITION_TIME
    for fs in slices:
        for t in read_file_slice(table.storage, fs, instant_filter=flt, merge_config=cfg, stats=stats):
            t = _in_range(t, times if use_set else None, first_time, last_time)
            if t.num_rows:
                parts.append(t)
    if not parts:
        return empty(instants, checkpoint)
    out = pa.concat_tables(
        [_conform(p, schema) for p in parts] if schema is not None else parts, promote_options="permissive"
    )
    return IncrementalResult(out, begin, end, instants, checkpoint, stats=stats)


def _in_range(t: pa.Table, times: set[str] | None, first: str, last: str) -> pa.Table:
    col = t.column(COMMIT_TIME)
    if times is not None:
        mask = pc.is_in(col, value_set=pa.array(sorted(times), type=col.type))
    else:
        mask = pc.and_(pc.greater_equal(col, first), pc.less_equal(col, last))
    return t.filter(pc.fill_null(mask, False))


def _conform(t: pa.Table, schema: pa.Schema) -> pa.Table:
    from lake_orchestration.hudi.merge.record_merger import conform

    if t.schema.equals(schema):
        return t
    try:
        return conform(t, schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return t


def _full_table_scan(
    table: HudiTable,
    begin: str,
    end: str | None,
    upper: str,
    in_range: list[_RangeInstant],
    options: Mapping[str, str],
    stats: ReadStats,
) -> IncrementalResult:
    """``fullTableScanDataFrame``: the latest snapshot, rows with ``begin < _hoodie_commit_time <= end``."""
    parts = []
    for t in read_snapshot(table, stats=stats, options=options):
        col = t.column(COMMIT_TIME)
        mask = pc.and_(pc.greater(col, begin), pc.less_equal(col, upper))
        t = t.filter(pc.fill_null(mask, False))
        if t.num_rows:
            parts.append(t)
    schema = table_arrow_schema(table)
    if parts:
        out = pa.concat_tables(parts, promote_options="permissive")
    else:
        out = schema.empty_table() if schema is not None else pa.table({})
    instants = tuple(r.instant for r in in_range)
    checkpoint = in_range[-1].completion if in_range else begin
    return IncrementalResult(out, begin, end, instants, checkpoint, full_table_scan=True, stats=stats)


def read_incremental_table(
    table: HudiTable,
    *,
    begin_instant_time: str,
    end_instant_time: str | None = None,
    options: Mapping[str, str] | None = None,
    stats: ReadStats | None = None,
) -> pa.Table:
    """The rows of :func:`read_incremental` as one Arrow table (beside ``read_snapshot_table``)."""
    return read_incremental(
        table, begin_instant_time=begin_instant_time, end_instant_time=end_instant_time, options=options, stats=stats
    ).table
