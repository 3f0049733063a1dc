"""The clustering layout curves (``layout.sort_indices``) against a slow, per-row transcription of Java Hudi 0.15's
own code (``BinaryUtil``, ``SpaceCurveSortingHelper.mapColumnValueTo8Bytes`` / ``mapColumnValueToLong``,
``HilbertCurveUtils.indexBytes`` over davidmoten's ``HilbertCurve.bits(63)``, ``java.util.HashMap``'s iteration
order), written here from the Java sources with Python ints standing for Java's bytes and longs: no numpy, no code
shared with the module."""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import math
import random
import struct

import pyarrow as pa
import pytest

from lake_orchestration.hudi.services.clustering.layout import LayoutError, sort_indices

# -- Java, transcribed ---------------------------------------------------------------------------------------------


def _byte(v: int) -> int:  # (byte) v, as a signed Java byte
    v &= 0xFF
    return v - 256 if v > 127 else v


def _long(v: int) -> int:  # (long) v
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _int(v: int) -> int:
    v &= (1 << 32) - 1
    return v - (1 << 32) if v >= 1 << 31 else v


def to_bytes_int(val: int) -> list[int]:  # BinaryUtil.toBytes(int)
    b = [0] * 4
    for i in range(3, 0, -1):
        b[i] = _byte(val)
        val = (val & 0xFFFFFFFF) >> 8
    b[0] = _byte(val)
    return b


def to_bytes_long(val: int) -> list[int]:  # BinaryUtil.toBytes(long)
    b = [0] * 8
    temp = val
    for i in range(7, 0, -1):
        b[i] = _byte(temp)
        temp = (temp & ((1 << 64) - 1)) >> 8
    b[0] = _byte(temp)
    return b


def padding_to_8byte(a: list[int]) -> list[int]:
    if len(a) == 8:
        return a
    if len(a) > 8:
        return a[:8]
    return [0] * (8 - len(a)) + a


def int_to_8byte(a: int) -> list[int]:
    return padding_to_8byte(to_bytes_int(_int(a ^ (1 << 31))))


def long_to_8byte(a: int) -> list[int]:
    return to_bytes_long(_long(a ^ (1 << 63)))


def double_raw_bits(d: float) -> int:
    return struct.unpack(">q", struct.pack(">d", d))[0]


def double_to_8byte(a: float) -> list[int]:
    temp = to_bytes_long(double_raw_bits(a))
    if a > 0:
        temp[0] = _byte(temp[0] ^ (1 << 7))
    if a < 0:
        temp = [_byte(~t) for t in temp]
    return temp


def utf8_to_8byte(s: str) -> list[int]:
    return padding_to_8byte([_byte(b) for b in s.encode("utf-8")])


def convert_bytes_to_long(bs: list[int]) -> int:
    padded = padding_to_8byte(bs)
    temp = 0
    for i in range(7, -1, -1):
        temp |= (padded[i] & 0xFF) << ((7 - i) * 8)
    return _long(temp)


def update_pos(a: int, apos: int, b: int, bpos: int) -> int:  # BinaryUtil.updatePos
    temp = _byte(b & (1 << (7 - bpos)))
    if apos < bpos:
        temp = _byte(temp << (bpos - apos))
    if apos > bpos:
        temp = _byte(temp >> (apos - bpos))
    atemp = _byte(a & (1 << (7 - apos)))
    if _byte(atemp ^ temp) == 0:
        return a
    return _byte(a ^ (1 << (7 - apos)))


def interleaving(buffer: list[list[int]], size: int) -> list[int]:  # BinaryUtil.interleaving
    candidates = len(buffer)
    result = [0] * (size * candidates)
    res_bit_pos = 0
    for bit_step in range(size * 8):
        byte_pos, bit_pos = bit_step // 8, bit_step % 8
        for i in range(candidates):
            rb, rbit = res_bit_pos // 8, res_bit_pos % 8
            result[rb] = update_pos(result[rb], rbit, buffer[i][byte_pos], bit_pos)
            res_bit_pos += 1
    return result


