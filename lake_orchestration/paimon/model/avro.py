"""Avro object container files with many records, as Paimon writes manifests and manifest lists.

Paimon writes them with Avro's ``DataFileWriter`` and ``manifest.compression`` (default ``zstd``, Avro codec name
``zstandard``). fastavro decodes zstandard only with ``backports.zstd`` (or Python 3.14), so blocks are decompressed
here with pyarrow's zstd stream (no frame content size needed) and the records decoded with fastavro's schemaless
reader. Logical types are stripped from the writer schema so timestamps stay the epoch millis Java wrote (Paimon's
``_CREATION_TIME`` is a local date-time, not an instant).
"""

from __future__ import annotations

import bz2
import functools
import io
import json
import os
import zlib
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow as pa

from lake_orchestration.errors import CorruptFileError

MAGIC = b"Obj\x01"
SYNC_SIZE = 16


@dataclass(frozen=True, kw_only=True)
class AvroContainer:
    """The decoded content of an Avro object container file."""

    schema: dict[str, Any]
    """The writer schema (the header's ``avro.schema``)."""
    codec: str
    """The block codec (``null``, ``deflate``, ``zstandard`` ...)."""
    records: tuple[dict[str, Any], ...]
    """The records, in file order."""


def _read_long(data: bytes, pos: int, path: str) -> tuple[int, int]:
    """Avro ``long`` (zig-zag varint) at ``pos``: ``(value, next position)``."""
    n = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise CorruptFileError(path, "truncated Avro container (a varint runs past the end of the file)")
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (n >> 1) ^ -(n & 1), pos


