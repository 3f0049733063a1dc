"""Byte-level encodings of the HFile container: Protobuf varints, Hadoop VInts, CRC32C, Java-framed gzip.

No dependency beyond the standard library: the trailer and file-info messages are a handful of Protobuf fields,
so they are encoded by hand rather than through generated classes.
"""

from __future__ import annotations

import struct
import zlib

# --- Protobuf varints (trailer, file info: writeDelimitedTo / parseDelimitedFrom) -------------------------------

_UINT64_MASK = (1 << 64) - 1


def write_uvarint(value: int) -> bytes:
    """Protobuf base-128 varint; a negative int64 is written as its two's complement (10 bytes), as Java does."""
    value &= _UINT64_MASK
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode a Protobuf varint at ``pos``; returns (value, position after it). Raises ValueError when truncated."""
    result = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise ValueError(f"truncated varint at byte {pos}")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & _UINT64_MASK, pos
        shift += 7
        if shift >= 70:
            raise ValueError(f"varint longer than 10 bytes ending at byte {pos}")


def as_int64(value: int) -> int:
    """A uint64 read from a varint as Java's signed long (``-1`` is written as 2^64 - 1)."""
    return value - (1 << 64) if value >= (1 << 63) else value


def parse_message(data: bytes) -> dict[int, list[int | bytes]]:
    """Fields of a Protobuf message by number (varint and length-delimited wire types only)."""
    fields: dict[int, list[int | bytes]] = {}
    pos = 0
    while pos < len(data):
        tag, pos = read_uvarint(data, pos)
        number, wire_type = tag >> 3, tag & 7
        value: int | bytes
        if wire_type == 0:
            value, pos = read_uvarint(data, pos)
        elif wire_type == 2:
            length, pos = read_uvarint(data, pos)
            if pos + length > len(data):
                raise ValueError(f"field {number} of {length} bytes runs past the message end")
            value = data[pos : pos + length]
            pos += length
        elif wire_type == 1:
            value = int.from_bytes(data[pos : pos + 8], "little")
            pos += 8
        elif wire_type == 5:
            value = int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        else:
            raise ValueError(f"unsupported Protobuf wire type {wire_type} for field {number}")
        fields.setdefault(number, []).append(value)
    return fields


def varint_field(number: int, value: int) -> bytes:
    return write_uvarint(number << 3) + write_uvarint(value)


def bytes_field(number: int, value: bytes) -> bytes:
    return write_uvarint((number << 3) | 2) + write_uvarint(len(value)) + value


# --- Hadoop WritableUtils VInt/VLong (block index key lengths, memstore timestamps) ------------------------------


def write_vlong(value: int) -> bytes:
    """Hadoop ``WritableUtils.writeVLong``: one byte for -112..127, else a length byte and big-endian bytes."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    length = -112
    if value < 0:
        value ^= -1
        length = -120
    tmp = value
    while tmp != 0:
        tmp >>= 8
        length -= 1
    n = -(length + 120) if length < -120 else -(length + 112)
    return struct.pack(">b", length) + value.to_bytes(n, "big")


def vlong_size(value: int) -> int:
    """Hadoop ``WritableUtils.getVIntSize``."""
    return len(write_vlong(value))


def read_vlong(data: bytes, pos: int) -> tuple[int, int]:
    """Hadoop ``WritableUtils.readVLong`` at ``pos``; returns (value, position after it)."""
    first = struct.unpack_from(">b", data, pos)[0]
    if first >= -112:
        return first, pos + 1
    size = -119 - first if first < -120 else -111 - first
    value = int.from_bytes(data[pos + 1 : pos + size], "big")
    if first < -120:
        value ^= -1
    return value, pos + size


# --- CRC32C (HBase's default block checksum) ---------------------------------------------------------------------


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as ``java.util.zip.CRC32C`` computes it."""
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc32(data: bytes) -> int:
    """CRC-32 (``java.util.zip.CRC32``)."""
    return zlib.crc32(data) & 0xFFFFFFFF


# --- gzip as HBase's ReusableStreamGzipCodec frames it ------------------------------------------------------------

# java.util.zip.GZIPOutputStream's fixed header: no file name, mtime 0, XFL 0, OS 0. Python's gzip module writes
# OS 255 and an XFL that depends on the level, so the frame is assembled by hand.
_JAVA_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"
# java.util.zip.Deflater.DEFAULT_COMPRESSION is zlib's level 6.
_JAVA_DEFLATE_LEVEL = 6


def gzip_compress(data: bytes, *, os_byte: int = 0) -> bytes:
    """Gzip ``data`` the way HBase's GZ codec (pure-Java path) does: Java's header, raw deflate, CRC32, ISIZE.

    ``os_byte`` is the header's OS field: 0 from HBase's own ``ReusableGzipOutputStream`` (Hudi 0.14's bootstrap
    index), 255 ("unknown") from Hadoop 3's ``BuiltInGzipCompressor`` (the metadata table's log blocks written by
    Hudi 0.15)."""
    compressor = zlib.compressobj(_JAVA_DEFLATE_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY)
    body = compressor.compress(data) + compressor.flush()
    header = _JAVA_GZIP_HEADER[:9] + bytes([os_byte])
    return header + body + struct.pack("<II", crc32(data), len(data) & 0xFFFFFFFF)


def gzip_decompress(data: bytes) -> bytes:
    """Inflate one gzip member (any header flags). Raises ``zlib.error`` on corrupt input."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflater.decompress(data) + inflater.flush()
    if not inflater.eof:
        raise zlib.error("gzip stream ends before its trailer")
    return out
