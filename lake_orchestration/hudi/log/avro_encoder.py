"""Column-wise Avro binary encoding of Arrow tables: the body of an Avro data block without a Python loop per record.

An Avro record datum is the concatenation of its fields' encodings in schema order, so a table is encoded column by
column: every field becomes one or more Arrow ``binary`` arrays holding each row's bytes for that part of the record
(a union branch index, a zig-zag varint, a string's bytes ...), built with numpy and Arrow compute. The 4-byte
big-endian record length that prefixes each datum in a Hudi data block is one more such array, and
``binary_join_element_wise`` (C++) concatenates the pieces row by row: the data buffer of the joined array is the
block body, records in row order.

Encoded without Python objects per value: null, boolean, int, long, float, double, bytes, string, fixed, enum,
``date``/``time-*``/``timestamp-*``/``local-timestamp-*`` logical types on int/long, ``decimal`` on fixed (size up to
16 bytes), records (Arrow structs) and arrays (Arrow lists), and ``["null", T]`` / ``[T, "null"]`` unions of them,
nested at any depth. A top-level field of any other type (maps, decimals on bytes, multi-branch unions ...) is
encoded by fastavro value by value. The bytes are those of fastavro's ``schemaless_writer`` for the same rows (the
encoding the project used before; tests/perf/test_avro_encoding.py checks it). Values fastavro would refuse or
encode in a way this module does not reproduce (a null in a non-nullable field, an ``int`` outside 32 bits, an enum
value outside the symbols, Arrow types that do not match the Avro type) raise :class:`NotVectorizable`, and the
caller encodes the whole table with fastavro, which writes the same bytes or raises its own error.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

CHUNK_ROWS = 1 << 16
"""Rows encoded at a time (bounds the temporary arrays; Arrow ``binary`` offsets are 32-bit)."""


@functools.cache
def _empty() -> pa.Scalar:
    """``b""`` as an Arrow binary scalar, built on first use: ``pa.scalar`` imports pandas (~0.2 s of a CLI start)."""
    return pa.scalar(b"", pa.binary())


_NULL_BRANCH = {0: b"\x00", 1: b"\x02"}
_INTS = ("int", "long")


class NotVectorizable(Exception):
    """The table (its types or values) is not encoded column-wise; encode it record by record instead."""


# -- binary arrays from numpy ----------------------------------------------------------------------------------------
def _binary(lengths: np.ndarray, data: np.ndarray | bytes) -> pa.Array:
    """A ``binary`` array of ``len(lengths)`` values whose bytes are ``data`` cut at ``lengths``."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    buf = pa.py_buffer(data if isinstance(data, bytes) else np.ascontiguousarray(data, dtype=np.uint8))
    return pa.Array.from_buffers(pa.binary(), len(lengths), [None, pa.py_buffer(offsets), buf])


def _fixed_width(values: np.ndarray, width: int, present: np.ndarray | None) -> pa.Array:
    """Each present row's ``width`` bytes of ``values`` (a 2-D uint8 matrix or a 1-D array of width-byte items)."""
    n = len(values)
    mat = values.view(np.uint8).reshape(n, width) if values.ndim == 1 else values
    if present is None:
        return _binary(np.full(n, width, dtype=np.int32), mat.reshape(-1))
    return _binary(present.astype(np.int32) * width, mat[present].reshape(-1))


def _varints(values: np.ndarray, present: np.ndarray | None, *, zigzag: bool = True) -> pa.Array:
    """Avro ``long`` encodings (zig-zag, 7 bits a byte, low groups first) of int64 ``values``; empty where absent."""
    v = values.astype(np.int64, copy=False)
    zz = ((v << 1) ^ (v >> 63)).view(np.uint64) if zigzag else v.view(np.uint64)
    n = len(zz)
    nbytes = np.ones(n, dtype=np.int32)
    for k in range(1, 10):
        big = zz >= np.uint64(1 << (7 * k))
        if not big.any():
            break
        nbytes += big
    if present is not None:
        nbytes[~present] = 0
    width = int(nbytes.max()) if n else 0
    if width <= 1:  # every value fits one byte: the bytes are the values themselves
        keep = nbytes == 1
        return _binary(nbytes, zz.astype(np.uint8)[keep] if present is not None else zz.astype(np.uint8))
    cols = np.arange(width, dtype=np.uint64)
    mat = ((zz[:, None] >> (cols * np.uint64(7))) & np.uint64(0x7F)).astype(np.uint8)
    mat[cols[None, :].astype(np.int32) < (nbytes[:, None] - 1)] |= 0x80
    return _binary(nbytes, mat[cols[None, :].astype(np.int32) < nbytes[:, None]])