def map_to_8bytes(value, kind: str) -> list[int]:  # SpaceCurveSortingHelper.mapColumnValueTo8Bytes
    if kind == "long":
        return long_to_8byte((1 << 63) - 1 if value is None else value)
    if kind == "double":
        return double_to_8byte(1.7976931348623157e308 if value is None else value)
    if kind == "int":
        return int_to_8byte(2**31 - 1 if value is None else value)
    if kind == "float":
        return double_to_8byte(3.4028234663852886e38 if value is None else value)
    if kind == "string":
        return utf8_to_8byte("" if value is None else value)
    if kind == "timestamp":
        return long_to_8byte((1 << 63) - 1 if value is None else value)
    if kind == "byte":
        return padding_to_8byte([_byte(127 if value is None else value)])
    if kind == "short":
        return int_to_8byte(2**15 - 1 if value is None else value)
    if kind == "boolean":
        return int_to_8byte(1 if value else 0)
    if kind == "decimal":
        return long_to_8byte((1 << 63) - 1 if value is None else _long(int(value)))
    raise AssertionError(kind)


def map_to_long(value, kind: str) -> int:  # SpaceCurveSortingHelper.mapColumnValueToLong
    if value is None:
        return 0 if kind == "boolean" else (1 << 63) - 1
    if kind in ("long", "int", "short", "timestamp"):
        return value
    if kind in ("double", "float"):
        if math.isnan(value):
            return 0x7FF8000000000000
        return double_raw_bits(value)
    if kind == "string":
        return convert_bytes_to_long(utf8_to_8byte(value))
    if kind == "byte":
        return convert_bytes_to_long([_byte(value)])
    if kind == "boolean":
        return (1 << 63) - 1 if value else 0
    if kind == "decimal":
        return _long(int(value))
    raise AssertionError(kind)


def transposed_index(bits: int, point: list[int]) -> list[int]:  # davidmoten HilbertCurve.transposedIndex
    m = 1 << (bits - 1)
    n = len(point)
    x = list(point)
    q = m
    while q > 1:
        p = q - 1
        for i in range(n):
            if x[i] & q:
                x[0] = _long(x[0] ^ p)
            else:
                t = (x[0] ^ x[i]) & p
                x[0] = _long(x[0] ^ t)
                x[i] = _long(x[i] ^ t)
        q >>= 1
    for i in range(1, n):
        x[i] = _long(x[i] ^ x[i - 1])
    t = 0
    q = m
    while q > 1:
        if x[n - 1] & q:
            t ^= q - 1
        q >>= 1
    return [_long(xi ^ t) for xi in x]


