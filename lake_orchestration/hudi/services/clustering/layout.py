"""The row order of a clustering group as Java Hudi 0.15 lays it out: ``hoodie.layout.optimize.strategy`` =
``linear`` | ``z-order`` | ``hilbert`` over ``hoodie.clustering.plan.strategy.sort.columns``.

What Java does (``org.apache.hudi.sort.SpaceCurveSortingHelper#orderDataFrameByMappingValues``, the
``hoodie.layout.optimize.curve.build.method`` = ``direct`` path, the default):

- ``z-order``: each sort column's value becomes 8 bytes (``BinaryUtil.longTo8Byte`` / ``intTo8Byte`` /
  ``doubleTo8Byte`` / ``utf8To8Byte`` / ``byteTo8Byte`` / ``paddingTo8Byte``: sign bits flipped so that the bytes
  compare as the numbers do, a string's first 8 UTF-8 bytes, a shorter one padded with zero bytes *in front*; a null
  becomes the type's ``MAX_VALUE``, ``""`` for a string), the columns' bytes are interleaved bit by bit
  (``BinaryUtil.interleaving(bytes, 8)``) and the rows are sorted by those bytes, unsigned, lexicographically
  (``ByteArraySorting`` -> ``BinaryUtil.compareTo``).
- ``hilbert``: each sort column's value becomes a ``long`` (``mapColumnValueToLong``: a double's
  ``doubleToLongBits``, a string's first 8 UTF-8 bytes as a big-endian long, a null ``Long.MAX_VALUE``), the row's
  position on a 63-bit Hilbert curve of that many dimensions (davidmoten ``HilbertCurve.bits(63)``, Skilling's
  transposition) becomes bytes with ``HilbertCurveUtils.indexBytes(curve, longs, 63)`` (``BigInteger.toByteArray``
  cut or padded in front to 63 bytes) and the rows are sorted by those bytes.
- one sort column: no curve. Java range-partitions the rows by the column (``repartitionByRange`` into the plan's
  output groups) and does not sort inside an output group, whose order is then whatever Spark's shuffle fetched
  first (not reproducible when the group reads several file slices). The column's order (as ``linear``) is one of
  the orders that partitioning allows, and the one returned here.
- ``linear``: the rows sorted by the columns in turn (Spark's ascending sort: nulls first).

The columns enter the curve in the order of a ``java.util.HashMap`` keyed by each column's position in the frame's
schema (``Collectors.toMap``): for positions below 16 (12 or fewer sort columns) that is the schema's order, not the
order of ``sort.columns``; this module follows it, so pass the table with the columns in the frame's order (the
record-metadata fields first, as Java's clustering reads the file groups). Rows with equal keys keep their input
order (Spark sorts each range partition with a stable sort).

``curve.build.method`` = ``sample`` (``RangeSampleSort``: per-column range bounds from a random sample) has no
reproducible row order, and is refused.

Dates and timestamps map to epoch milliseconds as ``java.sql.Date#getTime`` / ``java.sql.Timestamp#getTime`` give
them in a JVM running in UTC (Hudi's writers and this project's harness run in UTC).
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_orchestration.config.keys import HoodieKey

LAYOUT_OPTIMIZE_STRATEGY = HoodieKey.LAYOUT_OPTIMIZE_STRATEGY.key
CURVE_BUILD_METHOD = HoodieKey.LAYOUT_CURVE_BUILD_METHOD.key
STRATEGIES = ("linear", "z-order", "hilbert")
BUILD_METHODS = ("direct", "sample")

_U64 = np.uint64
_SIGN64 = _U64(1 << 63)
_ALL64 = _U64(0xFFFFFFFFFFFFFFFF)
_LONG_MAX = np.int64(0x7FFFFFFFFFFFFFFF)
_HILBERT_BITS = 63
_HILBERT_BYTES = 63


class LayoutError(ValueError):
    """A sort column or strategy the layout cannot order by (named, with what was expected)."""


def normalize_strategy(strategy: str) -> str:
    """``hoodie.layout.optimize.strategy``'s value as Java parses it (``LayoutOptimizationStrategy.fromValue``:
    case-insensitive ``linear``, ``z-order``, ``hilbert``)."""
    value = strategy.strip().lower()
    if value not in STRATEGIES:
        raise LayoutError(f"{LAYOUT_OPTIMIZE_STRATEGY}={strategy!r}: expected one of {', '.join(STRATEGIES)}")
    return value


def check_build_method(method: str) -> str:
    value = method.strip().lower()
    if value == "direct":
        return value
    if value == "sample":
        raise LayoutError(
            f"{CURVE_BUILD_METHOD}={method!r}: the sample method (Java's RangeSampleSort) orders rows by bounds from "
            "a random sample, which no second implementation can reproduce; use 'direct' (the default)"
        )
    raise LayoutError(f"{CURVE_BUILD_METHOD}={method!r}: expected one of {', '.join(BUILD_METHODS)}")


def sort_indices(table: pa.Table, columns: Sequence[str], strategy: str, build_method: str = "direct") -> pa.Array:
    """The row order (indices into ``table``) Java 0.15 writes a clustering group in, for ``strategy``
    (``hoodie.layout.optimize.strategy``) over the sort ``columns``. No columns: the input order."""
    strategy = normalize_strategy(strategy)
    if strategy != "linear":
        check_build_method(build_method)
    cols = [c.strip() for c in columns]
    missing = [c for c in cols if c not in table.column_names]
    if missing:
        raise LayoutError(
            f"sort column(s) {missing} are not top-level columns of the rows to lay out (columns: {table.column_names})"
        )
    duplicated = sorted({c for c in cols if cols.count(c) > 1})
    if duplicated:
        raise LayoutError(f"sort column(s) {duplicated} named twice in {list(columns)}")
    n = table.num_rows
    if not cols or n == 0:
        return pa.array(np.arange(n, dtype=np.int64))
    if strategy == "linear" or len(cols) == 1:
        return linear_indices(table, cols)
    ordered = curve_column_order(table, cols)
    if strategy == "z-order":
        keys = [zorder_key(table.column(c), c) for c in ordered]
        words = interleave(keys, 64)
    else:
        longs = [hilbert_long(table.column(c), c) for c in ordered]
        words = hilbert_key(longs)
    return pa.array(np.lexsort(words[::-1]).astype(np.int64))


def linear_indices(table: pa.Table, columns: Sequence[str]) -> pa.Array:
    """Spark's ascending sort on the columns in turn (nulls first, NaN after every number, strings by their UTF-8
    bytes), stable. A validity key before each column puts its nulls first on every pyarrow (>= 16)."""
    keyed = {}
    sort_keys = []
    for i, c in enumerate(columns):
        keyed[f"valid{i}"] = pc.is_valid(table.column(c))
        keyed[f"value{i}"] = table.column(c)
        sort_keys += [(f"valid{i}", "ascending"), (f"value{i}", "ascending")]
    return pc.sort_indices(pa.table(keyed), sort_keys=sort_keys)


def curve_column_order(table: pa.Table, columns: Sequence[str]) -> list[str]:
    """The order the sort columns enter the curve: a ``java.util.HashMap<Integer, StructField>`` built by
    ``Collectors.toMap`` from each column's schema position, iterated bucket by bucket (bucket = the position's hash
    spread by ``h ^ h >>> 16`` and masked by the table's capacity: 16, doubled while more than 3/4 full), a bucket's
    entries in insertion order (the order of ``sort.columns``)."""
    capacity = 16
    while len(columns) > capacity * 3 // 4:
        capacity *= 2
    positions = [(table.column_names.index(c), i, c) for i, c in enumerate(columns)]
    return [c for _, _, c in sorted(positions, key=lambda p: ((p[0] ^ (p[0] >> 16)) & (capacity - 1), p[1]))]


# -- the per-type mappings ----------------------------------------------------------------------------------------


def _plain(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    return column


def _nulls(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _ints(arr: pa.Array, dtype: type) -> np.ndarray:
    return np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=dtype)


def _bytes8(arr: pa.Array) -> np.ndarray:
    """``BinaryUtil.paddingTo8Byte`` of each value's bytes (a string's UTF-8) as a big-endian uint64: the first 8
    bytes, a shorter value padded with zero bytes in front. Nulls: 0 (the caller maps them)."""
    if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
        offsets_type = np.int64
    elif pa.types.is_string(arr.type) or pa.types.is_binary(arr.type):
        offsets_type = np.int32
    else:  # string_view, fixed-size binary ...: through the plain binary layout
        arr = arr.cast(pa.large_binary())
        offsets_type = np.int64
    n = len(arr)
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offsets_type)[arr.offset : arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    pad = np.maximum(8 - lengths, 0)
    out = np.zeros(n, dtype=_U64)
    if len(data) == 0:
        return out
    for j in range(8):
        src = starts + j - pad
        valid = j >= pad
        byte = np.where(valid, data[np.clip(src, 0, len(data) - 1)], 0).astype(_U64)
        out |= byte << _U64(8 * (7 - j))
    return out


def _millis(arr: pa.Array) -> np.ndarray:
    """Dates and timestamps as epoch milliseconds (``getTime()`` in a UTC JVM; floor for sub-millisecond units)."""
    if pa.types.is_date32(arr.type):
        return _ints(arr, np.int64) * 86_400_000
    if pa.types.is_date64(arr.type):
        return _ints(arr.cast(pa.int64()), np.int64)
    unit = arr.type.unit
    raw = _ints(arr.cast(pa.int64()), np.int64)
    if unit == "s":
        return raw * 1000
    if unit == "ms":
        return raw
    return np.floor_divide(raw, 1000 if unit == "us" else 1_000_000)


def _decimal_long(arr: pa.Array) -> np.ndarray:
    """``BigDecimal#longValue``: the integer part (truncated toward zero), its low 64 bits."""
    out = np.zeros(len(arr), dtype=np.int64)
    for i, value in enumerate(arr.to_pylist()):
        if value is not None:
            whole = int(value.to_integral_value(rounding=decimal.ROUND_DOWN))
            out[i] = np.int64(((whole + (1 << 63)) % (1 << 64)) - (1 << 63))
    return out


