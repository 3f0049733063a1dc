"""HFile v3 blocks: the 33-byte header, compression of the payload, and the per-chunk checksums.

Mirrors HBase's ``HFileBlock`` (and Hudi's ``org.apache.hudi.io.hfile.HFileBlock`` reader): every block but the
trailer is ``header | data (compressed unless NONE) | checksums``, the checksums covering header and on-disk data in
chunks of ``bytes_per_checksum``.
"""

from __future__ import annotations

import enum
import struct
import zlib
from dataclasses import dataclass

from lake_orchestration.hudi.hfile.encoding import crc32, crc32c, gzip_compress, gzip_decompress

HEADER_SIZE = 33
"""Magic (8) + on-disk size (4) + uncompressed size (4) + previous block offset (8) + checksum type (1) + bytes per
checksum (4) + on-disk data size with header (4)."""
CHECKSUM_SIZE = 4
DEFAULT_BYTES_PER_CHECKSUM = 16 * 1024
_HEADER = struct.Struct(">8siiqBii")


class BlockType(enum.Enum):
    """Block magics (``HFileBlockType`` / HBase ``BlockType``)."""

    DATA = b"DATABLK*"
    ENCODED_DATA = b"DATABLKE"
    LEAF_INDEX = b"IDXLEAF2"
    BLOOM_CHUNK = b"BLMFBLK2"
    META = b"METABLKc"
    INTERMEDIATE_INDEX = b"IDXINTE2"
    ROOT_INDEX = b"IDXROOT2"
    FILE_INFO = b"FILEINF2"
    GENERAL_BLOOM_META = b"BLMFMET2"
    DELETE_FAMILY_BLOOM_META = b"DFBLMET2"
    TRAILER = b'TRABLK"$'
    INDEX_V1 = b"IDXBLK)+"


class Compression(enum.IntEnum):
    """HBase ``Compression.Algorithm`` by ordinal, as the trailer's ``compression_codec`` stores it."""

    LZO = 0
    GZ = 1
    NONE = 2
    SNAPPY = 3
    LZ4 = 4
    BZIP2 = 5
    ZSTD = 6


class ChecksumType(enum.IntEnum):
    """HBase ``ChecksumType`` codes; CRC32C is the default Hudi's HBase writer uses."""

    NULL = 0
    CRC32 = 1
    CRC32C = 2


class BlockFormatError(ValueError):
    """A block that does not parse; the reader wraps it into ``CorruptFileError`` with the file path."""


@dataclass(frozen=True, slots=True)
class BlockHeader:
    """The fixed header in front of every block."""

    block_type: BlockType
    """Kind of block, from its 8-byte magic."""
    on_disk_size_without_header: int
    """Compressed data plus checksums."""
    uncompressed_size_without_header: int
    """Data size once decompressed."""
    prev_block_offset: int
    """File offset of the previous block of the same type, -1 for the first."""
    checksum_type: int
    """0 none, 1 CRC32, 2 CRC32C."""
    bytes_per_checksum: int
    """Bytes of header + on-disk data covered by one 4-byte checksum."""
    on_disk_data_size_with_header: int
    """Header plus compressed data, without the checksums."""

    @property
    def on_disk_size_with_header(self) -> int:
        return HEADER_SIZE + self.on_disk_size_without_header


@dataclass(frozen=True, slots=True)
class Block:
    """One decoded block: its header and its uncompressed data."""

    offset: int
    """File offset of the block's first header byte."""
    header: BlockHeader
    """The block's header."""
    data: bytes
    """The uncompressed data (after the header, without checksums)."""

    @property
    def block_type(self) -> BlockType:
        return self.header.block_type


def parse_header(buf: bytes, offset: int) -> BlockHeader:
    if offset < 0 or offset + HEADER_SIZE > len(buf):
        raise BlockFormatError(f"a block header at byte {offset} runs past the end of the {len(buf)}-byte file")
    magic, on_disk, uncompressed, prev, ctype, bpc, data_with_header = _HEADER.unpack_from(buf, offset)
    try:
        block_type = BlockType(magic)
    except ValueError:
        raise BlockFormatError(f"unknown block magic {magic!r} at byte {offset}") from None
    if on_disk < 0 or uncompressed < 0 or data_with_header < HEADER_SIZE or data_with_header - HEADER_SIZE > on_disk:
        raise BlockFormatError(
            f"{block_type.name} block at byte {offset} has inconsistent sizes (on-disk {on_disk}, uncompressed "
            f"{uncompressed}, on-disk data with header {data_with_header})"
        )
    return BlockHeader(block_type, on_disk, uncompressed, prev, ctype, bpc, data_with_header)


def _checksum(ctype: int, chunk: bytes) -> int:
    return crc32c(chunk) if ctype == ChecksumType.CRC32C else crc32(chunk)


