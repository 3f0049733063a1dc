"""Block index entries: the root format (load-on-open data and meta indexes) and the non-root format (leaf and
intermediate blocks of a multi-level data index), read and written as HBase's ``HFileBlockIndex`` does.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field

from lake_orchestration.hudi.hfile.encoding import read_vlong, vlong_size, write_vlong

SECONDARY_INDEX_ENTRY_OVERHEAD = 12
"""Block offset (8) + on-disk size (4) in front of each non-root entry's key."""
MID_KEY_METADATA_SIZE = 16


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One block index entry."""

    key: bytes
    """The serialized key (a KeyValue key for the data index, the block name for the meta index)."""
    offset: int
    """File offset of the block it points at."""
    size: int
    """On-disk size of that block, header included."""


def parse_root_index(data: bytes, count: int) -> tuple[list[IndexEntry], int]:
    """``count`` root-format entries (offset i64, size i32, VInt key length, key); returns them and the end position.

    Raises:
        ValueError: the entries run past the block.
    """
    entries = []
    pos = 0
    for i in range(count):
        if pos + 13 > len(data):
            raise ValueError(f"root index entry {i} of {count} starts past the {len(data)}-byte block")
        offset, size = struct.unpack_from(">qi", data, pos)
        key_len, pos = read_vlong(data, pos + 12)
        if key_len < 0 or pos + key_len > len(data):
            raise ValueError(f"root index entry {i} has a key of {key_len} bytes past the {len(data)}-byte block")
        entries.append(IndexEntry(data[pos : pos + key_len], offset, size))
        pos += key_len
    return entries, pos


def parse_non_root_index(data: bytes) -> list[IndexEntry]:
    """A leaf or intermediate index block: entry count, secondary index of relative offsets, then the entries."""
    if len(data) < 4:
        raise ValueError(f"a non-root index block of {len(data)} bytes has no entry count")
    (count,) = struct.unpack_from(">i", data, 0)
    base = 4 + 4 * (count + 1)
    if count < 0 or base > len(data):
        raise ValueError(f"a non-root index block of {len(data)} bytes cannot hold {count} entries")
    marks = struct.unpack_from(f">{count + 1}i", data, 4)
    entries = []
    for i in range(count):
        start, end = base + marks[i], base + marks[i + 1]
        if end > len(data) or end - start < SECONDARY_INDEX_ENTRY_OVERHEAD:
            raise ValueError(f"non-root index entry {i} ({start}..{end}) does not fit the {len(data)}-byte block")
        offset, size = struct.unpack_from(">qi", data, start)
        entries.append(IndexEntry(data[start + SECONDARY_INDEX_ENTRY_OVERHEAD : end], offset, size))
    return entries


@dataclass
class IndexChunk:
    """HBase ``BlockIndexChunk``: entries being gathered into a leaf, intermediate or root index block."""

    entries: list[IndexEntry] = field(default_factory=list)
    sub_entries_at: list[int] = field(default_factory=list)
    """Cumulative count of data blocks under entries 0..i (root of a multi-level index only: mid-key metadata)."""
    non_root_entries_size: int = 0
    root_size: int = 0

    def add(self, key: bytes, offset: int, size: int, total_sub_entries: int | None = None) -> None:
        self.entries.append(IndexEntry(key, offset, size))
        self.non_root_entries_size += SECONDARY_INDEX_ENTRY_OVERHEAD + len(key)
        self.root_size += 12 + vlong_size(len(key)) + len(key)
        if total_sub_entries is not None:
            self.sub_entries_at.append(total_sub_entries)

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def non_root_size(self) -> int:
        return 4 + 4 * (len(self.entries) + 1) + self.non_root_entries_size

    def write_root(self) -> bytes:
        return b"".join(struct.pack(">qi", e.offset, e.size) + write_vlong(len(e.key)) + e.key for e in self.entries)

    def write_non_root(self) -> bytes:
        marks = []
        running = 0
        for e in self.entries:
            marks.append(running)
            running += SECONDARY_INDEX_ENTRY_OVERHEAD + len(e.key)
        marks.append(running)
        head = struct.pack(f">i{len(marks)}i", len(self.entries), *marks)
        return head + b"".join(struct.pack(">qi", e.offset, e.size) + e.key for e in self.entries)

    def mid_key_metadata(self) -> bytes:
        """HBase ``getMidKeyMetadata``: where the middle data block's index entry is, for ``midKey()``."""
        total = self.sub_entries_at[-1]
        if total == 0:
            raise ValueError("no leaf-level entries, mid-key unavailable")
        mid_sub_entry = (total - 1) // 2
        i = bisect.bisect_left(self.sub_entries_at, mid_sub_entry)
        if i < len(self.sub_entries_at) and self.sub_entries_at[i] == mid_sub_entry:
            i += 1
        before = self.sub_entries_at[i - 1] if i > 0 else 0
        entry = self.entries[i]
        return struct.pack(">qii", entry.offset, entry.size, mid_sub_entry - before)
