"""Column-wise Avro encoding of log data blocks writes the bytes fastavro writes, record by record.

The reference is fastavro's ``schemaless_writer`` on the rows as Arrow's ``to_pylist`` gives them (the encoding the
project used before the column-wise encoder): for every supported type, nulls, unicode, empty strings, extreme
longs, nested nullable unions, arrays, records, sliced and chunked tables, and the fallbacks. Tables written by
upserts (log blocks) read back equal by hudi-rs.
"""

from __future__ import annotations

import io
import json
from datetime import date, datetime, time, timezone
from decimal import Context, Decimal
from itertools import count
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_orchestration.hudi.log import avro_encoder
from lake_orchestration.hudi.log.block_content import (
    decode_avro_data,
    encode_avro_data_content,
    encode_avro_table,
    encode_avro_table_records,
)
from lake_orchestration.hudi.model.schema import avro_to_arrow_schema


def fastavro_datums(rows: list[dict[str, Any]], schema: dict[str, Any]) -> list[bytes]:
    """The reference: fastavro's schemaless_writer, one record at a time."""
    parsed = fastavro.parse_schema(schema)
    out = []
    for r in rows:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        out.append(buf.getvalue())
    return out


def assert_encodes_like_fastavro(table: pa.Table, schema: dict[str, Any], *, vectorized: bool = True) -> None:
    names = [f["name"] for f in schema["fields"] if f["name"] in table.column_names]
    expected = fastavro_datums(table.select(names).to_pylist(), schema)
    if vectorized:  # the column-wise path itself, not its fastavro fallback
        encoder = avro_encoder._Encoder(schema)
        assert all(encoder.supports(f["type"]) for f in schema["fields"])
        assert avro_encoder.encode_records(table, schema) == expected
        body = avro_encoder.length_prefixed_body(table, schema)
        assert body == encode_avro_data_content(expected)[8:]
    assert encode_avro_table(table, schema) == encode_avro_data_content(expected)
    assert encode_avro_table_records(table, schema) == expected


def record(fields: list[tuple[str, Any]], name: str = "r") -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "namespace": "hoodie.t",
        "fields": [{"name": n, "type": t} for n, t in fields],
    }


# -- explicit cases ----------------------------------------------------------------------------------------------------
UTC = timezone.utc
LONGS = [0, 1, -1, 63, -64, 64, -65, 2**31 - 1, -(2**31), 2**53 + 1, 2**63 - 1, -(2**63), None]


def test_every_primitive_with_nulls_unicode_empty_strings_and_extreme_longs() -> None:
    schema = record(
        [
            ("b", ["null", "boolean"]),
            ("i", ["null", "int"]),
            ("l", ["null", "long"]),
            ("f", ["null", "float"]),
            ("d", ["null", "double"]),
            ("s", ["null", "string"]),
            ("y", ["null", "bytes"]),
            ("l_first", ["long", "null"]),
            ("s_plain", "string"),
        ]
    )
    n = len(LONGS)
    strings = ["", "a", "é", "日本語", "🙂 emoji", "x" * 300, "\x00nul", "tab\t", "", "z" * 70000, "ß", "€", None]
    table = pa.Table.from_pylist(
        [
            {
                "b": [True, False, None][k % 3],
                "i": [0, -1, 2**31 - 1, -(2**31), None][k % 5],
                "l": LONGS[k],
                "f": [1.5, -0.0, float("inf"), None, 3.4e38][k % 5],
                "d": [1e-300, -2.5, float("-inf"), 0.1, None][k % 5],
                "s": strings[k],
                "y": [b"", b"\x00\xff", None, bytes(range(256))][k % 4],
                "l_first": LONGS[n - 1 - k],
                "s_plain": strings[k] or "",
            }
            for k in range(n)
        ],
        schema=avro_to_arrow_schema(schema),
    )
    assert_encodes_like_fastavro(table, schema)