def read_block(
    buf: bytes,
    offset: int,
    compression: Compression,
    *,
    expect: BlockType | tuple[BlockType, ...] | None = None,
    verify_checksums: bool = False,
) -> Block:
    """Decode the block starting at ``offset`` of the file bytes ``buf``.

    Raises:
        BlockFormatError: bad magic, sizes past the end, a payload that does not decompress to the size the header
            gives, an unexpected block type or (with ``verify_checksums``) a checksum mismatch.
    """
    header = parse_header(buf, offset)
    if expect is not None:
        allowed = expect if isinstance(expect, tuple) else (expect,)
        if header.block_type not in allowed:
            names = " or ".join(t.name for t in allowed)
            raise BlockFormatError(f"expected a {names} block at byte {offset}, found {header.block_type.name}")
    end = offset + header.on_disk_size_with_header
    if end > len(buf):
        raise BlockFormatError(
            f"{header.block_type.name} block at byte {offset} of {header.on_disk_size_with_header} bytes runs past "
            f"the end of the {len(buf)}-byte file"
        )
    data_end = offset + header.on_disk_data_size_with_header
    if verify_checksums and header.checksum_type != ChecksumType.NULL:
        _verify(buf, offset, data_end, end, header)
    payload = buf[offset + HEADER_SIZE : data_end]
    data = _decompress(payload, compression, header, offset)
    return Block(offset, header, data)


def _verify(buf: bytes, start: int, data_end: int, end: int, header: BlockHeader) -> None:
    if header.checksum_type not in (ChecksumType.CRC32, ChecksumType.CRC32C):
        raise BlockFormatError(f"unknown checksum type {header.checksum_type} at byte {start}")
    bpc = header.bytes_per_checksum
    sums = buf[data_end:end]
    expected_chunks = -(-(data_end - start) // bpc) if bpc > 0 else 0
    if len(sums) != CHECKSUM_SIZE * expected_chunks:
        raise BlockFormatError(f"block at byte {start} has {len(sums)} checksum bytes, expected {4 * expected_chunks}")
    for i, pos in enumerate(range(start, data_end, bpc)):
        want = int.from_bytes(sums[4 * i : 4 * i + 4], "big")
        got = _checksum(header.checksum_type, buf[pos : min(pos + bpc, data_end)])
        if got != want:
            raise BlockFormatError(f"checksum chunk {i} of the block at byte {start}: stored {want:#x}, got {got:#x}")


def _decompress(payload: bytes, compression: Compression, header: BlockHeader, offset: int) -> bytes:
    if compression == Compression.NONE:
        data = payload
    elif compression == Compression.GZ:
        try:
            data = gzip_decompress(payload)
        except zlib.error as err:
            raise BlockFormatError(f"{header.block_type.name} block at byte {offset} does not inflate: {err}") from err
    else:
        raise BlockFormatError(f"compression {compression.name} is not supported (Hudi's HFiles use NONE or GZ)")
    if len(data) != header.uncompressed_size_without_header:
        raise BlockFormatError(
            f"{header.block_type.name} block at byte {offset} holds {len(data)} bytes, its header says "
            f"{header.uncompressed_size_without_header}"
        )
    return data


def compress(data: bytes, compression: Compression, *, gzip_os_byte: int = 0) -> bytes:
    if compression == Compression.NONE:
        return data
    if compression == Compression.GZ:
        return gzip_compress(data, os_byte=gzip_os_byte)
    raise ValueError(f"compression {compression.name} is not supported for writing (NONE or GZ)")


def frame_block(
    block_type: BlockType,
    data: bytes,
    *,
    prev_block_offset: int,
    compression: Compression,
    checksum_type: ChecksumType = ChecksumType.CRC32C,
    bytes_per_checksum: int = DEFAULT_BYTES_PER_CHECKSUM,
    gzip_os_byte: int = 0,
) -> bytes:
    """Header + (compressed) data + checksums, as HBase's ``HFileBlock.Writer.finishBlock`` lays a block out."""
    if checksum_type == ChecksumType.NULL:
        raise ValueError("writing blocks without checksums is not supported (HBase writes CRC32C or CRC32)")
    on_disk = compress(data, compression, gzip_os_byte=gzip_os_byte)
    data_with_header = HEADER_SIZE + len(on_disk)
    n_chunks = -(-data_with_header // bytes_per_checksum)
    header = _HEADER.pack(
        block_type.value,
        len(on_disk) + CHECKSUM_SIZE * n_chunks,
        len(data),
        prev_block_offset,
        int(checksum_type),
        bytes_per_checksum,
        data_with_header,
    )
    body = header + on_disk
    sums = b"".join(
        struct.pack(">I", _checksum(checksum_type, body[pos : pos + bytes_per_checksum]))
        for pos in range(0, len(body), bytes_per_checksum)
    )
    return body + sums
