"""Our merge engines (``merge_rows``) against an independent model of Java Paimon 1.2's merge functions.

The model below is a row-at-a-time transliteration of Java (tag ``release-1.2.0``, paimon-core
``mergetree/compact``): ``PartialUpdateMergeFunction`` (no sequence groups), ``FirstRowMergeFunction``,
``AggregateMergeFunction`` with ``FieldFirstValueAgg``, ``FieldFirstNonNullValueAgg``, ``FieldMinAgg``,
``FieldMaxAgg``, ``FieldSumAgg``, ``FieldBoolAndAgg``, ``FieldBoolOrAgg``, ``FieldLastValueAgg``,
``FieldLastNonNullValueAgg``, ``FieldPrimaryKeyAgg``, ``FieldIgnoreRetractAgg``, driven as ``MergeTreeCompactRewriter``
drives them (``ReducerMergeFunctionWrapper``: a key's single row passes through; first-row goes through the lookup
rewriter's ``FirstRowMergeFunctionWrapper``, which always calls the merge function), then ``DropDeleteReader``. It
keeps Java's state (``initialized`` flags, ``meetInsert``, ``latestSequenceNumber``, ``initRow`` of NOT NULL fields)
rather than our fold's structure. Java's exceptions are :class:`JavaRefuses`; ours must then be a ``PlanError``.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pyarrow as pa
import pytest

from lake_orchestration.errors import PlanError
from lake_orchestration.paimon.model.options import MergeEngine
from lake_orchestration.paimon.services.compaction.merge import merge_rows

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
# value columns: k INT NOT NULL (primary key), n BIGINT NOT NULL, a BIGINT, b STRING, c BOOLEAN
COLUMNS = ("k", "n", "a", "b", "c")
NOT_NULL = (True, True, False, False, False)
TYPES = (pa.int32(), pa.int64(), pa.int64(), pa.string(), pa.bool_())

Row = tuple[int, int, int, tuple[Any, ...]]  # (key, sequence number, kind, values)


class JavaRefuses(Exception):
    """Java throws (IllegalArgumentException / UnsupportedOperationException / IllegalStateException)."""


def _truthy(options: dict[str, str], key: str) -> bool:
    return options.get(key, "false") == "true"


def _ignore_delete(options: dict[str, str]) -> bool:
    # CoreOptions.IGNORE_DELETE: "ignore-delete" with fallback keys
    return any(
        _truthy(options, k)
        for k in (
            "ignore-delete",
            "first-row.ignore-delete",
            "deduplicate.ignore-delete",
            "partial-update.ignore-delete",
        )
    )


def _init_row(row: list[Any], values: tuple[Any, ...]) -> None:
    for i, nn in enumerate(NOT_NULL):
        if nn:
            if values[i] is None:
                raise JavaRefuses(f"Field {i} can not be null")
            row[i] = values[i]


class PartialUpdate:
    """``PartialUpdateMergeFunction`` (1.2), no sequence groups."""

    def __init__(self, options: dict[str, str]) -> None:
        self.ignore_delete = _ignore_delete(options)
        self.remove_record_on_delete = _truthy(options, "partial-update.remove-record-on-delete")
        if self.ignore_delete and self.remove_record_on_delete:
            raise JavaRefuses("ignore-delete and partial-update.remove-record-on-delete have conflicting behavior")

    def reset(self) -> None:
        self.key: int | None = None
        self.meet_insert = False
        self.not_null_column_filled = False
        self.row: list[Any] = [None] * len(COLUMNS)
        self.latest_sequence_number = 0
        self.current_delete_row = False

    def add(self, kv: Row) -> None:
        key, seq, kind, value = kv
        self.key = key
        self.current_delete_row = False
        if kind in (UPDATE_BEFORE, DELETE):
            if not self.not_null_column_filled:
                _init_row(self.row, value)
                self.not_null_column_filled = True
            if self.ignore_delete:
                return
            self.latest_sequence_number = seq
            if self.remove_record_on_delete:
                if kind == DELETE:
                    self.current_delete_row = True
                    self.row = [None] * len(COLUMNS)
                    _init_row(self.row, value)
                return
            raise JavaRefuses("By default, Partial update can not accept delete records")
        self.latest_sequence_number = seq
        for i, field in enumerate(value):
            if field is not None:
                self.row[i] = field
            elif NOT_NULL[i]:
                raise JavaRefuses(f"Field {i} can not be null")
        self.meet_insert = True
        self.not_null_column_filled = True

    def result(self) -> Row | None:
        kind = DELETE if self.current_delete_row or not self.meet_insert else INSERT
        assert self.key is not None
        return (self.key, self.latest_sequence_number, kind, tuple(self.row))


class FirstRow:
    """``FirstRowMergeFunction`` (1.2)."""

    def __init__(self, options: dict[str, str]) -> None:
        self.ignore_delete = _ignore_delete(options)

    def reset(self) -> None:
        self.first: Row | None = None

    def add(self, kv: Row) -> None:
        if kv[2] in (UPDATE_BEFORE, DELETE):
            if self.ignore_delete:
                return
            raise JavaRefuses("By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records.")
        if self.first is None:
            self.first = kv

    def result(self) -> Row | None:
        return self.first


class Agg:
    """``FieldAggregator``: ``retract`` throws unless overridden."""

    name = "?"

    def reset(self) -> None:
        pass

    def agg(self, acc: Any, value: Any) -> Any:
        raise NotImplementedError

    def retract(self, acc: Any, value: Any) -> Any:
        raise JavaRefuses(f"Aggregate function '{self.name}' does not support retraction")


class PrimaryKeyAgg(Agg):
    name = "primary-key"

    def agg(self, acc: Any, value: Any) -> Any:
        return value

    def retract(self, acc: Any, value: Any) -> Any:
        return value


class FirstValueAgg(Agg):
    name = "first_value"

    def reset(self) -> None:
        self.initialized = False

    def agg(self, acc: Any, value: Any) -> Any:
        if not self.initialized:
            self.initialized = True
            return value
        return acc


class FirstNonNullValueAgg(Agg):
    name = "first_non_null_value"

    def reset(self) -> None:
        self.initialized = False

    def agg(self, acc: Any, value: Any) -> Any:
        if not self.initialized and value is not None:
            self.initialized = True
            return value
        return acc


class NullSkipping(Agg):
    """min, max, sum, bool_and, bool_or: ``if (acc == null || input == null) return acc == null ? input : acc``."""

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return self.combine(acc, value)

    def combine(self, acc: Any, value: Any) -> Any:
        raise NotImplementedError


class MinAgg(NullSkipping):
    name = "min"

    def combine(self, acc: Any, value: Any) -> Any:
        return acc if acc < value else value  # compare(acc, input) < 0 ? acc : input


class MaxAgg(NullSkipping):
    name = "max"

    def combine(self, acc: Any, value: Any) -> Any:
        return value if acc < value else acc


class BoolAndAgg(NullSkipping):
    name = "bool_and"

    def combine(self, acc: Any, value: Any) -> Any:
        return bool(acc) and bool(value)


class BoolOrAgg(NullSkipping):
    name = "bool_or"

    def combine(self, acc: Any, value: Any) -> Any:
        return bool(acc) or bool(value)


class SumAgg(NullSkipping):
    name = "sum"

    def combine(self, acc: Any, value: Any) -> Any:
        return acc + value

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return (None if value is None else -value) if acc is None else acc
        return acc - value


class LastValueAgg(Agg):
    name = "last_value"

    def agg(self, acc: Any, value: Any) -> Any:
        return value

    def retract(self, acc: Any, value: Any) -> Any:
        return None


class LastNonNullValueAgg(Agg):
    name = "last_non_null_value"

    def agg(self, acc: Any, value: Any) -> Any:
        return acc if value is None else value

    def retract(self, acc: Any, value: Any) -> Any:
        return None if value is not None else acc


class IgnoreRetractAgg(Agg):
    def __init__(self, inner: Agg) -> None:
        self.inner = inner
        self.name = inner.name

    def reset(self) -> None:
        self.inner.reset()

    def agg(self, acc: Any, value: Any) -> Any:
        return self.inner.agg(acc, value)

    def retract(self, acc: Any, value: Any) -> Any:
        return acc


AGGS: dict[str, type[Agg]] = {
    a.name: a
    for a in (FirstValueAgg, FirstNonNullValueAgg, MinAgg, MaxAgg, BoolAndAgg, BoolOrAgg, SumAgg, LastValueAgg)
}
AGGS["last_non_null_value"] = LastNonNullValueAgg


class Aggregate:
    """``AggregateMergeFunction`` (1.2), no sequence groups."""

    def __init__(self, options: dict[str, str]) -> None:
        self.aggregators: list[Agg] = []
        for name, type_ in zip(COLUMNS, TYPES, strict=True):
            if name == "k":
                self.aggregators.append(PrimaryKeyAgg())
                continue
            fn = options.get(f"fields.{name}.aggregate-function") or options.get(
                "fields.default-aggregate-function", "last_non_null_value"
            )
            if fn in ("bool_and", "bool_or") and type_ != pa.bool_():
                raise JavaRefuses(f"Data type for {fn} column must be 'BooleanType' but was '{type_}'.")
            agg = AGGS[fn]()
            self.aggregators.append(IgnoreRetractAgg(agg) if _truthy(options, f"fields.{name}.ignore-retract") else agg)
        self.remove_record_on_delete = _truthy(options, "aggregation.remove-record-on-delete")

    def reset(self) -> None:
        self.latest: Row | None = None
        self.row: list[Any] = [None] * len(COLUMNS)
        for a in self.aggregators:
            a.reset()
        self.current_delete_row = False

    def add(self, kv: Row) -> None:
        self.latest = kv
        self.current_delete_row = self.remove_record_on_delete and kv[2] == DELETE
        if self.current_delete_row:
            self.row = [None] * len(COLUMNS)
            _init_row(self.row, kv[3])
            return
        retract = kv[2] in (UPDATE_BEFORE, DELETE)
        for i, a in enumerate(self.aggregators):
            self.row[i] = a.retract(self.row[i], kv[3][i]) if retract else a.agg(self.row[i], kv[3][i])

    def result(self) -> Row | None:
        assert self.latest is not None
        return (self.latest[0], self.latest[1], DELETE if self.current_delete_row else INSERT, tuple(self.row))


def java_merge(rows: list[Row], engine: MergeEngine, options: dict[str, str], drop_delete: bool) -> list[Row]:
    """What Java's compaction rewrite writes for ``rows`` (a key's rows in sequence order, one output per key)."""
    function = {MergeEngine.PARTIAL_UPDATE: PartialUpdate, MergeEngine.FIRST_ROW: FirstRow}.get(engine, Aggregate)(
        options
    )
    out = []
    for _, group_iter in itertools.groupby(sorted(rows, key=lambda r: (r[0], r[1])), key=lambda r: r[0]):
        group = list(group_iter)
        function.reset()
        if engine is not MergeEngine.FIRST_ROW and len(group) == 1:
            result: Row | None = group[0]  # ReducerMergeFunctionWrapper: the single row as it is
        else:
            for kv in group:
                function.add(kv)
            result = function.result()
        if result is None or (drop_delete and result[2] in (UPDATE_BEFORE, DELETE)):
            continue
        out.append(result)
    return out


def _table(rows: list[Row]) -> pa.Table:
    schema = pa.schema(
        [
            pa.field("_KEY_k", pa.int32(), nullable=False),
            pa.field("_SEQUENCE_NUMBER", pa.int64(), nullable=False),
            pa.field("_VALUE_KIND", pa.int8(), nullable=False),
            *(pa.field(n, t, nullable=not nn) for n, t, nn in zip(COLUMNS, TYPES, NOT_NULL, strict=True)),
        ]
    )
    cols: list[list[Any]] = [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]]
    cols += [[r[3][i] for r in rows] for i in range(len(COLUMNS))]
    return pa.table(cols, schema=schema)


def ours(rows: list[Row], engine: MergeEngine, options: dict[str, str], drop_delete: bool) -> list[Row]:
    merged = merge_rows(
        _table(rows),
        key_columns=["_KEY_k"],
        value_columns=list(COLUMNS),
        primary_keys=["k"],
        engine=engine,
        options=options,
        drop_delete=drop_delete,
    )
    return [
        (r["_KEY_k"], r["_SEQUENCE_NUMBER"], r["_VALUE_KIND"], tuple(r[c] for c in COLUMNS)) for r in merged.to_pylist()
    ]


def check(rows: list[Row], engine: MergeEngine, options: dict[str, str], drop_delete: bool = False) -> list[Row]:
    """Ours equals the model; both refuse or neither. Returns the model's rows (or [] when refused)."""
    try:
        expected = java_merge(rows, engine, options, drop_delete)
    except JavaRefuses:
        with pytest.raises(PlanError):
            ours(rows, engine, options, drop_delete)
        return []
    assert ours(rows, engine, options, drop_delete) == expected, (rows, engine, options, drop_delete)
    return expected


