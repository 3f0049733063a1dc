"""Merge-on-read core: resolve the log records of a file slice and merge them into its base file.

Mirrors Hudi 0.14's ``HoodieMergedLogRecordScanner`` (log side, ``preCombine`` of the payload class) and the
payload's ``combineAndGetUpdateValue`` (base side):

* log vs log: the record with the greater ordering value wins, ties go to the later record; a delete-block
  delete replaces an earlier record unless its ordering value is non-zero, of the same type, and smaller; a
  record after a delete always wins (a delete's payload is empty);
* log vs base: ``OverwriteWithLatestAvroPayload`` (commit-time ordering) takes the log record;
  ``DefaultHoodieRecordPayload`` (event-time ordering) keeps the base record when its ordering value is greater;
* a delete-block delete always drops the key; a winning record with ``_hoodie_is_deleted = true`` drops it too.

The base file is streamed by row group (``pyarrow.parquet.ParquetFile.iter_batches``) and probed against the
de-duplicated log keys with ``pyarrow.compute.index_in`` (no sort of the base file).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.hudi.log.block_content import DeleteRecord, decode_data_block, decode_delete_block
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlock, LogBlockType
from lake_orchestration.hudi.model.properties import MergeSemantics
from lake_orchestration.hudi.model.schema import IS_DELETED_FIELD, RECORD_KEY, non_null_branch

_SEQ = "__lo_seq"
_AVRO_TO_WRAPPER = {
    "boolean": "BooleanWrapper",
    "int": "IntWrapper",
    "long": "LongWrapper",
    "float": "FloatWrapper",
    "double": "DoubleWrapper",
    "bytes": "BytesWrapper",
    "string": "StringWrapper",
}


@dataclass(frozen=True, kw_only=True)
class MergeConfig:
    """How records of a table merge.

    Attributes:
        semantics: commit-time (log wins over base) or event-time (ordering value wins) ordering.
        ordering_field: the precombine/ordering field; ``None`` = natural (write) order.
        key_field: the record key column.
    """

    semantics: MergeSemantics = MergeSemantics.COMMIT_TIME_ORDERING
    ordering_field: str | None = None
    key_field: str = RECORD_KEY


@dataclass
class LogRecords:
    """The resolved log side of a file slice: one latest version per key.

    Attributes:
        records: winning data records (may include ``_hoodie_is_deleted = true`` rows).
        deleted_keys: keys whose latest version is a delete-block delete.
        total_log_records: data + delete records read from valid blocks.
    """

    records: pa.Table | None
    deleted_keys: pa.Array
    total_log_records: int = 0
    deletes: list[DeleteRecord] = field(default_factory=list)
    """The winning delete of each key of ``deleted_keys`` (same order), with its ordering value."""

    @property
    def is_empty(self) -> bool:
        return (self.records is None or self.records.num_rows == 0) and len(self.deleted_keys) == 0


@dataclass
class DecodedBlock:
    """One valid log block, decoded: data rows (with a scan sequence column) or delete records."""

    table: pa.Table | None = None
    deletes: list[tuple[int, DeleteRecord]] = field(default_factory=list)


@dataclass
class DecodeState:
    """What decoding learned along the way (needed to combine what was decoded)."""

    seq: int = 0
    ordering_wrapper: str | None = None


def decode_log_blocks(blocks: Sequence[LogBlock], config: MergeConfig, state: DecodeState) -> Iterator[DecodedBlock]:
    """Decode valid data/delete blocks oldest first.

    Raises:
        CorruptLogBlockError: a block's content does not decode (whatever the decoder raised); nothing is skipped.
    """
    schema_cache: dict[str, dict[str, Any]] = {}
    for b in blocks:
        if b.block_type is LogBlockType.DELETE_BLOCK:
            dels = []
            for d in decode_delete_block(b):
                dels.append((state.seq, d))
                state.seq += 1
            yield DecodedBlock(None, dels)
            continue
        if b.block_type not in (LogBlockType.AVRO_DATA_BLOCK, LogBlockType.PARQUET_DATA_BLOCK):
            continue
        t = decode_data_block(b, schema_cache)
        schema_json = b.get(HeaderKey.SCHEMA)
        if config.ordering_field and state.ordering_wrapper is None and schema_json:
            state.ordering_wrapper = _wrapper_of_field(schema_cache[schema_json], config.ordering_field)
        n = t.num_rows
        yield DecodedBlock(t.append_column(_SEQ, pa.array(np.arange(state.seq, state.seq + n, dtype=np.int64))), [])
        state.seq += n


def check_log_blocks(blocks: Sequence[LogBlock], config: MergeConfig) -> None:
    """Decode every block a merge of ``blocks`` decodes, keeping nothing: a service calls it before it writes.

    Raises:
        CorruptLogBlockError: a block's content does not decode.
    """
    for _ in decode_log_blocks(blocks, config, DecodeState()):
        pass


def combine_log_records(
    tables: list[pa.Table],
    deletes: list[tuple[int, DeleteRecord]],
    config: MergeConfig,
    state: DecodeState,
    *,
    gather: Callable[[pa.Table, pa.Array], pa.Table] | None = None,
) -> LogRecords:
    """Keep the latest version of each key among decoded rows and deletes (scan sequence order).

    ``gather(data, rows)`` replaces ``data.take(rows)`` for the winning rows (the compactor's spill writes them to a
    file instead of memory); the order of the winners is not significant.
    """
    data = _concat(tables)
    if data is None and not deletes:
        return LogRecords(None, pa.array([], pa.string()), state.seq)
    winners, deleted = _dedupe(data, deletes, config, state.ordering_wrapper)
    if data is None:
        records = None
    elif len(winners) == data.num_rows:
        records = data.drop_columns([_SEQ])  # every key once: no need to gather
    else:
        records = (gather or pa.Table.take)(data, winners).drop_columns([_SEQ])
    keys = pa.array([d.record_key or "" for d in deleted], pa.string())
    return LogRecords(records, keys, state.seq, deletes=deleted)


def resolve_log_records(blocks: Sequence[LogBlock], config: MergeConfig) -> LogRecords:
    """Decode valid data/delete blocks (oldest first) and keep the latest version of each key.

    Raises:
        CorruptLogBlockError: a block's content does not decode.
    """
    state = DecodeState()
    tables: list[pa.Table] = []
    deletes: list[tuple[int, DeleteRecord]] = []
    for d in decode_log_blocks(blocks, config, state):
        if d.table is not None:
            tables.append(d.table)
        deletes.extend(d.deletes)
    return combine_log_records(tables, deletes, config, state)


def _wrapper_of_field(schema: dict[str, Any], name: str) -> str | None:
    for f in schema.get("fields", []):
        if f["name"] == name:
            t, _ = non_null_branch(f["type"])
            if isinstance(t, dict):
                logical = t.get("logicalType")
                if logical == "date":
                    return "DateWrapper"
                if logical == "decimal":
                    return "DecimalWrapper"
                t = t.get("type")
            return _AVRO_TO_WRAPPER.get(t) if isinstance(t, str) else None
    return None


def _concat(tables: list[pa.Table]) -> pa.Table | None:
    if not tables:
        return None
    if len(tables) == 1:
        return tables[0]
    first = tables[0].schema
    if all(t.schema.equals(first) for t in tables[1:]):
        return pa.concat_tables(tables)
    return pa.concat_tables(tables, promote_options="permissive")


def _ordering_values(data: pa.Table, config: MergeConfig) -> pa.ChunkedArray | None:
    if config.ordering_field and config.ordering_field in data.column_names:
        col = data.column(config.ordering_field)
        if pa.types.is_timestamp(col.type) or pa.types.is_time(col.type):
            # Java compares timestamp-micros ordering values as their raw longs (LongWrapper in delete blocks).
            col = col.cast(pa.int64())
        return col
    return None


def _dedupe(
    data: pa.Table | None,
    deletes: list[tuple[int, DeleteRecord]],
    config: MergeConfig,
    ordering_wrapper: str | None,
) -> tuple[pa.Array, list[DeleteRecord]]:
    """Indices of winning data rows and the winning deletes (keys whose winner is a delete)."""
    delete_keys = {d.record_key for _, d in deletes}
    winners: list[np.ndarray] = []
    if data is not None:
        keys = data.column(config.key_field)
        ords = _ordering_values(data, config)
        cols: dict[str, Any] = {"k": keys, "s": data.column(_SEQ), "i": pa.array(np.arange(data.num_rows))}
        if ords is not None:
            cols["o"] = ords
        df = pl.DataFrame(pa.table(cols))
        if delete_keys:
            df_fast = df.filter(~pl.col("k").is_in(list(delete_keys)))
            df_slow = df.filter(pl.col("k").is_in(list(delete_keys)))
        else:
            df_fast, df_slow = df, None
        by = ["o", "s"] if ords is not None else ["s"]
        fast = df_fast.sort(by, nulls_last=False).unique(subset=["k"], keep="last", maintain_order=False)
        winners.append(fast["i"].to_numpy())
    else:
        df_slow = None
    deleted: list[DeleteRecord] = []
    if deletes:
        # Sequential fold (Hudi's processNextRecord / processNextDeletedRecord) for keys touched by deletes.
        events: dict[str, list[tuple[int, str, Any, Any]]] = {}
        if df_slow is not None and df_slow.height:
            o = df_slow["o"].to_list() if "o" in df_slow.columns else [0] * df_slow.height
            for k, s, i, ov in zip(
                df_slow["k"].to_list(), df_slow["s"].to_list(), df_slow["i"].to_list(), o, strict=True
            ):
                events.setdefault(k, []).append((s, "data", i, ov))
        for s, d in deletes:
            events.setdefault(d.record_key or "", []).append((s, "delete", d, d.ordering_value))
        slow_winners = []
        for evs in events.values():
            evs.sort(key=lambda e: e[0])
            state: tuple[str, Any, Any] | None = None  # (kind, payload, ordering)
            for _, kind, payload, ov in evs:
                if kind == "data":
                    if state is None or state[0] == "delete":
                        state = ("data", payload, ov)
                    elif _gt(state[2], ov):
                        pass  # the earlier record has the greater ordering value
                    else:
                        state = ("data", payload, ov)
                else:
                    d: DeleteRecord = payload
                    if state is not None and _keep_previous(state, d, ordering_wrapper):
                        continue
                    state = ("delete", d, d.ordering_value)
            if state is None:
                continue
            if state[0] == "data":
                slow_winners.append(state[1])
            else:
                deleted.append(state[1])
        winners.append(np.array(slow_winners, dtype=np.int64))
    idx = np.concatenate(winners) if winners else np.array([], dtype=np.int64)
    return pa.array(idx, pa.int64()), deleted


def _gt(a: Any, b: Any) -> bool:
    if a is None:
        return False
    if b is None:
        return True
    try:
        return bool(a > b)
    except TypeError:
        return False


def _keep_previous(state: tuple[str, Any, Any], d: DeleteRecord, ordering_wrapper: str | None) -> bool:
    """``processNextDeletedRecord``: keep the existing record only for a non-zero, same-type, smaller delete."""
    dv = d.ordering_value
    # Java: `!deleteOrderingVal.equals(0)` -- only an Integer 0 means natural order (LongWrapper(0) does not).
    if dv is None or (d.ordering_wrapper == "IntWrapper" and dv == 0):
        return False
    if state[0] == "delete":
        same = state[1].ordering_wrapper == d.ordering_wrapper
    else:
        same = ordering_wrapper is not None and ordering_wrapper == d.ordering_wrapper
    return same and _gt(state[2], dv)


# -- merging with the base file ---------------------------------------------------------------------------------
def conform(table: pa.Table | pa.RecordBatch, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns (by name, cast; missing ones null)."""
    n = table.num_rows
    cols = []
    for f in schema:
        if f.name in table.schema.names:
            col = table.column(f.name)
            if col.type != f.type:
                col = col.cast(f.type)
        else:
            col = pa.nulls(n, f.type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)