def _double_bits(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).view(_U64)


def _double_to_8byte(values: np.ndarray) -> np.ndarray:
    """``BinaryUtil.doubleTo8Byte``: raw bits; a positive value's sign bit set, a negative value's bits all
    inverted; 0.0, -0.0 and NaN unchanged."""
    bits = _double_bits(values)
    return np.where(values > 0, bits ^ _SIGN64, np.where(values < 0, bits ^ _ALL64, bits))


def _int_to_8byte(values: np.ndarray) -> np.ndarray:
    """``BinaryUtil.intTo8Byte``: the int with its sign bit flipped, 4 bytes, padded in front to 8."""
    return (values.astype(np.int64).astype(np.uint32) ^ np.uint32(1 << 31)).astype(_U64)


def _long_to_8byte(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int64).view(_U64) ^ _SIGN64


def _unsupported(arr: pa.Array, name: str, what: str) -> LayoutError:
    return LayoutError(
        f"sort column {name!r} has type {arr.type}, which Java's {what} does not map (SpaceCurveSortingHelper "
        "supports long, int, short, byte, double, float, string, date, timestamp, decimal, boolean, binary)"
    )


def zorder_key(column: pa.ChunkedArray | pa.Array, name: str = "") -> np.ndarray:
    """``SpaceCurveSortingHelper.mapColumnValueTo8Bytes`` of each value, as a big-endian uint64."""
    arr = _plain(column)
    t = arr.type
    nulls = _nulls(arr)
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return _long_to_8byte(np.where(nulls, _LONG_MAX, _ints(arr, np.int64)))
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return _int_to_8byte(np.where(nulls, 2**31 - 1, _ints(arr, np.int64)))
    if pa.types.is_int16(t) or pa.types.is_uint8(t):
        return _int_to_8byte(np.where(nulls, 2**15 - 1, _ints(arr, np.int64)))
    if pa.types.is_int8(t):  # byteTo8Byte: the byte itself, no sign flip
        return np.where(nulls, 127, _ints(arr, np.int64)).astype(np.int8).view(np.uint8).astype(_U64)
    if pa.types.is_float64(t):
        values = np.where(nulls, np.finfo(np.float64).max, _ints(arr, np.float64))
        return _double_to_8byte(values)
    if pa.types.is_float32(t) or pa.types.is_float16(t):
        values = np.where(nulls, np.float64(np.finfo(np.float32).max), _ints(arr, np.float32).astype(np.float64))
        return _double_to_8byte(values)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return np.where(nulls, _U64(0), _bytes8(arr))  # null -> ""
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return np.where(nulls, _U64(0), _bytes8(arr))  # null -> new byte[] {0}
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return _long_to_8byte(np.where(nulls, _LONG_MAX, _millis(arr)))
    if pa.types.is_decimal(t):
        return _long_to_8byte(np.where(nulls, _LONG_MAX, _decimal_long(arr)))
    if pa.types.is_boolean(t):
        return _int_to_8byte(np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.int64))
    raise _unsupported(arr, name, "mapColumnValueTo8Bytes")