def _v(n: int, a: Any = None, b: Any = None, c: Any = None, k: int = 1) -> tuple[Any, ...]:
    return (k, n, a, b, c)


# -- partial-update: a key deleted, then inserted again ---------------------------------------------------------------
DELETED_THEN_REINSERTED = [(1, 1, INSERT, _v(10, 1, "x", True)), (1, 2, DELETE, _v(20, 1, "x", True)),
                           (1, 3, INSERT, _v(30, None, "y"))]  # fmt: skip


def test_partial_update_delete_then_reinsert_without_option_is_refused_as_java() -> None:
    assert check(DELETED_THEN_REINSERTED, MergeEngine.PARTIAL_UPDATE, {}) == []


def test_partial_update_delete_then_reinsert_remove_record_on_delete_starts_from_the_delete() -> None:
    opts = {"partial-update.remove-record-on-delete": "true"}
    # the DELETE reset the row to its NOT NULL fields (n=20); the re-insert fills a null a and b=y, c stays null
    assert check(DELETED_THEN_REINSERTED, MergeEngine.PARTIAL_UPDATE, opts) == [
        (1, 3, INSERT, (1, 30, None, "y", None))
    ]
    # deleted last: a DELETE that keeps only NOT NULL fields, dropped by a compaction that drops deletes
    deleted_last = [*DELETED_THEN_REINSERTED, (1, 4, DELETE, _v(40, 7, "z", False))]
    assert check(deleted_last, MergeEngine.PARTIAL_UPDATE, opts) == [(1, 4, DELETE, (1, 40, None, None, None))]
    assert check(deleted_last, MergeEngine.PARTIAL_UPDATE, opts, drop_delete=True) == []
    # -U changes nothing under remove-record-on-delete (only -D removes), but takes the sequence number
    with_ub = [*DELETED_THEN_REINSERTED, (1, 5, UPDATE_BEFORE, _v(30, None, "y"))]
    assert check(with_ub, MergeEngine.PARTIAL_UPDATE, opts) == [(1, 5, INSERT, (1, 30, None, "y", None))]


