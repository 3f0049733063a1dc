"""Contents of data, delete and parquet log blocks: decode to Arrow, encode from Arrow.

Avro data block content: int32 version (3), int32 record count, then per record int32 length + Avro binary datum.
Decoding is the hot path of every merged read: the block body is wrapped, unchanged, in an Avro container whose
schema starts with a ``fixed(4)`` field that swallows each record's length prefix, and decoded by polars (Rust,
~9x faster than fastavro). Schemas polars cannot decode (maps, enums, fixed/decimal, multi-branch unions,
time types) fall back to fastavro.

Content that does not decode is an error, never a skipped block: ``decode_data_block`` and ``decode_delete_block``
turn every decode failure, whatever its type (a polars panic, fastavro, struct, Arrow or UTF-8 errors), into one
``CorruptLogBlockError`` naming the file, the block offset and its instant, as Java fails the task when a block's
content does not deserialize. Only framing corruption is skipped (``log_format.iter_blocks``).
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lake_orchestration.errors import CorruptLogBlockError
from lake_orchestration.hudi.log import avro_encoder
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlock, LogBlockType
from lake_orchestration.hudi.model.avro.container import container_bytes
from lake_orchestration.hudi.model.schema import avro_to_arrow_schema, non_null_branch

AVRO_BLOCK_VERSION = 3
DELETE_BLOCK_VERSION = 3
_I32 = struct.Struct(">i")
_LEN_FIELD = "__hudi_record_length"

try:  # polars is a hard dependency, but keep the fallback honest if it fails to import on a platform
    import polars as _pl
    from polars.exceptions import PanicException as _PolarsPanic
except ImportError:  # pragma: no cover
    _pl = None

    class _PolarsPanic(Exception):  # type: ignore[no-redef]
        pass


# A panic in polars' Rust code surfaces as pyo3's PanicException, a BaseException: caught with Exception, but
# never KeyboardInterrupt, SystemExit or MemoryError.
_DECODE_FAILURES = (Exception, _PolarsPanic)


class BlockDecodeError(Exception):
    """Content of a block could not be decoded (``decode_data_block``/``decode_delete_block`` raise it as a
    ``CorruptLogBlockError`` naming the block)."""


# -- whole blocks ----------------------------------------------------------------------------------------------------
def decode_data_block(block: LogBlock, schemas: dict[str, dict[str, Any]] | None = None) -> pa.Table:
    """The records of an Avro or parquet data block.

    ``schemas`` caches the parsed ``SCHEMA`` headers (writer schemas) across the blocks of a scan.

    Raises:
        CorruptLogBlockError: the content (or its schema header) does not decode, whatever the underlying error.
    """
    try:
        text = block.get(HeaderKey.SCHEMA) or ""
        schema = schemas.get(text) if schemas is not None else None
        if schema is None and (text or block.block_type is LogBlockType.AVRO_DATA_BLOCK):
            schema = json.loads(text)
            if schemas is not None:
                schemas[text] = schema
        if block.block_type is LogBlockType.AVRO_DATA_BLOCK:
            return decode_avro_data(block.content, text, schema)
        if block.block_type is LogBlockType.PARQUET_DATA_BLOCK:
            return decode_parquet_data(block.content)
        raise BlockDecodeError(f"{block.block_type.name} content is not decoded by this reader")
    except MemoryError:
        raise
    except _DECODE_FAILURES as err:
        raise corrupt_block_error(block, err) from err


def decode_delete_block(block: LogBlock) -> list[DeleteRecord]:
    """The deleted keys of a delete block.

    Raises:
        CorruptLogBlockError: the content does not decode, whatever the underlying error.
    """
    try:
        return decode_delete_content(block.content)
    except MemoryError:
        raise
    except _DECODE_FAILURES as err:
        raise corrupt_block_error(block, err) from err


def corrupt_block_error(block: LogBlock, err: BaseException) -> CorruptLogBlockError:
    """The error for a well-framed block whose content failed to decode with ``err``."""
    detail = str(err).strip().splitlines()[0] if str(err).strip() else ""
    if not isinstance(err, BlockDecodeError):
        detail = f"{type(err).__name__}: {detail}" if detail else type(err).__name__
    return CorruptLogBlockError(
        block.path or "<log bytes>", block.offset, detail, instant=block.instant_time, block_type=block.block_type.name
    )


# -- Avro data blocks ------------------------------------------------------------------------------------------------
def decode_avro_data(content: bytes, schema_json: str, schema: dict[str, Any] | None = None) -> pa.Table:
    """Decode an Avro data block's content to an Arrow table with the writer schema's Arrow mapping."""
    if schema is None:
        schema = json.loads(schema_json)
    if len(content) < 8:
        raise BlockDecodeError(f"avro data block content is {len(content)} bytes, expected >= 8")
    version, count = struct.unpack_from(">ii", content, 0)
    if version < 2:
        raise BlockDecodeError(f"avro data block version {version} is not supported (expected 2 or 3)")
    if count < 0:
        raise BlockDecodeError(f"negative record count {count}")
    target = avro_to_arrow_schema(schema)
    if count == 0:
        return target.empty_table()
    body = memoryview(content)[8:]
    polars_error: BaseException | None = None
    if _pl is not None and polars_can_decode(schema):
        try:
            return _decode_polars(body, count, schema, target)
        except MemoryError:
            raise
        except _DECODE_FAILURES as err:
            # Content polars refuses (or panics on) is decoded again by fastavro, record by record with each
            # record's length prefix checked: a block that is really corrupt fails there too, with a precise reason.
            polars_error = err
    try:
        return _decode_fastavro(body, count, schema, target)
    except BlockDecodeError as err:
        if polars_error is not None:
            raise BlockDecodeError(f"{err} (polars: {_first_line(polars_error)})") from err
        raise


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0]}" if text else type(err).__name__


def _decode_polars(body: memoryview, count: int, schema: dict[str, Any], target: pa.Schema) -> pa.Table:
    wrapped = dict(schema)
    wrapped["fields"] = [
        {"name": _LEN_FIELD, "type": {"type": "fixed", "name": "HudiRecordLength", "size": 4}},
        *schema["fields"],
    ]
    container = container_bytes(json.dumps(wrapped), body, count=count)
    df = _pl.read_avro(io.BytesIO(container))
    if df.height != count:
        raise BlockDecodeError(f"decoded {df.height} records, header says {count}")
    _check_record_lengths(df.get_column(_LEN_FIELD).to_arrow(), len(body))
    table = df.drop(_LEN_FIELD).to_arrow()
    return _cast(table, target)


def _check_record_lengths(prefixes: pa.Array | pa.ChunkedArray, body_size: int) -> None:
    """The record length prefixes polars read (as ``fixed(4)`` values) must add up to the block body.

    polars does not check a record's length prefix against its datum: a datum whose bytes were damaged can decode
    to a different length, and every later record is then read from the wrong offset. Those misread prefixes no
    longer add up to the body (4 bytes + the datum per record), which fastavro, checking record by record, reports.
    """
    if isinstance(prefixes, pa.ChunkedArray):
        prefixes = prefixes.combine_chunks()
    fixed = prefixes.cast(pa.binary(4))
    lengths = np.frombuffer(fixed.buffers()[1], dtype=">i4", count=len(fixed), offset=fixed.offset * 4)
    total = int(lengths.astype(np.int64).sum()) + 4 * len(fixed)
    if (lengths < 0).any() or total != body_size:
        raise BlockDecodeError(f"record length prefixes add up to {total} bytes, the block body has {body_size}")


def _decode_fastavro(body: memoryview, count: int, schema: dict[str, Any], target: pa.Schema) -> pa.Table:
    parsed = fastavro.parse_schema(schema)
    buf = io.BytesIO(body)
    rows = []
    try:
        for _ in range(count):
            ln = buf.read(4)
            if len(ln) != 4:
                raise BlockDecodeError("record length prefix past the end of the block")
            (length,) = _I32.unpack(ln)
            start = buf.tell()
            rows.append(fastavro.schemaless_reader(buf, parsed, None))
            if buf.tell() - start != length:
                raise BlockDecodeError(f"record length {length} does not match its datum ({buf.tell() - start})")
    except BlockDecodeError:
        raise
    except MemoryError:
        raise
    except Exception as err:  # EOFError, ValueError, OverflowError, IndexError, UnicodeDecodeError, struct.error...
        raise BlockDecodeError(f"avro decode failed: {_first_line(err)}") from err
    try:
        rows = [_fastavro_to_arrow_values(r, schema) for r in rows] if _needs_value_fixup(schema) else rows
        return pa.Table.from_pylist(rows, schema=target)
    except (pa.ArrowException, ValueError, TypeError) as err:
        raise BlockDecodeError(f"decoded values do not fit the writer schema: {_first_line(err)}") from err


def _cast(table: pa.Table, target: pa.Schema) -> pa.Table:
    cols = []
    for f in target:
        col = table.column(f.name)
        if col.type != f.type:
            col = col.cast(f.type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=target)


def polars_can_decode(schema: dict[str, Any]) -> bool:
    """True if every type in the schema is one polars' Avro reader decodes exactly."""

    def ok(t: Any) -> bool:
        if isinstance(t, str):
            return t in ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
        if isinstance(t, list):
            inner, nullable = non_null_branch(t)
            return (nullable or len(t) == 1) and ok(inner if nullable else t[0])
        kind = t.get("type")
        if t.get("logicalType") is not None:
            return kind in ("int", "long") and t["logicalType"] in ("date", "timestamp-micros", "timestamp-millis")
        if kind == "record":
            return all(ok(f["type"]) for f in t["fields"])
        if kind == "array":
            return ok(t["items"])
        return isinstance(kind, str) and kind in ("boolean", "int", "long", "float", "double", "bytes", "string")

    return all(ok(f["type"]) for f in schema["fields"])


