"""Paimon's ``BinaryRow`` as stored in manifests (partition, min/max key, statistics).

Layout (``org.apache.paimon.data.BinaryRow``; manifests hold ``SerializationUtils.serializeBinaryRow``: a 4-byte
big-endian arity, then the row): a header of ``((arity + 63 + 8) // 64) * 8`` bytes whose first byte is the row
kind and whose bits from 8 on are the null flags; then one 8-byte slot per field; then the variable-length part.
Slots are little-endian. Strings/binaries up to 7 bytes live in the slot itself (highest bit set, length in bits
56..62); longer ones store ``offset << 32 | length`` pointing into the row. Compact decimals (precision <= 18) and
timestamps (precision <= 3) are a long in the slot.
"""

from __future__ import annotations

import decimal
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import CorruptFileError, SchemaError
from lake_orchestration.paimon.model.schema import DataType

_INT_SIZES = {"TINYINT": ("<b", 1), "SMALLINT": ("<h", 2), "INTEGER": ("<i", 4), "INT": ("<i", 4)}
_INT_SIZES |= {"BIGINT": ("<q", 8), "DATE": ("<i", 4), "TIME": ("<i", 4), "TIME WITHOUT TIME ZONE": ("<i", 4)}


def bitset_width(arity: int) -> int:
    """Header size in bytes of a row with ``arity`` fields (row-kind byte + null bits, 8-byte aligned)."""
    return ((arity + 63 + 8) // 64) * 8


@dataclass(frozen=True)
class BinaryRow:
    """A serialized ``BinaryRow`` (as in a manifest: 4-byte big-endian arity, then the row bytes)."""

    data: bytes
    """The serialized bytes, exactly as read (written back unchanged)."""

    @property
    def arity(self) -> int:
        """Number of fields."""
        if len(self.data) < 4:
            raise CorruptFileError("BinaryRow", f"{len(self.data)} bytes, expected at least the 4-byte arity")
        return int(struct.unpack_from(">i", self.data, 0)[0])

    @property
    def _row(self) -> memoryview:
        return memoryview(self.data)[4:]

    def is_null(self, pos: int) -> bool:
        """True when field ``pos`` is null."""
        bit = pos + 8
        return bool(self._row[bit >> 3] & (1 << (bit & 7)))

    def get(self, pos: int, dtype: DataType) -> Any:
        """Field ``pos`` decoded as ``dtype`` (None when null).

        Returns:
            int for integer types, DATE (days) and TIME (millis); float; bool; str for CHAR/VARCHAR; bytes for
            BINARY/VARBINARY; decimal.Decimal; int epoch millis (precision <= 3) or (millis, nanos of milli) for
            TIMESTAMP.

        Raises:
            SchemaError: A type the merge tree's key comparison does not support (nested types).
            CorruptFileError: The bytes are shorter than the layout says.
        """
        arity = self.arity
        if pos >= arity:
            raise SchemaError(f"field {pos} of a BinaryRow with {arity} fields")
        if self.is_null(pos):
            return None
        row = self._row
        off = bitset_width(arity) + 8 * pos
        if off + 8 > len(row):
            raise CorruptFileError("BinaryRow", f"{len(row)} bytes, field {pos} needs {off + 8}")
        root = dtype.root
        if root in _INT_SIZES:
            fmt, _ = _INT_SIZES[root]
            return struct.unpack_from(fmt, row, off)[0]
        if root == "BOOLEAN":
            return row[off] != 0
        if root == "FLOAT":
            return struct.unpack_from("<f", row, off)[0]
        if root == "DOUBLE":
            return struct.unpack_from("<d", row, off)[0]
        if root in ("CHAR", "VARCHAR"):
            return self._var_bytes(row, off).decode("utf-8")
        if root in ("BINARY", "VARBINARY"):
            return self._var_bytes(row, off)
        if root == "DECIMAL":
            if dtype.precision <= 18:
                unscaled = struct.unpack_from("<q", row, off)[0]
            else:
                unscaled = int.from_bytes(self._var_bytes(row, off), "big", signed=True)
            return decimal.Decimal(unscaled).scaleb(-dtype.scale)
        if root in ("TIMESTAMP", "TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP WITHOUT TIME ZONE"):
            if dtype.precision <= 3:
                return struct.unpack_from("<q", row, off)[0]
            word = struct.unpack_from("<q", row, off)[0]
            offset, nanos = word >> 32, word & 0xFFFFFFFF
            return struct.unpack_from("<q", row, offset)[0], nanos
        raise SchemaError(f"BinaryRow field of type {dtype.json!r} is not supported as a key or partition field")

    @staticmethod
    def _var_bytes(row: memoryview, off: int) -> bytes:
        word = struct.unpack_from("<Q", row, off)[0]
        if word & (1 << 63):
            size = (word >> 56) & 0x7F
            return bytes(row[off : off + size])
        start, size = word >> 32, word & 0xFFFFFFFF
        if start + size > len(row):
            raise CorruptFileError("BinaryRow", f"variable-length field [{start}, {start + size}) past {len(row)}")
        return bytes(row[start : start + size])

    def to_values(self, types: Sequence[DataType]) -> tuple[Any, ...]:
        """All fields decoded with ``types`` (one per field)."""
        if len(types) != self.arity:
            raise SchemaError(f"BinaryRow has {self.arity} fields, {len(types)} types given")
        return tuple(self.get(i, t) for i, t in enumerate(types))

    def sort_key(self, types: Sequence[DataType]) -> tuple[tuple[int, Any], ...]:
        """A Python sort key equal to Paimon's key comparator: field by field, nulls first; strings and binaries by
        unsigned bytes (``BinaryString.compareTo``)."""
        out: list[tuple[int, Any]] = []
        for v in self.to_values(types):
            if v is None:
                out.append((0, 0))
            elif isinstance(v, str):
                out.append((1, v.encode("utf-8")))
            else:
                out.append((1, v))
        return tuple(out)

    @classmethod
    def from_values(cls, values: Sequence[Any], types: Sequence[DataType]) -> BinaryRow:
        """Serialize ``values`` as Java ``BinaryRowWriter`` does (row kind +I, then the 4-byte arity prefix of a
        manifest): the inverse of :meth:`to_values` for the types it decodes.

        Raises:
            SchemaError: A type that has no fixed-slot or variable-length encoding here (nested types, DECIMAL
                precision > 18, TIMESTAMP precision > 3), or values and types of different lengths.
        """
        if len(values) != len(types):
            raise SchemaError(f"{len(values)} values for a BinaryRow of {len(types)} types")
        arity = len(values)
        header = bitset_width(arity)
        fixed = bytearray(header + 8 * arity)
        var = bytearray()
        for pos, (value, dtype) in enumerate(zip(values, types, strict=True)):
            off = header + 8 * pos
            if value is None:
                bit = pos + 8
                fixed[bit >> 3] |= 1 << (bit & 7)
                continue
            root = dtype.root
            if root in _INT_SIZES:
                fmt, _ = _INT_SIZES[root]
                struct.pack_into(fmt, fixed, off, value)
            elif root == "BOOLEAN":
                fixed[off] = 1 if value else 0
            elif root == "FLOAT":
                struct.pack_into("<f", fixed, off, value)
            elif root == "DOUBLE":
                struct.pack_into("<d", fixed, off, value)
            elif root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
                raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
                if len(raw) <= 7:
                    fixed[off : off + len(raw)] = raw
                    fixed[off + 7] = 0x80 | len(raw)
                else:
                    start = len(fixed) + len(var)
                    struct.pack_into("<Q", fixed, off, (start << 32) | len(raw))
                    var += raw + bytes(-len(raw) % 8)
            elif root == "DECIMAL" and dtype.precision <= 18:
                unscaled = int(decimal.Decimal(value).scaleb(dtype.scale).to_integral_value())
                struct.pack_into("<q", fixed, off, unscaled)
            elif root in ("TIMESTAMP", "TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP WITHOUT TIME ZONE") and (
                dtype.precision <= 3
            ):
                struct.pack_into("<q", fixed, off, value)
            else:
                raise SchemaError(f"cannot write a BinaryRow field of type {dtype.json!r}")
        return cls(struct.pack(">i", arity) + bytes(fixed) + bytes(var))

    @classmethod
    def empty(cls) -> BinaryRow:
        """The row of an unpartitioned table's partition (arity 0)."""
        return cls(struct.pack(">i", 0) + bytes(bitset_width(0)))
