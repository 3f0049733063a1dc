"""The sort-merge of sorted runs with a merge engine (Java ``SortMergeReader`` + ``MergeFunction``), on Arrow tables.

Input: the rows of every file of a rewrite (``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and the value
columns). They are sorted by key, then by ``sequence.field`` (when set), then by ``_SEQUENCE_NUMBER`` (Java's key
comparator and user-defined sequence comparator; Arrow compares strings by bytes as ``BinaryString`` does), and each
key's rows are merged in that order:

* ``deduplicate`` (``DeduplicateMergeFunction``): the last row.
* ``first-row`` (``FirstRowMergeFunction``): the first row that is not a retraction; a retraction is skipped with
  ``ignore-delete`` and refused otherwise, as Java throws.
* ``partial-update`` (``PartialUpdateMergeFunction`` of Java 1.2, without sequence groups): non-null fields of later
  rows overwrite; a retraction is skipped with ``ignore-delete`` / ``partial-update.ignore-delete``; with
  ``partial-update.remove-record-on-delete`` a ``-D`` resets the row (a DELETE unless a later row re-inserts the key)
  and a ``-U`` changes nothing; it is refused otherwise, as Java throws. A key whose merged rows hold no insert is a
  DELETE.
* ``aggregation`` (``AggregateMergeFunction`` of Java 1.2): each value field folds with
  ``fields.<f>.aggregate-function`` (else ``fields.default-aggregate-function``, else ``last_non_null_value``):
  ``sum``, ``max``, ``min``, ``last_value``, ``last_non_null_value``, ``first_value``, ``first_non_null_value``,
  ``bool_and``, ``bool_or`` (nulls skipped); retractions retract (``sum``, ``last_value``, ``last_non_null_value``),
  are ignored with ``fields.<f>.ignore-retract`` and are refused otherwise; ``aggregation.remove-record-on-delete``
  resets the row on a ``-D``.

A DELETE that resets the row keeps only its NOT NULL fields (Java's ``initRow``). For partial-update and aggregation
a key with a single row passes through unchanged (Java's ``ReducerMergeFunctionWrapper``).

Then ``DropDeleteReader``: with ``drop_delete`` the merged retractions are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.errors import PlanError
from lake_orchestration.paimon.model.options import MergeEngine

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_PREFIX = "_KEY_"
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
RETRACT_KINDS = (UPDATE_BEFORE, DELETE)


def _truthy(options: Mapping[str, str], key: str) -> bool:
    return options.get(key, "false").strip().lower() == "true"


def _ignore_delete(options: Mapping[str, str]) -> bool:
    """Java's ``ignore-delete`` with its fallback keys."""
    keys = ("ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete")
    return any(_truthy(options, k) for k in keys)