def test_partial_update_delete_then_reinsert_ignore_delete_keeps_the_old_fields() -> None:
    for key in ("ignore-delete", "partial-update.ignore-delete"):
        # the delete is skipped, its sequence number too
        assert check(DELETED_THEN_REINSERTED, MergeEngine.PARTIAL_UPDATE, {key: "true"}) == [
            (1, 3, INSERT, (1, 30, 1, "y", True))
        ]
    only_deletes = [(1, 1, DELETE, _v(10, 1)), (1, 2, UPDATE_BEFORE, _v(11, 2))]
    # no insert met: a DELETE (sequence 0, NOT NULL fields of the first retraction), never an all-null INSERT
    assert check(only_deletes, MergeEngine.PARTIAL_UPDATE, {"ignore-delete": "true"}) == [
        (1, 0, DELETE, (1, 10, None, None, None))
    ]
    assert check(only_deletes, MergeEngine.PARTIAL_UPDATE, {"ignore-delete": "true"}, drop_delete=True) == []


def test_partial_update_single_retraction_passes_through_and_conflicting_options_refused() -> None:
    lone = [(1, 4, DELETE, _v(10, 1, "x"))]
    for opts in ({}, {"ignore-delete": "true"}, {"partial-update.remove-record-on-delete": "true"}):
        assert check(lone, MergeEngine.PARTIAL_UPDATE, opts) == lone
        assert check(lone, MergeEngine.PARTIAL_UPDATE, opts, drop_delete=True) == []
    both = {"ignore-delete": "true", "partial-update.remove-record-on-delete": "true"}
    assert check(DELETED_THEN_REINSERTED, MergeEngine.PARTIAL_UPDATE, both) == []


