"""The fixed 4096-byte HFile v3 trailer: magic, a length-delimited ``TrailerProto``, zero padding, the version.

Mirrors HBase's ``FixedFileTrailer.serialize`` / Hudi's ``HFileTrailer.deserialize``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from lake_orchestration.hudi.hfile.block import BlockType, Compression
from lake_orchestration.hudi.hfile.encoding import (
    as_int64,
    bytes_field,
    parse_message,
    read_uvarint,
    varint_field,
    write_uvarint,
)

TRAILER_SIZE = 4096
MAJOR_VERSION = 3
MINOR_VERSION = 3
"""``HFileReaderImpl.MAX_MINOR_VERSION`` of HBase 2.4: v3 with checksums and a Protobuf trailer."""
KV_COMPARATOR = "org.apache.hadoop.hbase.KeyValue$KVComparator"
"""What HBase writes for ``CellComparatorImpl`` (``getHBase1CompatibleName``)."""
_MAGIC = BlockType.TRAILER.value


class TrailerFormatError(ValueError):
    """A trailer that does not parse; the reader names the file."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Trailer:
    """The ``TrailerProto`` fields (hudi-io ``hfile_format.md``, "Trailer")."""

    file_info_offset: int
    """Offset of the FILE_INFO block."""
    load_on_open_data_offset: int
    """Offset of the root data index block, where the load-on-open section starts."""
    uncompressed_data_index_size: int
    """Uncompressed size (without headers) of all data index blocks: root, intermediate and leaf."""
    total_uncompressed_bytes: int
    """Uncompressed size (with headers) of the data, leaf, meta, meta-index and file-info blocks plus the trailer."""
    data_index_count: int
    """Entries in the root data index."""
    meta_index_count: int
    """Entries in the meta index (meta blocks)."""
    entry_count: int
    """Key-value entries in the file."""
    num_data_index_levels: int
    """1 when the root index points at data blocks; more with leaf (and intermediate) index blocks."""
    first_data_block_offset: int
    """Offset of the first data block, -1 in a file without entries."""
    last_data_block_offset: int
    """Offset of the last data block, -1 in a file without entries."""
    comparator_class_name: str
    """The key comparator's class name, as the writer recorded it."""
    compression: Compression
    """Codec of every block's data."""
    major_version: int = MAJOR_VERSION
    """HFile major version (3)."""
    minor_version: int = MINOR_VERSION
    """HFile minor version (3)."""

    @classmethod
    def parse(cls, file_bytes: bytes) -> Trailer:
        """Read the trailer from the last 4096 bytes of a whole file.

        Raises:
            TrailerFormatError: the file is too small, the magic or version is wrong, or the message does not parse.
        """
        if len(file_bytes) < TRAILER_SIZE:
            raise TrailerFormatError(f"{len(file_bytes)} bytes is smaller than the {TRAILER_SIZE}-byte trailer")
        buf = file_bytes[-TRAILER_SIZE:]
        (version,) = struct.unpack_from(">I", buf, TRAILER_SIZE - 4)
        major, minor = version & 0x00FFFFFF, version >> 24
        if major != MAJOR_VERSION:
            raise TrailerFormatError(f"HFile major version {major} (minor {minor}); only version 3 is supported")
        if buf[:8] != _MAGIC:
            raise TrailerFormatError(f"trailer magic {buf[:8]!r}, expected {_MAGIC!r}")
        try:
            length, pos = read_uvarint(buf, 8)
            if pos + length > TRAILER_SIZE - 4:
                raise ValueError(f"a {length}-byte trailer message does not fit the trailer")
            fields = parse_message(buf[pos : pos + length])
        except ValueError as err:
            raise TrailerFormatError(f"trailer message: {err}") from err

        def num(number: int, default: int = 0) -> int:
            value = fields.get(number, [default])[-1]
            if not isinstance(value, int):
                raise TrailerFormatError(f"trailer field {number} is not a varint")
            return value

        comparator = fields.get(11, [b""])[-1]
        if not isinstance(comparator, bytes):
            raise TrailerFormatError("trailer field 11 (comparator_class_name) is not a string")
        try:
            compression = Compression(num(12, Compression.NONE))
        except ValueError as err:
            raise TrailerFormatError(f"unknown compression codec {num(12)}") from err
        return cls(
            file_info_offset=num(1),
            load_on_open_data_offset=num(2),
            uncompressed_data_index_size=num(3),
            total_uncompressed_bytes=num(4),
            data_index_count=num(5),
            meta_index_count=num(6),
            entry_count=num(7),
            num_data_index_levels=num(8, 1),
            first_data_block_offset=as_int64(num(9)),
            last_data_block_offset=as_int64(num(10)),
            comparator_class_name=comparator.decode("utf-8"),
            compression=compression,
            major_version=major,
            minor_version=minor,
        )

    def serialize(self) -> bytes:
        """The 4096 trailer bytes, every field set as ``FixedFileTrailer.serializeAsPB`` sets them."""
        message = b"".join(
            [
                varint_field(1, self.file_info_offset),
                varint_field(2, self.load_on_open_data_offset),
                varint_field(3, self.uncompressed_data_index_size),
                varint_field(4, self.total_uncompressed_bytes),
                varint_field(5, self.data_index_count),
                varint_field(6, self.meta_index_count),
                varint_field(7, self.entry_count),
                varint_field(8, self.num_data_index_levels),
                varint_field(9, self.first_data_block_offset),
                varint_field(10, self.last_data_block_offset),
                bytes_field(11, self.comparator_class_name.encode("utf-8")),
                varint_field(12, int(self.compression)),
            ]
        )
        delimited = write_uvarint(len(message)) + message
        padding = TRAILER_SIZE - len(_MAGIC) - 4 - len(delimited)
        if padding < 0:
            raise ValueError(f"the trailer message of {len(delimited)} bytes exceeds the fixed trailer size")
        version = (self.major_version & 0x00FFFFFF) | (self.minor_version << 24)
        return _MAGIC + delimited + bytes(padding) + struct.pack(">I", version)