def _offsets(arr: pa.Array) -> np.ndarray:
    """The n + 1 value offsets of a ``binary`` array (its slice offset applied)."""
    return np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr) + 1, offset=arr.offset * 4)


def _constant(value: bytes, present: np.ndarray | None, n: int) -> pa.Array:
    """``value`` in every present row (empty elsewhere)."""
    if present is None:
        return _binary(np.full(n, len(value), dtype=np.int32), value * n)
    k = int(present.sum())
    return _binary(present.astype(np.int32) * len(value), value * k)


def _valid(arr: pa.Array) -> np.ndarray | None:
    """Row validity as a bool array, None when the array has no nulls."""
    if arr.null_count == 0:
        return None
    return pc.is_valid(arr).to_numpy(zero_copy_only=False)


def _require_present(arr: pa.Array, present: np.ndarray | None) -> None:
    """A non-nullable Avro type: every present row must have a value (fastavro refuses a null)."""
    valid = _valid(arr)
    if valid is not None and (present is None or (present & ~valid).any()):
        raise NotVectorizable("null value in a non-nullable Avro type")


# -- the encoders --------------------------------------------------------------------------------------------------
Pieces = list[pa.Array]


class _Encoder:
    """Encodes Arrow arrays by an Avro schema (named types resolved from the whole record schema)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.named: dict[str, Any] = {}
        self._collect(schema, schema.get("namespace", ""))

    def _collect(self, t: Any, ns: str) -> None:
        if isinstance(t, list):
            for b in t:
                self._collect(b, ns)
        elif isinstance(t, dict):
            kind = t.get("type")
            if kind in ("record", "enum", "fixed", "error"):
                name = t.get("name", "")
                sub_ns = t.get("namespace", ns) if "." not in name else name.rsplit(".", 1)[0]
                full = name if "." in name else (f"{sub_ns}.{name}" if sub_ns else name)
                self.named[full] = t
                self.named.setdefault(name, t)
                ns = sub_ns
            if kind in ("record", "error"):
                for f in t.get("fields", []):
                    self._collect(f["type"], ns)
            elif kind == "array":
                self._collect(t["items"], ns)
            elif kind == "map":
                self._collect(t["values"], ns)
            elif isinstance(kind, (dict, list)):
                self._collect(kind, ns)

    def resolve(self, t: Any) -> Any:
        while isinstance(t, str) and t not in _PRIMITIVES:
            if t not in self.named:
                raise NotVectorizable(f"unknown named type {t!r}")
            t = self.named[t]
        if isinstance(t, dict) and isinstance(t.get("type"), (dict, list)):
            return self.resolve(t["type"])
        if isinstance(t, dict) and t.get("type") in _PRIMITIVES and len(t) == 1:
            return t["type"]
        return t

    def supports(self, t: Any) -> bool:
        """True if values of Avro type ``t`` are encoded column-wise (the Arrow types are checked when encoding)."""
        try:
            t = self.resolve(t)
        except NotVectorizable:
            return False
        if isinstance(t, str):
            return True
        if isinstance(t, list):
            branches = [b for b in t if b != "null"]
            return len(t) == 2 and len(branches) == 1 and self.supports(branches[0])
        kind, logical = t.get("type"), t.get("logicalType")
        if logical == "decimal":
            return kind == "fixed" and int(t["size"]) <= 16
        if kind in ("record", "error"):
            return all(self.supports(f["type"]) for f in t["fields"])
        if kind == "array":
            return self.supports(t["items"])
        return kind in ("enum", "fixed") or kind in _PRIMITIVES

    def encode(self, arr: pa.Array, t: Any, present: np.ndarray | None) -> Pieces:
        """The pieces of the encoding of every present row of ``arr`` (rows not present encode as nothing)."""
        t = self.resolve(t)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if isinstance(arr.type, pa.ExtensionType):
            arr = arr.storage
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if isinstance(t, list):
            return self._union(arr, t, present)
        _require_present(arr, present)
        if isinstance(t, str):
            return self._primitive(arr, t, None, present)
        kind, logical = t.get("type"), t.get("logicalType")
        if kind in ("record", "error"):
            return self._record(arr, t, present)
        if kind == "array":
            return self._array(arr, t, present)
        if kind == "enum":
            return self._enum(arr, t, present)
        if kind == "fixed":
            if logical == "decimal":
                return self._fixed_decimal(arr, t, present)
            return self._fixed(arr, int(t["size"]), present)
        if kind in _PRIMITIVES:
            return self._primitive(arr, kind, logical, present)
        raise NotVectorizable(f"Avro type {kind!r}")

    def _union(self, arr: pa.Array, t: list[Any], present: np.ndarray | None) -> Pieces:
        branches = [b for b in t if b != "null"]
        if len(t) != 2 or len(branches) != 1:
            raise NotVectorizable("union with several non-null branches")
        null_index = t.index("null")
        valid = _valid(arr)
        if valid is None:
            branch = _constant(_NULL_BRANCH[1 - null_index], present, len(arr))
        else:
            value_row = valid if present is None else valid & present
            codes = np.where(valid, 1 - null_index, null_index)
            branch = _varints(codes, present)
            present = value_row
        return [branch, *self.encode(arr, branches[0], present)]

    def _primitive(self, arr: pa.Array, kind: str, logical: str | None, present: np.ndarray | None) -> Pieces:
        at = arr.type
        if kind == "null":
            return []
        if kind == "boolean":
            if not pa.types.is_boolean(at):
                raise NotVectorizable(f"{at} for boolean")
            vals = pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint8)
            return [_fixed_width(vals, 1, present)]
        if kind in _INTS:
            return [_varints(_integers(arr, kind, logical), present)]
        if kind == "float":
            if not pa.types.is_float32(at):
                raise NotVectorizable(f"{at} for float")
            return [_fixed_width(_numbers(arr, np.float32).astype("<f4"), 4, present)]
        if kind == "double":
            if not (pa.types.is_float64(at) or pa.types.is_float32(at)):
                raise NotVectorizable(f"{at} for double")
            return [_fixed_width(_numbers(arr, np.float64).astype("<f8"), 8, present)]
        if kind in ("string", "bytes"):
            if kind == "string" and not (pa.types.is_string(at) or pa.types.is_large_string(at)):
                raise NotVectorizable(f"{at} for string")
            if kind == "bytes" and not (pa.types.is_binary(at) or pa.types.is_large_binary(at)):
                raise NotVectorizable(f"{at} for bytes")
            if logical == "decimal":
                raise NotVectorizable("decimal on bytes")
            return self._length_prefixed(arr, present)
        raise NotVectorizable(f"Avro type {kind!r}")

    def _length_prefixed(self, arr: pa.Array, present: np.ndarray | None) -> Pieces:
        try:
            values = arr.cast(pa.binary())  # large_* over 2 GiB fail here
        except pa.ArrowException as err:
            raise NotVectorizable(str(err)) from err
        if present is not None or values.null_count:
            mask = pa.array(present) if present is not None else pc.is_valid(values)
            values = pc.if_else(mask, values, _empty())
        lengths = pc.binary_length(values).to_numpy(zero_copy_only=False)
        return [_varints(lengths, present), values]

    def _fixed(self, arr: pa.Array, size: int, present: np.ndarray | None) -> Pieces:
        at = arr.type
        if not (pa.types.is_fixed_size_binary(at) and at.byte_width == size):
            raise NotVectorizable(f"{at} for fixed({size})")
        if arr.null_count:
            arr = pc.fill_null(arr, pa.scalar(b"\x00" * size, at))
        start = arr.offset * size
        mat = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=len(arr) * size, offset=start)
        return [_fixed_width(mat.reshape(len(arr), size), size, present)]

    def _fixed_decimal(self, arr: pa.Array, t: dict[str, Any], present: np.ndarray | None) -> Pieces:
        at = arr.type
        size = int(t["size"])
        if not (
            pa.types.is_decimal128(at) and at.precision <= int(t["precision"]) and at.scale == int(t.get("scale", 0))
        ):
            raise NotVectorizable(f"{at} for {t}")
        if arr.null_count:
            arr = pc.fill_null(arr, pa.scalar(0, at))
        raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=len(arr) * 16, offset=arr.offset * 16)
        big_endian = raw.reshape(len(arr), 16)[:, ::-1]
        head, tail = big_endian[:, : 16 - size], big_endian[:, 16 - size :]
        sign = np.where(tail[:, :1] & 0x80, 0xFF, 0x00).astype(np.uint8)
        if (head != sign).any():  # the unscaled value does not fit ``size`` bytes: fastavro decides
            raise NotVectorizable(f"decimal value wider than fixed({size})")
        return [_fixed_width(np.ascontiguousarray(tail), size, present)]

    def _enum(self, arr: pa.Array, t: dict[str, Any], present: np.ndarray | None) -> Pieces:
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            raise NotVectorizable(f"{arr.type} for enum")
        idx = pc.index_in(arr, value_set=pa.array(t["symbols"], arr.type))
        ok = pc.is_valid(idx).to_numpy(zero_copy_only=False)
        if not (ok if present is None else ok | ~present).all():
            raise NotVectorizable("enum value outside the symbols")
        return [_varints(pc.fill_null(idx, 0).to_numpy(zero_copy_only=False), present)]

    def _record(self, arr: pa.Array, t: dict[str, Any], present: np.ndarray | None) -> Pieces:
        if not pa.types.is_struct(arr.type):
            raise NotVectorizable(f"{arr.type} for record")
        names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        out: Pieces = []
        for f in t["fields"]:
            if f["name"] not in names:
                raise NotVectorizable(f"record field {f['name']!r} missing")
            child = arr.field(names.index(f["name"]))  # offset-adjusted, parent nulls not applied
            out.extend(self.encode(child, f["type"], present))
        return out

    def _array(self, arr: pa.Array, t: dict[str, Any], present: np.ndarray | None) -> Pieces:
        if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
            raise NotVectorizable(f"{arr.type} for array")
        n = len(arr)
        offsets = arr.offsets.to_numpy().astype(np.int64)  # offset-adjusted: n + 1 values
        lo, hi = int(offsets[0]), int(offsets[-1])
        counts = np.diff(offsets)
        shown = np.ones(n, dtype=bool) if present is None else present
        if present is not None:
            counts = np.where(present, counts, 0)
        items = arr.values.slice(lo, hi - lo)
        item_present = np.repeat(shown, np.diff(offsets)) if present is not None else None
        item_pieces = self.encode(items, t["items"], item_present)
        joined = _join(item_pieces, hi - lo)
        # the items of list i are contiguous in the joined buffer: group them by the list offsets
        item_offsets = _offsets(joined).astype(np.int64)
        grouped = _slice_groups(joined, item_offsets[offsets - lo])
        nonempty = counts > 0
        return [
            _varints(counts, nonempty if present is None else nonempty & present),
            grouped,
            _constant(b"\x00", present, n),
        ]


_PRIMITIVES = frozenset(("null", "boolean", "int", "long", "float", "double", "bytes", "string"))


def _numbers(arr: pa.Array, dtype: type) -> np.ndarray:
    if arr.null_count:
        arr = pc.fill_null(arr, 0)
    return arr.to_numpy(zero_copy_only=False).astype(dtype, copy=False)


_INT32 = (-(2**31), 2**31 - 1)
_LOGICAL_UNITS: dict[str, Callable[[pa.DataType], bool]] = {
    "date": pa.types.is_date32,
    "time-millis": lambda t: pa.types.is_time32(t) and t.unit == "ms",
    "time-micros": lambda t: pa.types.is_time64(t) and t.unit == "us",
    "timestamp-millis": lambda t: pa.types.is_timestamp(t) and t.unit == "ms" and t.tz is not None,
    "timestamp-micros": lambda t: pa.types.is_timestamp(t) and t.unit == "us" and t.tz is not None,
    "local-timestamp-millis": lambda t: pa.types.is_timestamp(t) and t.unit == "ms" and t.tz is None,
    "local-timestamp-micros": lambda t: pa.types.is_timestamp(t) and t.unit == "us" and t.tz is None,
}
"""Arrow types whose stored integers are the Avro value of a logical type (as fastavro converts the Python value)."""


def _integers(arr: pa.Array, kind: str, logical: str | None) -> np.ndarray:
    """int64 values of an Avro int/long column (temporal Arrow types as their stored integers)."""
    at = arr.type
    if pa.types.is_integer(at):
        if pa.types.is_uint64(at) and arr.null_count < len(arr) and (pc.max(arr).as_py() or 0) >= 2**63:
            raise NotVectorizable("uint64 value above 2**63 - 1")
        values = _numbers(arr, np.int64)
    elif pa.types.is_temporal(at):
        check = _LOGICAL_UNITS.get(logical or "")
        if check is None or not check(at):
            raise NotVectorizable(f"{at} for {kind} ({logical})")
        storage = pa.int32() if pa.types.is_date32(at) or pa.types.is_time32(at) else pa.int64()
        values = _numbers(arr.view(storage), np.int64)
    else:
        raise NotVectorizable(f"{at} for {kind}")
    if kind == "int" and len(values) and (values.min() < _INT32[0] or values.max() > _INT32[1]):
        raise NotVectorizable("int value outside 32 bits")
    return values


def _join(pieces: Pieces, n: int) -> pa.Array:
    """Row-wise concatenation of ``pieces`` (n rows); n empty values when there are none."""
    if not pieces:
        return _binary(np.zeros(n, dtype=np.int32), b"")
    if len(pieces) == 1:
        return pieces[0]
    return pc.binary_join_element_wise(*pieces, _empty())


def _slice_groups(joined: pa.Array, bounds: np.ndarray) -> pa.Array:
    """A binary array whose value i is ``joined``'s bytes from ``bounds[i]`` to ``bounds[i + 1]``."""
    data = joined.buffers()[2]
    rel = (bounds - bounds[0]).astype(np.int32)
    start = int(bounds[0])
    buf = data.slice(start, int(bounds[-1]) - start) if data is not None else pa.py_buffer(b"")
    return pa.Array.from_buffers(pa.binary(), len(bounds) - 1, [None, pa.py_buffer(rel), buf])