def _needs_value_fixup(schema: dict[str, Any]) -> bool:
    return '"map"' in json.dumps(schema)


def _fastavro_to_arrow_values(v: Any, t: Any) -> Any:
    """fastavro gives maps as dicts; Arrow's from_pylist wants a list of (key, value) pairs."""
    if v is None:
        return None
    if isinstance(t, list):
        inner, _ = non_null_branch(t)
        return _fastavro_to_arrow_values(v, inner)
    if isinstance(t, dict):
        kind = t.get("type")
        if kind == "record":
            return {f["name"]: _fastavro_to_arrow_values(v.get(f["name"]), f["type"]) for f in t["fields"]}
        if kind == "array":
            return [_fastavro_to_arrow_values(x, t["items"]) for x in v]
        if kind == "map":
            return [(k, _fastavro_to_arrow_values(x, t["values"])) for k, x in v.items()]
    return v


def encode_avro_records(rows: Iterable[dict[str, Any]], schema: dict[str, Any]) -> list[bytes]:
    """Avro binary datum per row (values as Arrow's ``to_pylist`` gives them), fastavro record by record."""
    parsed = fastavro.parse_schema(schema)
    fix_maps = _needs_value_fixup(schema)
    out = []
    buf = io.BytesIO()
    for r in rows:
        buf.seek(0)
        buf.truncate()
        fastavro.schemaless_writer(buf, parsed, avro_encoder.arrow_to_fastavro(r, schema) if fix_maps else r)
        out.append(buf.getvalue())
    return out