# -- first-row: the oldest row of a key is a retraction ---------------------------------------------------------------
@pytest.mark.parametrize("oldest", [DELETE, UPDATE_BEFORE], ids=["-D", "-U"])
def test_first_row_oldest_row_a_retraction(oldest: int) -> None:
    rows = [(1, 1, oldest, _v(10, 1, "old")), (1, 2, INSERT, _v(20, 2, "first")), (1, 3, INSERT, _v(30, 3, "later")),
            (2, 1, INSERT, _v(5, k=2)), (2, 2, oldest, _v(5, k=2))]  # fmt: skip
    for key in ("ignore-delete", "first-row.ignore-delete"):
        assert check(rows, MergeEngine.FIRST_ROW, {key: "true"}) == [
            (1, 2, INSERT, (1, 20, 2, "first", None)),
            (2, 1, INSERT, (2, 5, None, None, None)),
        ]
    assert check(rows, MergeEngine.FIRST_ROW, {}) == []  # Java refuses DELETE/UPDATE_BEFORE without ignore-delete


# -- aggregation: first_value, first_non_null_value, min, bool_and, bool_or --------------------------------------------
AGG_ROWS = [(1, 1, INSERT, _v(1, None, None, None)), (1, 2, INSERT, _v(2, 5, "b", True)),
            (1, 3, INSERT, _v(3, 3, None, None)), (1, 4, UPDATE_AFTER, _v(4, 9, "d", False)),
            (2, 1, INSERT, _v(1, None, None, None, k=2)), (2, 2, INSERT, _v(2, None, None, None, k=2))]  # fmt: skip