def arrow_to_fastavro(v: Any, t: Any) -> Any:
    """An Arrow ``to_pylist`` value as fastavro takes it: maps (lists of key/value pairs) become dicts."""
    if v is None:
        return None
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        return arrow_to_fastavro(v, branches[0]) if len(branches) == 1 else v
    if isinstance(t, dict):
        kind = t.get("type")
        if kind == "record":
            return {f["name"]: arrow_to_fastavro(v.get(f["name"]), f["type"]) for f in t["fields"]}
        if kind == "array":
            return [arrow_to_fastavro(x, t["items"]) for x in v]
        if kind == "map":
            return {k: arrow_to_fastavro(x, t["values"]) for k, x in v}
    return v


# -- whole records -------------------------------------------------------------------------------------------------
def _fastavro_field(field: dict[str, Any], schema: dict[str, Any]) -> Callable[[Any], bytes]:
    """Encode one value of a top-level field with fastavro (types this module does not vectorise)."""
    one = {"type": "record", "name": "_lo_field", "fields": [field]}
    if schema.get("namespace"):
        one["namespace"] = schema["namespace"]
    try:
        parsed = fastavro.parse_schema(one)
    except Exception as err:  # a reference to a named type defined in another field
        raise NotVectorizable(f"field {field['name']!r}: {err}") from err
    buf = io.BytesIO()
    name = field["name"]

    def enc(value: Any) -> bytes:
        buf.seek(0)
        buf.truncate()
        fastavro.schemaless_writer(buf, parsed, {name: value})
        return buf.getvalue()

    return enc


