"""CDC queries: the change records of a range of commits, as Hudi 0.15's ``hudi_table_changes(..., 'cdc', ...)``
(``hoodie.datasource.query.incremental.format=cdc``) returns them.

On a table with ``hoodie.table.cdc.enabled=true`` each change is a row ``(op, ts_ms, before, after)``: ``op`` is
``i``, ``u`` or ``d``; ``ts_ms`` is the instant time of the commit that made the change (a string, despite its
name); ``before`` and ``after`` are JSON strings of the record before and after it (null for an insert's before and
a delete's after). It mirrors Java's ``HoodieCDCExtractor`` (which files hold a commit's changes) and Spark's
``HoodieCDCRDD`` (how each of them becomes rows):

- the range's instants are the completed commits, deltacommits and replacecommits of the active timeline in
  ``(begin, end]`` (end default: the active timeline's last instant) whose operation changes data
  (``WriteOperationType.isDataChange``: insert, upsert, delete, bulk insert, insert overwrite ...; not a compaction
  or a clustering, which keep the records as they were);
- each write stat of such an instant is one *file split*: ``AS_IS`` when the write stat lists CDC log files
  (``cdcStats``: copy-on-write updates and deletes through Java's merge handle), ``BASE_FILE_INSERT`` for a new base
  file whose records are all inserts, ``BASE_FILE_DELETE`` for a delete that emptied a file group, ``LOG_FILE`` for a
  merge-on-read log file (the changes are inferred by merging the log file's records over the file slice before
  it);
- the JSON of a record read from a CDC log block or from a log file, or of a before image, is Avro's
  ``GenericData.toString`` (nulls written); that of a row read from a base file (inserted rows, deleted rows of an
  emptied file group, the after image of ``op_key_only`` and ``data_before``) is Jackson's rendering of the Spark
  row (null fields left out). Records read from data files carry the meta columns, those of CDC log blocks do not.

``hoodie.table.cdc.supplemental.logging.mode`` says what the CDC log blocks hold: ``data_before_after`` (op, ts_ms,
before and after images: read as is), ``data_before`` (op, record key, before image: the after image comes from the
new base file), ``op_key_only`` (op and record key: both images come from the base files before and after).

A replacecommit (insert overwrite, delete partition) deletes every record of the latest slice of each file group it
replaced (Java's ``REPLACE_COMMIT`` split) and inserts what its new base files hold. Refused with
:class:`CdcQueryError` (naming the table, the instant and the file): a write stat Java cannot read either (a base
file of updates without CDC log files, a previous base file that clean removed, a log-only file group).
"""

from __future__ import annotations

import enum
import io
import json
import math
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import IncrementalQueryError, InvalidOptionError
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType
from lake_orchestration.hudi.log.reader import read_log_blocks
from lake_orchestration.hudi.log.scanner import InstantFilter, scan_blocks
from lake_orchestration.hudi.merge.record_merger import resolve_log_records
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.file_group import BaseFile, FileGroupId, FileSlice, LogFile
from lake_orchestration.hudi.model.fs_view import FileSystemView
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime
from lake_orchestration.hudi.model.properties import MergeSemantics
from lake_orchestration.hudi.model.schema import IS_DELETED_FIELD, RECORD_KEY
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import ReadStats, merge_config_for, read_file_slice, table_arrow_schema

OP = "op"
TS_MS = "ts_ms"
BEFORE = "before"
AFTER = "after"
CDC_SCHEMA = pa.schema([(OP, pa.string()), (TS_MS, pa.string()), (BEFORE, pa.string()), (AFTER, pa.string())])
"""``CDCRelation.FULL_CDC_SPARK_SCHEMA``: the columns of every CDC query, whatever the supplemental logging mode."""
CDC_FORMAT = "cdc"
LATEST_STATE_FORMAT = "latest_state"

_DATA_CHANGE = frozenset(
    (
        "INSERT",
        "UPSERT",
        "UPSERT_PREPPED",
        "DELETE",
        "DELETE_PREPPED",
        "BULK_INSERT",
        "DELETE_PARTITION",
        "INSERT_OVERWRITE",
        "INSERT_OVERWRITE_TABLE",
        "BOOTSTRAP",
    )
)
"""``WriteOperationType.isDataChange``."""
_WRITE_COMMITS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)
_I32 = struct.Struct(">i")