class _KeyLookup:
    """Positions of keys in a fixed key set, built once and probed per base batch.

    ``pyarrow.compute.index_in`` rebuilds its hash set on every call, which made merging a large base file
    quadratic-ish (batches x log keys). Here the key set is hashed once (64-bit, polars) into a pandas hash index,
    each batch's key hashes are looked up in it and hits are confirmed by comparing the strings. A hash collision
    inside the key set falls back to ``index_in``.
    """

    _SEED = 0x5EED

    def __init__(self, keys: pa.Array) -> None:
        import pandas as pd  # here, not at module level: only merges need it, and it costs ~0.2 s to import

        self.keys = keys
        self.n = len(keys)
        h = pl.Series(values=keys).hash(seed=self._SEED).to_numpy() if self.n else np.array([], dtype=np.uint64)
        self.index = pd.Index(h)
        self.fallback = bool(self.n > 1 and not self.index.is_unique)

    def positions(self, keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Index of each key in the set, -1 when absent."""
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if self.n == 0:
            return np.full(len(keys), -1, dtype=np.int64)
        if self.fallback:
            return pc.fill_null(pc.index_in(keys, value_set=self.keys), -1).to_numpy(zero_copy_only=False)
        cand = self.index.get_indexer(pl.Series(values=keys).hash(seed=self._SEED).to_numpy()).astype(np.int64)
        where = np.nonzero(cand >= 0)[0]
        if len(where):
            same = pc.equal(keys.take(pa.array(where)), self.keys.take(pa.array(cand[where])))
            ok = pc.fill_null(same, False).to_numpy(zero_copy_only=False)
            cand[where[~ok]] = -1
        return cand


class SliceMerger:
    """Merges the resolved log records of one slice into its base batches, then emits the log-only inserts."""

    def __init__(self, log_records: LogRecords, config: MergeConfig) -> None:
        self.config = config
        self.log = log_records
        recs = log_records.records
        self._n = recs.num_rows if recs is not None else 0
        rec_keys = recs.column(config.key_field).combine_chunks() if recs is not None else pa.array([], pa.string())
        self._probe = pa.concat_arrays([rec_keys.cast(pa.string()), log_records.deleted_keys])
        self._lookup = _KeyLookup(self._probe)
        self._matched = np.zeros(self._n, dtype=bool)
        self._is_deleted = None
        if recs is not None and IS_DELETED_FIELD in recs.column_names:
            self._is_deleted = pc.fill_null(recs.column(IS_DELETED_FIELD), False).to_numpy(zero_copy_only=False)
        self.updated = 0
        self.deleted = 0

    def merge_batch(self, batch: pa.RecordBatch | pa.Table) -> pa.Table:
        """The merged rows for one base batch (base rows kept + their log updates)."""
        if self.log.is_empty:
            return pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        keys = table.column(self.config.key_field)
        pos = self._lookup.positions(keys)
        hit = pos >= 0
        if not hit.any():
            return table
        upd = hit & (pos < self._n)
        dele = hit & (pos >= self._n)
        keep_base = ~hit
        take_log_pos = pos[upd]
        if self.config.semantics is MergeSemantics.EVENT_TIME_ORDERING and self.config.ordering_field:
            f = self.config.ordering_field
            if f in table.column_names and self.log.records is not None and f in self.log.records.column_names:
                base_o = table.column(f).filter(pa.array(upd))
                log_o = self.log.records.column(f).take(pa.array(take_log_pos))
                base_wins = pc.fill_null(pc.greater(base_o, log_o.cast(base_o.type)), False).to_numpy(
                    zero_copy_only=False
                )
                if base_wins.any():
                    idx_upd = np.nonzero(upd)[0]
                    keep_base[idx_upd[base_wins]] = True
                    self._matched[take_log_pos[base_wins]] = True
                    take_log_pos = take_log_pos[~base_wins]
        self._matched[take_log_pos] = True
        self.deleted += int(dele.sum())
        if self._is_deleted is not None and len(take_log_pos):
            live = ~self._is_deleted[take_log_pos]
            self.deleted += int((~live).sum())
            take_log_pos = take_log_pos[live]
        self.updated += len(take_log_pos)
        kept = table.filter(pa.array(keep_base))
        if not len(take_log_pos) or self.log.records is None:
            return kept
        updates = conform(self.log.records.take(pa.array(take_log_pos)), table.schema)
        return pa.concat_tables([kept, updates])

    def remaining_inserts(self, schema: pa.Schema | None) -> pa.Table | None:
        """Log records whose key is in no base batch (inserts), deletes excluded."""
        recs = self.log.records
        if recs is None or self._n == 0:
            return None
        rest = ~self._matched
        if self._is_deleted is not None:
            rest &= ~self._is_deleted
        if not rest.any():
            return None
        t = recs.filter(pa.array(rest))
        return conform(t, schema) if schema is not None else t


def merge_slice_batches(
    base_batches: Iterator[pa.RecordBatch] | None,
    base_schema: pa.Schema | None,
    log_records: LogRecords,
    config: MergeConfig,
) -> Iterator[pa.Table]:
    """Stream the merged rows of a slice: base batches merged with the log side, then the inserts."""
    merger = SliceMerger(log_records, config)
    if base_batches is not None:
        for b in base_batches:
            out = merger.merge_batch(b)
            if out.num_rows:
                yield out
    inserts = merger.remaining_inserts(base_schema)
    if inserts is not None and inserts.num_rows:
        yield inserts