def _strip_logical_types(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_logical_types(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_strip_logical_types(v) for v in node]
    return node


@functools.lru_cache(maxsize=32)
def _parsed(schema_text: str) -> Any:
    return fastavro.parse_schema(_strip_logical_types(json.loads(schema_text)))


def _decompress(codec: str, block: bytes, path: str) -> bytes:
    if codec == "null":
        return block
    if codec == "zstandard":
        return bytes(pa.input_stream(pa.py_buffer(block), compression="zstd").read())
    if codec == "deflate":
        return zlib.decompressobj(-15).decompress(block)
    if codec == "bzip2":
        return bz2.decompress(block)
    if codec == "snappy":
        # Avro's snappy blocks end with a 4-byte CRC32 of the uncompressed data
        return bytes(pa.Codec("snappy").decompress(block[:-4], decompressed_size=_snappy_length(block)))
    raise CorruptFileError(
        path, f"unsupported Avro codec {codec!r}: expected null, zstandard, deflate, bzip2 or snappy"
    )


def _snappy_length(block: bytes) -> int:
    n = 0
    shift = 0
    for b in block:
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return n


def read_container(data: bytes, *, path: str) -> AvroContainer:
    """Decode an Avro object container file with all its records.

    Args:
        data: The whole file content.
        path: Where the bytes came from (for error messages only).

    Returns:
        The writer schema, codec and records (logical types not applied: ``timestamp-millis`` stays an int).

    Raises:
        CorruptFileError: No ``Obj\\x01`` magic, a truncated header or block, a wrong sync marker, an unsupported
            codec, a block that does not decompress or a record that does not decode with the writer schema: every
            decode failure, whatever raised it, names ``path``.
    """
    try:
        return _read_container(data, path)
    except CorruptFileError:
        raise
    except Exception as err:  # a corrupt file can fail anywhere in decoding (utf-8, JSON, codec, varint)
        raise CorruptFileError(
            path, f"expected an Avro object container file, decoding failed: {type(err).__name__}: {err}"
        ) from err


def _read_container(data: bytes, path: str) -> AvroContainer:
    if data[:4] != MAGIC:
        raise CorruptFileError(path, f"no Avro container magic: expected b'Obj\\x01', found {bytes(data[:4])!r}")
    pos = 4
    meta: dict[str, bytes] = {}
    while True:
        count, pos = _read_long(data, pos, path)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = _read_long(data, pos, path)
        for _ in range(count):
            klen, pos = _read_long(data, pos, path)
            key = data[pos : pos + klen].decode("utf-8")
            pos += klen
            vlen, pos = _read_long(data, pos, path)
            meta[key] = data[pos : pos + vlen]
            pos += vlen
    sync = data[pos : pos + SYNC_SIZE]
    pos += SYNC_SIZE
    if "avro.schema" not in meta or len(sync) != SYNC_SIZE:
        raise CorruptFileError(path, "Avro container header has no avro.schema or no sync marker")
    schema_text = meta["avro.schema"].decode("utf-8")
    codec = meta.get("avro.codec", b"null").decode("utf-8")
    try:
        parsed = _parsed(schema_text)
    except Exception as err:
        raise CorruptFileError(path, f"cannot parse the Avro writer schema: {err}") from err
    records: list[dict[str, Any]] = []
    while pos < len(data):
        count, pos = _read_long(data, pos, path)
        size, pos = _read_long(data, pos, path)
        block = data[pos : pos + size]
        pos += size
        if len(block) != size or data[pos : pos + SYNC_SIZE] != sync:
            raise CorruptFileError(path, f"Avro block ending at byte {pos} is truncated or has a wrong sync marker")
        pos += SYNC_SIZE
        body = io.BytesIO(_decompress(codec, block, path))
        try:
            for _ in range(count):
                records.append(fastavro.schemaless_reader(body, parsed, None))
        except Exception as err:
            raise CorruptFileError(path, f"cannot decode an Avro record: {type(err).__name__}: {err}") from err
    return AvroContainer(schema=json.loads(schema_text), codec=codec, records=tuple(records))


def _long(n: int) -> bytes:
    """Avro ``long``: zig-zag varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _compress(codec: str, block: bytes) -> bytes:
    if codec == "null":
        return block
    if codec == "zstandard":
        return bytes(pa.compress(block, codec="zstd", asbytes=True))
    if codec == "deflate":
        c = zlib.compressobj(wbits=-15)
        return c.compress(block) + c.flush()
    raise ValueError(f"unsupported Avro codec {codec!r}: expected null, zstandard or deflate")


#: Paimon ``manifest.compression`` values -> Avro codec names (Java ``AvroFileFormat``).
AVRO_CODECS = {"zstd": "zstandard", "none": "null", "null": "null", "deflate": "deflate", "zstandard": "zstandard"}

_BLOCK_RECORDS = 1000


def write_container(schema: dict[str, Any], records: list[dict[str, Any]], *, codec: str = "zstandard") -> bytes:
    """An Avro object container file with ``records``, as Java's ``DataFileWriter`` writes it: header with
    ``avro.schema`` and ``avro.codec``, a random sync marker, blocks of records compressed with ``codec``.

    Raises:
        ValueError: A codec other than null, zstandard or deflate.
    """
    parsed = fastavro.parse_schema(_strip_logical_types(schema))
    sync = os.urandom(SYNC_SIZE)
    meta = {"avro.schema": json.dumps(schema, separators=(",", ":")).encode(), "avro.codec": codec.encode()}
    out = bytearray(MAGIC)
    out += _long(len(meta))
    for key, value in meta.items():
        out += _long(len(key)) + key.encode() + _long(len(value)) + value
    out += _long(0) + sync
    for start in range(0, len(records), _BLOCK_RECORDS):
        chunk = records[start : start + _BLOCK_RECORDS]
        body = io.BytesIO()
        for record in chunk:
            fastavro.schemaless_writer(body, parsed, record)
        block = _compress(codec, body.getvalue())
        out += _long(len(chunk)) + _long(len(block)) + block + sync
    return bytes(out)


def encode_record(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    """One record in Avro binary encoding (no container): e.g. a ``DataFileMeta`` to ship in a task."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, _parsed(json.dumps(schema)), record)
    return body.getvalue()


def decode_record(schema: dict[str, Any], data: bytes) -> dict[str, Any]:
    """The record :func:`encode_record` encoded."""
    record: dict[str, Any] = fastavro.schemaless_reader(io.BytesIO(data), _parsed(json.dumps(schema)), None)
    return record