def hilbert_long(column: pa.ChunkedArray | pa.Array, name: str = "") -> np.ndarray:
    """``SpaceCurveSortingHelper.mapColumnValueToLong`` of each value (int64)."""
    arr = _plain(column)
    t = arr.type
    nulls = _nulls(arr)
    if pa.types.is_integer(t) and not pa.types.is_int8(t):
        return np.where(nulls, _LONG_MAX, _ints(arr, np.int64))
    if pa.types.is_int8(t):  # convertBytesToLong(new byte[] {b}): the unsigned byte
        return np.where(nulls, _LONG_MAX, _ints(arr, np.int64).astype(np.int8).view(np.uint8).astype(np.int64))
    if pa.types.is_floating(t):
        values = _ints(arr, np.float64)
        bits = _double_bits(values).view(np.int64)
        bits = np.where(np.isnan(values), np.int64(0x7FF8000000000000), bits)  # doubleToLongBits: canonical NaN
        return np.where(nulls, _LONG_MAX, bits)
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return np.where(nulls, _LONG_MAX, _bytes8(arr).view(np.int64))
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return np.where(nulls, _LONG_MAX, _millis(arr))
    if pa.types.is_decimal(t):
        return np.where(nulls, _LONG_MAX, _decimal_long(arr))
    if pa.types.is_boolean(t):
        values = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
        return np.where(values, _LONG_MAX, np.int64(0))
    raise _unsupported(arr, name, "mapColumnValueToLong")


