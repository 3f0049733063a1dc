"""Writing HFile v3 files byte for byte as HBase 2.4's ``HFileWriterImpl`` does for Hudi 0.14/0.15.

Hudi 0.14 writes its HFiles (the bootstrap index, the metadata table) through HBase's writer: data blocks closed
once they reach the block size (never between two entries with the same key), HBase's shortened "midpoint" keys
in the data index, a multi-level index once the leaf level outgrows ``max_chunk_size``, CRC32C checksums per 16 KB,
then meta blocks, the load-on-open section (root data index, meta index, file info) and the 4096-byte trailer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from lake_orchestration.hudi.hfile.block import (
    DEFAULT_BYTES_PER_CHECKSUM,
    HEADER_SIZE,
    BlockType,
    ChecksumType,
    Compression,
    frame_block,
)
from lake_orchestration.hudi.hfile.encoding import bytes_field, write_uvarint
from lake_orchestration.hudi.hfile.index import IndexChunk
from lake_orchestration.hudi.hfile.key import encode_key, index_key
from lake_orchestration.hudi.hfile.reader import PBUF_MAGIC
from lake_orchestration.hudi.hfile.trailer import KV_COMPARATOR, TRAILER_SIZE, Trailer

DEFAULT_BLOCK_SIZE = 64 * 1024
"""``HConstants.DEFAULT_BLOCKSIZE``, what ``new HFileContextBuilder()`` gives (Hudi 0.14's bootstrap index)."""
DEFAULT_MAX_CHUNK_SIZE = 128 * 1024
"""``hfile.index.block.max.size``."""
DEFAULT_MIN_INDEX_NUM_ENTRIES = 16
"""``hfile.index.block.min.entries``."""
RESERVED_FILE_INFO_PREFIX = "hfile."
_MAX_LEVELS = 16
_KEY_INFRASTRUCTURE_SIZE = 12
"""Row length (2) + family length (1) + timestamp (8) + type (1): a Hudi key's KeyValue key is its row + 12."""


@dataclass(frozen=True, kw_only=True)
class HFileWriterOptions:
    """The ``HFileContext`` and configuration a Java writer would be given."""

    block_size: int = DEFAULT_BLOCK_SIZE
    """A data block is closed once its uncompressed entries reach this many bytes."""
    compression: Compression = Compression.NONE
    """NONE or GZ."""
    comparator_class_name: str = KV_COMPARATOR
    """Recorded in the trailer; Java readers instantiate it (see ``HFileBootstrapIndex`` for Hudi's own)."""
    create_time: int = 0
    """``hfile.CREATE_TIME_TS`` in ms; ``HFileContextBuilder`` leaves it 0 unless told otherwise."""
    checksum_type: ChecksumType = ChecksumType.CRC32C
    """Block checksum algorithm (HBase default CRC32C)."""
    bytes_per_checksum: int = DEFAULT_BYTES_PER_CHECKSUM
    """Bytes covered by each block checksum."""
    max_chunk_size: int = DEFAULT_MAX_CHUNK_SIZE
    """Size at which a leaf or intermediate index block is closed (``hfile.index.block.max.size``)."""
    min_index_num_entries: int = DEFAULT_MIN_INDEX_NUM_ENTRIES
    """Minimum entries per intermediate index block (``hfile.index.block.min.entries``)."""
    gzip_os_byte: int = 0
    """The OS field of each GZ block's gzip header: 0 as HBase's own gzip stream writes it (Hudi 0.14's bootstrap
    index), 255 as Hadoop 3's ``BuiltInGzipCompressor`` does (Hudi 0.15's metadata-table log blocks)."""

    def __post_init__(self) -> None:
        if self.compression not in (Compression.NONE, Compression.GZ):
            raise ValueError(f"compression {self.compression.name} is not supported: NONE or GZ")
        if self.block_size <= 0 or self.max_chunk_size <= 0 or self.bytes_per_checksum <= 0:
            raise ValueError("block_size, max_chunk_size and bytes_per_checksum must be positive")
        if self.min_index_num_entries <= 1:
            raise ValueError(f"min_index_num_entries must be >= 2, got {self.min_index_num_entries}")


class HFileWriter:
    """Builds one HFile in memory: :meth:`append` entries in key order, then :meth:`finish` for the bytes.

    Keys are Hudi string keys (UTF-8) or their bytes; each becomes a KeyValue with an empty family and
    qualifier, ``LATEST_TIMESTAMP`` and type ``Put``, as ``HFileBootstrapIndex`` and ``HoodieAvroHFileWriter`` build
    them.

    Example:
        >>> w = HFileWriter(HFileWriterOptions(block_size=1024))
        >>> w.append("part=a", b"1")
        >>> data = w.finish()
    """

    def __init__(self, options: HFileWriterOptions | None = None) -> None:
        self._opts = options or HFileWriterOptions()
        self._out: list[bytes] = []
        self._pos = 0
        self._prev_offset: dict[BlockType, int] = {}
        self._block: list[bytes] = []
        self._block_size = 0
        self._first_row_in_block: bytes | None = None
        self._last_row_of_previous_block: bytes | None = None
        self._last_row: bytes | None = None
        self._first_data_block_offset = -1
        self._last_data_block_offset = -1
        self._entry_count = 0
        self._total_key_length = 0
        self._total_value_length = 0
        self._total_uncompressed = 0
        self._file_info: dict[bytes, bytes] = {}
        self._meta: list[tuple[bytes, bytes]] = []
        # data block index (HFileBlockIndex.BlockIndexWriter)
        self._root = IndexChunk()
        self._inline: IndexChunk | None = IndexChunk()
        self._levels = 1
        self._index_entries = 0
        self._index_uncompressed = 0
        self._finished = False

    # --- public API -------------------------------------------------------------------------------------------

    def append(self, key: bytes | str, value: bytes) -> None:
        """Add an entry; keys must come in ascending order (equal keys allowed, kept in order).

        Raises:
            ValueError: the key sorts before the previous one, or the writer is finished.
        """
        self._check_open()
        row = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        duplicate = False
        if self._last_row is not None:
            if row < self._last_row:
                raise ValueError(
                    f"key {row!r} added after {self._last_row!r}: keys must be appended in ascending order"
                )
            duplicate = row == self._last_row
        if not duplicate and self._block and self._block_size >= self._opts.block_size:
            self._finish_data_block()
            self._write_inline_blocks(closing=False)
            self._new_block()
        key_bytes = encode_key(row)
        # keylen, vallen, key, value, memstore timestamp 0 as a one-byte VLong (includesMvcc, no tags)
        cell = struct.pack(">ii", len(key_bytes), len(value)) + key_bytes + value + b"\x00"
        self._block.append(cell)
        self._block_size += len(cell)
        self._total_key_length += len(row) + _KEY_INFRASTRUCTURE_SIZE
        self._total_value_length += len(value)
        if self._first_row_in_block is None:
            self._first_row_in_block = row
        self._last_row = row
        self._entry_count += 1

    def append_file_info(self, key: bytes | str, value: bytes) -> None:
        """Add a file-info entry (``HFile.Writer.appendFileInfo``); the ``hfile.`` prefix is reserved."""
        self._check_open()
        raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        if raw.startswith(RESERVED_FILE_INFO_PREFIX.encode()):
            raise ValueError(f"file info keys with the {RESERVED_FILE_INFO_PREFIX!r} prefix are reserved: {raw!r}")
        self._file_info[raw] = bytes(value)

    def append_meta_block(self, name: str, content: bytes) -> None:
        """Add a meta block written at close, e.g. Hudi's ``bloomFilter`` (kept sorted by name, as HBase does)."""
        self._check_open()
        raw = name.encode("utf-8")
        i = 0
        while i < len(self._meta) and self._meta[i][0] <= raw:
            i += 1
        self._meta.insert(i, (raw, bytes(content)))

    def finish(self) -> bytes:
        """Close the file (``HFileWriterImpl.close``) and return its bytes."""
        self._check_open()
        self._finished = True
        opts = self._opts
        self._finish_data_block()
        self._write_inline_blocks(closing=True)

        meta_index = IndexChunk()
        for name, content in self._meta:
            offset = self._pos
            size = self._write_block(BlockType.META, content, count_uncompressed=True)
            meta_index.add(name, offset, size)

        root_offset = self._write_index_blocks()
        self._write_block(BlockType.ROOT_INDEX, meta_index.write_root(), count_uncompressed=True)

        self._file_info[b"MAX_MEMSTORE_TS_KEY"] = struct.pack(">q", 0)
        self._file_info[b"KEY_VALUE_VERSION"] = struct.pack(">i", 1)
        file_info_offset = self._pos
        if self._last_row is not None:
            self._file_info[b"hfile.LASTKEY"] = encode_key(self._last_row)
        count = self._entry_count
        self._file_info[b"hfile.AVG_KEY_LEN"] = struct.pack(">i", self._total_key_length // count if count else 0)
        self._file_info[b"hfile.CREATE_TIME_TS"] = struct.pack(">q", opts.create_time)
        self._file_info[b"hfile.AVG_VALUE_LEN"] = struct.pack(">i", self._total_value_length // count if count else 0)
        self._write_block(BlockType.FILE_INFO, self._file_info_bytes(), count_uncompressed=True)

        trailer = Trailer(
            file_info_offset=file_info_offset,
            load_on_open_data_offset=root_offset,
            uncompressed_data_index_size=self._index_uncompressed,
            total_uncompressed_bytes=self._total_uncompressed + TRAILER_SIZE,
            data_index_count=len(self._root),
            meta_index_count=len(self._meta),
            entry_count=self._entry_count,
            num_data_index_levels=self._levels,
            first_data_block_offset=self._first_data_block_offset,
            last_data_block_offset=self._last_data_block_offset,
            comparator_class_name=opts.comparator_class_name,
            compression=opts.compression,
        )
        self._out.append(trailer.serialize())
        return b"".join(self._out)

    # --- blocks -----------------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._finished:
            raise ValueError("the HFile writer is already finished")

    def _write_block(self, block_type: BlockType, data: bytes, *, count_uncompressed: bool) -> int:
        """Append one framed block; returns its on-disk size with header."""
        opts = self._opts
        framed = frame_block(
            block_type,
            data,
            prev_block_offset=self._prev_offset.get(block_type, -1),
            compression=opts.compression,
            checksum_type=opts.checksum_type,
            bytes_per_checksum=opts.bytes_per_checksum,
            gzip_os_byte=opts.gzip_os_byte,
        )
        self._prev_offset[block_type] = self._pos
        self._out.append(framed)
        self._pos += len(framed)
        if count_uncompressed:
            self._total_uncompressed += HEADER_SIZE + len(data)
        return len(framed)

    def _finish_data_block(self) -> None:
        if not self._block or self._first_row_in_block is None:
            return
        offset = self._pos
        if self._first_data_block_offset == -1:
            self._first_data_block_offset = offset
        self._last_data_block_offset = offset
        size = self._write_block(BlockType.DATA, b"".join(self._block), count_uncompressed=True)
        key = index_key(self._last_row_of_previous_block, self._first_row_in_block)
        if self._inline is None:
            raise ValueError("the data index was closed before the last data block")
        self._inline.add(key, offset, size)
        self._index_entries += 1
        self._block = []
        self._block_size = 0

    def _new_block(self) -> None:
        self._first_row_in_block = None
        if self._last_row is not None:
            self._last_row_of_previous_block = self._last_row

    # --- data block index (HFileBlockIndex.BlockIndexWriter) ---------------------------------------------------

    def _write_inline_blocks(self, *, closing: bool) -> None:
        while self._should_write_leaf(closing=closing):
            inline = self._inline
            if inline is None:
                return
            offset = self._pos
            data = inline.write_non_root()
            first_key = inline.entries[0].key
            size = self._write_block(BlockType.LEAF_INDEX, data, count_uncompressed=True)
            self._index_uncompressed += len(data)
            if len(self._root) == 0:
                self._levels = 2
            self._root.add(first_key, offset, size, self._index_entries)
            self._inline = IndexChunk()

    def _should_write_leaf(self, *, closing: bool) -> bool:
        inline = self._inline
        if inline is None or len(inline) == 0:
            return False
        if closing:
            if len(self._root) == 0:
                # No leaf written yet: these entries become the root of a single-level index.
                self._root, self._inline = inline, None
                return False
            return True
        return inline.non_root_size >= self._opts.max_chunk_size

    def _write_index_blocks(self) -> int:
        opts = self._opts
        mid_key_metadata = self._root.mid_key_metadata() if self._levels > 1 else b""
        if self._inline is not None:
            while (
                self._root.root_size > opts.max_chunk_size
                and len(self._root) > opts.min_index_num_entries
                and self._levels < _MAX_LEVELS
            ):
                self._root = self._write_intermediate_level(self._root)
                self._levels += 1
        offset = self._pos
        data = self._root.write_root() + mid_key_metadata
        self._write_block(BlockType.ROOT_INDEX, data, count_uncompressed=False)
        self._index_uncompressed += len(data)
        return offset

    def _write_intermediate_level(self, level: IndexChunk) -> IndexChunk:
        parent = IndexChunk()
        chunk = IndexChunk()
        for i, entry in enumerate(level.entries):
            chunk.add(entry.key, entry.offset, entry.size)
            if i >= self._opts.min_index_num_entries and chunk.root_size >= self._opts.max_chunk_size:
                self._write_intermediate_block(parent, chunk)
                chunk = IndexChunk()
        if len(chunk):
            self._write_intermediate_block(parent, chunk)
        return parent

    def _write_intermediate_block(self, parent: IndexChunk, chunk: IndexChunk) -> None:
        offset = self._pos
        data = chunk.write_non_root()
        size = self._write_block(BlockType.INTERMEDIATE_INDEX, data, count_uncompressed=False)
        self._index_uncompressed += len(data)
        parent.add(chunk.entries[0].key, offset, size)

    def _file_info_bytes(self) -> bytes:
        message = b"".join(
            bytes_field(1, bytes_field(1, k) + bytes_field(2, v)) for k, v in sorted(self._file_info.items())
        )
        return PBUF_MAGIC + write_uvarint(len(message)) + message