class SupplementalLoggingMode(str, enum.Enum):
    """``HoodieCDCSupplementalLoggingMode``: what a CDC log block holds."""

    OP_KEY_ONLY = "op_key_only"
    DATA_BEFORE = "data_before"
    DATA_BEFORE_AFTER = "data_before_after"


class InferenceCase(str, enum.Enum):
    """``HoodieCDCInferenceCase``: where a file split's changes come from."""

    AS_IS = "AS_IS"
    BASE_FILE_INSERT = "BASE_FILE_INSERT"
    BASE_FILE_DELETE = "BASE_FILE_DELETE"
    LOG_FILE = "LOG_FILE"
    REPLACE_COMMIT = "REPLACE_COMMIT"


class CdcQueryError(IncrementalQueryError):
    """A CDC query that cannot be answered (not a CDC table, a range or a split this reader does not read)."""


@dataclass(frozen=True)
class CdcFileSplit:
    """``HoodieCDCFileSplit``: one file group's changes at one instant.

    Attributes:
        instant: the instant time of the change (each row's ``ts_ms``).
        case: how the changes are read.
        file_group: the file group.
        cdc_files: the files read (CDC log files, the new base file or the log file), relative to the base path.
        before: the file slice before the change (``BASE_FILE_DELETE``, ``LOG_FILE``, ``AS_IS`` in op_key_only).
        after: the file slice after the change (``AS_IS`` in op_key_only and data_before).
    """

    instant: str
    case: InferenceCase
    file_group: FileGroupId
    cdc_files: tuple[str, ...] = ()
    before: FileSlice | None = None
    after: FileSlice | None = None


@dataclass(frozen=True)
class CdcResult:
    """What a CDC query returned.

    Attributes:
        table: the change rows (``op``, ``ts_ms``, ``before``, ``after``: :data:`CDC_SCHEMA`), unordered.
        begin_instant_time: the exclusive lower bound asked for.
        end_instant_time: the inclusive upper bound used (the active timeline's last instant when not given).
        mode: the table's supplemental logging mode.
        instants: the data-changing instants the range covers, in timeline order.
        checkpoint: the last instant read (the next query's begin instant); ``begin_instant_time`` if none.
        splits: the file splits read.
        stats: what the read touched (file slices merged for before/after images).
    """

    table: pa.Table
    begin_instant_time: str
    end_instant_time: str
    mode: SupplementalLoggingMode
    instants: tuple[Instant, ...]
    checkpoint: str
    splits: tuple[CdcFileSplit, ...] = ()
    stats: ReadStats = field(default_factory=ReadStats)

    @property
    def num_rows(self) -> int:
        return self.table.num_rows


def is_cdc_enabled(table: HudiTable) -> bool:
    """``hoodie.table.cdc.enabled`` of the table's ``hoodie.properties``."""
    key = HoodieKey.TABLE_CDC_ENABLED
    return str(table.config.raw.get(key.key, key.default or "false")).strip().lower() == "true"


def supplemental_logging_mode(table: HudiTable) -> SupplementalLoggingMode:
    """The table's ``hoodie.table.cdc.supplemental.logging.mode`` (Java's default: data_before_after).

    Raises:
        CdcQueryError: a value that is not one of Hudi's three modes.
    """
    key = HoodieKey.TABLE_CDC_SUPPLEMENTAL_LOGGING_MODE
    raw = str(table.config.raw.get(key.key) or key.default or "").strip()
    try:
        return SupplementalLoggingMode(raw.lower())
    except ValueError as err:
        raise CdcQueryError(
            table.base_uri,
            f"{key.key}={raw!r} in hoodie.properties: expected one of {[m.value for m in SupplementalLoggingMode]}",
        ) from err


def incremental_format(options: Mapping[str, str] | None) -> str:
    """``hoodie.datasource.query.incremental.format`` of ``options``: ``latest_state`` (default) or ``cdc``.

    Raises:
        InvalidOptionError: another value.
    """
    key = HoodieKey.QUERY_INCREMENTAL_FORMAT
    raw = None
    for k in key.lookup_keys:
        v = (options or {}).get(k)
        if v is not None and str(v).strip():
            raw = str(v).strip()
            break
    value = (raw or key.default or LATEST_STATE_FORMAT).lower()
    if value not in (LATEST_STATE_FORMAT, CDC_FORMAT):
        raise InvalidOptionError(f"{key.key}={raw!r}: expected {LATEST_STATE_FORMAT} or {CDC_FORMAT}")
    return value