# -- the curves ----------------------------------------------------------------------------------------------------


def interleave(keys: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """``BinaryUtil.interleaving``: the top ``bits`` bits of each key (uint64, most significant first), one bit of
    each key in turn, as rows of big-endian uint64 words (shape ``(words, n)``; the last word zero-filled)."""
    k = len(keys)
    n = len(keys[0])
    total = bits * k
    words = np.zeros(((total + 63) // 64, n), dtype=_U64)
    for step in range(bits):
        source_shift = _U64(63 - step)
        for i, key in enumerate(keys):
            position = step * k + i
            bit = (key >> source_shift) & _U64(1)
            words[position // 64] |= bit << _U64(63 - position % 64)
    return words


def hilbert_transposed(longs: Sequence[np.ndarray], bits: int = _HILBERT_BITS) -> list[np.ndarray]:
    """davidmoten ``HilbertCurve.transposedIndex(bits, point)`` (Skilling's ``AxesToTranspose``), one row per
    element, in uint64 (Java's longs, two's complement)."""
    x = [np.ascontiguousarray(v, dtype=np.int64).view(_U64).copy() for v in longs]
    n = len(x)
    q = 1 << (bits - 1)
    while q > 1:
        uq, up = _U64(q), _U64(q - 1)
        for i in range(n):
            set_ = (x[i] & uq) != 0
            if i == 0:
                x[0] = np.where(set_, x[0] ^ up, x[0])
                continue
            t = (x[0] ^ x[i]) & up
            x[0], x[i] = np.where(set_, x[0] ^ up, x[0] ^ t), np.where(set_, x[i], x[i] ^ t)
        q >>= 1
    for i in range(1, n):
        x[i] = x[i] ^ x[i - 1]
    t = np.zeros_like(x[0])
    q = 1 << (bits - 1)
    while q > 1:
        t ^= np.where((x[n - 1] & _U64(q)) != 0, _U64(q - 1), _U64(0))
        q >>= 1
    return [xi ^ t for xi in x]


def hilbert_key(longs: Sequence[np.ndarray]) -> np.ndarray:
    """``HilbertCurveUtils.indexBytes(HilbertCurve.bits(63).dimensions(k), longs, 63)`` as rows of big-endian
    uint64 words (the 63 bytes and a zero byte): the index (``toIndex``: bits 62..0 of each transposed value
    interleaved) as ``BigInteger#toByteArray`` gives it (minimal, with a sign byte), padded in front or cut to its
    first 63 bytes."""
    transposed = hilbert_transposed(longs)
    k = len(transposed)
    # bits 62..0 of each: shift left one so that bit 62 is the key's top bit, then interleave 63 bits each
    index_words = interleave([t << _U64(1) for t in transposed], _HILBERT_BITS)
    total_bits = _HILBERT_BITS * k
    n = len(transposed[0])
    # the index as big-endian bytes, right-aligned (least significant byte last)
    # MSB-first bits, zero-filled at the end
    raw = np.ascontiguousarray(index_words.T).astype(">u8").view(np.uint8).reshape(n, -1)
    slack = raw.shape[1] * 8 - total_bits  # trailing zero bits the index does not own
    value_bytes = _shift_right_bits(raw, slack)  # the index, right-aligned
    width = max(value_bytes.shape[1], _HILBERT_BYTES) + 1
    full = np.zeros((n, width), dtype=np.uint8)
    full[:, width - value_bytes.shape[1] :] = value_bytes
    # bit length -> toByteArray's length (bitLength / 8 + 1)
    nonzero = full != 0
    first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), width)
    top = full[np.arange(n), np.minimum(first, width - 1)].astype(np.int64)
    top_bits = np.where(first < width, np.floor(np.log2(np.maximum(top, 1))).astype(np.int64) + 1, 0)
    bit_length = np.where(first < width, (width - first - 1) * 8 + top_bits, 0)
    array_length = bit_length // 8 + 1
    cut = np.maximum(array_length - _HILBERT_BYTES, 0)  # bytes dropped from the end when cut to the first 63
    start = width - _HILBERT_BYTES - cut
    cols = start[:, None] + np.arange(_HILBERT_BYTES)[None, :]
    key = np.take_along_axis(full, cols, axis=1)
    padded = np.zeros((n, 64), dtype=np.uint8)
    padded[:, :_HILBERT_BYTES] = key
    return padded.view(">u8").astype(_U64).T.copy()


def _shift_right_bits(raw: np.ndarray, shift: int) -> np.ndarray:
    """``raw`` (rows of big-endian bytes) shifted right by ``shift`` bits (< 8 * width), same width."""
    if shift == 0:
        return raw
    whole, part = divmod(shift, 8)
    width = raw.shape[1]
    out = np.zeros_like(raw)
    out[:, whole:] = raw[:, : width - whole]
    if part:
        wide = out.astype(np.uint16)
        carried = np.zeros_like(wide)
        carried[:, 1:] = (wide[:, :-1] << (8 - part)) & 0xFF
        out = ((wide >> part) | carried).astype(np.uint8)
    return out