def encode_avro_table_records(table: pa.Table, schema: dict[str, Any]) -> list[bytes]:
    """Avro binary datum per row of an Arrow table (columns by the schema's field names).

    Column-wise (:mod:`lake_orchestration.hudi.log.avro_encoder`); tables it does not encode exactly go through
    fastavro record by record, with the same bytes.
    """
    try:
        return avro_encoder.encode_records(table, schema)
    except avro_encoder.NotVectorizable:
        return encode_avro_records(_pylist(table, schema), schema)


def _pylist(table: pa.Table, schema: dict[str, Any]) -> list[dict[str, Any]]:
    return table.select([f["name"] for f in schema["fields"] if f["name"] in table.column_names]).to_pylist()


def encode_avro_data_content(records: Sequence[bytes]) -> bytes:
    """Avro data block content (version 3) from encoded datums."""
    parts = [_I32.pack(AVRO_BLOCK_VERSION), _I32.pack(len(records))]
    for r in records:
        parts.append(_I32.pack(len(r)))
        parts.append(r)
    return b"".join(parts)


def encode_avro_table(table: pa.Table, schema: dict[str, Any]) -> bytes:
    """Avro data block content for an Arrow table (columns by the schema's field names).

    The body is built column-wise (:mod:`lake_orchestration.hudi.log.avro_encoder`, no Python object per value);
    tables it does not encode exactly (types or values fastavro treats specially) are encoded by fastavro record by
    record. Both give the same bytes.
    """
    head = _I32.pack(AVRO_BLOCK_VERSION) + _I32.pack(table.num_rows)
    try:
        return head + avro_encoder.length_prefixed_body(table, schema)
    except avro_encoder.NotVectorizable:
        return encode_avro_data_content(encode_avro_records(_pylist(table, schema), schema))


# -- Parquet data blocks -----------------------------------------------------------------------------------------
def decode_parquet_data(content: bytes) -> pa.Table:
    if content[:4] != b"PAR1" or content[-4:] != b"PAR1":
        raise BlockDecodeError("parquet data block content does not start and end with PAR1")
    try:
        return pq.read_table(pa.BufferReader(content))
    except (pa.ArrowException, OSError) as err:
        raise BlockDecodeError(f"parquet decode failed: {err}") from err


def encode_parquet_data(table: pa.Table, *, compression: str = "gzip") -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression)
    return sink.getvalue().to_pybytes()