def test_null_second_unions_of_every_kind() -> None:
    """Pinned from what only the random schemas found: ``[T, "null"]`` (null as the SECOND branch: branch index 1
    for null, 0 for a value) for records, arrays, array items, maps of logical types and nested records, with nulls
    and values on alternate rows."""
    inner = {"type": "record", "name": "inner", "fields": [{"name": "x", "type": ["int", "null"]}]}
    schema = record(
        [
            ("rec", [inner, "null"]),
            ("arr", [{"type": "array", "items": ["string", "null"]}, "null"]),
            ("day", [{"type": "int", "logicalType": "date"}, "null"]),
            ("ts", [{"type": "long", "logicalType": "timestamp-micros"}, "null"]),
            ("dbl", ["double", "null"]),
            ("bts", ["bytes", "null"]),
        ]
    )
    rows = []
    for k in range(6):
        value = k % 2 == 0
        rows.append(
            {
                "rec": {"x": None if k % 4 == 0 else k} if value else None,
                "arr": ["a", None, ""] if value else None,
                "day": date(2024, 1, 1 + k) if value else None,
                "ts": datetime(2024, 1, 1, 0, 0, k, tzinfo=UTC) if value else None,
                "dbl": float(k) if value else None,
                "bts": bytes([k]) if value else None,
            }
        )
    table = pa.Table.from_pylist(rows, schema=avro_to_arrow_schema(schema))
    assert_encodes_like_fastavro(table, schema)


def test_logical_types_fixed_decimal_and_enum() -> None:
    schema = record(
        [
            ("day", ["null", {"type": "int", "logicalType": "date"}]),
            ("ts_us", ["null", {"type": "long", "logicalType": "timestamp-micros"}]),
            ("ts_ms", ["null", {"type": "long", "logicalType": "timestamp-millis"}]),
            ("lts_us", ["null", {"type": "long", "logicalType": "local-timestamp-micros"}]),
            ("t_us", ["null", {"type": "long", "logicalType": "time-micros"}]),
            ("t_ms", ["null", {"type": "int", "logicalType": "time-millis"}]),
            ("fx", ["null", {"type": "fixed", "name": "fx", "size": 3}]),
            (
                "dec",
                [
                    "null",
                    {"type": "fixed", "name": "dec", "size": 5, "logicalType": "decimal", "precision": 10, "scale": 2},
                ],
            ),
            (
                "dec38",
                [
                    "null",
                    {"type": "fixed", "name": "d38", "size": 16, "logicalType": "decimal", "precision": 38, "scale": 0},
                ],
            ),
            ("color", ["null", {"type": "enum", "name": "color", "symbols": ["RED", "GREEN", "BLUE"]}]),
        ]
    )
    decs = [Decimal("0.00"), Decimal("-0.01"), Decimal("99999999.99"), Decimal("-99999999.99"), Decimal("1.28"), None]
    big = [Decimal(10**38 - 1), Decimal(-(10**38) + 1), Decimal(-128), Decimal(127), Decimal(0), None]
    rows = []
    for k in range(12):
        rows.append(
            {
                "day": [date(1970, 1, 1), date(1, 1, 1), date(9999, 12, 31), date(1969, 12, 31), None][k % 5],
                "ts_us": [datetime(1970, 1, 1, tzinfo=UTC), datetime(1900, 3, 1, 0, 0, 0, 1, tzinfo=UTC), None][k % 3],
                "ts_ms": [datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC), datetime(1950, 1, 1, tzinfo=UTC), None][
                    k % 3
                ],
                "lts_us": [datetime(2024, 5, 6, 7, 8, 9, 999999), None, datetime(1, 1, 1)][k % 3],
                "t_us": [time(0), time(23, 59, 59, 999999), None][k % 3],
                "t_ms": [time(12, 30, 0, 5000), None, time(0, 0, 0, 1000)][k % 3],
                "fx": [b"abc", b"\x00\x00\x00", None][k % 3],
                "dec": decs[k % 6],
                "dec38": big[k % 6],
                "color": ["RED", "BLUE", None, "GREEN"][k % 4],
            }
        )
    table = pa.Table.from_pylist(rows, schema=avro_to_arrow_schema(schema))
    assert_encodes_like_fastavro(table, schema)


