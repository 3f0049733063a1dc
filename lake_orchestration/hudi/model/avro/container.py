"""One-record Avro object container files, as Hudi writes its timeline files (``DataFileWriter``).

Layout written by Java (checked against fixture files): magic ``Obj\\x01``; header metadata map with the
single key ``avro.schema`` (no ``avro.codec``: Java omits it for the null codec); a 16-byte random sync
marker; one block ``count=1, byte size, record, sync``.
"""

from __future__ import annotations

import functools
import io
import json
import os
from typing import Any

import fastavro

from lake_orchestration.errors import CorruptFileError, SchemaError

MAGIC = b"Obj\x01"
SYNC_SIZE = 16


def _long(value: int) -> bytes:
    """Avro ``long``: zig-zag varint."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _bytes(value: bytes) -> bytes:
    return _long(len(value)) + value


@functools.lru_cache(maxsize=64)
def parse_schema_text(schema_text: str, what: str = "Avro schema for a container file") -> Any:
    """A writer schema's JSON text, parsed by fastavro (cached); a bad one raises SchemaError naming ``what``."""
    try:
        return fastavro.parse_schema(json.loads(schema_text))
    except Exception as err:
        raise SchemaError(f"Cannot parse {what}: {err}") from err


def encode_container(record: dict[str, Any], schema: dict[str, Any]) -> bytes:
    """Encode one record as an Avro object container file, byte-compatible with Java's ``DataFileWriter``.

    Args:
        record: The record (Avro nulls as None, maps as dict, arrays as list).
        schema: Self-contained writer schema (JSON dict); embedded verbatim (compact JSON) in the header.

    Returns:
        The container bytes (only the 16-byte sync marker is random).

    Raises:
        SchemaError: The schema cannot be parsed.
        ValueError: The record does not match the schema (from fastavro).
    """
    text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    parsed = parse_schema_text(text)
    body = io.BytesIO()
    fastavro.schemaless_writer(body, parsed, record)
    data = body.getvalue()
    return container_bytes(text, data, count=1)


def container_bytes(schema_text: str, body: bytes | memoryview, *, count: int) -> bytes:
    """An Avro object container of one block: the header (``avro.schema`` = ``schema_text``, no codec), then
    ``count`` records already encoded in ``body`` (a random sync marker)."""
    sync = os.urandom(SYNC_SIZE)
    header = MAGIC + _long(1) + _bytes(b"avro.schema") + _bytes(schema_text.encode("utf-8")) + _long(0) + sync
    return b"".join((header, _long(count), _long(len(body)), body, sync))


def decode_container(data: bytes, *, path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Decode a one-record Avro container file with its embedded writer schema.

    Args:
        data: The whole file content.
        path: Where the bytes came from (used in error messages only).

    Returns:
        ``(record, writer_schema)``; the writer schema is the header's ``avro.schema`` JSON.

    Raises:
        CorruptFileError: Empty input, no ``Obj\\x01`` magic, undecodable header or body, or not exactly
            one record.
    """
    if not data:
        raise CorruptFileError(path, "empty file, expected an Avro container file holding one record")
    if data[:4] != MAGIC:
        raise CorruptFileError(path, f"no Avro container magic: expected b'Obj\\x01', found {bytes(data[:4])!r}")
    try:
        reader = fastavro.reader(io.BytesIO(data))
        schema_bytes = reader.metadata.get("avro.schema")
        if schema_bytes is None:
            raise CorruptFileError(path, "Avro container header has no avro.schema")
        writer_schema = json.loads(schema_bytes)
        records = list(reader)
    except CorruptFileError:
        raise
    except Exception as err:
        raise CorruptFileError(path, f"cannot decode Avro container: {type(err).__name__}: {err}") from err
    if len(records) != 1:
        raise CorruptFileError(path, f"expected exactly one record in the Avro container, found {len(records)}")
    record = records[0]
    if not isinstance(record, dict):
        raise CorruptFileError(path, f"expected an Avro record, found {type(record).__name__}")
    return record, writer_schema