# -- Delete blocks -----------------------------------------------------------------------------------------------
_NS = "org.apache.hudi.avro.model"
# Union order of HoodieDeleteRecord.orderingVal (0.12 -> 1.x; 1.1 appends ArrayWrapper): must match exactly,
# the schema is embedded nowhere.
_WRAPPERS: list[tuple[str, Any]] = [
    ("BooleanWrapper", "boolean"),
    ("IntWrapper", "int"),
    ("LongWrapper", "long"),
    ("FloatWrapper", "float"),
    ("DoubleWrapper", "double"),
    ("BytesWrapper", "bytes"),
    ("StringWrapper", "string"),
    ("DateWrapper", {"type": "int", "logicalType": "date"}),
    ("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    ("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    ("TimestampMicrosWrapper", {"type": "long", "logicalType": "timestamp-micros"}),
]
DELETE_RECORD_LIST_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": _NS,
    "fields": [
        {
            "name": "deleteRecordList",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieDeleteRecord",
                    "fields": [
                        {"name": "recordKey", "type": ["null", "string"], "default": None},
                        {"name": "partitionPath", "type": ["null", "string"], "default": None},
                        {
                            "name": "orderingVal",
                            "type": [
                                "null",
                                *[
                                    {
                                        "type": "record",
                                        "name": n,
                                        "namespace": _NS,
                                        "fields": [{"name": "value", "type": t}],
                                    }
                                    for n, t in _WRAPPERS
                                ],
                            ],
                            "default": None,
                        },
                    ],
                },
            },
        }
    ],
}
_DELETE_PARSED = fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA)


@dataclass(frozen=True)
class DeleteRecord:
    """One key deleted by a delete block.

    Attributes:
        record_key: ``_hoodie_record_key`` of the deleted record.
        partition_path: its partition path.
        ordering_value: the delete's ordering value (``0`` = natural order: the delete always wins).
        ordering_wrapper: the Avro wrapper it was stored in (``IntWrapper``...), ``None`` for a null value.
    """

    record_key: str | None
    partition_path: str | None
    ordering_value: Any = 0
    ordering_wrapper: str | None = "IntWrapper"


def decode_delete_content(content: bytes) -> list[DeleteRecord]:
    if len(content) < 8:
        raise BlockDecodeError(f"delete block content is {len(content)} bytes, expected >= 8")
    version, length = struct.unpack_from(">ii", content, 0)
    if version != DELETE_BLOCK_VERSION:
        raise BlockDecodeError(
            f"delete block version {version} is not supported (expected 3; 1/2 are Java Kryo serialized)"
        )
    if length < 0 or 8 + length > len(content):
        raise BlockDecodeError(f"delete block payload length {length} exceeds content ({len(content) - 8} bytes)")
    try:
        rec = fastavro.schemaless_reader(
            io.BytesIO(content[8 : 8 + length]), _DELETE_PARSED, None, return_record_name=True
        )
    except (EOFError, ValueError, IndexError, UnicodeDecodeError) as err:
        raise BlockDecodeError(f"delete record list decode failed: {err}") from err
    out = []
    for d in rec["deleteRecordList"]:
        ov = d.get("orderingVal")
        if ov is None:
            out.append(DeleteRecord(d.get("recordKey"), d.get("partitionPath"), None, None))
        else:
            name, val = ov
            out.append(DeleteRecord(d.get("recordKey"), d.get("partitionPath"), val["value"], name.rsplit(".", 1)[-1]))
    return out


def wrapper_for(value: Any) -> str | None:
    """The orderingVal wrapper Java's ``wrapValueIntoAvro`` picks for a Python value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "BooleanWrapper"
    if isinstance(value, int):
        return "IntWrapper" if -(2**31) <= value < 2**31 else "LongWrapper"
    if isinstance(value, float):
        return "DoubleWrapper"
    if isinstance(value, bytes):
        return "BytesWrapper"
    if isinstance(value, str):
        return "StringWrapper"
    if isinstance(value, datetime):
        return "TimestampMicrosWrapper"
    if isinstance(value, date):
        return "DateWrapper"
    if isinstance(value, Decimal):
        return "DecimalWrapper"
    raise TypeError(f"No Hudi ordering-value wrapper for {type(value).__name__} value {value!r}")


def encode_delete_content(records: Sequence[DeleteRecord]) -> bytes:
    items = []
    for d in records:
        if d.ordering_wrapper is None or d.ordering_value is None:
            ov = None
        else:
            v = d.ordering_value
            if isinstance(v, datetime) and v.tzinfo is None:
                v = v.replace(tzinfo=timezone.utc)
            ov = (f"{_NS}.{d.ordering_wrapper}", {"value": v})
        items.append({"recordKey": d.record_key, "partitionPath": d.partition_path, "orderingVal": ov})
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _DELETE_PARSED, {"deleteRecordList": items})
    payload = buf.getvalue()
    return _I32.pack(DELETE_BLOCK_VERSION) + _I32.pack(len(payload)) + payload