# -- the file splits (HoodieCDCExtractor) -------------------------------------------------------------------------
def _check_time(value: str, key: HoodieKey) -> str:
    v = str(value).strip()
    if not v.isdigit() or len(v) > 20:
        raise InvalidOptionError(
            f"{key.key}={value!r}: expected an instant time (yyyyMMddHHmmssSSS, or a shorter prefix such as 0)"
        )
    return v


def _range_instants(table: HudiTable, begin: str, end: str) -> list[tuple[Instant, CommitMetadata]]:
    out = []
    for i in table.timeline.completed().with_actions(*_WRITE_COMMITS):
        if not (begin < i.time <= end):
            continue
        md = table.commit_metadata(i)
        if (md.operation_type or "").upper() in _DATA_CHANGE:
            out.append((i, md))
    return out


class _Extractor:
    def __init__(self, table: HudiTable, mode: SupplementalLoggingMode) -> None:
        self.table = table
        self.mode = mode
        self._listing: dict[str, dict[str, int]] = {}
        self._view: FileSystemView | None = None

    def _files(self, partition: str) -> dict[str, int]:
        if partition not in self._listing:
            listed = self.table.partition_listing([partition]).get(partition, [])
            self._listing[partition] = {f.name: f.size for f in listed if not f.is_dir}
        return self._listing[partition]

    def _base_file_on(self, fg: FileGroupId, instant: str, what: str) -> BaseFile:
        """``getBaseFileOn(partition, instant, fileId)``."""
        for name, size in self._files(fg.partition_path).items():
            if name.startswith(fg.file_id + "_") and name.endswith(".parquet"):
                bf = BaseFile.parse(name, partition_path=fg.partition_path, size=size)
                if bf.file_id == fg.file_id and str(bf.instant) == instant:
                    return bf
        raise CdcQueryError(
            self.table.base_uri,
            f"{what}: the base file of file group {fg} written by {instant} is not in storage (cleaned?); Java fails "
            "this query too ('Can not get the previous version of the base file')",
        )

    def latest_slice(self, fg: FileGroupId, instants: list[tuple[Instant, CommitMetadata]]) -> FileSlice | None:
        """``fetchLatestFileSlice``: the latest committed slice of a (replaced) file group, in a view over the
        partitions the range's instants touched."""
        if self._view is None:
            touched: set[str] = set()
            for _, md in instants:
                touched.update(md.partition_to_write_stats)
                touched.update(md.partition_to_replace_file_ids or {})
            self._view = self.table.fs_view(self.table.partition_listing(sorted(touched)))
        for g in self._view.all_file_groups(fg.partition_path, include_replaced=True):
            if g.id == fg:
                return g.latest_slice
        return None

    def _base_file(self, rel: str, fg: FileGroupId) -> BaseFile:
        name = rel.rsplit("/", 1)[-1]
        return BaseFile.parse(name, partition_path=fg.partition_path, size=self._files(fg.partition_path).get(name, -1))

    def _log_file(self, name: str, fg: FileGroupId) -> LogFile:
        return LogFile.parse(name, partition_path=fg.partition_path, size=self._files(fg.partition_path).get(name, -1))

    def split(self, fg: FileGroupId, instant: Instant, md: CommitMetadata, ws: WriteStat) -> CdcFileSplit:
        """``HoodieCDCExtractor.parseWriteStat``."""
        ts = str(instant.time)
        where = f"instant {ts} ({instant.action.value}), file group {fg}"
        op = (md.operation_type or "").upper()
        path = ws.path or ""
        if not ws.cdcStats:
            if path.endswith(".parquet"):
                if op in ("DELETE", "DELETE_PREPPED") and ws.numWrites == 0 and ws.numDeletes != 0:
                    before = self._base_file_on(fg, ws.prevCommit, where)
                    return CdcFileSplit(
                        ts,
                        InferenceCase.BASE_FILE_DELETE,
                        fg,
                        before=FileSlice(fg, InstantTime(ws.prevCommit), before),
                    )
                if ws.numUpdateWrites == 0 and ws.numWrites == ws.numInserts:
                    return CdcFileSplit(ts, InferenceCase.BASE_FILE_INSERT, fg, (path,))
                raise CdcQueryError(
                    self.table.base_uri,
                    f"{where}: the base file {path} holds updates but the write stat lists no CDC log file (Java "
                    "fails too: 'There should be a cdc log file')",
                )
            # a merge-on-read log file: the slice before it is the write stat's base file and its other log files
            if instant.action is not Action.DELTA_COMMIT or ws.logFiles is None:
                raise CdcQueryError(
                    self.table.base_uri, f"{where}: log file {path} not written by a deltacommit; Java cannot read it"
                )
            name = path.rsplit("/", 1)[-1]
            base = None
            if ws.baseFile:
                base = BaseFile.parse(
                    ws.baseFile,
                    partition_path=fg.partition_path,
                    size=self._files(fg.partition_path).get(ws.baseFile, -1),
                )
            if base is None:
                raise CdcQueryError(
                    self.table.base_uri,
                    f"{where}: log file {path} has no base file before it (a log-only file group); not read",
                )
            logs = tuple(self._log_file(n, fg) for n in ws.logFiles if n != name)
            before = FileSlice(fg, base.instant, base, logs)
            return CdcFileSplit(ts, InferenceCase.LOG_FILE, fg, (path,), before=before)
        cdc_files = tuple(sorted(ws.cdcStats, key=lambda p: LogFile.parse(p.rsplit("/", 1)[-1]).version))
        if self.mode is SupplementalLoggingMode.DATA_BEFORE_AFTER:
            return CdcFileSplit(ts, InferenceCase.AS_IS, fg, cdc_files)
        current = FileSlice(fg, instant.time, self._base_file(path, fg))
        before = None
        if self.mode is SupplementalLoggingMode.OP_KEY_ONLY:
            prev = self._base_file_on(fg, ws.prevCommit, where)
            before = FileSlice(fg, InstantTime(ws.prevCommit), prev)
        return CdcFileSplit(ts, InferenceCase.AS_IS, fg, cdc_files, before=before, after=current)


