"""Avro schema helpers: parsing the writer schemas Hudi stores, and the Avro -> Arrow type mapping.

The mapping follows reference/hudi/base-file.md §4.1 (what Java Hudi writes to parquet for each Avro type).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from lake_orchestration.errors import SchemaError

META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME = META_FIELDS
IS_DELETED_FIELD = "_hoodie_is_deleted"
PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


def parse_schema(text: str, *, where: str = "") -> dict[str, Any]:
    """Parse an Avro schema JSON string (a record schema).

    Raises:
        SchemaError: not JSON or not a record schema.
    """
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as err:
        raise SchemaError(f"Invalid Avro schema JSON{' in ' + where if where else ''}: {err}") from err
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise SchemaError(f"Expected an Avro record schema{' in ' + where if where else ''}, got {text[:80]!r}")
    return schema


def non_null_branch(t: Any) -> tuple[Any, bool]:
    """For ``["null", T]`` / ``[T, "null"]`` return ``(T, True)``; for any other type ``(t, False)``."""
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        if len(branches) == 1 and len(t) == 2:
            return branches[0], True
    return t, False


def avro_to_arrow_schema(schema: dict[str, Any]) -> pa.Schema:
    """Arrow schema for an Avro record schema (all fields nullable like Hudi's parquet files)."""
    named: dict[str, Any] = {}
    return pa.schema([_field(f, named, schema.get("namespace", "")) for f in schema["fields"]])


def _field(f: dict[str, Any], named: dict[str, Any], ns: str) -> pa.Field:
    t, _ = non_null_branch(f["type"])
    return pa.field(f["name"], _type(t, named, ns), nullable=True)


def _type(t: Any, named: dict[str, Any], ns: str) -> pa.DataType:
    if isinstance(t, str):
        if t in PRIMITIVES:
            return {
                "null": pa.null(),
                "boolean": pa.bool_(),
                "int": pa.int32(),
                "long": pa.int64(),
                "float": pa.float32(),
                "double": pa.float64(),
                "bytes": pa.binary(),
                "string": pa.string(),
            }[t]
        ref = named.get(t) or named.get(f"{ns}.{t}")
        if ref is None:
            raise SchemaError(f"Unknown Avro named type {t!r}")
        return _type(ref, named, ns)
    if isinstance(t, list):
        inner, ok = non_null_branch(t)
        if not ok:
            raise SchemaError(f"Avro union {json.dumps(t)[:120]} has several non-null branches; not supported")
        return _type(inner, named, ns)
    kind = t.get("type")
    logical = t.get("logicalType")
    if kind in ("record", "enum", "fixed"):
        name = t.get("name", "")
        full = name if "." in name else f"{t.get('namespace', ns)}.{name}"
        named[full] = t
        named.setdefault(name, t)
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return pa.decimal128(int(t["precision"]), int(t.get("scale", 0)))
    if logical == "date" and kind == "int":
        return pa.date32()
    if logical == "timestamp-micros" and kind == "long":
        return pa.timestamp("us", tz="UTC")
    if logical == "timestamp-millis" and kind == "long":
        return pa.timestamp("ms", tz="UTC")
    if logical == "local-timestamp-micros" and kind == "long":
        return pa.timestamp("us")
    if logical == "local-timestamp-millis" and kind == "long":
        return pa.timestamp("ms")
    if logical == "time-micros" and kind == "long":
        return pa.time64("us")
    if logical == "time-millis" and kind == "int":
        return pa.time32("ms")
    if kind == "record":
        sub_ns = t.get("namespace") or ns
        return pa.struct([_field(f, named, sub_ns) for f in t["fields"]])
    if kind == "array":
        return pa.list_(pa.field("element", _type(t["items"], named, ns), nullable=True))
    if kind == "map":
        return pa.map_(pa.string(), pa.field("value", _type(t["values"], named, ns), nullable=True))
    if kind == "enum":
        return pa.string()
    if kind == "fixed":
        return pa.binary(int(t["size"]))
    if kind in PRIMITIVES:
        return _type(kind, named, ns)
    raise SchemaError(f"Unsupported Avro type {json.dumps(t)[:120]}")


AVRO_NAMESPACE_PREFIX = "hoodie"
"""Avro namespace of a table's record schema: ``hoodie.<table>`` (``AvroConversionUtils``), not a config key."""


def arrow_to_avro_schema(schema: pa.Schema, *, table_name: str) -> dict[str, Any]:
    """The Avro record schema Hudi's Spark writer derives for an Arrow schema (all fields ``["null", T]``).

    Record ``<table>_record`` in namespace ``hoodie.<table>``; nested records are named after their field in the
    parent's full name (reference/hudi/base-file.md §4.2).
    """
    name = f"{table_name}_record"
    ns = f"{AVRO_NAMESPACE_PREFIX}.{table_name}"
    return {
        "type": "record",
        "name": name,
        "namespace": ns,
        "fields": [_avro_field(f, f"{ns}.{name}") for f in schema],
    }


def _avro_field(f: pa.Field, parent: str) -> dict[str, Any]:
    return {"name": f.name, "type": ["null", _avro_type(f.type, f.name, parent)], "default": None}


def _avro_type(t: pa.DataType, name: str, parent: str) -> Any:
    if pa.types.is_boolean(t):
        return "boolean"
    if (
        pa.types.is_int8(t)
        or pa.types.is_int16(t)
        or pa.types.is_int32(t)
        or pa.types.is_uint8(t)
        or pa.types.is_uint16(t)
    ):
        return "int"
    if pa.types.is_integer(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_floating(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_fixed_size_binary(t):
        return {"type": "fixed", "name": name, "namespace": parent, "size": t.byte_width}
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(t):
        unit = "micros" if t.unit in ("us", "ns") else "millis"
        prefix = "timestamp" if t.tz is not None else "local-timestamp"
        return {"type": "long", "logicalType": f"{prefix}-{unit}"}
    if pa.types.is_decimal(t):
        size = _decimal_size(t.precision)
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{parent}.{name}",
            "size": size,
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if pa.types.is_struct(t):
        return {
            "type": "record",
            "name": name,
            "namespace": parent,
            "fields": [_avro_field(t.field(i), f"{parent}.{name}") for i in range(t.num_fields)],
        }
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "items": ["null", _avro_type(t.value_type, name, parent)]}
    if pa.types.is_map(t):
        return {"type": "map", "values": ["null", _avro_type(t.item_type, name, parent)]}
    raise SchemaError(f"Arrow type {t} of field {name!r} has no Hudi Avro mapping")


def _decimal_size(precision: int) -> int:
    """Minimal bytes for a two's-complement unscaled value of ``precision`` digits (Avro/Hudi fixed size)."""
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


def with_meta_fields(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with the five ``_hoodie_*`` meta fields first, as Hudi writes them into files."""
    if any(f["name"] == COMMIT_TIME for f in schema["fields"]):
        return schema
    out = dict(schema)
    out["fields"] = [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in META_FIELDS] + list(
        schema["fields"]
    )
    return out
