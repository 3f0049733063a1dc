"""Hudi log block framing (log format version 1), byte-exact per reference/hudi/log-format.md.

Block: ``#HUDI#`` | int64 S | int32 version | int32 type | header map | int64 C | content | footer map |
int64 trailing (= S + 6). Big-endian throughout. Mirrors ``HoodieLogFormatWriter`` / ``HoodieLogFileReader``.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class LogBlockType(enum.IntEnum):
    """``HoodieLogBlockType`` ordinals."""

    COMMAND_BLOCK = 0
    DELETE_BLOCK = 1
    CORRUPT_BLOCK = 2
    AVRO_DATA_BLOCK = 3
    HFILE_DATA_BLOCK = 4
    PARQUET_DATA_BLOCK = 5
    CDC_DATA_BLOCK = 6


class HeaderKey(enum.IntEnum):
    """``HeaderMetadataType`` ordinals."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


ROLLBACK_COMMAND = "0"  # HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK ordinal


@dataclass(frozen=True)
class LogBlock:
    """One block of a log file, content undecoded.

    Attributes:
        block_type: the block type (CORRUPT_BLOCK for bytes that failed the framing checks).
        header: header entries in file order.
        content: the raw content bytes (for a corrupt block: the bytes after its magic).
        footer: footer entries in file order (empty in practice).
        offset: byte offset of the block's magic in the file.
        size: bytes the block occupies on disk.
        corrupt_reason: why a block was classified corrupt.
        path: the log file the block was read from (for error messages; empty when read from bare bytes).
    """

    block_type: LogBlockType
    header: tuple[tuple[int, str], ...]
    content: bytes
    footer: tuple[tuple[int, str], ...] = ()
    offset: int = 0
    size: int = 0
    corrupt_reason: str = ""
    path: str = ""

    @property
    def header_map(self) -> dict[int, str]:
        return dict(self.header)

    def get(self, key: HeaderKey) -> str | None:
        for k, v in self.header:
            if k == key:
                return v
        return None

    @property
    def instant_time(self) -> str | None:
        return self.get(HeaderKey.INSTANT_TIME)

    @property
    def is_corrupt(self) -> bool:
        return self.block_type is LogBlockType.CORRUPT_BLOCK

    @property
    def is_rollback(self) -> bool:
        return (
            self.block_type is LogBlockType.COMMAND_BLOCK and self.get(HeaderKey.COMMAND_BLOCK_TYPE) == ROLLBACK_COMMAND
        )

    @property
    def is_data(self) -> bool:
        return self.block_type in (
            LogBlockType.AVRO_DATA_BLOCK,
            LogBlockType.PARQUET_DATA_BLOCK,
            LogBlockType.HFILE_DATA_BLOCK,
            LogBlockType.CDC_DATA_BLOCK,
        )


def encode_metadata(entries: Iterable[tuple[int, str]] | Mapping[int, str]) -> bytes:
    """Header/footer map: int32 count, then (int32 key ordinal, int32 length, UTF-8 bytes) per entry."""
    items = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
    out = [_I32.pack(len(items))]
    for k, v in items:
        b = v.encode()
        out.append(_I32.pack(int(k)) + _I32.pack(len(b)) + b)
    return b"".join(out)


def encode_block(
    block_type: LogBlockType,
    header: Iterable[tuple[int, str]] | Mapping[int, str],
    content: bytes,
    footer: Iterable[tuple[int, str]] | Mapping[int, str] = (),
) -> bytes:
    """Serialize one block exactly as ``HoodieLogFormatWriter.appendBlocks`` does."""
    h = encode_metadata(header)
    f = encode_metadata(footer)
    size = 4 + 4 + len(h) + 8 + len(content) + len(f) + 8
    return b"".join(
        (
            MAGIC,
            _I64.pack(size),
            _I32.pack(LOG_FORMAT_VERSION),
            _I32.pack(int(block_type)),
            h,
            _I64.pack(len(content)),
            content,
            f,
            _I64.pack(size + 6),
        )
    )


class _FramingError(Exception):
    pass