def _group_bounds(table: pa.Table, key_columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """First and last row index of each run of equal keys in a key-sorted table."""
    n = table.num_rows
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    change: Any = None
    for name in key_columns:
        col = table.column(name).combine_chunks()
        # a null comparison (a null key on either side) is a change unless both are null
        neq = pc.coalesce(pc.not_equal(col.slice(1), col.slice(0, n - 1)), pa.scalar(True))
        both_null = pc.and_(pc.is_null(col.slice(1)), pc.is_null(col.slice(0, n - 1)))
        neq = pc.and_(neq, pc.invert(both_null))
        change = neq if change is None else pc.or_(change, neq)
    if change is None:
        boundaries = np.zeros(0, dtype=np.int64)
    else:
        boundaries = pc.indices_nonzero(change).to_numpy(zero_copy_only=False).astype(np.int64) + 1
    starts = np.concatenate([[0], boundaries]).astype(np.int64)
    ends = np.concatenate([boundaries - 1, [n - 1]]).astype(np.int64)
    return starts, ends


def sort_rows(table: pa.Table, key_columns: Sequence[str], sequence_fields: Sequence[str]) -> pa.Table:
    """Rows ordered by key, then user sequence fields, then ``_SEQUENCE_NUMBER`` (stable)."""
    sort_keys = [(c, "ascending") for c in (*key_columns, *sequence_fields, SEQUENCE_NUMBER)]
    return table.take(pc.sort_indices(table, sort_keys=sort_keys))


def merge_rows(
    table: pa.Table,
    *,
    key_columns: Sequence[str],
    value_columns: Sequence[str],
    primary_keys: Sequence[str],
    engine: MergeEngine,
    options: Mapping[str, str],
    drop_delete: bool,
) -> pa.Table:
    """Merge the rows of one key into one row per key (see the module doc); the result is sorted by key.

    Raises:
        PlanError: A retraction the merge engine refuses, or an aggregate function not supported here.
    """
    seq_fields = [f.strip() for f in options.get("sequence.field", "").split(",") if f.strip()]
    if engine is MergeEngine.DEDUPLICATE:
        # only the sort columns are reordered; the rows themselves are taken once, one per key
        sort_keys = [(c, "ascending") for c in (*key_columns, *seq_fields, SEQUENCE_NUMBER)]
        order = pc.sort_indices(table.select([c for c, _ in sort_keys]), sort_keys=sort_keys)
        _, ends = _group_bounds(table.select(list(key_columns)).take(order), key_columns)
        merged = table.take(order.take(pa.array(ends)))
        if drop_delete:
            merged = merged.filter(pc.invert(pc.is_in(merged.column(VALUE_KIND), pa.array(RETRACT_KINDS, pa.int8()))))
        return merged
    rows = sort_rows(table, key_columns, seq_fields)
    starts, ends = _group_bounds(rows, key_columns)
    if engine is MergeEngine.FIRST_ROW:
        retracts = pc.is_in(rows.column(VALUE_KIND), pa.array(RETRACT_KINDS, pa.int8()))
        if not _ignore_delete(options) and pc.any(retracts).as_py():
            raise PlanError(
                "first-row cannot merge a retraction (-U/-D) without ignore-delete=true (or first-row.ignore-delete): "
                "Java's FirstRowMergeFunction refuses DELETE/UPDATE_BEFORE records"
            )
        kept = rows.filter(pc.invert(pc.is_in(rows.column(VALUE_KIND), pa.array(RETRACT_KINDS, pa.int8()))))
        first, _ = _group_bounds(kept, key_columns)
        merged = kept.take(pa.array(first))
    else:
        not_null = [not rows.schema.field(c).nullable for c in value_columns]
        if engine is MergeEngine.PARTIAL_UPDATE:
            folder = _partial_update_folder(options, not_null)
        else:
            types = [rows.schema.field(c).type for c in value_columns]
            folder = _aggregate_folder(value_columns, primary_keys, options, types, not_null)
        merged = _fold(rows, starts, ends, value_columns, folder)
    if drop_delete:
        merged = merged.filter(pc.invert(pc.is_in(merged.column(VALUE_KIND), pa.array(RETRACT_KINDS, pa.int8()))))
    return merged


Folder = Callable[[list[int], list[int], list[list[Any]]], tuple[list[Any], int, int]]


def _fold(rows: pa.Table, starts: np.ndarray, ends: np.ndarray, value_columns: Sequence[str], fold: Folder) -> pa.Table:
    """One output row per key: the key of its last row; value kind, sequence number and values from ``fold`` (given
    the kinds, sequence numbers and value tuples of the key's rows, in merge order).

    A key with a single row passes through unchanged, merge function not called, as Java's
    ``ReducerMergeFunctionWrapper`` (``MergeTreeCompactRewriter``) does: a lone retraction stays a retraction.
    """
    kinds = rows.column(VALUE_KIND).to_pylist()
    seqs = rows.column(SEQUENCE_NUMBER).to_pylist()
    values = [rows.column(c).to_pylist() for c in value_columns]
    out_values: list[list[Any]] = [[] for _ in value_columns]
    out_kinds: list[int] = []
    out_seqs: list[int] = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        group = [[col[i] for col in values] for i in range(start, end + 1)]
        if start == end:
            merged, kind, seq = group[0], kinds[start], seqs[start]
        else:
            merged, kind, seq = fold(kinds[start : end + 1], seqs[start : end + 1], group)
        out_kinds.append(kind)
        out_seqs.append(seq)
        for j, v in enumerate(merged):
            out_values[j].append(v)
    last = rows.take(pa.array(ends))
    columns = {name: last.column(name) for name in last.column_names}
    columns[VALUE_KIND] = pa.array(out_kinds, pa.int8())
    columns[SEQUENCE_NUMBER] = pa.array(out_seqs, type=rows.schema.field(SEQUENCE_NUMBER).type)
    for j, name in enumerate(value_columns):
        columns[name] = pa.array(out_values[j], type=rows.schema.field(name).type)
    return pa.table([columns[n] for n in rows.column_names], schema=rows.schema)


def _init_row(values: list[Any], not_null: Sequence[bool]) -> list[Any]:
    """Java's ``initRow``: a fresh row holding only the NOT NULL fields of ``values`` (nullable fields null)."""
    return [v if nn else None for v, nn in zip(values, not_null, strict=True)]


def _partial_update_folder(options: Mapping[str, str], not_null: Sequence[bool]) -> Folder:
    """Java 1.2 ``PartialUpdateMergeFunction`` without sequence groups."""
    ignore_delete = _ignore_delete(options)
    remove_on_delete = _truthy(options, "partial-update.remove-record-on-delete")
    if any(k.startswith("fields.") and k.endswith(".sequence-group") for k in options):
        raise PlanError("partial-update with sequence groups (fields.*.sequence-group) is not supported here")
    if ignore_delete and remove_on_delete:
        raise PlanError(
            "ignore-delete=true and partial-update.remove-record-on-delete=true have conflicting behavior: expected "
            "at most one of them (Java's PartialUpdateMergeFunction refuses both)"
        )

    def fold(kinds: list[int], seqs: list[int], group: list[list[Any]]) -> tuple[list[Any], int, int]:
        row: list[Any] = [None] * len(group[0])
        filled = meet_insert = delete_row = False
        latest_seq = 0
        for kind, seq, values in zip(kinds, seqs, group, strict=True):
            delete_row = False
            if kind in RETRACT_KINDS:
                if not filled:
                    row = [v if nn else r for r, v, nn in zip(row, values, not_null, strict=True)]
                    filled = True
                if ignore_delete:
                    continue
                latest_seq = seq
                if remove_on_delete:
                    if kind == DELETE:
                        delete_row, row = True, _init_row(values, not_null)
                    continue  # -U: no change
                raise PlanError(
                    "partial-update cannot merge a retraction (-U/-D): set ignore-delete=true or "
                    "partial-update.remove-record-on-delete=true, as Java's PartialUpdateMergeFunction requires"
                )
            latest_seq = seq
            row = [v if v is not None else r for r, v in zip(row, values, strict=True)]
            meet_insert = filled = True
        return row, (DELETE if delete_row or not meet_insert else INSERT), latest_seq

    return fold


_RETRACTABLE = {"sum", "last_value", "last_non_null_value"}
_AGGREGATES = _RETRACTABLE | {"max", "min", "first_value", "first_non_null_value", "bool_and", "bool_or"}


_BOOLEAN = {"bool_and", "bool_or"}


def _aggregate_folder(
    value_columns: Sequence[str],
    primary_keys: Sequence[str],
    options: Mapping[str, str],
    types: Sequence[pa.DataType],
    not_null: Sequence[bool],
) -> Folder:
    """Java 1.2 ``AggregateMergeFunction`` with its field aggregators (``Field*Agg``), without sequence groups."""
    default = options.get("fields.default-aggregate-function", "last_non_null_value").strip()
    functions = []
    ignore_retract = []
    for name, type_ in zip(value_columns, types, strict=True):
        fn = "primary-key" if name in primary_keys else options.get(f"fields.{name}.aggregate-function", default)
        fn = fn.strip()
        if fn != "primary-key" and fn not in _AGGREGATES:
            raise PlanError(
                f"fields.{name}.aggregate-function={fn!r}: expected one of {sorted(_AGGREGATES)} (supported here)"
            )
        if fn in _BOOLEAN and not pa.types.is_boolean(type_):
            raise PlanError(
                f"fields.{name}.aggregate-function={fn}: column {name!r} is {type_}, expected BOOLEAN (Java's "
                f"Field{'BoolAnd' if fn == 'bool_and' else 'BoolOr'}AggFactory refuses other types)"
            )
        functions.append(fn)
        ignore_retract.append(_truthy(options, f"fields.{name}.ignore-retract"))
    remove_on_delete = _truthy(options, "aggregation.remove-record-on-delete")

    def fold(kinds: list[int], seqs: list[int], group: list[list[Any]]) -> tuple[list[Any], int, int]:
        row: list[Any] = [None] * len(functions)
        # first_value / first_non_null_value keep an "initialized" flag, reset per key only (not by a DELETE that
        # removes the record: Java resets the row there, not the aggregators)
        initialized = [False] * len(functions)
        delete_row = False
        for kind, values in zip(kinds, group, strict=True):
            delete_row = remove_on_delete and kind == DELETE
            if delete_row:
                row = _init_row(values, not_null)
                continue
            retract = kind in RETRACT_KINDS
            for j, fn in enumerate(functions):
                row[j], initialized[j] = _aggregate(
                    fn, row[j], values[j], initialized[j], retract=retract, ignore_retract=ignore_retract[j],
                    field=value_columns[j],
                )  # fmt: skip
        return row, (DELETE if delete_row else INSERT), seqs[-1]

    return fold


def _aggregate(
    fn: str, acc: Any, value: Any, initialized: bool, *, retract: bool, ignore_retract: bool, field: str
) -> tuple[Any, bool]:
    """One field of Java's ``AggregateMergeFunction.add``: ``(new accumulator, initialized)``; a null accumulator
    is a null field, as Java keeps it in the row."""
    if fn == "primary-key":
        return value, initialized
    if retract:
        if ignore_retract:
            return acc, initialized
        if fn not in _RETRACTABLE:
            raise PlanError(
                f"aggregate function {fn!r} of field {field!r} cannot retract (-U/-D): set "
                f"fields.{field}.ignore-retract=true, as Java's AggregateMergeFunction requires"
            )
        if fn == "sum":
            if acc is None or value is None:
                return (None if value is None else -value) if acc is None else acc, initialized
            return acc - value, initialized
        if fn == "last_non_null_value":
            return (None if value is not None else acc), initialized
        return None, initialized  # last_value
    if fn == "last_value":
        return value, initialized
    if fn == "last_non_null_value":
        return (acc if value is None else value), initialized
    if fn == "first_value":
        return (acc, True) if initialized else (value, True)
    if fn == "first_non_null_value":
        return (value, True) if not initialized and value is not None else (acc, initialized)
    if acc is None or value is None:
        return (value if acc is None else acc), initialized
    if fn == "sum":
        return acc + value, initialized
    if fn == "max":
        return (value if acc < value else acc), initialized
    if fn == "min":
        return (acc if acc < value else value), initialized
    if fn == "bool_and":
        return acc and value, initialized
    return acc or value, initialized  # bool_or
