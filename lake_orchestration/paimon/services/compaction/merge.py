"""The sort-merge of sorted runs with a merge engine (Java ``SortMergeReader`` + ``MergeFunction``), on Arrow tables.

Input: the rows of every file of a rewrite (``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and the value
columns). They are sorted by key, then by ``sequence.field`` (when set), then by ``_SEQUENCE_NUMBER`` (Java's key
comparator and user-defined sequence comparator; Arrow compares strings by bytes as ``BinaryString`` does), and each
key's rows are merged in that order:

* ``deduplicate`` (``DeduplicateMergeFunction``): the last row.
* ``first-row`` (``FirstRowMergeFunction``): the first row that is not a retraction.
* ``partial-update`` (``PartialUpdateMergeFunction``, without sequence groups): non-null fields of later rows
  overwrite; a retraction is skipped with ``ignore-delete`` / ``partial-update.ignore-delete``, resets the row with
  ``partial-update.remove-record-on-delete`` (a DELETE), and is refused otherwise, as Java throws.
* ``aggregation`` (``AggregateMergeFunction``): each value field folds with ``fields.<f>.aggregate-function`` (else
  ``fields.default-aggregate-function``, else ``last_non_null_value``): ``sum``, ``max``, ``min``, ``last_value``,
  ``last_non_null_value``, ``first_value``, ``first_non_null_value``, ``bool_and``, ``bool_or``; retractions
  retract (``sum``, ``last_value``, ``last_non_null_value``) or are ignored with ``fields.<f>.ignore-retract``.

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
        kept = rows.filter(pc.invert(pc.is_in(rows.column(VALUE_KIND), pa.array(RETRACT_KINDS, pa.int8()))))
        first, _ = _group_bounds(kept, key_columns)
        merged = kept.take(pa.array(first))
    elif engine is MergeEngine.PARTIAL_UPDATE:
        merged = _fold(rows, starts, ends, value_columns, _partial_update_folder(options))
    else:
        merged = _fold(rows, starts, ends, value_columns, _aggregate_folder(value_columns, primary_keys, options))
    if drop_delete:
        merged = merged.filter(pc.invert(pc.is_in(merged.column(VALUE_KIND), pa.array(RETRACT_KINDS, pa.int8()))))
    return merged


Folder = Callable[[list[int], list[list[Any]]], tuple[list[Any], int]]


def _fold(rows: pa.Table, starts: np.ndarray, ends: np.ndarray, value_columns: Sequence[str], fold: Folder) -> pa.Table:
    """One output row per key: key and sequence number of the key's last row, value kind and values from ``fold``
    (given the kinds and the value tuples of the key's rows, in merge order)."""
    kinds = rows.column(VALUE_KIND).to_pylist()
    values = [rows.column(c).to_pylist() for c in value_columns]
    out_values: list[list[Any]] = [[] for _ in value_columns]
    out_kinds: list[int] = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        group = [[col[i] for col in values] for i in range(start, end + 1)]
        merged, kind = fold(kinds[start : end + 1], group)
        out_kinds.append(kind)
        for j, v in enumerate(merged):
            out_values[j].append(v)
    last = rows.take(pa.array(ends))
    columns = {name: last.column(name) for name in last.column_names}
    columns[VALUE_KIND] = pa.array(out_kinds, pa.int8())
    for j, name in enumerate(value_columns):
        columns[name] = pa.array(out_values[j], type=rows.schema.field(name).type)
    return pa.table([columns[n] for n in rows.column_names], schema=rows.schema)


def _partial_update_folder(options: Mapping[str, str]) -> Folder:
    ignore_delete = _truthy(options, "ignore-delete") or _truthy(options, "partial-update.ignore-delete")
    remove_on_delete = _truthy(options, "partial-update.remove-record-on-delete")
    if any(k.startswith("fields.") and k.endswith(".sequence-group") for k in options):
        raise PlanError("partial-update with sequence groups (fields.*.sequence-group) is not supported here")

    def fold(kinds: list[int], group: list[list[Any]]) -> tuple[list[Any], int]:
        row: list[Any] = [None] * len(group[0])
        deleted = False
        for kind, values in zip(kinds, group, strict=True):
            if kind in RETRACT_KINDS:
                if ignore_delete:
                    continue
                if remove_on_delete and kind == DELETE:
                    row, deleted = [None] * len(values), True
                    continue
                raise PlanError(
                    "partial-update cannot merge a retraction (-U/-D): set ignore-delete=true or "
                    "partial-update.remove-record-on-delete=true, as Java's PartialUpdateMergeFunction requires"
                )
            deleted = False
            row = [v if v is not None else r for r, v in zip(row, values, strict=True)]
        return (values if deleted else row), (DELETE if deleted else INSERT)

    return fold


_RETRACTABLE = {"sum", "last_value", "last_non_null_value"}
_AGGREGATES = _RETRACTABLE | {"max", "min", "first_value", "first_non_null_value", "bool_and", "bool_or"}
_UNSET = object()


def _aggregate_folder(value_columns: Sequence[str], primary_keys: Sequence[str], options: Mapping[str, str]) -> Folder:
    default = options.get("fields.default-aggregate-function", "last_non_null_value").strip()
    functions = []
    ignore_retract = []
    for name in value_columns:
        fn = "primary-key" if name in primary_keys else options.get(f"fields.{name}.aggregate-function", default)
        fn = fn.strip()
        if fn != "primary-key" and fn not in _AGGREGATES:
            raise PlanError(
                f"fields.{name}.aggregate-function={fn!r}: expected one of {sorted(_AGGREGATES)} (supported here)"
            )
        functions.append(fn)
        ignore_retract.append(_truthy(options, f"fields.{name}.ignore-retract"))
    remove_on_delete = _truthy(options, "aggregation.remove-record-on-delete")

    def fold(kinds: list[int], group: list[list[Any]]) -> tuple[list[Any], int]:
        acc: list[Any] = [_UNSET] * len(functions)
        deleted = False
        for kind, values in zip(kinds, group, strict=True):
            retract = kind in RETRACT_KINDS
            if retract and remove_on_delete and kind == DELETE:
                acc, deleted = [_UNSET] * len(functions), True
                continue
            deleted = False
            for j, fn in enumerate(functions):
                acc[j] = _aggregate(fn, acc[j], values[j], retract=retract, ignore_retract=ignore_retract[j],
                                    field=value_columns[j])  # fmt: skip
        row = [None if a is _UNSET else a for a in acc]
        if deleted:
            return group[-1], DELETE
        return row, INSERT

    return fold


def _aggregate(fn: str, acc: Any, value: Any, *, retract: bool, ignore_retract: bool, field: str) -> Any:
    if fn == "primary-key":
        return value
    if retract:
        if ignore_retract:
            return acc
        if fn not in _RETRACTABLE:
            raise PlanError(
                f"aggregate function {fn!r} of field {field!r} cannot retract (-U/-D): set "
                f"fields.{field}.ignore-retract=true, as Java's AggregateMergeFunction requires"
            )
        if fn == "sum":
            if value is None:
                return acc
            return -value if acc is _UNSET or acc is None else acc - value
        if fn == "last_non_null_value":
            return None if value is not None else acc
        return None  # last_value
    if fn == "last_value":
        return value
    if fn == "last_non_null_value":
        return acc if value is None else value
    if fn == "first_value":
        return value if acc is _UNSET else acc
    if fn == "first_non_null_value":
        return value if (acc is _UNSET or acc is None) else acc
    if acc is _UNSET or acc is None:
        return value
    if value is None:
        return acc
    if fn == "sum":
        return acc + value
    if fn == "max":
        return max(acc, value)
    if fn == "min":
        return min(acc, value)
    if fn == "bool_and":
        return acc and value
    return acc or value  # bool_or