def _read_metadata(buf: memoryview, pos: int, end: int) -> tuple[tuple[tuple[int, str], ...], int]:
    if pos + 4 > end:
        raise _FramingError("metadata count past block end")
    (n,) = _I32.unpack_from(buf, pos)
    pos += 4
    if n < 0 or n > 64:
        raise _FramingError(f"implausible metadata entry count {n}")
    items = []
    for _ in range(n):
        if pos + 8 > end:
            raise _FramingError("metadata entry past block end")
        k, ln = struct.unpack_from(">ii", buf, pos)
        pos += 8
        if ln < 0 or pos + ln > end:
            raise _FramingError(f"metadata value length {ln} past block end")
        try:
            v = bytes(buf[pos : pos + ln]).decode()
        except UnicodeDecodeError as err:
            raise _FramingError(f"metadata value is not UTF-8 ({err})") from err
        if k < 0 or k > max(HeaderKey):
            raise _FramingError(f"unknown header key ordinal {k}")
        items.append((k, v))
        pos += ln
    return tuple(items), pos


def iter_blocks(data: bytes, path: str = "") -> Iterable[LogBlock]:
    """Yield the blocks of a log file's bytes, in order (``path``, the file's, is kept on each block).

    Corrupt bytes (bad magic, wrong block size, truncation, trailing-length mismatch, unparseable framing)
    become a ``CORRUPT_BLOCK`` that spans up to the next ``#HUDI#`` magic, as Java's reader does; reading
    then continues from that magic. Never raises: the content of a well-framed block is not looked at here (a
    content that does not decode is an error where it is decoded, see ``block_content``).
    """
    buf = memoryview(data)
    n = len(data)
    pos = 0
    while pos < n:
        if n - pos < 6:
            break  # Java's readFully(6) of the next magic hits EOF: fewer than 6 stray bytes end the file
        if data[pos : pos + 6] != MAGIC:
            nxt = _next_magic(data, pos + 1)
            yield _corrupt(data, pos, pos, nxt, "no #HUDI# magic at block start", path)
            pos = nxt
            continue
        reason = _check_frame(data, buf, pos)
        if reason:
            nxt = _next_magic(data, pos + 6)
            yield _corrupt(data, pos, pos + 6, nxt, reason, path)
            pos = nxt
            continue
        (size,) = _I64.unpack_from(buf, pos + 6)
        end = pos + 14 + size
        try:
            yield _parse_block(data, buf, pos, end, path)
        except _FramingError as err:
            nxt = _next_magic(data, pos + 6)
            yield _corrupt(data, pos, pos + 6, nxt, str(err), path)
            pos = nxt
            continue
        pos = end


def _check_frame(data: bytes, buf: memoryview, pos: int) -> str:
    """``isBlockCorrupt``: block size inside the file, trailing length = S + 6, then magic or EOF."""
    n = len(data)
    if pos + 14 > n:
        return "truncated block size field"
    (size,) = _I64.unpack_from(buf, pos + 6)
    end = pos + 14 + size
    if size < 28 or end > n:
        return f"block size {size} runs past the end of the file ({n} bytes)"
    (trailing,) = _I64.unpack_from(buf, end - 8)
    if trailing - 6 != size:
        return f"trailing length {trailing} does not match block size {size} + 6"
    if end + 6 <= n and data[end : end + 6] != MAGIC:
        return "block is not followed by #HUDI# magic or end of file"
    return ""


def _parse_block(data: bytes, buf: memoryview, pos: int, end: int, path: str) -> LogBlock:
    p = pos + 14
    version, btype = struct.unpack_from(">ii", buf, p)
    p += 8
    if version != LOG_FORMAT_VERSION:
        raise _FramingError(f"unsupported log format version {version} (expected 1)")
    try:
        block_type = LogBlockType(btype)
    except ValueError as err:
        raise _FramingError(f"unknown block type ordinal {btype}") from err
    header, p = _read_metadata(buf, p, end - 8)
    if p + 8 > end - 8:
        raise _FramingError("content length past block end")
    (clen,) = _I64.unpack_from(buf, p)
    p += 8
    if clen < 0 or p + clen > end - 8:
        raise _FramingError(f"content length {clen} past block end")
    content = data[p : p + clen]
    p += clen
    footer, p = _read_metadata(buf, p, end - 8)
    if p != end - 8:
        raise _FramingError(f"{end - 8 - p} unexpected bytes after the footer")
    return LogBlock(block_type, header, content, footer, pos, end - pos, path=path)


def _next_magic(data: bytes, start: int) -> int:
    i = data.find(MAGIC, start)
    return len(data) if i < 0 else i


def _corrupt(data: bytes, pos: int, content_start: int, nxt: int, reason: str, path: str) -> LogBlock:
    return LogBlock(LogBlockType.CORRUPT_BLOCK, (), data[content_start:nxt], (), pos, nxt - pos, reason, path)