def test_nested_nullable_records_and_arrays() -> None:
    inner = {
        "type": "record",
        "name": "inner",
        "fields": [
            {"name": "x", "type": ["null", "long"]},
            {"name": "tags", "type": ["null", {"type": "array", "items": ["null", "string"]}]},
        ],
    }
    schema = record(
        [
            ("id", "long"),
            ("s", ["null", inner]),
            ("ss", ["null", {"type": "array", "items": ["null", "inner"]}]),
            ("plain", {"type": "array", "items": "int"}),
            ("nested", ["null", {"type": "array", "items": {"type": "array", "items": ["null", "double"]}}]),
        ]
    )
    rows = [
        {"id": 1, "s": None, "ss": None, "plain": [], "nested": None},
        {"id": 2, "s": {"x": None, "tags": None}, "ss": [], "plain": [1, -1, 2**31 - 1], "nested": []},
        {"id": 3, "s": {"x": -5, "tags": []}, "ss": [None], "plain": [0], "nested": [[]]},
        {
            "id": 4,
            "s": {"x": 2**62, "tags": ["", None, "é"]},
            "ss": [{"x": 1, "tags": ["a"]}, None],
            "plain": [],
            "nested": [[1.5, None], [], [-0.0]],
        },
    ] * 3
    table = pa.Table.from_pylist(rows, schema=avro_to_arrow_schema(schema))
    assert_encodes_like_fastavro(table, schema)
    # a null struct whose children hold values, and a null list whose range is not empty: nothing encoded for them
    s = table.column("s").combine_chunks()
    masked = pa.StructArray.from_arrays(
        [s.field(0), s.field(1)], names=["x", "tags"], mask=pa.array([k % 2 == 0 for k in range(len(s))])
    )
    ss = table.column("ss").combine_chunks()
    ss_null = pa.ListArray.from_arrays(ss.offsets, ss.values, mask=pa.array([k % 3 == 0 for k in range(len(ss))]))
    table2 = table.set_column(1, "s", masked).set_column(2, "ss", ss_null)
    assert_encodes_like_fastavro(table2, schema)


def test_sliced_chunked_and_dictionary_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = record(
        [("k", ["null", "string"]), ("v", ["null", "long"]), ("a", ["null", {"type": "array", "items": "long"}])]
    )
    n = 1000
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            "k": pa.array([None if k % 7 == 0 else f"key-{k}-é" * (k % 4) for k in range(n)]),
            "v": pa.array([None if k % 5 == 0 else int(x) for k, x in enumerate(rng.integers(-(2**62), 2**62, n))]),
            "a": pa.array([None if k % 11 == 0 else list(range(k % 6)) for k in range(n)], pa.list_(pa.int64())),
        }
    )
    monkeypatch.setattr(avro_encoder, "CHUNK_ROWS", 97)  # many chunks, boundaries inside the slice
    chunked = pa.concat_tables([table.slice(0, 300), table.slice(300)])
    assert_encodes_like_fastavro(chunked.slice(13, 800), schema)
    dictionary = table.set_column(0, "k", pc.dictionary_encode(table.column("k")))
    assert_encodes_like_fastavro(dictionary, schema)
    large = table.set_column(0, "k", table.column("k").cast(pa.large_string()))
    assert_encodes_like_fastavro(large, schema)


def test_unsupported_fields_fall_back_to_fastavro_with_the_same_bytes() -> None:
    schema = record(
        [
            ("k", "string"),
            ("m", ["null", {"type": "map", "values": ["null", "long"]}]),
            ("bd", ["null", {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}]),
            ("u", ["null", "long", "string"]),
            ("missing", ["null", "string"]),
        ]
    )
    table = pa.table(
        {
            "k": ["a", "b", "c"],
            "m": pa.array([[("x", 1), ("y", None)], None, []], pa.map_(pa.string(), pa.int64())),
            "bd": pa.array([Decimal("-1.28"), None, Decimal("12.34")], pa.decimal128(6, 2)),
            "u": pa.array([1, None, 3], pa.int64()),
        }
    )
    expected_rows = [
        {"k": "a", "m": {"x": 1, "y": None}, "bd": Decimal("-1.28"), "u": 1},
        {"k": "b", "m": None, "bd": None, "u": None},
        {"k": "c", "m": {}, "bd": Decimal("12.34"), "u": 3},
    ]
    expected = fastavro_datums(expected_rows, schema)
    assert avro_encoder.encode_records(table, schema) == expected  # maps, bytes decimals, unions: value by value
    assert encode_avro_table(table, schema) == encode_avro_data_content(expected)


@pytest.mark.parametrize(
    ("schema", "column"),
    [
        (record([("i", "int")]), pa.array([2**40], pa.int64())),  # outside 32 bits: fastavro writes it as is
        (record([("i", ["null", "int"])]), pa.array([None, 5], pa.int64())),
        (record([("e", {"type": "enum", "name": "e", "symbols": ["A"]})]), pa.array(["A", "A"])),
    ],
)
def test_values_the_columns_do_not_encode_go_through_fastavro(schema: dict[str, Any], column: pa.Array) -> None:
    table = pa.table({schema["fields"][0]["name"]: column})
    expected = fastavro_datums(table.to_pylist(), schema)
    assert encode_avro_table(table, schema) == encode_avro_data_content(expected)