def to_index(bits: int, transposed: list[int]) -> int:  # HilbertCurve.toIndex
    length = bits * len(transposed)
    b = [0] * length
    b_index = length - 1
    mask = 1 << (bits - 1)
    for _ in range(bits):
        for tj in transposed:
            if tj & mask:
                b[length - 1 - b_index // 8] |= 1 << (b_index % 8)
            b_index -= 1
        mask >>= 1
    return int.from_bytes(bytes(v & 0xFF for v in b), "big")


def big_integer_to_byte_array(v: int) -> bytes:  # BigInteger.toByteArray of a non-negative value
    return v.to_bytes(v.bit_length() // 8 + 1, "big")


def padding_to_n_byte(a: bytes, n: int) -> bytes:  # HilbertCurveUtils.paddingToNByte
    if len(a) == n:
        return a
    if len(a) > n:
        return a[:n]
    return bytes(n - len(a)) + a


def hashmap_order(positions: list[int]) -> list[int]:
    """The iteration order of a java.util.HashMap<Integer, _> filled with ``positions`` in turn: a table of buckets
    (16, doubled when the size passes 3/4 of it; a resize keeps each bucket's order), each a list in insertion
    order."""
    capacity, table = 16, {}
    inserted: list[int] = []
    for pos in positions:
        inserted.append(pos)
        if len(inserted) > capacity * 0.75:
            capacity *= 2
    for pos in inserted:
        table.setdefault((pos ^ (pos >> 16)) & (capacity - 1), []).append(pos)
    return [pos for bucket in sorted(table) for pos in table[bucket]]


def java_order(rows: list[dict], schema: list[tuple[str, str]], columns: list[str], strategy: str) -> list[int]:
    names = [name for name, _ in schema]
    kinds = dict(schema)
    positions = hashmap_order([names.index(c) for c in columns])
    ordered = [names[p] for p in positions]
    if strategy == "z-order":
        keys = [
            bytes(b & 0xFF for b in interleaving([map_to_8bytes(r[c], kinds[c]) for c in ordered], 8)) for r in rows
        ]
    else:
        keys = [
            padding_to_n_byte(
                big_integer_to_byte_array(
                    to_index(63, transposed_index(63, [map_to_long(r[c], kinds[c]) for c in ordered]))
                ),
                63,
            )
            for r in rows
        ]
    return sorted(range(len(rows)), key=lambda i: keys[i])  # Python's sort is stable, as Spark's within a range


# -- the data -------------------------------------------------------------------------------------------------------

_ARROW = {
    "long": pa.int64(),
    "int": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "double": pa.float64(),
    "float": pa.float32(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "decimal": pa.decimal128(12, 3),
}


def _rows(n: int, seed: int) -> tuple[list[dict], list[tuple[str, str]]]:
    rng = random.Random(seed)
    strings = ["", "a", "ab", "abcdefgh", "abcdefghij", "zz", "é", "ü-long-string", "日本語テキスト", "0", "A"]
    rows = []
    for i in range(n):
        row = {
            "_hoodie_commit_time": "20240101000000000",
            "_hoodie_record_key": f"k{i}",
            "l": rng.choice([None, rng.randint(-(2**63), 2**63 - 1), rng.randint(-50, 50), 0, (1 << 63) - 1]),
            "i": rng.choice([None, rng.randint(-(2**31), 2**31 - 1), rng.randint(-5, 5)]),
            "d": rng.choice([None, rng.uniform(-1e6, 1e6), rng.uniform(-1, 1), 0.0, -0.0, 1e300, -1e-300]),
            "s": rng.choice([None, *strings, f"k{rng.randint(0, 999)}"]),
            "f": rng.choice([None, rng.uniform(-100, 100), 0.5]),
            "sh": rng.choice([None, rng.randint(-(2**15), 2**15 - 1)]),
            "b": rng.choice([None, rng.randint(-128, 127)]),
            "bo": rng.choice([None, True, False]),
            "ts": rng.choice([None, rng.randint(-(10**15), 10**15)]),
            "dec": rng.choice([None, decimal.Decimal(rng.randint(-(10**9), 10**9)).scaleb(-3)]),
        }
        rows.append(row)
    schema = [
        ("_hoodie_commit_time", "string"),
        ("_hoodie_record_key", "string"),
        ("l", "long"),
        ("i", "int"),
        ("d", "double"),
        ("s", "string"),
        ("f", "float"),
        ("sh", "short"),
        ("b", "byte"),
        ("bo", "boolean"),
        ("ts", "timestamp"),
        ("dec", "decimal"),
    ]
    return rows, schema


def _table(rows: list[dict], schema: list[tuple[str, str]]) -> pa.Table:
    columns = {}
    for name, kind in schema:
        values = [r[name] for r in rows]
        if kind == "timestamp":
            values = [
                None if v is None else dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=v)
                for v in values
            ]
        columns[name] = pa.array(values, type=_ARROW[kind])
    return pa.table(columns)


def _java_rows(rows: list[dict], schema: list[tuple[str, str]]) -> list[dict]:
    """The values as Java's Row getters see them: a float32 widened, a timestamp's millis (floor)."""
    out = []
    for r in rows:
        j = dict(r)
        if j["f"] is not None:
            j["f"] = struct.unpack("f", struct.pack("f", j["f"]))[0]
        if j["ts"] is not None:
            j["ts"] = j["ts"] // 1000
        out.append(j)
    return out


@functools.lru_cache(maxsize=1)
def _data() -> tuple[list[dict], list[tuple[str, str]], pa.Table]:
    rows, schema = _rows(300, seed=29)
    return _java_rows(rows, schema), schema, _table(rows, schema)


CASES = [
    ["l", "i"],
    ["d", "s"],
    ["s", "l", "d"],
    ["i", "f", "sh", "b"],
    ["bo", "ts", "dec"],
    ["dec", "s", "b", "l", "i", "d", "f", "sh"],  # 8 dimensions: the Hilbert index can reach 64 bytes and is cut
]


@pytest.mark.parametrize("strategy", ["z-order", "hilbert"])
@pytest.mark.parametrize("columns", CASES, ids=["-".join(c) for c in CASES])
def test_curve_order_matches_the_java_transcription(strategy: str, columns: list[str]) -> None:
    rows, schema, table = _data()
    expected = java_order(rows, schema, columns, strategy)
    assert sort_indices(table, columns, strategy).to_pylist() == expected


def test_columns_enter_the_curve_in_schema_order_not_sort_columns_order() -> None:
    rows, schema, table = _data()
    forward = sort_indices(table, ["l", "s"], "z-order").to_pylist()
    assert sort_indices(table, ["s", "l"], "z-order").to_pylist() == forward
    # a HashMap's order: positions 18 and 19 share buckets 2 and 3 with "l" (2) and "i" (3), a bucket keeps the
    # order of sort.columns; "later" (19, bucket 3) comes before "d" (4)
    wide = table
    for k in range(6):
        wide = wide.append_column(f"pad{k}", pa.array([0] * table.num_rows, pa.int32()))
    wide = wide.append_column("late", table.column("s")).append_column("later", table.column("d"))
    assert wide.column_names.index("late") == 18
    java_rows = [dict(r, late=r["s"], later=r["d"]) for r in rows]
    java_schema = [*schema, *[(f"pad{k}", "int") for k in range(6)], ("late", "string"), ("later", "double")]
    for r in java_rows:
        r.update({f"pad{k}": 0 for k in range(6)})
    for cols in (["i", "later"], ["later", "i"], ["late", "l"], ["d", "later"]):
        for strategy in ("z-order", "hilbert"):
            assert sort_indices(wide, cols, strategy).to_pylist() == java_order(java_rows, java_schema, cols, strategy)


def test_linear_and_single_column() -> None:
    _, _, table = _data()
    got = sort_indices(table, ["s", "l"], "linear").to_pylist()
    values = list(zip(table.column("s").to_pylist(), table.column("l").to_pylist(), strict=True))
    keyed = [((v[0] is not None, (v[0] or "").encode()), (v[1] is not None, v[1] or 0)) for v in values]
    assert got == sorted(range(len(values)), key=lambda i: keyed[i])
    one = sort_indices(table, ["i"], "z-order").to_pylist()  # one column: no curve, the column's order
    ints = table.column("i").to_pylist()
    assert one == sorted(range(len(ints)), key=lambda i: (ints[i] is not None, ints[i] or 0))


def test_refusals_name_what_is_wrong() -> None:
    _, _, table = _data()
    with pytest.raises(LayoutError, match=r"hoodie\.layout\.optimize\.strategy='spiral'"):
        sort_indices(table, ["l", "i"], "spiral")
    with pytest.raises(LayoutError, match=r"\['nope'\]"):
        sort_indices(table, ["l", "nope"], "z-order")
    with pytest.raises(LayoutError, match="sample"):
        sort_indices(table, ["l", "i"], "hilbert", build_method="sample")
    listy = pa.table({"a": pa.array([[1], [2]]), "b": pa.array([1, 2])})
    with pytest.raises(LayoutError, match="sort column 'a' has type list<item: int64>"):
        sort_indices(listy, ["a", "b"], "z-order")


def test_large_input_is_vectorised() -> None:
    import time

    n = 200_000
    rng = random.Random(1)
    table = pa.table(
        {
            "a": pa.array([rng.randint(-(10**9), 10**9) for _ in range(n)], pa.int64()),
            "b": pa.array([rng.random() for _ in range(n)], pa.float64()),
            "c": pa.array([f"v{rng.randint(0, 10**6)}" for _ in range(n)], pa.string()),
        }
    )
    for strategy in ("z-order", "hilbert"):
        start = time.perf_counter()
        order = sort_indices(table, ["a", "b", "c"], strategy)
        assert sorted(order.to_pylist()) == list(range(n))
        assert time.perf_counter() - start < 20