def test_aggregate_first_value_first_non_null_min_bool_with_nulls() -> None:
    def agg(a: str, b: str, c: str) -> dict[str, str]:
        return {"fields.a.aggregate-function": a, "fields.b.aggregate-function": b, "fields.c.aggregate-function": c,
                "fields.n.aggregate-function": "sum"}  # fmt: skip

    assert check(AGG_ROWS, MergeEngine.AGGREGATE, agg("first_value", "first_non_null_value", "bool_and")) == [
        (1, 4, INSERT, (1, 10, None, "b", False)),  # first_value keeps the first row's null
        (2, 2, INSERT, (2, 3, None, None, None)),
    ]
    assert check(AGG_ROWS, MergeEngine.AGGREGATE, agg("first_non_null_value", "first_value", "bool_or")) == [
        (1, 4, INSERT, (1, 10, 5, None, True)),
        (2, 2, INSERT, (2, 3, None, None, None)),
    ]
    assert check(AGG_ROWS, MergeEngine.AGGREGATE, agg("min", "min", "bool_and")) == [
        (1, 4, INSERT, (1, 10, 3, "b", False)),
        (2, 2, INSERT, (2, 3, None, None, None)),
    ]


@pytest.mark.parametrize("fn", ["first_value", "first_non_null_value", "min", "bool_and", "bool_or"])
@pytest.mark.parametrize("kind", [UPDATE_BEFORE, DELETE], ids=["-U", "-D"])
def test_aggregate_without_retraction_refused_unless_ignore_retract(fn: str, kind: int) -> None:
    column = "c" if fn.startswith("bool") else "a"
    value = True if column == "c" else 4
    rows = [*AGG_ROWS, (1, 5, kind, _v(1, *((value, None, None) if column == "a" else (None, None, value))))]
    opts = {f"fields.{column}.aggregate-function": fn}
    assert check(rows, MergeEngine.AGGREGATE, opts) == []  # UnsupportedOperationException in Java
    ignored = check(rows, MergeEngine.AGGREGATE, {**opts, f"fields.{column}.ignore-retract": "true"})
    assert ignored[0][:3] == (1, 5, INSERT)
    # a single retraction of a key passes through untouched (no aggregator called, so no refusal)
    lone = [(3, 1, kind, _v(1, 4, k=3))]
    assert check(lone, MergeEngine.AGGREGATE, opts) == lone