def test_null_in_a_non_nullable_field_fails_as_before() -> None:
    schema = record([("s", "string")])
    table = pa.table({"s": pa.array(["a", None])})
    with pytest.raises(avro_encoder.NotVectorizable):
        avro_encoder.length_prefixed_body(table, schema)
    with pytest.raises((TypeError, ValueError, AttributeError)):
        encode_avro_table(table, schema)  # fastavro's own error, as before the column-wise encoder


def test_empty_table() -> None:
    schema = record([("s", ["null", "string"])])
    table = pa.table({"s": pa.array([], pa.string())})
    assert encode_avro_table(table, schema) == encode_avro_data_content([])
    assert avro_encoder.encode_records(table, schema) == []


# -- property: random schemas and values ----------------------------------------------------------------------------
_names = count()
_EXACT = Context(prec=80)  # Decimal arithmetic rounds to 28 digits by default


def _utc(dt: datetime) -> datetime:
    return dt.replace(tzinfo=UTC)


_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40)
_DATETIMES = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))


def _leaf() -> st.SearchStrategy[tuple[Any, st.SearchStrategy[Any]]]:
    def decimal_type(draw: Any) -> tuple[Any, st.SearchStrategy[Any]]:
        precision = draw(st.integers(1, 38))
        scale = draw(st.integers(0, precision - 1))
        size = 1
        while 2 ** (8 * size - 1) < 10**precision:
            size += 1
        t = {
            "type": "fixed",
            "name": f"dec{next(_names)}",
            "size": size,
            "logicalType": "decimal",
            "precision": precision,
            "scale": scale,
        }
        values = st.integers(-(10**precision) + 1, 10**precision - 1).map(lambda u: Decimal(u).scaleb(-scale, _EXACT))
        return t, values

    def fixed_type(draw: Any) -> tuple[Any, st.SearchStrategy[Any]]:
        size = draw(st.integers(1, 8))
        return {"type": "fixed", "name": f"fx{next(_names)}", "size": size}, st.binary(min_size=size, max_size=size)

    def enum_type(draw: Any) -> tuple[Any, st.SearchStrategy[Any]]:
        symbols = draw(
            st.lists(st.from_regex(r"[A-Z][A-Z0-9_]{0,5}", fullmatch=True), min_size=1, max_size=5, unique=True)
        )
        return {"type": "enum", "name": f"en{next(_names)}", "symbols": symbols}, st.sampled_from(symbols)

    simple = st.sampled_from(
        [
            ("boolean", st.booleans()),
            ("int", st.integers(-(2**31), 2**31 - 1)),
            ("long", st.integers(-(2**63), 2**63 - 1)),
            ("float", st.floats(width=32, allow_nan=False)),
            ("double", st.floats(allow_nan=False)),
            ("string", _TEXT),
            ("bytes", st.binary(max_size=40)),
            ({"type": "int", "logicalType": "date"}, st.dates()),
            ({"type": "long", "logicalType": "timestamp-micros"}, _DATETIMES.map(_utc)),
            (
                {"type": "long", "logicalType": "timestamp-millis"},
                _DATETIMES.map(lambda d: _utc(d.replace(microsecond=d.microsecond // 1000 * 1000))),
            ),
            ({"type": "long", "logicalType": "local-timestamp-micros"}, _DATETIMES),
            ({"type": "long", "logicalType": "time-micros"}, st.times()),
            (
                {"type": "int", "logicalType": "time-millis"},
                st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
            ),
        ]
    )
    return st.one_of(simple, st.composite(decimal_type)(), st.composite(fixed_type)(), st.composite(enum_type)())


@st.composite
def avro_types(draw: Any, depth: int = 0) -> tuple[Any, st.SearchStrategy[Any]]:
    kinds = ["leaf", "leaf", "leaf"] + (["record", "array"] if depth < 2 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "leaf":
        t, values = draw(_leaf())
    elif kind == "record":
        fields = draw(st.lists(avro_types(depth + 1), min_size=1, max_size=3))
        t = {
            "type": "record",
            "name": f"rec{next(_names)}",
            "fields": [{"name": f"c{i}", "type": ft} for i, (ft, _) in enumerate(fields)],
        }
        values = st.fixed_dictionaries({f"c{i}": fv for i, (_, fv) in enumerate(fields)})
    else:
        it, iv = draw(avro_types(depth + 1))
        t, values = {"type": "array", "items": it}, st.lists(iv, max_size=4)
    if draw(st.booleans()):  # nullable, null first or last
        t = ["null", t] if draw(st.booleans()) else [t, "null"]
        values = st.none() | values
    return t, values


@st.composite
def tables(draw: Any) -> tuple[pa.Table, dict[str, Any]]:
    fields = draw(st.lists(avro_types(), min_size=1, max_size=5))
    schema = {
        "type": "record",
        "name": f"top{next(_names)}",
        "namespace": "hoodie.t",
        "fields": [{"name": f"f{i}", "type": t} for i, (t, _) in enumerate(fields)],
    }
    rows = draw(st.lists(st.fixed_dictionaries({f"f{i}": v for i, (_, v) in enumerate(fields)}), max_size=25))
    table = pa.Table.from_pylist(rows, schema=avro_to_arrow_schema(schema))
    if table.num_rows > 2 and draw(st.booleans()):
        table = table.slice(1, table.num_rows - 2)
    return table, schema


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tables())
def test_random_schemas_and_values_encode_like_fastavro(case: tuple[pa.Table, dict[str, Any]]) -> None:
    table, schema = case
    assert_encodes_like_fastavro(table, schema)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(width=32) | st.none(), max_size=20),
    st.lists(st.floats() | st.none(), max_size=20),
)
def test_floats_incl_nan_and_signed_zero(floats: list[float | None], doubles: list[float | None]) -> None:
    n = min(len(floats), len(doubles))
    schema = record([("f", ["null", "float"]), ("d", ["null", "double"])])
    table = pa.table({"f": pa.array(floats[:n], pa.float32()), "d": pa.array(doubles[:n], pa.float64())})
    assert_encodes_like_fastavro(table, schema)


# -- written tables --------------------------------------------------------------------------------------------------
def test_upserts_write_log_blocks_hudi_rs_reads_equal(tmp_path: Path) -> None:
    from lake_orchestration.datagen import generate_trips, generate_updates
    from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, iter_blocks
    from lake_orchestration.hudi.write import WriteOptions, write_table
    from tests.oracle import hudi_rs_snapshot

    base = generate_trips(3000, partitions=3, seed=5)
    n = base.num_rows
    extra = {
        "note": pa.array([None if k % 4 == 0 else ["", "é日本", "plain", "🙂"][k % 4] for k in range(n)]),
        "big": pa.array(
            [None if k % 6 == 0 else [-(2**63), 2**63 - 1, -1, 0, 2**40][k % 5] for k in range(n)], pa.int64()
        ),
        "small": pa.array([None if k % 9 == 0 else (k * 7919) % 65536 - 32768 for k in range(n)], pa.int32()),
        "flag": pa.array([None if k % 5 == 0 else k % 2 == 0 for k in range(n)]),
        "blob": pa.array([None if k % 3 == 0 else bytes([k % 256]) * (k % 5) for k in range(n)], pa.binary()),
    }
    for name, col in extra.items():
        base = base.append_column(name, col)
    path = str(tmp_path / "t")
    opts = WriteOptions(
        table_name="t",
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        max_rows_per_file=1000,
        small_file_limit=0,
    )
    write_table(path, base, operation="bulk_insert", options=opts)
    updates = generate_updates(base, fraction=0.3, seed=6)
    updates = updates.set_column(
        updates.schema.get_field_index("note"),
        "note",
        pa.array([["é", None, "", "upd"][k % 4] for k in range(updates.num_rows)], pa.string()),
    )
    result = write_table(path, updates, operation="upsert", options=opts)
    assert result.updated == updates.num_rows

    # the log blocks decode (polars path) to the rows written
    logs = [f for f in Path(path).rglob(".*.log.*")]
    assert logs
    decoded = []
    for lf in logs:
        for block in iter_blocks(lf.read_bytes(), path=str(lf)):
            if block.block_type is LogBlockType.AVRO_DATA_BLOCK:
                schema_json = block.get(HeaderKey.SCHEMA)
                decoded.append(decode_avro_data(block.content, schema_json, json.loads(schema_json)))
    got = pa.concat_tables(decoded)
    assert got.num_rows == updates.num_rows

    expected = {r["uuid"]: r for r in base.to_pylist()}
    for r in updates.to_pylist():
        expected[r["uuid"]] = r
    theirs = hudi_rs_snapshot(path)
    assert theirs is not None and theirs.num_rows == len(expected)
    cols = [c for c in base.column_names if c in theirs.column_names]
    assert set(base.column_names) - set(cols) == set(), "hudi-rs dropped columns"
    by_key = {r["uuid"]: r for r in theirs.select(cols).to_pylist()}
    for key, row in expected.items():
        got_row = by_key[key]
        for c in cols:
            want = row[c]
            assert got_row[c] == want or (isinstance(want, float) and abs(got_row[c] - want) < 1e-6), (key, c)