def cdc_file_splits(
    table: HudiTable, begin_instant_time: str, end_instant_time: str
) -> tuple[list[Instant], dict[FileGroupId, list[CdcFileSplit]]]:
    """``HoodieCDCExtractor.extractCDCFileSplits``: the data-changing instants of ``(begin, end]`` and each file
    group's splits, in instant order.

    Raises:
        CdcQueryError: a write stat whose changes cannot be read (Java fails on it too).
    """
    mode = supplemental_logging_mode(table)
    ex = _Extractor(table, mode)
    instants = _range_instants(table, begin_instant_time, end_instant_time)
    out: dict[FileGroupId, list[CdcFileSplit]] = {}
    for instant, md in instants:
        for partition, stats in md.partition_to_write_stats.items():
            for ws in stats:
                fg = FileGroupId(partition, ws.fileId)
                out.setdefault(fg, []).append(ex.split(fg, instant, md, ws))
        for partition, file_ids in (md.partition_to_replace_file_ids or {}).items():
            # every record of a replaced file group's latest slice is deleted (the view over the partitions the
            # range touched, replaced groups included: fetchLatestFileSlice)
            for file_id in file_ids:
                fg = FileGroupId(partition, file_id)
                latest = ex.latest_slice(fg, instants)
                if latest is None:
                    continue
                if latest.base_file is None:
                    raise CdcQueryError(
                        table.base_uri,
                        f"CDC query with {HoodieKey.TABLE_CDC_SUPPLEMENTAL_LOGGING_MODE.key}={mode.value}: file group "
                        f"{fg} replaced by {instant.time} has no base file (log files only); Java cannot read it "
                        "either",
                    )
                out.setdefault(fg, []).append(
                    CdcFileSplit(str(instant.time), InferenceCase.REPLACE_COMMIT, fg, (), latest)
                )
    for splits in out.values():
        splits.sort(key=lambda s: s.instant)
    return [i for i, _ in instants], out