def test_aggregate_bool_on_a_non_boolean_column_refused_and_remove_record_on_delete() -> None:
    assert check(AGG_ROWS, MergeEngine.AGGREGATE, {"fields.a.aggregate-function": "bool_and"}) == []
    opts = {"aggregation.remove-record-on-delete": "true", "fields.a.aggregate-function": "first_value",
            "fields.b.aggregate-function": "first_non_null_value", "fields.n.aggregate-function": "sum"}  # fmt: skip
    rows = [(1, 1, INSERT, _v(1, 7, "x")), (1, 2, DELETE, _v(100, 7, "x")), (1, 3, INSERT, _v(2, 8, "y"))]
    # Java resets the row to the DELETE's NOT NULL fields but not the aggregators: first_value stays "initialized"
    # (a and b stay null), sum continues from the DELETE's n
    assert check(rows, MergeEngine.AGGREGATE, opts) == [(1, 3, INSERT, (1, 102, None, None, None))]
    assert check(rows[:2], MergeEngine.AGGREGATE, opts) == [(1, 2, DELETE, (1, 100, None, None, None))]


# -- random sequences: every engine and option set, ours == the model -------------------------------------------------
OPTION_SETS: list[tuple[MergeEngine, dict[str, str]]] = [
    (MergeEngine.PARTIAL_UPDATE, {}),
    (MergeEngine.PARTIAL_UPDATE, {"ignore-delete": "true"}),
    (MergeEngine.PARTIAL_UPDATE, {"partial-update.remove-record-on-delete": "true"}),
    (MergeEngine.FIRST_ROW, {}),
    (MergeEngine.FIRST_ROW, {"first-row.ignore-delete": "true"}),
    (MergeEngine.AGGREGATE, {"fields.a.aggregate-function": "first_value", "fields.b.aggregate-function": "min",
                             "fields.c.aggregate-function": "bool_or", "fields.n.aggregate-function": "sum"}),
    (MergeEngine.AGGREGATE, {"fields.a.aggregate-function": "min", "fields.a.ignore-retract": "true",
                             "fields.b.aggregate-function": "first_non_null_value", "fields.b.ignore-retract": "true",
                             "fields.c.aggregate-function": "bool_and", "fields.c.ignore-retract": "true",
                             "fields.n.aggregate-function": "sum"}),
    (MergeEngine.AGGREGATE, {"fields.a.aggregate-function": "first_value", "fields.a.ignore-retract": "true",
                             "fields.b.aggregate-function": "last_value", "fields.c.ignore-retract": "true",
                             "fields.c.aggregate-function": "bool_or", "aggregation.remove-record-on-delete": "true"}),
    (MergeEngine.AGGREGATE, {"fields.default-aggregate-function": "last_non_null_value",
                             "fields.a.aggregate-function": "sum", "fields.n.aggregate-function": "max"}),
]  # fmt: skip


@pytest.mark.parametrize(("engine", "options"), OPTION_SETS, ids=[f"{e.value}-{i}" for i, (e, _) in
                                                                   enumerate(OPTION_SETS)])  # fmt: skip
def test_random_rows_merge_equal_to_java_model(engine: MergeEngine, options: dict[str, str]) -> None:
    rnd = random.Random(f"{engine.value}-{sorted(options.items())}")
    outcomes = {"merged": 0, "refused": 0}
    for _ in range(300):
        rows: list[Row] = []
        for seq in rnd.sample(range(1, 1000), rnd.randint(1, 12)):
            key = rnd.randint(1, 4)
            kind = rnd.choice([INSERT, INSERT, INSERT, UPDATE_AFTER, UPDATE_BEFORE, DELETE])
            a = rnd.choice([None, rnd.randint(-3, 3)])
            values = (key, rnd.randint(-5, 5), a, rnd.choice([None, "p", "q", "r"]), rnd.choice([None, True, False]))
            rows.append((key, seq, kind, values))
        rnd.shuffle(rows)  # file order is not merge order
        check(rows, engine, options, drop_delete=rnd.random() < 0.5)
        outcomes["refused" if java_merge_refuses(rows, engine, options) else "merged"] += 1
    assert outcomes["merged"] >= 30, outcomes


def java_merge_refuses(rows: list[Row], engine: MergeEngine, options: dict[str, str]) -> bool:
    try:
        java_merge(rows, engine, options, False)
    except JavaRefuses:
        return True
    return False