def _chunks(table: pa.Table, schema: dict[str, Any], *, length_prefix: bool) -> list[tuple[np.ndarray, pa.Buffer]]:
    """Per chunk of rows: the record lengths and the concatenated (length-prefixed) datums."""
    enc = _Encoder(schema)
    fallbacks: dict[str, Callable[[Any], bytes]] = {}
    for f in schema["fields"]:
        if f["name"] not in table.column_names or not enc.supports(f["type"]):
            fallbacks[f["name"]] = _fastavro_field(f, schema)
    out = []
    for start in range(0, table.num_rows, CHUNK_ROWS):
        part = table.slice(start, CHUNK_ROWS)
        rows = part.num_rows
        pieces: Pieces = []
        for f in schema["fields"]:
            name = f["name"]
            if name in fallbacks:
                pieces.append(_fallback_piece(part, f, fallbacks[name]))
            else:
                pieces.extend(enc.encode(part.column(name), f["type"], None))
        lengths = np.zeros(rows, dtype=np.int64)
        for piece in pieces:
            lengths += np.diff(_offsets(piece))
        if length_prefix:
            if len(lengths) and lengths.max() > 2**31 - 1:
                raise NotVectorizable("record longer than 2 GiB")
            pieces.insert(0, _binary(np.full(rows, 4, dtype=np.int32), lengths.astype(">i4").view(np.uint8)))
        try:
            joined = _join(pieces, rows)
        except pa.ArrowException as err:  # e.g. more than 2 GiB in one chunk
            raise NotVectorizable(str(err)) from err
        offs = _offsets(joined)
        data = joined.buffers()[2]
        size = int(offs[-1]) - int(offs[0])
        out.append((lengths, data.slice(int(offs[0]), size) if data is not None else pa.py_buffer(b"")))
    return out