# -- JSON as Java renders records ---------------------------------------------------------------------------------
def _float32(v: float) -> str:
    if math.isnan(v) or math.isinf(v):
        return json.dumps(str(v))
    return str(np.float32(v))


def _json_value(v: Any, t: pa.DataType) -> str:
    if v is None:
        return "null"
    if pa.types.is_float32(t):
        return _float32(v)
    if pa.types.is_struct(t):
        return _json_object({f.name: v.get(f.name) for f in t}, {f.name: f.type for f in t}, avro=True)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "[" + ", ".join(_json_value(x, t.value_type) for x in v) + "]"
    if pa.types.is_map(t):
        return _json_object({str(k): x for k, x in v}, {str(k): t.item_type for k, _ in v}, avro=True)
    if isinstance(v, (bytes, bytearray)):
        return json.dumps({"bytes": v.decode("latin-1")})
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return json.dumps(str(v))
    if not isinstance(v, (str, int, float, bool)):
        return json.dumps(str(v))
    return json.dumps(v)


def _json_object(row: Mapping[str, Any], types: Mapping[str, pa.DataType], *, avro: bool) -> str:
    """Avro's ``GenericData.toString`` (``avro``: every field, nulls too) or Jackson's rendering of a Spark row
    (``InternalRowToJsonStringConverter``: null fields left out)."""
    sep, colon = (", ", ": ") if avro else (",", ":")
    parts = [f"{json.dumps(k)}{colon}{_json_value(v, types[k])}" for k, v in row.items() if avro or v is not None]
    return "{" + sep.join(parts) + "}"


def _plain(t: pa.Table) -> pa.Table:
    """Dates as days and timestamps as their epoch number, as Spark rows and Avro records hold them."""
    cols = []
    for f, col in zip(t.schema, t.columns, strict=True):
        if pa.types.is_date32(f.type):
            col = col.cast(pa.int32())
        elif pa.types.is_timestamp(f.type) or pa.types.is_date64(f.type) or pa.types.is_time(f.type):
            col = col.cast(pa.int64())
        cols.append(col)
    return pa.Table.from_arrays(cols, names=t.column_names)


class _Rows:
    """Records keyed by record key, with their Arrow types for rendering."""

    def __init__(self, types: dict[str, pa.DataType]) -> None:
        self.types = types
        self.rows: dict[str, dict[str, Any]] = {}

    def json(self, key: str, *, avro: bool) -> str:
        return _json_object(self.rows[key], self.types, avro=avro)


def _types(t: pa.Table | pa.Schema) -> dict[str, pa.DataType]:
    schema = t.schema if isinstance(t, pa.Table) else t
    return {f.name: f.type for f in _plain(schema.empty_table()).schema}


