"""HBase ``KeyValue`` keys as Hudi writes them: a row (Hudi's key), an empty family and qualifier, the latest
timestamp and the ``Put`` type.

Hudi compares keys by their row bytes only (lexicographic, unsigned), so the reader works on the row ("key
content"); the full serialized key is kept where the format stores it (data index entries, ``hfile.LASTKEY``).
"""

from __future__ import annotations

import struct

LATEST_TIMESTAMP = (1 << 63) - 1
"""``HConstants.LATEST_TIMESTAMP`` (``Long.MAX_VALUE``)."""
TYPE_PUT = 4
"""``KeyValue.Type.Put``."""
TYPE_MAXIMUM = 255
"""``KeyValue.Type.Maximum``: the type of a "first on row" fake key HBase puts in the block index."""
MAX_ROW_LENGTH = 0x7FFF
"""The row length is a Java short."""

_TAIL = struct.Struct(">BqB")


def encode_key(row: bytes, *, key_type: int = TYPE_PUT) -> bytes:
    """The serialized KeyValue key: row length (2) + row + family length 0 (1) + timestamp (8) + type (1)."""
    if len(row) > MAX_ROW_LENGTH:
        raise ValueError(f"an HFile key holds at most {MAX_ROW_LENGTH} bytes, got {len(row)}")
    return struct.pack(">H", len(row)) + row + _TAIL.pack(0, LATEST_TIMESTAMP, key_type)


def key_content(key: bytes) -> bytes:
    """The row of a serialized KeyValue key (what Hudi compares and returns as the record key)."""
    if len(key) < 2:
        raise ValueError(f"a KeyValue key of {len(key)} bytes has no row length")
    (row_len,) = struct.unpack_from(">H", key, 0)
    if 2 + row_len > len(key):
        raise ValueError(f"a KeyValue key of {len(key)} bytes says its row has {row_len} bytes")
    return key[2 : 2 + row_len]


def _minimum_midpoint(left: bytes, right: bytes) -> bytes:
    """HBase ``HFileWriterImpl.getMinimumMidpointArray`` for two different rows (left < right)."""
    min_len = min(len(left), len(right))
    diff = 0
    while diff < min_len and left[diff] == right[diff]:
        diff += 1
    if diff >= min_len:
        return right[: diff + 1]
    signed = left[diff] - 256 if left[diff] >= 128 else left[diff]
    if (signed & 0xFF) < 0xFF and signed + 1 < right[diff]:
        return left[:diff] + bytes([(signed + 1) & 0xFF])
    return right[: diff + 1]


def index_key(previous_last_row: bytes | None, first_row: bytes) -> bytes:
    """The data-index key of a block: HBase's ``getMidpoint(lastCellOfPreviousBlock, firstCellInBlock)``.

    The first block (no previous cell) and a block whose first row equals the previous block's last row get the
    real first key; otherwise a shorter "first on row" key between the two, which may sort before the block's
    actual first key (a "fake first key").
    """
    if previous_last_row is None or previous_last_row == first_row:
        return encode_key(first_row)
    if previous_last_row > first_row:
        raise ValueError(f"rows out of order: {previous_last_row!r} before {first_row!r}")
    return encode_key(_minimum_midpoint(previous_last_row, first_row), key_type=TYPE_MAXIMUM)