def encode_records(table: pa.Table, schema: dict[str, Any]) -> list[bytes]:
    """The Avro binary datum of every row of ``table`` (fields by name in schema order).

    Fields encoded value by value take their Arrow ``to_pylist`` values through :func:`arrow_to_fastavro`. A field
    missing from the table takes its default (fastavro's rule).

    Raises:
        NotVectorizable: a type or value this module does not encode exactly as fastavro; encode with fastavro.
    """
    out: list[bytes] = []
    for lengths, data in _chunks(table, schema, length_prefix=False):
        raw = data.to_pybytes()
        ends = np.cumsum(lengths).tolist()
        out.extend(raw[s:e] for s, e in zip([0, *ends[:-1]], ends, strict=True))
    return out


def length_prefixed_body(table: pa.Table, schema: dict[str, Any]) -> bytes:
    """Hudi's Avro data block body: per record an int32 big-endian length and the datum (no version or count).

    Raises:
        NotVectorizable: as :func:`encode_records`.
    """
    chunks = _chunks(table, schema, length_prefix=True)
    if len(chunks) == 1:
        return chunks[0][1].to_pybytes()
    return b"".join(memoryview(data) for _, data in chunks)


def _fallback_piece(part: pa.Table, field: dict[str, Any], enc: Callable[[Any], bytes]) -> pa.Array:
    name = field["name"]
    if name not in part.column_names:
        if "default" not in field and not (isinstance(field["type"], list) and "null" in field["type"]):
            raise NotVectorizable(f"no value and no default for {name}")
        one = enc(field.get("default"))
        return _constant(one, None, part.num_rows)
    values = [arrow_to_fastavro(v, field["type"]) for v in part.column(name).to_pylist()]
    try:
        encoded = [enc(v) for v in values]
    except Exception as err:  # fastavro refuses a value: let the whole-record path raise its own error
        raise NotVectorizable(f"field {name!r}: {err}") from err
    return pa.array(encoded, pa.binary())