# -- reading the splits (HoodieCDCRDD) ----------------------------------------------------------------------------
class _Reader:
    def __init__(self, table: HudiTable, mode: SupplementalLoggingMode, stats: ReadStats) -> None:
        self.table = table
        self.mode = mode
        self.stats = stats
        self.schema = table_arrow_schema(table)
        self.cfg = merge_config_for(table)
        self.out: list[tuple[str, str, str | None, str | None]] = []

    def slice_rows(self, fs: FileSlice, latest: str) -> _Rows:
        """``loadFileSlice``: the merged records of a slice (CDC log files left out)."""
        fs = FileSlice(
            fs.file_group_id, fs.base_instant, fs.base_file, tuple(lf for lf in fs.log_files if "cdc" not in lf.suffix)
        )
        flt = InstantFilter.from_timeline(self.table.timeline, latest_instant=latest)
        parts = [
            _plain(t)
            for t in read_file_slice(
                self.table.storage, fs, instant_filter=flt, merge_config=self.cfg, schema=self.schema, stats=self.stats
            )
        ]
        types = _types(parts[0]) if parts else (_types(self.schema) if self.schema is not None else {})
        rows = _Rows(types)
        for p in parts:
            for r in p.to_pylist():
                rows.rows[r[RECORD_KEY]] = r
        return rows

    def base_file_rows(self, rel: str, fg: FileGroupId) -> _Rows:
        bf = BaseFile.parse(rel.rsplit("/", 1)[-1], partition_path=fg.partition_path)
        return self.slice_rows(FileSlice(fg, bf.instant, bf), "99999999999999999999")

    def emit(self, op: str, ts: str, before: str | None, after: str | None) -> None:
        self.out.append((op, ts, before, after))

    def read(self, splits: list[CdcFileSplit]) -> None:
        latest = splits[-1].instant
        for s in splits:
            getattr(self, f"_{s.case.value.lower()}")(s, latest)

    def _base_file_insert(self, s: CdcFileSplit, latest: str) -> None:
        rows = self.base_file_rows(s.cdc_files[0], s.file_group)
        for k in rows.rows:
            self.emit("i", s.instant, None, rows.json(k, avro=False))

    def _base_file_delete(self, s: CdcFileSplit, latest: str) -> None:
        assert s.before is not None
        rows = self.slice_rows(s.before, latest)
        for k in rows.rows:
            self.emit("d", s.instant, rows.json(k, avro=False), None)

    def _log_file(self, s: CdcFileSplit, latest: str) -> None:
        """``loadNextLogRecord``: each merged record of the log file against the slice before it."""
        assert s.before is not None
        before = self.slice_rows(s.before, latest)
        fg = s.file_group
        name = s.cdc_files[0].rsplit("/", 1)[-1]
        lf = LogFile.parse(name, partition_path=fg.partition_path)
        flt = InstantFilter.from_timeline(self.table.timeline, latest_instant=latest)
        blocks, _ = scan_blocks(self.table.storage, [lf], flt)
        lr = resolve_log_records(blocks, self.cfg)
        deleted = set(lr.deleted_keys.to_pylist()) if len(lr.deleted_keys) else set()
        for key in deleted:
            old = before.rows.pop(key, None)
            if old is not None:
                self.emit("d", s.instant, _json_object(old, before.types, avro=True), None)
        if lr.records is None or lr.records.num_rows == 0:
            return
        recs = _plain(lr.records)
        if self.schema is not None:
            keep = [n for n in self.schema.names if n in recs.column_names]
            recs = recs.select(keep)
        types = _types(recs)
        for r in recs.to_pylist():
            key = r[RECORD_KEY]
            if key in deleted:
                continue
            old = before.rows.get(key)
            if r.get(IS_DELETED_FIELD) is True:
                if old is not None:
                    before.rows.pop(key)
                    self.emit("d", s.instant, _json_object(old, before.types, avro=True), None)
                continue
            if old is None:
                before.rows[key] = r
                self.emit("i", s.instant, None, _json_object(r, types, avro=True))
                continue
            merged = self._combine(old, r)
            if merged != old:
                before.rows[key] = merged
                self.emit(
                    "u", s.instant, _json_object(old, before.types, avro=True), _json_object(merged, types, avro=True)
                )

    def _combine(self, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        """``combineAndGetUpdateValue``: event-time ordering keeps the stored record when its ordering value is
        greater."""
        f = self.cfg.ordering_field
        if self.cfg.semantics is MergeSemantics.EVENT_TIME_ORDERING and f and old.get(f) is not None:
            if new.get(f) is None or old[f] > new[f]:
                return old
        return new

    def _replace_commit(self, s: CdcFileSplit, latest: str) -> None:
        """Every record of the replaced group's latest slice, deleted."""
        assert s.before is not None
        rows = self.slice_rows(s.before, latest)
        for k in rows.rows:
            self.emit("d", s.instant, rows.json(k, avro=False), None)

    def _as_is(self, s: CdcFileSplit, latest: str) -> None:
        before = self.slice_rows(s.before, latest) if s.before is not None else None
        after = self.slice_rows(s.after, "99999999999999999999") if s.after is not None else None
        for rec, schema in self._cdc_records(s):
            op = rec.get(OP)
            if self.mode is SupplementalLoggingMode.DATA_BEFORE_AFTER:
                self.emit(
                    op,
                    s.instant,
                    _avro_json(rec.get(BEFORE), schema, BEFORE),
                    _avro_json(rec.get(AFTER), schema, AFTER),
                )
                continue
            key = rec.get("record_key")
            assert after is not None
            after_json = after.json(key, avro=False) if op in ("i", "u") else None
            if self.mode is SupplementalLoggingMode.DATA_BEFORE:
                self.emit(op, s.instant, _avro_json(rec.get(BEFORE), schema, BEFORE), after_json)
                continue
            assert before is not None
            before_json = before.json(key, avro=True) if op in ("u", "d") else None
            self.emit(op, s.instant, before_json, after_json)

    def _cdc_records(self, s: CdcFileSplit) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
        """``HoodieCDCLogRecordIterator``: the records of every CDC data block of the split's CDC log files."""
        for rel in s.cdc_files:
            path = self.table.storage.join(rel)
            for block in read_log_blocks(self.table.storage, path):
                if block.block_type is not LogBlockType.CDC_DATA_BLOCK:
                    continue
                schema = json.loads(block.get(HeaderKey.SCHEMA) or "{}")
                for rec in _decode_avro_block(
                    block.content, schema, where=f"{self.table.storage.uri(path)}@{block.offset}"
                ):
                    yield rec, schema


def _strip_logical(t: Any) -> Any:
    if isinstance(t, list):
        return [_strip_logical(x) for x in t]
    if isinstance(t, dict):
        return {k: _strip_logical(v) for k, v in t.items() if k != "logicalType"}
    return t


def _decode_avro_block(content: bytes, schema: dict[str, Any], *, where: str) -> list[dict[str, Any]]:
    """The records of a CDC data block (an Avro data block's content), logical types left as their raw numbers as
    Java's ``GenericData`` holds them."""
    from lake_orchestration.errors import CorruptLogBlockError

    try:
        _version, count = struct.unpack_from(">ii", content, 0)
        parsed = fastavro.parse_schema(_strip_logical(schema))
        buf = io.BytesIO(memoryview(content)[8:])
        out = []
        for _ in range(count):
            buf.read(4)  # the record length
            out.append(fastavro.schemaless_reader(buf, parsed, None))
        return out
    except Exception as err:  # EOFError, ValueError, struct.error ...: the block does not decode
        path, offset = where.rsplit("@", 1)
        raise CorruptLogBlockError(
            path, int(offset), f"{type(err).__name__}: {err}", block_type="CDC_DATA_BLOCK"
        ) from err


def _avro_json(v: Any, schema: dict[str, Any], name: str) -> str:
    """``HoodieCDCUtils.recordToJson`` of the CDC record's field ``name``: Avro's ``toString``, which renders a
    missing image as the string ``null`` (Java's rows carry that string, not an SQL null)."""
    if v is None:
        return "null"
    named: dict[str, Any] = {}
    _collect_named(schema, named, schema.get("namespace"))
    t = next(f["type"] for f in schema["fields"] if f["name"] == name)
    return _render_avro(v, t, named)


_PRIMITIVES = frozenset(("null", "boolean", "int", "long", "float", "double", "bytes", "string"))


def _collect_named(t: Any, named: dict[str, Any], namespace: str | None) -> None:
    """The named types (records, enums, fixed) of a schema by name and full name: a later field may refer to a
    type by name (the CDC schema's ``after`` names the record ``before`` defines)."""
    if isinstance(t, list):
        for b in t:
            _collect_named(b, named, namespace)
    elif isinstance(t, dict):
        if t.get("type") in ("record", "enum", "fixed") and "name" in t:
            ns = t.get("namespace", namespace)
            named[t["name"]] = t
            if ns and "." not in t["name"]:
                named[f"{ns}.{t['name']}"] = t
            for f in t.get("fields", []):
                _collect_named(f["type"], named, ns)
        elif t.get("type") in ("array", "map"):
            _collect_named(t.get("items", t.get("values")), named, namespace)


def _render_avro(v: Any, t: Any, named: Mapping[str, Any]) -> str:
    if v is None:
        return "null"
    if isinstance(t, str) and t not in _PRIMITIVES:
        t = named.get(t, t)
    if isinstance(t, list):
        branches = [named.get(b, b) if isinstance(b, str) else b for b in t if b != "null"]
        t = branches[0] if len(branches) == 1 else next((b for b in branches if _fits(v, b)), branches[0])
    kind = t.get("type") if isinstance(t, dict) else t
    if kind == "record":
        return (
            "{"
            + ", ".join(
                f"{json.dumps(f['name'])}: {_render_avro(v.get(f['name']), f['type'], named)}" for f in t["fields"]
            )
            + "}"
        )
    if kind == "array":
        return "[" + ", ".join(_render_avro(x, t["items"], named) for x in v) + "]"
    if kind == "map":
        return "{" + ", ".join(f"{json.dumps(k)}: {_render_avro(x, t['values'], named)}" for k, x in v.items()) + "}"
    if kind == "float":
        return _float32(v)
    if isinstance(v, (bytes, bytearray)):
        return json.dumps({"bytes": v.decode("latin-1")})
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return json.dumps(str(v))
    return json.dumps(v)


def _fits(v: Any, t: Any) -> bool:
    kind = t.get("type") if isinstance(t, dict) else t
    return {
        "string": isinstance(v, str),
        "boolean": isinstance(v, bool),
        "int": isinstance(v, int),
        "long": isinstance(v, int),
        "float": isinstance(v, float),
        "double": isinstance(v, float),
        "record": isinstance(v, dict),
        "map": isinstance(v, dict),
        "array": isinstance(v, list),
    }.get(kind, True)


def read_cdc(
    table: HudiTable,
    *,
    begin_instant_time: str,
    end_instant_time: str | None = None,
    stats: ReadStats | None = None,
) -> CdcResult:
    """The change records of ``(begin_instant_time, end_instant_time]``, as ``hudi_table_changes(table, 'cdc',
    begin[, end])`` returns them.

    Args:
        table: a table with ``hoodie.table.cdc.enabled=true``.
        begin_instant_time: exclusive lower bound (``0``: from the first commit); the previous result's
            ``checkpoint`` resumes where it stopped.
        end_instant_time: inclusive upper bound (default: the active timeline's last instant, as Java's).
        stats: counters to update.

    Raises:
        InvalidOptionError: an instant time that does not parse.
        CdcQueryError: not a CDC table; begin after end; a split Java cannot read either (the message names the
            table, the mode and the instant).
    """
    stats = stats if stats is not None else ReadStats()
    begin = _check_time(begin_instant_time, HoodieKey.READ_BEGIN_INSTANTTIME)
    if not is_cdc_enabled(table):
        raise CdcQueryError(
            table.base_uri,
            f"{HoodieKey.QUERY_INCREMENTAL_FORMAT.key}={CDC_FORMAT} needs a CDC table "
            f"({HoodieKey.TABLE_CDC_ENABLED.key}=true in hoodie.properties); this table keeps no change log. Use the "
            f"{LATEST_STATE_FORMAT} format (the records a range of commits wrote)",
        )
    mode = supplemental_logging_mode(table)
    if not table.config.populate_meta_fields:
        raise CdcQueryError(
            table.base_uri,
            f"{HoodieKey.POPULATE_META_FIELDS.key}=false: records are matched by _hoodie_record_key, which this "
            f"table does not store ({HoodieKey.TABLE_CDC_SUPPLEMENTAL_LOGGING_MODE.key}={mode.value}); not read",
        )
    if end_instant_time is not None:
        end = _check_time(end_instant_time, HoodieKey.READ_END_INSTANTTIME)
    else:
        last = table.timeline.last
        if last is None:
            raise CdcQueryError(table.base_uri, "no instant on the active timeline (Java: 'No valid instant')")
        end = str(last.time)
    if begin > end:
        raise CdcQueryError(table.base_uri, f"not a valid range: begin {begin} is after end {end}")
    instants, groups = cdc_file_splits(table, begin, end)
    reader = _Reader(table, mode, stats)
    all_splits: list[CdcFileSplit] = []
    for splits in groups.values():
        reader.read(splits)
        all_splits.extend(splits)
    cols = list(zip(*reader.out, strict=True)) if reader.out else [[], [], [], []]
    out = pa.Table.from_arrays([pa.array(list(c), pa.string()) for c in cols], schema=CDC_SCHEMA)
    checkpoint = str(instants[-1].time) if instants else begin
    return CdcResult(out, begin, end, mode, tuple(instants), checkpoint, tuple(all_splits), stats)


def read_cdc_table(table: HudiTable, *, begin_instant_time: str, end_instant_time: str | None = None) -> pa.Table:
    """The rows of :func:`read_cdc` as one Arrow table."""
    return read_cdc(table, begin_instant_time=begin_instant_time, end_instant_time=end_instant_time).table
